"""The PID and the UAV's 6-DOF PID controller flying the real MuJoCo UAV model: limits, step responses,
level flight, velocity set points, yaw the short way round, and the TIAGo base's P controller."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.config import PidGains, RobotConfig, UavLimits
from core.robot_catalogue import robot_body
from simulation.control import Pid, PlanarController, PlanarLimits, UavController, UavState, wrap_angle
from simulation.exploration.drivers import UavDriver
from simulation.physics import StartPose, build_world
from simulation.robots.uav_model import uav

DT = 1.0 / 240.0
START = StartPose(0.0, 0.0, 1.0, 0.0)
LIMITS = UavLimits()  # paper defaults: 0.5 m/s, 25 deg tilt, 40 deg/s roll/pitch, 30 deg/s yaw
MAX_TILT = math.radians(LIMITS.max_tilt_deg)
RP_RATE, YAW_RATE = math.radians(LIMITS.roll_pitch_rate_deg), math.radians(LIMITS.yaw_rate_deg)
# The velocity servos follow a command within ~10 ms, so measured values may exceed a commanded limit
# by this fraction while they settle.
SERVO_SLACK = 0.01


def flight(controller: UavController, seconds: float, start: StartPose = START) -> dict[str, np.ndarray]:
    """Fly the MuJoCo UAV for `seconds` under `controller`; logs per physics step."""
    return fly(build_world(uav(), start), controller, seconds)


def fly(world, controller: UavController, seconds: float) -> dict[str, np.ndarray]:
    """Fly `world`'s UAV on for `seconds`, running the controller on every physics step."""
    log = {"t": [], "command": [], "position": [], "attitude": [], "velocity": [], "rates": []}
    for _ in range(round(seconds / DT)):
        state = UavState.from_joint_states(world.joint_states())
        command = controller.command(state, DT)
        world.set_joint_velocities(command)
        world.step()
        state = UavState.from_joint_states(world.joint_states())
        for key, value in (("t", world.time), ("command", command), ("position", state.position),
                           ("attitude", state.attitude), ("velocity", state.velocity), ("rates", state.rates)):
            log[key].append(value)
    return {key: np.array(value) for key, value in log.items()}


def check_limits(log: dict[str, np.ndarray], limits: UavLimits = LIMITS) -> None:
    command = log["command"]
    assert np.linalg.norm(command[:, :3], axis=1).max() <= limits.max_speed + 1e-9
    assert np.abs(command[:, 3:5]).max() <= math.radians(limits.roll_pitch_rate_deg) + 1e-9
    assert np.abs(command[:, 5]).max() <= math.radians(limits.yaw_rate_deg) + 1e-9
    assert np.linalg.norm(log["velocity"], axis=1).max() <= limits.max_speed * (1 + SERVO_SLACK)
    assert np.abs(log["rates"][:, 2]).max() <= math.radians(limits.yaw_rate_deg) * (1 + SERVO_SLACK)
    assert np.abs(log["attitude"][:, :2]).max() <= math.radians(limits.max_tilt_deg) + 1e-6


# ---------------------------------------------------------------- PID


def test_pid_limits_output_and_rate_and_does_not_wind_up():
    pid = Pid(kp=1.0, ki=1.0, output_limit=1.0, rate_limit=2.0)
    outputs = [float(pid.update(10.0, 0.1)) for _ in range(100)]  # 10 s saturated
    steps = np.diff([0.0, *outputs])
    assert max(outputs) == pytest.approx(1.0) and np.abs(steps).max() <= 2.0 * 0.1 + 1e-12
    # The integral froze while saturated, so once the error reverses the output follows at the rate limit
    # instead of staying saturated while a wound-up integral (~100) unwinds.
    after = [float(pid.update(-0.5, 0.1)) for _ in range(10)]
    assert after[0] == pytest.approx(0.8) and after[-1] < 0
    clamped = Pid(kp=0.0, ki=1.0, integral_limit=0.3)
    assert [float(clamped.update(1.0, 0.2)) for _ in range(3)] == pytest.approx([0.2, 0.3, 0.3])
    plain = Pid(kp=2.0, ki=0.5, kd=0.1)
    assert float(plain.update(1.0, 0.5)) == pytest.approx(2.0 + 0.25)  # no derivative on the first update
    assert float(plain.update(2.0, 0.5)) == pytest.approx(4.0 + 0.5 * 1.5 + 0.1 * 2.0)
    with pytest.raises(ValueError):
        Pid(kp=-1.0)


# ---------------------------------------------------------------- position step responses


def test_position_step_stays_within_limits_tilts_the_right_way_and_settles():
    controller = UavController(LIMITS, PidGains(kp=2.0, ki=0.0, kd=0.2), PidGains(kp=3.0, ki=0.0, kd=0.1))
    target = np.array([2.0, 0.0, 1.0])
    controller.set_position_target(target, yaw=0.0)
    log = flight(controller, 8.0)
    check_limits(log)
    x = log["position"][:, 0]
    # No faster than the speed limit allows; no overshoot beyond 1 % of the step; settled within 1 cm by
    # travel time (4 s at 0.5 m/s) + 2.5 s and staying there.
    assert np.argmax(x > 1.0) * DT >= 1.0 / LIMITS.max_speed
    assert x.max() <= target[0] + 0.01 * 2.0
    settled = log["t"] >= 2.0 / LIMITS.max_speed + 2.5
    assert np.abs(log["position"][settled] - target).max() < 0.01
    # A quadrotor accelerating along +x pitches nose down (positive pitch about y) and back up to brake.
    pitch = log["attitude"][:, 1]
    assert pitch.max() > math.radians(1.0) and pitch.min() < -math.radians(1.0)
    assert np.argmax(pitch) < np.argmin(pitch)
    assert np.abs(log["attitude"][:, 0]).max() < 1e-6  # no sideways acceleration, no roll


def test_a_moving_set_point_with_its_velocity_fed_forward_is_tracked_without_the_pid_lag():
    """A set point gliding along x at 0.4 m/s: a PID alone trails it by speed / kp (0.2 m); with the set
    point's velocity fed forward the UAV flies with it (the velocity shaping's lag is a few cm)."""
    speed, kp = 0.4, 2.0
    gaps = {}
    for feed in (False, True):
        controller = UavController(LIMITS, PidGains(kp=kp, ki=0.0, kd=0.0), PidGains(kp=3.0, ki=0.0, kd=0.1))
        world = build_world(uav(), START)
        for step in range(round(6.0 / DT)):
            t = step * DT
            set_point = np.array([speed * t, 0.0, 1.0])
            controller.set_position_target(set_point, 0.0, np.array([speed, 0.0, 0.0]) if feed else None)
            state = UavState.from_joint_states(world.joint_states())
            world.set_joint_velocities(controller.command(state, DT))
            world.step()
        gaps[feed] = speed * world.time - UavState.from_joint_states(world.joint_states()).position[0]
    assert gaps[False] == pytest.approx(speed / kp, rel=0.05)
    assert abs(gaps[True]) < 0.05
    with pytest.raises(ValueError):
        UavController(LIMITS, PidGains(), PidGains()).set_position_target(np.zeros(3), 0.0, np.array([np.nan, 0, 0]))


def test_sideways_step_rolls_negative_and_yaw_settles():
    controller = UavController.from_config(RobotConfig())
    controller.set_position_target(np.array([0.0, 1.5, 1.6]), yaw=math.radians(90.0))
    log = flight(controller, 7.0)
    check_limits(log)
    assert log["attitude"][:, 0].min() < -math.radians(1.0)  # thrust tilts towards +y: negative roll
    final = log["position"][-1]
    np.testing.assert_allclose(final, [0.0, 1.5, 1.6], atol=0.01)
    assert abs(float(wrap_angle(log["attitude"][-1, 2] - math.radians(90.0)))) < math.radians(0.5)
    # 90 deg at 30 deg/s takes at least 3 s.
    assert np.argmax(log["attitude"][:, 2] > math.radians(89.0)) * DT >= 3.0


def test_hard_acceleration_keeps_tilt_and_rates_within_limits():
    limits = UavLimits(max_tilt_deg=10.0, roll_pitch_rate_deg=20.0, max_speed=2.0)
    controller = UavController(limits, PidGains(kp=6.0), PidGains(kp=20.0))
    controller.set_position_target(np.array([-3.0, 2.0, 1.0]))
    log = flight(controller, 3.0)
    check_limits(log, limits)
    assert np.abs(log["attitude"][:, :2]).max() > math.radians(9.0)  # the tilt limit was reached


def test_turns_and_moves_from_rest_keep_the_acceleration_and_jerk_limits():
    # A half turn and a 2.3 m move asked for at once from a hover, then a sudden velocity set point the
    # other way: the steps a planner gives, which the controller must not pass on as steps.
    world, controller = build_world(uav(), START), UavController.from_config(RobotConfig())
    controller.set_position_target(np.array([2.0, 1.0, 1.5]), yaw=math.radians(179.0))
    first = fly(world, controller, 5.0)
    controller.set_velocity_target(np.array([-0.5, 0.0, 0.0]), yaw_rate=-YAW_RATE)
    second = fly(world, controller, 2.0)
    log = {key: np.concatenate([first[key], second[key]]) for key in first}
    check_limits(log)
    # Joint velocities are MuJoCo's own (qvel), from rest: their differences are the applied accelerations.
    velocity = np.vstack([np.zeros((1, 6)), np.hstack([log["velocity"], log["rates"]])])
    acceleration = np.diff(velocity, axis=0) / DT
    linear = np.linalg.norm(acceleration[:, :3], axis=1)
    jerk = np.linalg.norm(np.diff(acceleration[:, :3], axis=0), axis=1) / DT
    assert 1.0 < linear.max() <= LIMITS.max_acceleration + 1e-6
    assert jerk.max() <= LIMITS.max_jerk * (1 + 1e-6)
    angular = np.radians([LIMITS.roll_pitch_acceleration_deg] * 2 + [LIMITS.yaw_acceleration_deg])
    # The nested hinges couple a little when tilted (each servo feels its neighbours' torques).
    peak = np.abs(acceleration[:, 3:]).max(axis=0)
    assert np.all(peak <= angular * 1.05) and peak[2] > 0.9 * angular[2]


def test_locked_roll_pitch_flies_level():
    limits = UavLimits(lock_roll_pitch=True)
    controller = UavController(limits, PidGains(), PidGains(kp=3.0, kd=0.1))
    controller.set_position_target(np.array([1.0, -1.0, 1.5]), yaw=-1.0)
    log = flight(controller, 7.0)
    check_limits(log, limits)
    # Level to rounding: MuJoCo's nested hinges pass ~1e-28 rad of the yaw motion on, which is cancelled.
    assert np.abs(log["attitude"][:, :2]).max() < 1e-12 and np.abs(log["command"][:, 3:5]).max() < 1e-9
    np.testing.assert_allclose(log["position"][-1], [1.0, -1.0, 1.5], atol=0.01)


def test_position_targets_are_kept_inside_the_altitude_band():
    controller = UavController.from_config(RobotConfig())
    controller.set_position_target(np.array([0.0, 0.0, 5.0]))
    assert controller.position_target[2] == LIMITS.z_band.max
    log = flight(controller, 6.0)
    assert log["position"][:, 2].max() <= LIMITS.z_band.max + 1e-3


# ---------------------------------------------------------------- velocity set points


def test_velocity_setpoints_are_followed_and_limited():
    controller = UavController.from_config(RobotConfig())
    wanted = np.array([0.3, -0.2, 0.1])
    controller.set_velocity_target(wanted, yaw_rate=0.2)
    log = flight(controller, 2.0)
    check_limits(log)
    np.testing.assert_allclose(log["velocity"][-1], wanted, atol=0.003)
    assert log["rates"][-1, 2] == pytest.approx(0.2, abs=0.002)
    # A set point over the speed limit keeps its direction at max_speed.
    controller.set_velocity_target(np.array([3.0, 4.0, 0.0]))
    log = flight(controller, 2.0)
    check_limits(log)
    np.testing.assert_allclose(log["velocity"][-1], [0.3, 0.4, 0.0], atol=0.003)


class PhysicsRobot:
    """The bare MuJoCo UAV as the drivers see a robot: its pose, joint states and commands."""

    def __init__(self, world):
        self.world, world.timestep = world, DT

    def pose(self) -> np.ndarray:
        pose = np.eye(4)
        pose[:3, 3] = UavState.from_joint_states(self.world.joint_states()).position
        return pose

    def joint_states(self) -> dict[str, tuple[float, float]]:
        return self.world.joint_states()

    def set_command(self, command: np.ndarray) -> None:
        self.world.set_joint_velocities(command)


def test_a_hold_from_full_speed_stops_where_braking_ends_without_flying_back():
    """The UAV cruising at the demo's 1.1 m/s is told to hold. A set point where it was when told (the former hold)
    has it overshoot by its stopping distance and fly back: over half a metre past a place the planner chose. The
    driver's hold is where braking ends (UavController.stopping_offset), measured independently as where the UAV
    comes to rest when its velocity set point drops to zero: it stops there, no further and without coming back."""
    config = RobotConfig(uav=UavLimits(max_speed=1.1, yaw_rate_deg=90, yaw_acceleration_deg=180))

    def cruise_then(stop) -> np.ndarray:
        robot = PhysicsRobot(build_world(uav(), START))
        driver = UavDriver(robot, config, robot_body(config))
        driver.controller.set_velocity_target(np.array([1.1, 0.0, 0.0]))
        for _ in range(round(3.0 / DT)):
            driver.update()
            robot.world.step()
        stop(driver, robot)
        x = []
        for _ in range(round(4.0 / DT)):
            driver.update()
            robot.world.step()
            x.append(robot.pose()[0, 3])
        return np.array(x)

    braked = cruise_then(lambda driver, robot: driver.controller.set_velocity_target(np.zeros(3)))
    held = cruise_then(lambda driver, robot: driver.hold())
    former = cruise_then(lambda driver, robot: driver.controller.set_position_target(robot.pose()[:3, 3], 0.0))
    rest = braked[-1]
    assert braked.max() - rest < 1e-3 and rest - braked[0] > 0.5  # a stop from 1.1 m/s takes over half a metre
    assert held[-1] == pytest.approx(rest, abs=0.01)
    assert held.max() - rest < 0.03
    assert former.max() - former[-1] > 0.5  # the cause: past the hold point by the stopping distance, then back


def test_climbing_at_the_top_of_the_band_stops_at_its_edge():
    controller = UavController.from_config(RobotConfig())
    controller.set_velocity_target(np.array([0.0, 0.0, 0.5]))
    log = flight(controller, 6.0, start=StartPose(0.0, 0.0, 2.0, 0.0))
    assert log["position"][:, 2].max() <= LIMITS.z_band.max + 0.001
    assert log["position"][-1, 2] == pytest.approx(LIMITS.z_band.max, abs=0.01)


# ---------------------------------------------------------------- yaw


def test_yaw_turns_the_short_way_across_pi():
    start = StartPose(0.0, 0.0, 1.0, math.radians(170.0))
    controller = UavController.from_config(RobotConfig())
    controller.set_position_target(np.array([0.0, 0.0, 1.0]), yaw=math.radians(-170.0))
    log = flight(controller, 3.0, start=start)
    check_limits(log)
    yaw = log["attitude"][:, 2]  # the hinge's angle, not wrapped
    assert np.all(np.diff(yaw) >= -1e-9)  # turning positive only: through 180 deg, not back through 0
    assert yaw[-1] == pytest.approx(math.radians(190.0), abs=math.radians(0.5))
    assert np.argmax(yaw > math.radians(189.0)) * DT >= math.radians(19.0) / YAW_RATE


def test_wrap_angle():
    np.testing.assert_allclose(wrap_angle(np.array([0.0, math.pi, -math.pi, 3 * math.pi / 2, 7.0])),
                               [0.0, -math.pi, -math.pi, -math.pi / 2, 7.0 - 2 * math.pi])


def test_bad_setpoints_and_limits_are_rejected():
    controller = UavController.from_config(RobotConfig())
    with pytest.raises(ValueError):
        controller.set_position_target(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError):
        controller.set_velocity_target(np.array([1.0, 0.0]))
    with pytest.raises(ValueError):
        UavController(UavLimits(max_tilt_deg=0.0), PidGains(), PidGains())
    with pytest.raises(KeyError):
        UavState.from_joint_states({"uav_x": (0.0, 0.0)})


# ---------------------------------------------------------------- TIAGo base P controller


def test_planar_controller_limits_speed_acceleration_and_turns_the_short_way():
    limits = PlanarLimits(max_speed=1.0, max_yaw_rate=1.5, max_acceleration=1.0, max_yaw_acceleration=3.0)
    controller = PlanarController(limits)
    pose = np.array([0.0, 0.0, math.radians(170.0)])
    dt = 1.0 / 60.0
    twists = []
    for _ in range(600):
        twist = controller.command(tuple(pose), np.array([3.0, 4.0]), math.radians(-170.0), dt)
        c, s = math.cos(pose[2]), math.sin(pose[2])
        pose += dt * np.array([c * twist[0] - s * twist[1], s * twist[0] + c * twist[1], twist[2]])
        twists.append(twist)
    twists = np.array(twists)
    assert np.linalg.norm(twists[:, :2], axis=1).max() <= 1.0 + 1e-9
    assert np.abs(twists[:, 2]).max() <= 1.5 + 1e-9
    assert np.linalg.norm(np.diff(twists[:, :2], axis=0), axis=1).max() <= 1.0 * dt + 1e-9
    assert twists[:, 2].min() >= -1e-9  # turns positive, through 180 deg
    assert pose[2] == pytest.approx(math.radians(190.0), abs=math.radians(1.0))
    np.testing.assert_allclose(pose[:2], [3.0, 4.0], atol=0.05)

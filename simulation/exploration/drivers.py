"""How the explorer moves each robot: turn in place, go for a point facing a heading, hold, stop.

Each call computes this control period's command with the robot's controller and sends it to the
robot: the UAV's 6-DOF PID on position (or, to turn in place, velocity) set points gives six joint
velocities; the TIAGo's P controller gives a base twist (vx, vy, wz). `update` is called on every
physics step between those calls: the UAV's flight controller runs at the physics rate, as a real
one's inner loop runs faster than its planner, so its acceleration-limited commands change a little
every step instead of in steps at the control rate (simulation.control.uav_controller); the TIAGo's
twist holds until the next call.

A driver's `radius` is the disc the planner keeps clear around the robot's centre, `clearance` a hard
extra margin on top of it. The UAV needs one: its disc fits its frame's corners exactly, its position
loop lags the carrot point and cuts corners by about a decimetre, and a person's collision capsule
reaches a little beyond the body the camera sees. The TIAGo's disc around its base's corners already
leaves 0.1 m off its front and sides, and a margin on top would shut 1.1 m doorways. Instead, every twist a ground
base is sent passes its `FootprintGuard` first (simulation.exploration.footprint_guard): the explorer gives it the
robot's map at each update (`know`), and a twist whose motion and braking would sweep the chassis into a cell the
map holds occupied is replaced by one that slides along it, backs off from it, or is slower, or the base brakes.
"""

from __future__ import annotations

import math

import numpy as np

from core.config import RobotConfig
from core.geometry import yaw_of
from core.robot_catalogue import RobotBody, robot_body
from simulation.backend import Robot
from simulation.control import PlanarController, UavController, UavState
from simulation.exploration.footprint_guard import FootprintGuard, PoseGuard
from simulation.exploration.occupancy import Grid2D

PUSH_TOLERANCE = 0.03  # m/s: a UAV flying on its own moves with its controller's reference velocity within 1 cm/s;
# one whose velocity departs from it by more is being pushed
BASE_PUSH_TOLERANCE = 0.1  # m/s: the same for a ground base and its commanded twist (applied at once, or through
# the S-curve within a few cm/s)


class UavDriver:
    """A flying base (the UAV, a description robot with drive floating)."""

    def __init__(self, robot: Robot, config: RobotConfig, body: RobotBody):
        self.robot, self.dt = robot, robot.world.timestep
        self.controller = UavController.from_config(config)
        self.radius, self.clearance, self.speed = body.radius, body.clearance, body.max_speed
        self._hold: np.ndarray | None = None

    def spin(self) -> None:
        """Turn in place at the yaw rate limit."""
        self._hold = None
        self.controller.set_velocity_target(np.zeros(3), math.radians(self.controller.limits.yaw_rate_deg))
        self._send()

    def go(self, target: np.ndarray, heading: float, altitude: float, velocity: np.ndarray | None = None) -> None:
        """Fly for the point (x, y) at `altitude`, turning to `heading`; `velocity` (x, y, optionally z) is how the
        point moves (fed forward)."""
        self._hold = None
        feedforward = None if velocity is None else np.array([velocity[0], velocity[1],
                                                              velocity[2] if len(velocity) > 2 else 0.0])
        self.controller.set_position_target(np.array([target[0], target[1], altitude]), heading, feedforward)
        self._send()

    def hold(self) -> None:
        """Hover where the UAV comes to rest braking from the motion it had when holding began (a set point where it
        was would make it overshoot by its stopping distance and fly back); pushed, where the push leaves it
        (`update`)."""
        if self._hold is None:
            self._hold = self.robot.pose()[:3, 3] + self.controller.stopping_offset(self.dt)
            self.controller.set_position_target(self._hold, None)
        self.update()

    def give_way(self) -> None:
        """Something pushes the UAV: hold (`update` drops its motion and holds where the push leaves it)."""
        self.hold()

    def pushed(self) -> bool:
        """Whether the UAV's velocity departs from the velocity its controller commands by more than
        `PUSH_TOLERANCE`: something other than its controller (a person walking into it) moves it."""
        velocity = UavState.from_joint_states(self.robot.joint_states()).velocity
        return float(np.linalg.norm(velocity - self.controller.reference_velocity)) > PUSH_TOLERANCE

    def update(self) -> None:
        """One physics step on: the next command towards the current set point. Holding, the UAV gives way to a
        push: it drops the motion it had and holds where the push leaves it, commanding nothing of its own while
        pushed (neither on into whoever pushes it, nor back, nor on with the push's speed into what lies beyond)."""
        if self._hold is not None and self.pushed():
            self.controller.drop_motion()
            self._hold = self.robot.pose()[:3, 3]
            self.controller.set_position_target(self._hold, None)
        self._send()

    def stop(self) -> None:
        self.robot.set_command(np.zeros(6))

    def _send(self) -> None:
        state = UavState.from_joint_states(self.robot.joint_states())
        self.robot.set_command(self.controller.command(state, self.dt))


class BaseDriver:
    """A ground base (the TIAGo++ Omni's, either model; a description robot's): twists towards the carrot."""

    def __init__(self, robot: Robot, body: RobotBody, dt: float):
        self.robot, self.dt = robot, dt
        self.controller = PlanarController.from_body(body)
        self.radius, self.clearance, self.speed = body.radius, body.clearance, body.max_speed
        limits = self.controller.limits
        self.guard = FootprintGuard(body.footprint, limits.max_acceleration, limits.max_yaw_acceleration)

    def know(self, grid: Grid2D) -> None:
        """The robot's map as it is now: its twists keep the chassis off what the map holds occupied
        (`FootprintGuard`)."""
        self.guard.know(grid)

    def _guard(self) -> PoseGuard:
        return self.guard.at(self._pose(), self.dt)

    def _pose(self) -> tuple[float, float, float]:
        pose = self.robot.pose()
        return float(pose[0, 3]), float(pose[1, 3]), yaw_of(pose)

    def spin(self) -> None:
        self.robot.set_command(self.controller.spin(self.controller.limits.max_yaw_rate, self.dt, self._guard()))

    def go(self, target: np.ndarray, heading: float, altitude: float | None = None,
           velocity: np.ndarray | None = None) -> None:
        """Drive for the point (x, y) turning to `heading`; `altitude` and `velocity` are ignored (the base
        controller's S-curve shapes its own approach)."""
        self.robot.set_command(self.controller.command(self._pose(), target, heading, self.dt, self._guard()))

    def hold(self) -> None:
        """Brake to a stop (within the acceleration limits)."""
        self.robot.set_command(self.controller.command(self._pose(), None, None, self.dt))

    def give_way(self) -> None:
        """Something pushes the base: stop commanding motion at once (neither on into whoever pushes it, nor
        back)."""
        self.stop()

    def pushed(self) -> bool:
        """Whether the base's velocity departs from its commanded twist by more than `BASE_PUSH_TOLERANCE`:
        something other than its drive (a person walking into it) moves it."""
        command = self.robot.command()
        return float(np.linalg.norm(self.robot.velocity()[0][:2] - command[:2])) > BASE_PUSH_TOLERANCE

    def update(self) -> None:
        """One physics step on: the twist holds until the next call, but for a push (`give_way` at once)."""
        if self.pushed():
            self.give_way()

    def stop(self) -> None:
        self.robot.set_command(self.controller.stop())


def make_driver(robot: Robot, config: RobotConfig, dt: float) -> UavDriver | BaseDriver:
    """The robot's driver; `dt` is the period of its set-point calls (a flying base's runs every physics step)."""
    body = robot_body(config)
    return UavDriver(robot, config, body) if body.flies else BaseDriver(robot, body, dt)

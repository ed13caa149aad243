"""The TIAGo's torso lift and head joints: position targets reached at the real robot's speed limits, the head
camera following them, the limits refused, and the state carrying them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import CONFIGS
from scipy.spatial.transform import Rotation

from core.config_io import load_experiment
from core.robot_catalogue import TIAGO_HEIGHT
from pipeline.prepare import prepare
from replay.driver import Window, replay_physics
from simulation.backends import load_world
from simulation.physics import SensorMount, StartPose, build_world
from simulation.recording.states import StateLog
from simulation.robots.tiago_model import HEAD_PAN, HEAD_TILT, TORSO_LIFT, lightweight, physical
from simulation.robots.uav_model import uav

DT = 1.0 / 240.0
CAMERA = SensorMount("head_camera", "head_2_link", (0.1, 0.0, 0.1), (0.0, 25.0, 0.0))
MODELS = {"lightweight": lightweight, "physical": physical}
JOINTS = ("torso_lift_joint", "head_1_joint", "head_2_joint")


def tiago_world(variant: str):
    return build_world(MODELS[variant](), StartPose(1.0, -2.0, 0.0, 0.3), frames=[CAMERA])


def in_base(world, pose: np.ndarray) -> np.ndarray:
    """base_link <- `pose` (a world pose): the physical base settles on its wheels, so compare in its frame."""
    return np.linalg.inv(world.base_pose()) @ pose


def step_until_reached(world, joint: str, target: float, limit: int) -> int:
    """Steps until the joint is at its target (each checked to move at its speed limit until then)."""
    speed = world.handles[0].position_limits()[joint].max_velocity
    for count in range(1, limit + 1):
        world.step()
        position, velocity = world.joint_states()[joint]
        if position == target:
            return count
        assert abs(velocity) == pytest.approx(speed, rel=1e-12)
    raise AssertionError(f"{joint} did not reach {target} in {limit} steps")


def test_the_joints_carry_the_real_tiago_names_limits_and_start_at_the_mid_pose():
    assert (TORSO_LIFT.limits.lower, TORSO_LIFT.limits.upper, TORSO_LIFT.limits.max_velocity) == (0.0, 0.35, 0.07)
    assert TORSO_LIFT.start == 0.175
    np.testing.assert_allclose([HEAD_PAN.limits.lower, HEAD_PAN.limits.upper], np.radians([-75, 75]))
    np.testing.assert_allclose([HEAD_TILT.limits.lower, HEAD_TILT.limits.upper], np.radians([-60, 45]))
    assert HEAD_PAN.limits.max_velocity == HEAD_TILT.limits.max_velocity == 3.0
    for variant in MODELS:
        world = tiago_world(variant)
        assert list(world.handles[0].position_limits()) == list(JOINTS)
        states = world.joint_states()
        assert [states[name] for name in JOINTS] == [(0.175, 0.0), (0.0, 0.0), (0.0, 0.0)]
        # The links where they were fixed before the joints: the URDF chain at the mid pose.
        torso, pan, tilt = (in_base(world, world.link_pose(link)) for link in ("torso_lift_link", "head_1_link",
                                                                              "head_2_link"))
        np.testing.assert_allclose(torso[:3, 3], [-0.062, 0.0, 0.72], atol=1e-12)
        np.testing.assert_allclose(pan[:3, 3] - torso[:3, 3], [0.177, 0.0, 0.302], atol=1e-12)
        np.testing.assert_allclose(tilt[:3, 3] - pan[:3, 3], [0.005, 0.0, 0.098], atol=1e-12)
        np.testing.assert_allclose(tilt[:3, :3], np.eye(3), atol=1e-12)


@pytest.mark.parametrize("variant", MODELS)
def test_a_head_pan_turns_the_camera_by_exactly_the_angle_at_the_speed_limit(variant):
    world = tiago_world(variant)
    camera, pan = in_base(world, world.sensor_pose("head_camera")), in_base(world, world.link_pose("head_1_link"))
    world.handles[0].set_joint_targets({"head_1_joint": 0.5})
    steps = step_until_reached(world, "head_1_joint", 0.5, 100)
    assert abs(steps * DT - 0.5 / 3.0) <= DT
    world.step(5)  # and it stays there
    assert world.joint_states()["head_1_joint"] == (0.5, 0.0)
    turned = in_base(world, world.sensor_pose("head_camera"))
    # Rotated by 0.5 rad about the pan axis: head_1_link's z through its origin.
    turn = pan[:3, :3] @ Rotation.from_rotvec([0.0, 0.0, 0.5]).as_matrix() @ pan[:3, :3].T
    np.testing.assert_allclose(turned[:3, :3], turn @ camera[:3, :3], atol=1e-9)
    np.testing.assert_allclose(turned[:3, 3], pan[:3, 3] + turn @ (camera[:3, 3] - pan[:3, 3]), atol=1e-9)
    # The optical axis (the camera body's x) turned by the angle.
    before, after = camera[:3, 0], turned[:3, 0]
    turned_by = math.atan2(before[0] * after[1] - before[1] * after[0], before[:2] @ after[:2])
    assert turned_by == pytest.approx(0.5, abs=1e-9)


def test_a_head_tilt_keeps_the_urdf_sign_positive_looks_up():
    world = tiago_world("lightweight")
    world.handles[0].set_joint_targets({"head_2_joint": -0.4})
    step_until_reached(world, "head_2_joint", -0.4, 100)
    axis = in_base(world, world.link_pose("head_2_link"))[:3, 0]  # the head's forward axis
    np.testing.assert_allclose(axis, [math.cos(0.4), 0.0, -math.sin(0.4)], atol=1e-12)  # looking down


@pytest.mark.parametrize("variant", MODELS)
def test_a_torso_lift_raises_the_camera_by_exactly_the_commanded_lift(variant):
    world = tiago_world(variant)
    camera = in_base(world, world.sensor_pose("head_camera"))
    world.handles[0].set_joint_targets({"torso_lift_joint": 0.3})
    steps = step_until_reached(world, "torso_lift_joint", 0.3, 500)
    assert abs(steps * DT - 0.125 / 0.07) <= DT
    raised = in_base(world, world.sensor_pose("head_camera"))
    np.testing.assert_allclose(raised[:3, :3], camera[:3, :3], atol=1e-9)
    np.testing.assert_allclose(raised[:3, 3] - camera[:3, 3], [0.0, 0.0, 0.125], atol=1e-9)


def test_moving_the_head_and_torso_leaves_the_lightweight_base_where_it_is():
    world = tiago_world("lightweight")
    start = world.base_pose()
    world.handles[0].set_joint_targets({"torso_lift_joint": 0.0, "head_1_joint": -1.0, "head_2_joint": 0.5})
    world.step(300)
    np.testing.assert_allclose(world.base_pose(), start, rtol=0, atol=1e-12)


def test_joint_states_and_the_head_imu_show_the_motion():
    world = tiago_world("lightweight")
    world.handles[0].set_joint_targets({"head_1_joint": 1.0, "torso_lift_joint": 0.2})
    world.step(10)
    states = world.joint_states()
    assert states["head_1_joint"] == pytest.approx((10 * 3.0 * DT, 3.0), rel=1e-12)
    assert states["torso_lift_joint"] == pytest.approx((0.175 + 10 * 0.07 * DT, 0.07), rel=1e-12)
    assert states["head_2_joint"] == (0.0, 0.0)
    _, gyro = world.imu("imu_camera")  # on head_2_link: the pan rate about the head's z
    np.testing.assert_allclose(gyro, [0.0, 0.0, 3.0], atol=1e-9)


@pytest.mark.parametrize("targets, message", [
    ({"head_3_joint": 0.0}, "not a commandable joint"),
    ({"torso_lift_joint": 0.36}, "not within its limits"),
    ({"head_1_joint": -1.4}, "not within its limits"),
    ({"head_2_joint": 0.8}, "not within its limits"),
    ({"head_1_joint": 0.2, "head_2_joint": float("nan")}, "not within its limits"),
    ({"head_1_joint": float("inf")}, "not within its limits"),
])
def test_unknown_joints_and_targets_beyond_the_limits_are_refused_and_set_nothing(targets, message):
    world = tiago_world("lightweight")
    with pytest.raises(ValueError, match=message):
        world.handles[0].set_joint_targets(targets)
    world.step(10)
    assert [world.joint_states()[name] for name in JOINTS] == [(0.175, 0.0), (0.0, 0.0), (0.0, 0.0)]
    assert np.isfinite(world.data.qpos).all()


def test_the_limits_themselves_are_reachable():
    world = tiago_world("lightweight")
    world.handles[0].set_joint_targets({"torso_lift_joint": 0.35, "head_1_joint": HEAD_PAN.limits.lower,
                                        "head_2_joint": HEAD_TILT.limits.upper})
    world.step(round(0.175 / 0.07 / DT) + 1)
    assert [world.joint_states()[name][0] for name in JOINTS] == [0.35, HEAD_PAN.limits.lower,
                                                                  HEAD_TILT.limits.upper]


def test_a_uav_has_no_commandable_joints():
    world = build_world(uav())
    assert world.handles[0].position_limits() == {}
    with pytest.raises(ValueError, match="commandable: none"):
        world.handles[0].set_joint_targets({"head_1_joint": 0.0})


@pytest.mark.parametrize("variant", MODELS)
def test_the_state_carries_the_targets_and_replays_exactly(variant):
    world = tiago_world(variant)
    world.handles[0].set_joint_targets({"head_1_joint": -0.6, "head_2_joint": 0.3, "torso_lift_joint": 0.1})
    world.step(5)
    saved = world.get_state()
    world.step(40)
    run = (world.joint_states(), world.sensor_pose("head_camera"), world.imu("imu_camera"))
    world.handles[0].set_joint_targets({"head_1_joint": 0.0})  # overwritten by the restored state
    world.set_state(saved)
    world.step(40)
    again = (world.joint_states(), world.sensor_pose("head_camera"), world.imu("imu_camera"))
    assert again[0] == run[0]
    np.testing.assert_array_equal(again[1], run[1])
    np.testing.assert_array_equal(np.concatenate(again[2]), np.concatenate(run[2]))


def test_teleport_repeats_the_logged_joints_and_head_imu():
    world = tiago_world("lightweight")
    world.handles[0].set_joint_targets({"head_1_joint": 0.4, "torso_lift_joint": 0.25})
    log, readings, poses = [world.step_state()], [], []
    for _ in range(20):
        world.step()
        log.append(world.step_state())
        readings.append(np.concatenate(world.imu("imu_camera")))
        poses.append(world.sensor_pose("head_camera"))
    replay = tiago_world("lightweight")
    for step in range(1, 21):
        replay.teleport(step * DT, log[step - 1], applied=log[step])
        np.testing.assert_array_equal(np.concatenate(replay.imu("imu_camera")), readings[step - 1])
        replay.teleport(step * DT, log[step])
        np.testing.assert_array_equal(replay.sensor_pose("head_camera"), poses[step - 1])


def test_the_head_stays_below_the_height_the_planners_keep_clear_with_the_torso_fully_raised():
    world = tiago_world("lightweight")
    head = world.model.geom("head").id

    def top() -> float:
        world.update_kinematics()
        return float(world.data.geom_xpos[head][2] + world.model.geom_size[head][0])

    mid = top()
    world.handles[0].set_joint_targets({"torso_lift_joint": 0.35})
    world.step(round(0.175 / 0.07 / DT) + 1)
    assert top() - mid == pytest.approx(0.175, abs=1e-12) and top() < TIAGO_HEIGHT


class JointStates:
    """The replay's recorder, reduced to the joint states it samples."""

    def __init__(self) -> None:
        self.samples: list[dict[str, tuple[float, float]]] = []

    def sample(self, world) -> None:
        self.samples.append(world.robot().joint_states())


def test_a_physics_replay_applies_the_logged_joint_targets_again(tmp_path, asset_cache):
    config = load_experiment(CONFIGS / "demo-tiago.yaml", ["robot.sensors.cameras.0.width=32",
                                                            "robot.sensors.cameras.0.height=24"])
    scene = prepare(config, tmp_path / "tiago", cache=asset_cache).scene
    world = load_world(config, scene)
    robot, log, recorded = world.robot(), StateLog(world, checkpoint_every=20), []
    assert list(robot.commandable_joints()) == list(JOINTS) and robot.joint_targets()["torso_lift_joint"] == 0.175
    log.record(world, 0)
    for step in range(1, 61):
        if step == 30:  # after the checkpoint the replay starts from
            robot.set_joint_positions({"head_1_joint": 0.3, "torso_lift_joint": 0.2})
        world.step()
        log.record(world, step)
        recorded.append(robot.joint_states())
    states = log.arrays()
    assert list(states["joint_target_names"]) == list(JOINTS) and states["joint_targets"][30][:2].tolist() == [0.2, 0.3]
    replayed = JointStates()
    replay_physics(load_world(config, scene), replayed, states, Window(25, 60), None, "states.npz", lambda _: None)
    assert replayed.samples == recorded[24:]

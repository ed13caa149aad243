"""The UAV's dynamics limits in a recorded run, checked from the ground truth alone: accelerations by
finite differences of the recorded poses (states.npz through the Recording reader) against the
configured limits, the recorded IMU readings against the bound those limits put on a rigid body, and
the demo UAV leaving its start room within the demo's duration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pxr import Usd, UsdGeom
from scipy.spatial.transform import Rotation

from core.config_io import load_experiment
from core.formats.placement import load_placement
from core.recording import Recording
from pipeline.generate import generate
from simulation.robots.uav_model import CAMERA_OFFSET, SERVO_TIME_CONSTANT
from tests.conftest import CONFIGS

G = 9.81
# Finite differences of poses stored as float64 are exact to rounding, but the nested hinges couple through
# the body's inertia: tilted, the yaw servo feels the roll and pitch motion (and the gyroscopic torque) and
# follows its reference with a lag, overshooting its acceleration by ~5% in the demo.
TOLERANCE = 0.1
# MuJoCo's accelerometer reads the explicit acceleration, (command - velocity) / tau, while the implicit-fast
# step moves the body by (command - velocity) / (tau + dt): IMU readings exceed the true acceleration by dt / tau.
DT = 1.0 / 240.0
IMU_EXCESS = 1.0 + DT / SERVO_TIME_CONSTANT
MIN_TRAVEL = 1.0  # m from the start, in the horizontal plane
# Small and quick: depth only at 64x48, no bags; the demo's IMUs, flying objects and planner as configured. No
# people: one who walks into the hovering UAV pushes it harder than its own limits allow (the demo's walker does
# at 14.9 s), and those limits are what is checked here.
QUICK = ["robot.sensors.cameras.0.width=64", "robot.sensors.cameras.0.height=48",
         "robot.sensors.cameras.0.outputs=[depth]", "recording.bag_formats=[]", "humans.count={min: 0, max: 0}"]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory, asset_cache):
    """The demo config over its whole duration, at a small camera resolution, without people."""
    run = tmp_path_factory.mktemp("demo") / "run"
    generate(load_experiment(CONFIGS / "demo.yaml", QUICK), run, cache=asset_cache)
    return Recording.open(run)


def joint_motion(rec: Recording) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per physics step: the joint angles (roll, pitch, yaw; R = Rx Ry Rz, so intrinsic XYZ Euler angles),
    their rates and accelerations, and the linear acceleration, all by finite differences of the poses."""
    path = rec.robot_path()
    dt = np.diff(path.time)
    assert np.allclose(dt, DT)
    angles = Rotation.from_quat(path.quat_wxyz[:, [1, 2, 3, 0]]).as_euler("XYZ")
    angles[:, 2] = np.unwrap(angles[:, 2])
    rates = np.diff(angles, axis=0) / DT
    velocity = np.diff(path.position, axis=0) / DT
    return rates, np.diff(rates, axis=0) / DT, np.diff(velocity, axis=0) / DT


def test_accelerations_and_imu_readings_stay_within_the_limits(demo_run):
    limits = demo_run.experiment_config().robot.uav
    rates, angular, linear = joint_motion(demo_run)
    a_max = min(limits.max_acceleration, G * math.tan(math.radians(limits.max_tilt_deg)))
    alpha = np.radians([limits.roll_pitch_acceleration_deg] * 2 + [limits.yaw_acceleration_deg])
    omega = np.radians([limits.roll_pitch_rate_deg] * 2 + [limits.yaw_rate_deg])
    # The run exercises the limits it is checked against: it turns and flies.
    assert np.abs(rates[:, 2]).max() > 0.5 * omega[2] and np.linalg.norm(linear, axis=1).max() > 0.2
    assert np.linalg.norm(linear, axis=1).max() <= a_max * (1 + TOLERANCE)
    assert np.all(np.abs(angular).max(axis=0) <= alpha * (1 + TOLERANCE))
    assert np.all(np.abs(rates).max(axis=0) <= omega * (1 + TOLERANCE))
    # A rigid body: an IMU at r from the body origin reads f = R^T (a + alpha x r + omega x (omega x r) + g z),
    # so | |f| - g | <= a + |alpha| r + |omega|^2 r. The body's angular acceleration is the joints' plus the
    # products of their rates (nested hinges): bounded by the sum of the joint limits and those products.
    body_alpha = alpha.sum() + omega[0] * omega[1] + (omega[0] + omega[1]) * omega[2]
    body_omega = omega.sum()
    for name, imu in demo_run.imu().items():
        mount = next(m.mount for m in demo_run.experiment_config().robot.sensors.imus if m.name == name)
        r = np.linalg.norm(np.add(mount.translation, CAMERA_OFFSET if mount.link == "camera_link" else 0.0))
        bound = IMU_EXCESS * (a_max + body_alpha * r) + body_omega**2 * r
        deviation = np.abs(np.linalg.norm(imu.linear_acceleration, axis=1) - G)
        assert deviation.max() <= bound, (name, deviation.max(), bound)


def rooms(rec: Recording) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (x, y) boxes of the environment's floors (one per room of the procedural flat), read with pxr."""
    scene = rec.path / "scene"
    stage = Usd.Stage.Open(str(scene / load_placement(scene / "placement.json").environment.path / "asset.usdc"))
    boxes = []
    for prim in stage.Traverse():
        if prim.GetPath().pathString.startswith("/asset/architecture/floor_"):
            box = UsdGeom.Imageable(prim).ComputeWorldBound(0, UsdGeom.Tokens.default_).ComputeAlignedRange()
            boxes.append((np.array(box.GetMin())[:2], np.array(box.GetMax())[:2]))
    return boxes


def test_the_demo_uav_leaves_its_start_room(demo_run):
    boxes = rooms(demo_run)
    assert len(boxes) == demo_run.experiment_config().environment.rooms
    xy = demo_run.robot_path().position[:, :2]
    inside = np.array([np.all((xy >= lo) & (xy <= hi), axis=1) for lo, hi in boxes])  # (rooms, steps)
    start_room = int(np.argmax(inside[:, 0]))
    assert inside[start_room, 0]
    elsewhere = ~inside[start_room] & np.delete(inside, start_room, axis=0).any(axis=0)
    assert elsewhere.any(), "the UAV never entered another room"
    assert np.linalg.norm(xy - xy[0], axis=1).max() >= MIN_TRAVEL

"""Motion blur of bags: the camera's motion integrated from the camera IMU (and odometry), checked
analytically and against a real recording's own camera poses."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.formats.bags.reader import image_array, open_bag
from core.recording import Recording
from postprocess.bag_motion import BagMotion, CameraMotion, integrate_backwards, namespaced_topic
from tests.conftest import run_grade


def _angle_deg(rotation: np.ndarray) -> float:
    return float(np.degrees(np.linalg.norm(Rotation.from_matrix(rotation).as_rotvec())))


def test_constant_rate_gives_the_analytic_rotation_and_identity_at_the_end():
    w = np.array([0.3, -1.2, 0.7])
    times = np.linspace(0.0, 1.0, 11)
    knots, poses = integrate_backwards(times, np.tile(w, (len(times), 1)), 0.13, 0.87)
    assert knots[0] == 0.13 and knots[-1] == 0.87 and len(knots) == 2 + 7  # samples 0.2 .. 0.8 inside
    np.testing.assert_allclose(poses[-1], np.eye(4), atol=1e-12)
    forward = poses[0][:3, :3].T  # camera(t_start) <- camera(t_end): the rotation over the window
    rotvec = Rotation.from_matrix(forward).as_rotvec()
    np.testing.assert_allclose(rotvec, w * (0.87 - 0.13), atol=1e-12)  # angle |w| T about w
    # Through a pose curve, the same at any time inside.
    curve = CameraMotion(times, np.tile(w, (len(times), 1)), np.zeros(0), None).pose_curve(0.87, 0.5)
    np.testing.assert_allclose(curve(np.array([0.87]))[0], np.eye(4), atol=1e-12)
    np.testing.assert_allclose(Rotation.from_matrix(curve(np.array([0.5]))[0][:3, :3].T).as_rotvec(),
                               w * 0.37, atol=1e-12)


def test_gyro_is_interpolated_linearly_between_samples():
    # Rate about z rising linearly 0 -> 2 rad/s over [0, 1]: the angle over [0, t] is t^2 (exact, any window).
    times, gyro = np.array([0.0, 1.0]), np.array([[0, 0, 0.0], [0, 0, 2.0]])
    for t_start, t_end in ((0.0, 1.0), (0.25, 0.75), (0.1, 0.3)):
        _, poses = integrate_backwards(times, gyro, t_start, t_end)
        angle = Rotation.from_matrix(poses[0][:3, :3].T).as_rotvec()[2]
        assert angle == pytest.approx(t_end ** 2 - t_start ** 2, abs=1e-12)
    # Constant velocity with a constant rotation: translation integrates in the rotating frame.
    _, poses = integrate_backwards(times, np.zeros((2, 3)), 0.0, 1.0, velocity=np.array([[1.0, 2.0, 3.0]]))
    np.testing.assert_allclose(poses[0][:3, 3], [-1.0, -2.0, -3.0], atol=1e-12)


def test_a_topic_is_found_under_the_bags_robot_namespace():
    bag = ["/clock", "/tf", "/my_robot_0/imu_camera", "/my_robot_0/odom", "/my_robot_0/camera/rgb/image_raw"]
    assert namespaced_topic("/imu_camera", bag) == "/my_robot_0/imu_camera"
    assert namespaced_topic("/odom", bag) == "/my_robot_0/odom"
    assert namespaced_topic("/tf", bag) == "/tf"  # present as given: taken as it is
    # Absent, or under two namespaces: left as given, so the error names what was asked for.
    assert namespaced_topic("/imu_body", bag) == "/imu_body"
    assert namespaced_topic("/odom", [*bag, "/my_robot_1/odom"]) == "/odom"


def _images(bag: Path, topic: str) -> list[np.ndarray]:
    with open_bag(bag) as reader:
        connections = [c for c in reader.connections if c.topic == topic]
        return [image_array(reader.deserialize(raw, c.msgtype)) for c, _, raw in reader.messages(connections)]


@pytest.mark.slow
def test_bag_blur_follows_the_integrated_imu(tiny_run, tmp_path):
    source = tiny_run / "bags" / "demo"
    out = tmp_path / "blurred"
    result = run_grade("postprocess", str(source), "--blur", "--out", str(out))
    assert result.returncode == 0, result.stderr
    topic = "/camera/rgb/image_raw"
    clean, blurred = _images(source, topic), _images(out, topic)
    assert len(clean) == len(blurred) > 2
    assert all(a.shape == b.shape for a, b in zip(clean, blurred, strict=True))
    assert sum(not np.array_equal(a, b) for a, b in zip(clean, blurred, strict=True)) > len(clean) // 2
    tiny = tmp_path / "tiny"
    result = run_grade("postprocess", str(source), "--blur", "--set", "blur.exposure=1e-6", "--out", str(tiny))
    assert result.returncode == 0, result.stderr
    assert all(np.array_equal(a, b) for a, b in zip(clean, _images(tiny, topic), strict=True))
    # The rotation integrated over one frame interval is the recording's own relative camera rotation.
    camera = BagMotion.read(source).camera("camera_optical_frame")
    frames = list(Recording.open(tiny_run).camera("camera"))
    moved = 0.0
    for earlier, later in pairwise(frames):
        curve = camera.pose_curve(later.time, later.time - earlier.time)
        integrated = curve(np.array([earlier.time]))[0]
        truth = np.linalg.inv(later.pose) @ earlier.pose  # camera(later) <- camera(earlier)
        assert _angle_deg(integrated[:3, :3].T @ truth[:3, :3]) < 0.2
        moved = max(moved, _angle_deg(truth[:3, :3]))
    assert moved > 0.2  # the check above means something


@pytest.mark.slow
@pytest.mark.parametrize(("drop", "words"), [("/imu_camera", ["/imu_camera"]),
                                              ("/tf_static", ["TF", "imu_camera", "camera_optical_frame"])])
def test_bag_without_the_camera_imu_or_tf_is_a_clear_error(tiny_run, tmp_path, drop, words):
    out = tmp_path / "x.bag"
    result = run_grade("postprocess", str(tiny_run / "bags" / "demo.bag"), "--blur", "--drop", drop, "--out", str(out))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and all(w in result.stderr for w in words), result.stderr
    assert not out.exists()


@pytest.mark.slow
def test_camera_imu_under_another_name_is_named_by_option(tiny_run, tmp_path):
    source = tiny_run / "bags" / "demo"
    renamed = ["--rename-topic", "/imu_camera=/cam/imu"]
    refused = run_grade("postprocess", str(source), "--blur", *renamed, "--out", str(tmp_path / "a"))
    assert refused.returncode == 2 and "/imu_camera" in refused.stderr and "Traceback" not in refused.stderr
    named = run_grade("postprocess", str(source), "--blur", *renamed, "--imu-topic", "/cam/imu",
                      "--out", str(tmp_path / "b"))
    assert named.returncode == 0, named.stderr
    assert _images(tmp_path / "b", "/camera/rgb/image_raw")

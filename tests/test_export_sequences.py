"""`grade export tum` and `grade export euroc` on a real short recording (and a post-processed copy), checked
with an independent reader (evo) against the recording's own poses, images and IMU samples."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml
from evo.tools import file_interface

from core.outputs import LOCK_FILE
from core.recording import Recording
from export.euroc import EurocOptions, export_euroc
from export.tum import TumOptions, export_tum, tum_depth
from tests.conftest import copy_run, run_grade

pytestmark = pytest.mark.slow

CAMERA = "camera"


def tree_hashes(root: Path) -> dict[str, str]:
    """Every file's hash but the output lock's (it names the process that held it)."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != LOCK_FILE}


def rows(path: Path) -> list[list[str]]:
    """The non-comment lines of a text file, split on spaces or commas."""
    return [line.replace(",", " ").split() for line in path.read_text().splitlines() if not line.startswith("#")]


def assert_poses_equal(positions: np.ndarray, quaternions_wxyz: np.ndarray, frames) -> None:
    """evo's positions and (w, x, y, z) quaternions against the recording's world <- optical poses."""
    from scipy.spatial.transform import Rotation

    poses = np.stack([frame.pose for frame in frames])
    np.testing.assert_allclose(positions, poses[:, :3, 3], atol=1e-6)
    rotations = Rotation.from_quat(quaternions_wxyz[:, [1, 2, 3, 0]]).as_matrix()
    np.testing.assert_allclose(rotations, poses[:, :3, :3], atol=1e-6)


@pytest.fixture(scope="module")
def run(tiny_run) -> Path:
    """The session's tiny run (read only)."""
    return tiny_run


@pytest.fixture(scope="module")
def processed(run, tmp_path_factory) -> Path:
    """A copy of the run (same folder name, another parent) post-processed with depth noise, IMU noise and blur."""
    copy = copy_run(run, tmp_path_factory.mktemp("processed") / run.name)
    result = run_grade("postprocess", str(copy), "--depth", "realsense", "--imu", "--blur")
    assert result.returncode == 0, result.stderr
    return copy


def test_tum_export_matches_the_recording_and_a_rerun_changes_nothing(run, tmp_path):
    out = tmp_path / "tum"
    result = run_grade("export", "tum", str(run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    camera = Recording.open(run).camera(CAMERA)
    sequence = out / run.name
    stamps = [f"{frame.time:.6f}" for frame in camera]

    trajectory = file_interface.read_tum_trajectory_file(sequence / "groundtruth.txt")
    np.testing.assert_allclose(trajectory.timestamps, [frame.time for frame in camera], atol=1e-6)
    assert_poses_equal(trajectory.positions_xyz, trajectory.orientations_quat_wxyz, camera)

    assert rows(sequence / "rgb.txt") == [[t, f"rgb/{t}.png"] for t in stamps]
    assert rows(sequence / "depth.txt") == [[t, f"depth/{t}.png"] for t in stamps]
    assert rows(sequence / "associations.txt") == [[t, f"rgb/{t}.png", t, f"depth/{t}.png"] for t in stamps]
    for frame, t in zip(camera, stamps, strict=True):
        assert (sequence / f"rgb/{t}.png").read_bytes() == frame.path("rgb").read_bytes()
        stored = cv2.imread(str(sequence / f"depth/{t}.png"), cv2.IMREAD_UNCHANGED)
        truth = frame.depth()
        assert stored.dtype == np.uint16 and stored.shape == truth.shape
        valid = truth > 0
        np.testing.assert_allclose(stored[valid] / 5000.0, truth[valid], atol=1e-4)
        assert np.all(stored[~valid] == 0)
    intrinsics = yaml.safe_load((sequence / "camera.yaml").read_text())
    K = camera[0].K
    assert (intrinsics["fx"], intrinsics["fy"], intrinsics["cx"], intrinsics["cy"]) == (K[0, 0], K[1, 1], K[0, 2],
                                                                                           K[1, 2])
    assert (intrinsics["width"], intrinsics["height"]) == (96, 72)
    document = json.loads((out / "export.json").read_text())
    assert document["complete"] and document["counts"] == {"sequences": 1, "frames": len(camera)}

    before = tree_hashes(out)
    again = run_grade("export", "tum", str(run), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert tree_hashes(out) == before


def test_tum_depth_cut_offs_zero_the_right_pixels(run, tmp_path):
    out = tmp_path / "cut"
    export_tum([run], out, options=TumOptions(depth_min=1.0, depth_max=3.0))
    camera = Recording.open(run).camera(CAMERA)
    cut = 0
    for frame in camera:
        stored = cv2.imread(str(out / run.name / f"depth/{frame.time:.6f}.png"), cv2.IMREAD_UNCHANGED) / 5000.0
        truth = frame.depth()
        inside = (truth >= 1.0) & (truth <= 3.0)
        np.testing.assert_allclose(stored[inside], truth[inside], atol=1e-4)
        assert np.all(stored[~inside] == 0)
        cut += np.count_nonzero(~inside & (truth > 0))
    assert cut > 0  # the range really cut something in this scene
    # Beyond what the uint16 holds at x5000 (13.107 m) the depth is invalid rather than saturated.
    assert tum_depth(np.array([0.0, 13.1, 13.2, np.nan]), 0.0, None).tolist() == [0, 65500, 0, 0]


def test_euroc_export_matches_the_recording_and_a_rerun_changes_nothing(run, tmp_path):
    out = tmp_path / "euroc"
    result = run_grade("export", "euroc", str(run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    recording = Recording.open(run)
    camera = recording.camera(CAMERA)
    mav = out / run.name / "mav0"
    stamps = [round(frame.time * 1e9) for frame in camera]

    trajectory = file_interface.read_euroc_csv_trajectory(mav / "state_groundtruth_estimate0" / "data.csv")
    assert_poses_equal(trajectory.positions_xyz, trajectory.orientations_quat_wxyz, camera)
    state = np.array(rows(mav / "state_groundtruth_estimate0" / "data.csv"), dtype=np.float64)
    assert state[:, 0].astype(np.int64).tolist() == stamps and state.shape[1] == 17
    positions, times = trajectory.positions_xyz, np.array([frame.time for frame in camera])
    np.testing.assert_allclose(state[5, 8:11], (positions[6] - positions[4]) / (times[6] - times[4]), atol=1e-9)
    assert np.all(state[:, 11:] == 0)

    assert rows(mav / "cam0" / "data.csv") == [[str(ns), f"{ns}.png"] for ns in stamps]
    for frame, ns in zip(camera, stamps, strict=True):
        assert (mav / "cam0" / "data" / f"{ns}.png").read_bytes() == frame.path("rgb").read_bytes()
    sensor = yaml.safe_load((mav / "cam0" / "sensor.yaml").read_text())
    assert sensor["resolution"] == [96, 72] and sensor["rate_hz"] == 30
    assert np.array_equal(np.reshape(sensor["T_BS"]["data"], (4, 4)), np.eye(4))

    imu = recording.imu()["imu_camera"]  # the demo's IMU on the camera's link
    samples = np.array(rows(mav / "imu0" / "data.csv"), dtype=np.float64)
    assert samples[:, 0].astype(np.int64).tolist() == [round(t * 1e9) for t in imu.time]
    np.testing.assert_array_equal(samples[:, 1:4], imu.angular_velocity)
    np.testing.assert_array_equal(samples[:, 4:7], imu.linear_acceleration)
    # Same mount as the camera: only the camera_link -> optical rotation (z forward, x right, y down) between them.
    imu_in_optical = np.reshape(yaml.safe_load((mav / "imu0" / "sensor.yaml").read_text())["T_BS"]["data"], (4, 4))
    expected = [[0, -1, 0, 0], [0, 0, -1, 0], [1, 0, 0, 0], [0, 0, 0, 1]]
    np.testing.assert_allclose(imu_in_optical, expected, atol=1e-12)

    before = tree_hashes(out)
    again = run_grade("export", "euroc", str(run), "--out", str(out))
    assert again.returncode == 0, again.stderr
    assert tree_hashes(out) == before


def test_processed_exports_use_the_postprocess_outputs(processed, tmp_path):
    recording = Recording.open(processed)
    camera = recording.camera(CAMERA)
    export_tum([processed], tmp_path / "tum", options=TumOptions(processed=True))
    for frame in camera:
        t = f"{frame.time:.6f}"
        blurred = frame.folder / "rgb_blur" / frame.path("rgb").name
        assert (tmp_path / "tum" / processed.name / f"rgb/{t}.png").read_bytes() == blurred.read_bytes()
        stored = cv2.imread(str(tmp_path / "tum" / processed.name / f"depth/{t}.png"), cv2.IMREAD_UNCHANGED)
        noisy = frame.processed("depth_noisy")
        np.testing.assert_allclose(stored / 5000.0, noisy, atol=1e-4)

    counts = export_euroc([processed], tmp_path / "euroc", options=EurocOptions(imu="imu_body", processed=True))
    noisy = recording.imu(noisy=True)["imu_body"]
    assert counts["imu samples"] == len(noisy.time)
    samples = np.array(rows(tmp_path / "euroc" / processed.name / "mav0" / "imu0" / "data.csv"), dtype=np.float64)
    np.testing.assert_array_equal(samples[:, 4:7], noisy.linear_acceleration)
    assert not np.array_equal(samples[:, 4:7], recording.imu()["imu_body"].linear_acceleration)


@pytest.mark.parametrize(("args", "message"), [
    (("tum", "--camera", "nope"), "no camera 'nope'"),
    (("euroc", "--imu", "nope"), "no IMU 'nope'"),
    (("tum", "--processed"), "grade postprocess RUN --blur"),
    (("euroc", "--processed"), "grade postprocess RUN --blur"),
])
def test_bad_requests_exit_2_and_write_nothing(run, tmp_path, args, message):
    out = tmp_path / "out"
    result = run_grade("export", args[0], str(run), "--out", str(out), *args[1:])
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not out.exists()


def test_an_incomplete_run_is_refused(run, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(run, broken, ignore=shutil.ignore_patterns("rgb", "depth", "instance", "semantic"))
    info = json.loads((broken / "run.json").read_text())
    (broken / "run.json").write_text(json.dumps({**info, "status": "interrupted"}))
    result = run_grade("export", "euroc", str(broken), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "not complete" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_two_runs_give_two_sequence_folders(run, processed, tmp_path):
    out = tmp_path / "both"
    counts = export_tum([run, processed], out)
    frames = len(Recording.open(run).camera(CAMERA))
    assert counts == {"sequences": 2, "frames": 2 * frames}
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [run.name, f"{run.name}_2"]  # same folder names
    for name in (run.name, f"{run.name}_2"):
        assert len(rows(out / name / "groundtruth.txt")) == frames

"""`grade export kitti` on the session's tiny recorded run: poses read with evo's KITTI reader against the run's
ground-truth trajectory (poses.tum), calibration against the intrinsics, times, images; two runs numbered in
order; bad requests exit 2 and write nothing."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from evo.tools import file_interface

from core.recording import Recording
from export.kitti import export_kitti
from tests.conftest import assert_refused, copy_run, run_grade

pytestmark = pytest.mark.slow  # the session's tiny run is recorded for them


def calib(path: Path) -> dict[str, np.ndarray]:
    """calib.txt as KITTI's readers (pykitti) parse it: `KEY: 12 values` per line."""
    out = {}
    for line in path.read_text().splitlines():
        key, values = line.split(":", 1)
        out[key] = np.array([float(v) for v in values.split()]).reshape(3, 4)
    return out


@pytest.fixture(scope="module")
def exported(tiny_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("kitti") / "out"
    result = run_grade("export", "kitti", str(tiny_run), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out


def test_kitti_sequence_matches_the_run(tiny_run, exported):
    camera = Recording.open(tiny_run).camera("camera")
    times, truth = camera.poses()  # the run's own ground-truth trajectory file, poses.tum
    assert len(times) == len(camera) > 1

    path = file_interface.read_kitti_poses_file(exported / "poses/00.txt")
    expected = np.linalg.inv(truth[0]) @ truth
    np.testing.assert_allclose(np.stack(path.poses_se3), expected, atol=1e-6)
    np.testing.assert_array_equal(path.poses_se3[0], np.eye(4))

    sequence = exported / "sequences/00"
    stamps = np.loadtxt(sequence / "times.txt")
    np.testing.assert_allclose(stamps, times, atol=1e-6)
    assert np.all(np.diff(stamps) > 0)

    matrices = calib(sequence / "calib.txt")
    assert sorted(matrices) == ["P0", "P1", "P2", "P3", "Tr"]
    K = camera[0].K
    for key in ("P0", "P1", "P2", "P3"):
        np.testing.assert_allclose(matrices[key], np.hstack([K, np.zeros((3, 1))]), rtol=1e-12)
    np.testing.assert_array_equal(matrices["Tr"], np.eye(4)[:3])  # no LiDAR on the camera's link

    for position, frame in enumerate(camera):
        assert (sequence / f"image_2/{position:06d}.png").read_bytes() == frame.path("rgb").read_bytes()
        grey = cv2.imread(str(sequence / f"image_0/{position:06d}.png"), cv2.IMREAD_UNCHANGED)
        assert grey.dtype == np.uint8 and grey.shape == (frame.height, frame.width)
        np.testing.assert_array_equal(grey, cv2.cvtColor(frame.rgb(), cv2.COLOR_RGB2GRAY))
    assert len(list((sequence / "image_0").iterdir())) == len(camera)
    assert (exported / "sequences.txt").read_text() == f"00 {tiny_run.name} camera\n"
    document = json.loads((exported / "export.json").read_text())
    assert document["complete"] and document["counts"] == {"sequences": 1, "frames": len(camera)}


def test_two_runs_are_numbered_in_order_and_a_rerun_changes_nothing(tiny_run, exported, tmp_path):
    out = tmp_path / "two"
    second = copy_run(tiny_run, tmp_path / "copy" / tiny_run.name)  # the same recording in a folder of the same name
    counts = export_kitti([tiny_run, second], out)
    frames = len(Recording.open(tiny_run).camera("camera"))
    assert counts == {"sequences": 2, "frames": 2 * frames}
    assert (out / "sequences.txt").read_text() == f"00 {tiny_run.name} camera\n01 {tiny_run.name}_2 camera\n"
    for number in ("00", "01"):
        assert (out / f"poses/{number}.txt").read_bytes() == (exported / "poses/00.txt").read_bytes()
        assert (out / f"sequences/{number}/calib.txt").read_bytes() == (exported / "sequences/00/calib.txt").read_bytes()
    before = {p: p.read_bytes() for p in sorted(out.rglob("*.txt"))}
    export_kitti([tiny_run, second], out)
    assert {p: p.read_bytes() for p in sorted(out.rglob("*.txt"))} == before


@pytest.mark.parametrize(("args", "message"), [
    (("{missing}",), "run.json"),
    (("{run}", "--processed"), "grade postprocess RUN --blur"),
])
def test_bad_requests_exit_2_and_write_nothing(tiny_run, tmp_path, args, message):
    out = tmp_path / "out"
    filled = [a.format(run=tiny_run, missing=tmp_path / "no-such-run") for a in args]
    assert_refused(run_grade("export", "kitti", *filled, "--out", str(out)), message)
    assert not out.exists()


def test_a_batch_exports_kitti_and_webdataset(tiny_run, tmp_path):
    from pipeline.batch import export_runs
    from pipeline.batch_config import BatchConfig

    assert {"webdataset", "kitti"} <= set(BatchConfig.model_fields["exports"].annotation.__args__[0].__args__)
    export_runs(["webdataset", "kitti"], [tiny_run], tmp_path)
    for fmt, counts in (("webdataset", "samples"), ("kitti", "frames")):
        document = json.loads((tmp_path / fmt / "export.json").read_text())
        assert document["format"] == fmt and document["complete"] and document["counts"][counts] > 0


def test_tr_is_the_lidar_pose_in_the_optical_frame_on_the_camera_link():
    from types import SimpleNamespace

    from core.config import SensorsConfig
    from core.config.sensors import LidarConfig, Mount
    from export.kitti import lidar_to_camera

    def recording(lidar_link: str) -> SimpleNamespace:
        lidar = LidarConfig(mount=Mount(link=lidar_link, translation=(1.0, 0.0, 0.5)))
        config = SimpleNamespace(robot=SimpleNamespace(sensors=SensorsConfig.model_validate({"lidar": lidar})))
        camera = SimpleNamespace(mount=Mount(link="base_link"))
        return SimpleNamespace(experiment_config=lambda: config, camera_config=lambda name: camera)

    # The LiDAR's origin, 1 m ahead of and 0.5 m above the camera: 1 m along the optical z, 0.5 m up (-y).
    np.testing.assert_allclose(lidar_to_camera(recording("base_link"), "camera") @ [0, 0, 0, 1], [0, -0.5, 1, 1],
                               atol=1e-12)
    np.testing.assert_array_equal(lidar_to_camera(recording("arm_link"), "camera"), np.eye(4))

"""core.recording.Recording on a real short run made by `grade generate`, checked against the files read
independently (json, numpy, OpenCV, run.json's counts), plus the documented example (docs/guides/recording.md)
run as written."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from core.errors import InputError
from core.formats.manifest import invalidate
from core.formats.run_info import read_run_info, write_run_info
from core.recording import Recording
from tests.conftest import CONFIGS, ROOT, run_grade

pytestmark = pytest.mark.slow  # records a short run (~15 s)

CAMERA, LIDAR = "camera", "lidar"
OVERRIDES = [
    "simulation.duration=0.5", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
    "flying_objects.count={min: 1, max: 1}", "robot.sensors.cameras.0.width=32", "robot.sensors.cameras.0.height=24",
    "robot.sensors.cameras.0.outputs=[rgb, depth, instance, semantic, normals, flow, boxes2d, boxes3d]",
    "recording.bag_formats=[ros1, ros2]", "recording.depth_npy=true",
    f"robot.sensors.lidar={{name: {LIDAR}, channels: 4, horizontal_resolution_deg: 10, rate_hz: 10}}",
]


@pytest.fixture(scope="module")
def run(tmp_path_factory, asset_cache) -> Path:
    out = tmp_path_factory.mktemp("recording") / "run"
    args = ["generate", str(CONFIGS / "demo.yaml"), "--out", str(out)]
    for override in [*OVERRIDES, f"assets_dir={asset_cache}"]:
        args += ["--set", override]
    result = run_grade(*args)
    assert result.returncode == 0, result.stderr + result.stdout
    return out


def raw_frames(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "gt" / CAMERA / "frames.jsonl").read_text().splitlines()]


def test_counts_match_run_json(run):
    rec = Recording.open(run)
    counts = json.loads((run / "run.json").read_text())["frame_counts"]
    assert rec.complete and rec.path == run and rec.cameras == [CAMERA] and rec.lidars == [LIDAR]
    assert len(rec.camera(CAMERA)) == counts[f"camera/{CAMERA}"] > 10
    assert len(rec.lidar(LIDAR)) == counts[f"lidar/{LIDAR}"] > 2
    assert len(rec.humans()) == counts["humans"]
    assert {name: len(series.time) for name, series in rec.imu().items()} == {
        name: counts[f"imu/{name}"] for name in ("imu_body", "imu_camera")}
    assert rec.config == rec.info.config and rec.experiment_config().robot.sensors.cameras[0].width == 32


def test_frames_poses_and_images_equal_the_files(run):
    camera = Recording.open(run).camera(CAMERA)
    raw = raw_frames(run)
    assert [f.time for f in camera] == [r["time"] for r in raw]
    times, poses = camera.poses()
    assert np.allclose(times, [r["time"] for r in raw], atol=1e-6)
    assert np.allclose(poses, [r["pose"] for r in raw], atol=1e-8)
    assert all(np.array_equal(f.pose, r["pose"]) and np.array_equal(f.K, r["K"]) for f, r in zip(camera, raw))
    folder = run / "gt" / CAMERA
    for frame, record in list(zip(camera, raw))[::5]:
        millimetres = cv2.imread(str(folder / record["files"]["depth"]), cv2.IMREAD_UNCHANGED)
        assert millimetres.dtype == np.uint16 and (millimetres > 0).mean() > 0.5
        assert np.array_equal(frame.depth(), millimetres.astype(np.float32) / 1000)
        metres = np.load(folder / record["files"]["depth_npy"])
        assert np.abs(frame.image("depth_npy") - metres).max() == 0
        assert np.abs(frame.depth() - metres)[metres < 65].max() <= 0.0005 + 1e-6
        bgr = cv2.imread(str(folder / record["files"]["rgb"]))
        assert np.array_equal(frame.rgb(), bgr[:, :, ::-1])
        instance = frame.instance()
        ids = set(np.unique(instance).tolist()) - {0}
        assert ids == {b.instance_id for b in frame.boxes_2d_tight} and ids <= set(camera.instances.instances)
        assert frame.normals().shape == (24, 32, 3) and frame.semantic().dtype == np.uint16
        assert len(frame.boxes_3d) == len(record["boxes_3d"]) and len(frame.boxes_2d_loose) == len(ids)


def test_states_lidar_humans_and_bags(run):
    rec = Recording.open(run)
    states, robot = rec.states(), rec.robot_path()
    raw = np.load(run / "states.npz")
    assert np.array_equal(robot.position, raw["robot_position"]) and np.array_equal(states["time"], raw["time"])
    sweep = rec.lidar(LIDAR)[2]
    raw = np.load(run / "gt" / LIDAR / "000002.npz")
    assert sweep.time == float(raw["time"]) and np.array_equal(sweep.points, raw["points"])
    humans = rec.humans()
    first = humans[0]
    raw = np.load(run / "humans" / "000000.npz")
    name = humans.document.humans[0].name
    assert np.array_equal(first.joints[name], raw[f"{name}.joints"])
    bags = rec.bags()
    assert bags.ros1 == [run / "bags" / "demo.bag"] and bags.ros2 == [run / "bags" / "demo"]


def test_unknown_sensor_lists_the_available_ones(run):
    rec = Recording.open(run)
    with pytest.raises(InputError, match="available: camera"):
        rec.camera("rear")
    with pytest.raises(InputError, match="available: lidar"):
        rec.lidar("top")


def test_incomplete_run_is_refused_unless_allowed(run, tmp_path):
    copy = tmp_path / "interrupted"
    shutil.copytree(run, copy)
    info = read_run_info(copy)
    info.status = "interrupted"
    write_run_info(copy, info)
    invalidate(copy)
    frames = copy / "gt" / CAMERA / "frames.jsonl"
    frames.write_text(frames.read_text() + '{"frame": 99, "ti')  # the write the interruption cut short
    with pytest.raises(InputError) as error:
        Recording.open(copy)
    assert error.value.file == str(copy / "run.json") and error.value.field == "status"
    assert "'interrupted'" in error.value.message and "allow_incomplete" not in error.value.message
    rec = Recording.open(copy, allow_incomplete=True)
    camera = rec.camera(CAMERA)
    assert not rec.complete and camera.dropped_tail and len(camera) == len(raw_frames(run))

    info.status = "complete"  # says complete, but a file no longer matches the manifest
    write_run_info(copy, info)
    with pytest.raises(InputError, match="it has no MANIFEST.json"):
        Recording.open(copy)


def test_documented_example_runs(run, tmp_path):
    """The documented example (docs/guides/recording.md), as a user would run it (a script of its own), on this run."""
    guide = (ROOT / "docs" / "guides" / "recording.md").read_text()
    section = guide.split("## Reading a recording in Python", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL)[1]
    assert '"runs/demo"' in code
    script = tmp_path / "example.py"
    script.write_text(code.replace('"runs/demo"', repr(str(run))))
    result = subprocess.run([sys.executable, str(script)], check=False, cwd=ROOT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    visible = [b for r in raw_frames(run) for b in r["boxes_2d_tight"] if b["x_min"] <= b["x_max"]]
    assert lines[0].startswith("demo complete ['camera']") and len(lines) == 1 + len(visible) > 1
    first = visible[0]
    assert f"({first['x_min']}, {first['y_min']})-({first['x_max']}, {first['y_max']})" in lines[1]

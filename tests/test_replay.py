"""`grade replay` on a real short recording of a flying UAV with people in view: teleport and physics replays
repeat it exactly, an added camera agrees with the original one, hidden humans take exactly their ids
away, replays of replays stay exact, and the run's own run.json drives the replay."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import trimesh
import yaml

from core.config_io import load_experiment
from core.formats.replay_report import read_replay_report
from core.recording import Recording
from pipeline.generate import generate
from replay.deviation import depth_mae_mm, pose_deviation, rgb_ssim
from tests.conftest import CONFIGS, run_grade

pytestmark = pytest.mark.slow

# Seed 1 puts people in the camera's view; the waypoint makes the UAV fly (and turn) through the run.
RUN = ["seed=1", "simulation.duration=0.5", "simulation.bootstrap=0.25", "robot.sensors.cameras.0.width=160",
       "robot.sensors.cameras.0.height=120", "humans.count={min: 5, max: 5}", "flying_objects.count={min: 2, max: 2}",
       "exploration.planner=waypoints", "exploration.waypoints=[[9, 9, 1.5]]", "recording.bag_formats=[ros1, ros2]"]
SIDE = {"name": "side", "mount": {"link": "camera_link", "translation": [0.1, 0.0, 0.0]}, "width": 200,
        "height": 150, "fov_deg": 100, "outputs": ["rgb", "depth", "instance", "semantic", "normals", "flow"]}


@pytest.fixture(scope="module")
def run(tmp_path_factory, asset_cache) -> Path:
    folder = tmp_path_factory.mktemp("replay") / "run"
    generate(load_experiment(CONFIGS / "demo.yaml", RUN), folder, cache=asset_cache)
    return folder


def replay(*args: str) -> subprocess.CompletedProcess:
    result = run_grade("replay", *args)
    assert result.returncode == 0, result.stderr
    return result


def hashes(root: Path, names: tuple[str, ...] = ("gt", "bags", "states.npz", "humans")) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] in names}


def test_teleport_replay_is_exact_and_so_is_a_replay_of_it(run, tmp_path):
    moved = Recording.open(run).robot_path().position
    assert np.linalg.norm(moved[-1] - moved[0]) > 0.05  # the UAV flies: the replay has something to follow
    first, second = tmp_path / "first", tmp_path / "second"
    replay(str(run), "--out", str(first))
    assert hashes(first) == hashes(run)  # frames, bags (ROS 1 and 2), states and humans byte for byte
    report = read_replay_report(first)
    assert report.mode == "teleport" and report.pose.steps == len(moved)
    assert report.pose.max_translation == 0 and report.pose.max_rotation == 0
    camera = report.cameras["camera"]
    assert camera.identical_frames == camera.frames == len(Recording.open(run).camera("camera"))
    assert (camera.ssim_min, camera.depth_mae_mm_max) == (1.0, 0.0)
    assert {imu.max_linear_acceleration + imu.max_angular_velocity for imu in report.imus.values()} == {0.0}
    replay(str(first), "--out", str(second))
    assert hashes(second) == hashes(run)
    info = json.loads((second / "run.json").read_text())
    assert info["replay_of"]["run"] == str(first.resolve()) and info["status"] == "complete"
    assert Recording.open(second).camera("camera")[0].rgb() is not None  # a recording every stage reads


def test_physics_replay_repeats_the_run_from_its_checkpoints(run, tmp_path):
    result = replay(str(run), "--out", str(tmp_path / "physics"), "--mode", "physics")
    report = read_replay_report(tmp_path / "physics")
    # The stated bound: unchanged surroundings, the same commands through the same engine: 1e-9 m, 1e-9 rad.
    assert report.pose.max_translation < 1e-9 and report.pose.max_rotation < 1e-9
    assert report.cameras["camera"].ssim_min > 0.999
    assert "robot pose over" in result.stdout + result.stderr


def test_a_window_replays_only_its_steps_on_the_same_time_axis(run, tmp_path):
    replay(str(run), "--out", str(tmp_path / "window"), "--from", "0.25", "--to", "0.5")
    original, part = Recording.open(run).camera("camera"), Recording.open(tmp_path / "window").camera("camera")
    assert [f.time for f in part] == [f.time for f in original if 0.25 - 1e-9 <= f.time <= 0.5 + 1e-9]
    by_time = {round(f.time, 9): f for f in original}
    for frame in part:
        assert frame.path("rgb").read_bytes() == by_time[round(frame.time, 9)].path("rgb").read_bytes()
    states = Recording.open(tmp_path / "window").robot_path()
    assert states.time[0] == pytest.approx(0.25) and states.time[-1] == pytest.approx(0.5)


def test_an_added_camera_sees_what_the_original_sees(run, tmp_path):
    overrides = tmp_path / "overrides.yaml"
    overrides.write_text(yaml.safe_dump({"cameras": [SIDE], "lidar": {"name": "lidar", "mount": {"link": "base_link"}},
                                         "imus": [{"name": "imu_extra", "mount": {"link": "base_link"}}],
                                         "depth_npy": True}))
    replay(str(run), "--out", str(tmp_path / "side"), "--with", str(overrides))
    recording = Recording.open(tmp_path / "side")
    original, side = recording.camera("camera"), recording.camera("side")
    assert side.instances == original.instances
    # ground truth the run did not record: normals, flow and float depth, for the new and the old camera
    frame = side[1]
    assert frame.normals().shape == (150, 200, 3) and frame.flow().shape == (150, 200, 2)
    np.testing.assert_allclose(frame.image("depth_npy"), frame.depth(), atol=5e-4)
    assert original[0].image("depth_npy") is not None
    duration = recording.robot_path().time[-1]
    assert recording.lidars == ["lidar"] and len(recording.lidar("lidar")) == int(duration * 10 + 1e-9) + 1
    extra = recording.imu()["imu_extra"]
    body = recording.imu()["imu_body"]  # on the same link: the same readings
    np.testing.assert_allclose(extra.linear_acceleration, body.linear_acceleration, atol=1e-9)
    agree = total = 0
    for a, b in zip(original, side, strict=True):
        assert a.time == b.time
        depth_b = b.depth()
        rows, cols = np.nonzero(depth_b > 0)
        # side pixel -> 3D (side camera) -> world -> original camera pixel
        rays = np.linalg.inv(b.K) @ np.stack([cols, rows, np.ones_like(cols)]).astype(float)
        world = b.pose @ np.vstack([rays * depth_b[rows, cols], np.ones(len(rows))])
        seen = np.linalg.inv(a.pose) @ world
        u = np.rint(a.K[0, 0] * seen[0] / seen[2] + a.K[0, 2]).astype(int)
        v = np.rint(a.K[1, 1] * seen[1] / seen[2] + a.K[1, 2]).astype(int)
        inside = (seen[2] > 0) & (u >= 0) & (u < a.width) & (v >= 0) & (v < a.height)
        depth_a, z = a.depth()[v[inside], u[inside]], seen[2][inside]
        # the nearest original pixel covers a footprint: on surfaces seen at grazing angles its depth differs by
        # a few percent of the distance
        close = np.abs(depth_a - z) < np.maximum(0.02, 0.05 * z)
        agree += int(close.sum())
        total += int(inside.sum())
        same_id = a.instance()[v[inside], u[inside]][close] == b.instance()[rows[inside], cols[inside]][close]
        assert same_id.mean() > 0.95
    assert total > 0 and agree / total > 0.97


def test_hiding_humans_removes_exactly_their_ids(run, tmp_path):
    overrides = tmp_path / "hide.yaml"
    overrides.write_text("hide: {humans: all}\n")
    replay(str(run), "--out", str(tmp_path / "hidden"), "--with", str(overrides))
    original = Recording.open(run).camera("camera")
    hidden = Recording.open(tmp_path / "hidden").camera("camera")
    humans = {i for i, e in original.instances.instances.items() if e.kind == "human"}
    assert humans and set(hidden.instances.instances) == set(original.instances.instances) - humans
    with_people = 0
    for a, b in zip(original, hidden, strict=True):
        before, after = a.instance(), b.instance()
        assert not np.isin(after, list(humans)).any()
        shown = np.isin(before, list(humans))
        with_people += bool(shown.any())
        if not shown.any():
            assert a.path("rgb").read_bytes() == b.path("rgb").read_bytes()
            np.testing.assert_array_equal(before, after)
        else:
            np.testing.assert_array_equal(before[~shown], after[~shown])  # what people hid is all that changed
    assert with_people > 0
    assert not (tmp_path / "hidden" / "humans").exists()


def test_the_run_replays_from_its_own_run_json(tmp_path, asset_cache):
    config = tmp_path / "experiment.yaml"
    shutil.copy(CONFIGS / "demo.yaml", config)
    folder = tmp_path / "run"
    generate(load_experiment(config, ["simulation.duration=0.25", "simulation.bootstrap=0.25",
                                      "robot.sensors.cameras.0.width=64", "robot.sensors.cameras.0.height=48",
                                      "humans.count={min: 1, max: 1}", "flying_objects.count={min: 0, max: 0}"]),
             folder, cache=asset_cache)
    config.write_text(config.read_text().replace("width: 640", "width: 320"))  # the file moved on; run.json did not
    replay(str(folder), "--out", str(tmp_path / "again"))
    assert hashes(tmp_path / "again", ("gt",)) == hashes(folder, ("gt",))


def test_verify_prints_the_deviation_and_keeps_nothing(run, tmp_path):
    result = replay(str(run), "--verify")
    printed, frames = result.stdout + result.stderr, len(Recording.open(run).camera("camera"))
    assert f"{frames}/{frames} frames identical" in printed and "SSIM 1.0000" in printed
    assert "replay written to" not in printed


@pytest.mark.parametrize(("args", "message"), [
    (["--out", "{run}"], "lies inside the input"),
    (["--out", "{tmp}/x", "--from", "5", "--to", "6"], "holds no step of the run"),
    (["--out", "{tmp}/x", "--mode", "fast"], "'fast' is not one of 'teleport', 'physics'"),
    (["--out", "{tmp}/x", "--with", "{tmp}/bad.yaml"], "no human named 'nobody'"),
    (["--out", "{tmp}/x", "--with", "{tmp}/set.yaml"], "set only keys under robot.sensors"),
    (["--out", "{tmp}/x", "--with", "{tmp}/empty.yaml"], "holds no overrides"),
    ([], "--out"),
])
def test_bad_replay_requests_exit_2_before_writing(run, tmp_path, args, message):
    (tmp_path / "bad.yaml").write_text("hide: {humans: [nobody]}\n")
    (tmp_path / "set.yaml").write_text("set: {simulation.duration: 9}\n")
    (tmp_path / "empty.yaml").write_text("# nothing to change\n")
    before = hashes(run, ("gt", "states.npz", "run.json"))
    result = run_grade("replay", str(run), *[a.format(run=run, tmp=tmp_path) for a in args])
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "x").exists()
    assert hashes(run, ("gt", "states.npz", "run.json")) == before


def test_deviation_measures_against_analytic_values():
    positions = np.zeros((3, 3))
    quats = np.tile([1.0, 0, 0, 0], (3, 1))
    moved = positions + [0.1, 0, 0]
    yawed = np.tile([np.cos(0.05), 0, 0, np.sin(0.05)], (3, 1))  # 0.1 rad about z
    deviation = pose_deviation(positions, quats, moved, yawed)
    assert deviation.mean["x"] == pytest.approx(0.1) and deviation.std["x"] == pytest.approx(0.0)
    assert deviation.mean["yaw"] == pytest.approx(0.1) and deviation.max_rotation == pytest.approx(0.1)
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    assert rgb_ssim(image, image) == 1.0 and rgb_ssim(image, 255 - image) < 0.1
    # The same figure as scikit-image's SSIM (the independent implementation, in the dev extra).
    from skimage.metrics import structural_similarity

    noisy = np.clip(image + np.random.default_rng(1).normal(0, 20, image.shape), 0, 255).astype(np.uint8)
    for other in (noisy, 255 - image, np.roll(image, 3, axis=1)):
        expected = structural_similarity(image, other, channel_axis=2, data_range=255)
        assert rgb_ssim(image, other) == pytest.approx(expected, abs=1e-12)
    depth = np.full((4, 4), 2.0, np.float32)
    other = depth + 0.003
    other[0, 0] = 0  # no return in one: not compared
    assert depth_mae_mm(depth, other) == pytest.approx(3.0, abs=1e-3)


def test_an_added_object_gets_a_new_id_and_leaves_the_others_alone(run, tmp_path):
    trimesh.creation.box((0.4, 0.4, 0.4)).export(tmp_path / "crate.obj")
    first = Recording.open(run).camera("camera")[0]
    centre = first.pose[:3, 3] + 1.5 * first.pose[:3, 2]  # 1.5 m in front of the camera at the first frame
    overrides = tmp_path / "add.yaml"
    overrides.write_text(yaml.safe_dump({"add_objects": [{"path": "crate.obj", "position": centre.tolist(),
                                                          "label": "box"}]}))
    replay(str(run), "--out", str(tmp_path / "added"), "--with", str(overrides))
    before, after = Recording.open(run).camera("camera"), Recording.open(tmp_path / "added").camera("camera")
    new = set(after.instances.instances) - set(before.instances.instances)
    assert len(new) == 1 and min(new) > max(before.instances.instances)
    (crate,) = new
    assert after.instances.instances[crate].semantic_class == "box"
    assert all(after.instances.instances[i] == entry for i, entry in before.instances.instances.items())
    instance = after[0].instance()
    assert instance[after[0].height // 2, after[0].width // 2] == crate  # straight ahead of the camera
    covered = instance == crate
    np.testing.assert_array_equal(instance[~covered], before[0].instance()[~covered])
    depth = after[0].depth()[covered]
    assert depth.min() == pytest.approx(1.3, abs=0.1)  # the near face: 1.5 m minus half the crate


def test_override_file_paths_are_relative_to_the_overrides_file(tmp_path):
    from replay.overrides import load_overrides

    folder = tmp_path / "overrides"
    folder.mkdir()
    (folder / "with.yaml").write_text(yaml.safe_dump({"set": {"render.environment": "sky.hdr",
                                                               "render.exposure.ev": 1.0}}))
    overrides = load_overrides(folder / "with.yaml")
    assert overrides.set == {"render.environment": str((folder / "sky.hdr").resolve()), "render.exposure.ev": 1.0}

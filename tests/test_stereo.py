"""Stereo cameras (`stereo: {baseline: b}` on a camera, core.config.sensors.StereoConfig): the pair's two cameras
and their names, the disparity of a wall at known depth against f b / z, the shared trigger, the right camera's
CameraInfo read back by rosbags, the KITTI and EuRoC exports' calibration, and bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import CONFIGS, TINY_RUN, assert_refused, run_grade
from rosbags.highlevel import AnyReader
from scipy.spatial.transform import Rotation

from core.config import ExperimentConfig
from core.config.sensor_kinds import SensorsConfig
from core.config_io import load_experiment
from core.formats.run_layout import BAGS_DIR
from core.recording import Recording
from pipeline.generate import generate
from simulation.embedded import EmbeddedWorld
from tests.test_backend import ROOM, UAV_START, box_scene, record_steps, transform  # noqa: F401 (box_scene: a fixture)

BASELINE = 0.11
W, H, FOV = 160, 120, 90.0
MOUNT = {"link": "camera_link", "translation": [0.1, 0.0, 0.02], "rpy_deg": [0.0, 0.0, 0.0]}
STEPS = 16  # two frames at 30 Hz of the 240 Hz physics, plus the first


def stereo_config() -> ExperimentConfig:
    return ExperimentConfig.model_validate({
        "robot": {"kind": "uav", "sensors": {
            "cameras": [{"name": "cam", "width": W, "height": H, "fov_deg": FOV, "mount": MOUNT,
                         "outputs": ["rgb", "depth"], "stereo": {"baseline": BASELINE}}]}},
        "recording": {"bag_formats": ["ros1", "ros2"], "depth_npy": True},
    })


def test_a_stereo_entry_is_two_cameras_named_after_it_and_dumps_as_given():
    sensors = stereo_config().robot.sensors
    left, right = sensors.cameras
    assert (left.name, right.name) == ("cam_left", "cam_right")
    assert [key for key, _ in sensors.keyed()] == ["cameras.0", "cameras.0"]
    assert left.mount == SensorsConfig.model_validate({"cameras": [{"name": "x", "mount": MOUNT}]}).cameras[0].mount
    # The right camera is `baseline` along the mount's -y (its optical +x), whatever the mount's rotation.
    rpy = (10.0, -20.0, 35.0)
    turned = SensorsConfig.model_validate({"cameras": [{"name": "c", "mount": {**MOUNT, "rpy_deg": rpy},
                                                        "stereo": {"baseline": BASELINE}}]}).cameras
    offset = np.subtract(turned[1].mount.translation, turned[0].mount.translation)
    np.testing.assert_allclose(offset, Rotation.from_euler("xyz", rpy, degrees=True).apply([0, -BASELINE, 0]),
                               atol=1e-12)
    for a, b in (left, right), turned:
        assert (a.camera_k, a.rate_hz, a.lens, a.width) == (b.camera_k, b.rate_hz, b.lens, b.width)
    dumped = sensors.model_dump(exclude_defaults=True)
    assert [c["name"] for c in dumped["cameras"]] == ["cam"] and dumped["cameras"][0]["stereo"] == {
        "baseline": BASELINE}
    assert SensorsConfig.model_validate(sensors.model_dump()).model_dump() == sensors.model_dump()


@pytest.fixture(scope="module")
def recorded(box_scene, tmp_path_factory):  # noqa: F811 (the fixture imported above)
    config = stereo_config()
    folder = tmp_path_factory.mktemp("stereo")
    world = EmbeddedWorld(config, box_scene)
    frames = {name: (world.robot().render(name), world.robot().camera_pose(name)) for name in ("cam_left", "cam_right")}
    record_steps(world, config, folder, STEPS)
    return frames, folder


def wall_pixels(depth: np.ndarray, pose: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Which pixels see the room's x = 6 m wall (the depth image unprojected through the exact pose)."""
    v, u = np.mgrid[0:H, 0:W]
    rays = np.linalg.inv(K) @ np.stack([u.ravel(), v.ravel(), np.ones(u.size)])
    world = (pose @ np.vstack([rays * depth.ravel(), np.ones(u.size)]))[:3]
    return (np.abs(world[0] - ROOM[0]) < 1e-3).reshape(H, W)


def test_the_disparity_of_a_wall_is_f_b_over_z(recorded):
    # The UAV faces the room's x = 6 m wall at yaw 0.3 rad: a tilted plane, so 1/z is linear and monotonic
    # along each row, and a left pixel's inverse depth is seen on the right camera's row once, at u - f b / z.
    frames, _ = recorded
    (left, left_pose), (right, right_pose) = frames["cam_left"], frames["cam_right"]
    K = left.camera.K
    np.testing.assert_array_equal(K, right.camera.K)
    f = K[0, 0]
    z_left, z_right = left.depth.astype(np.float64), right.depth.astype(np.float64)
    left_wall, right_wall = wall_pixels(z_left, left_pose, K), wall_pixels(z_right, right_pose, K)
    errors = []
    for row in range(H):
        columns, right_columns = np.flatnonzero(left_wall[row]), np.flatnonzero(right_wall[row])
        if len(right_columns) < 20:
            continue
        inverse = 1.0 / z_right[row, right_columns]
        order = np.argsort(inverse)
        assert np.all(np.diff(inverse[order]) > 0)
        for column in columns:
            w = 1.0 / z_left[row, column]
            if not inverse.min() <= w <= inverse.max():
                continue
            matched = np.interp(w, inverse[order], right_columns[order])  # the right column seeing this depth
            errors.append((column - matched) - f * BASELINE * w)
    errors = np.abs(errors)
    assert len(errors) > 1000
    print(f"disparity error over {len(errors)} wall pixels: max {errors.max():.5f} px, "
          f"mean {errors.mean():.5f} px (f b / z about {f * BASELINE / 4:.1f} px)")
    assert errors.max() < 0.01, f"disparity error up to {errors.max():.4f} px"


def test_both_cameras_record_at_the_same_times_with_the_right_ones_projection(recorded):
    _, folder = recorded
    bags = sorted((folder / BAGS_DIR).iterdir())
    assert len(bags) == 2  # ROS 1 and ROS 2
    for bag in bags:
        with AnyReader([bag]) as reader:
            infos: dict[str, list] = {}
            static = {}
            for connection, _, raw in reader.messages():
                message = reader.deserialize(raw, connection.msgtype)
                if connection.topic.endswith("camera_info"):
                    infos.setdefault(connection.topic, []).append(message)
                elif connection.topic == "/tf_static":
                    static |= {t.child_frame_id: t for t in message.transforms}
        left, right = infos["/cam_left/camera_info"], infos["/cam_right/camera_info"]
        stamps = [[(m.header.stamp.sec, m.header.stamp.nanosec) for m in side] for side in (left, right)]
        assert stamps[0] == stamps[1] and len(stamps[0]) == 3
        p_left, p_right = (np.asarray(side[0].P if hasattr(side[0], "P") else side[0].p) for side in (left, right))
        fx = p_left[0]
        assert p_left[3] == 0.0 and p_right[3] == pytest.approx(-fx * BASELINE, abs=1e-12)
        np.testing.assert_array_equal(np.delete(p_left, 3), np.delete(p_right, 3))
        # The TF tree: both camera frames under the mount link, the baseline between them along the link's -y.
        offset = [static[f"cam_{side}"].transform.translation for side in ("left", "right")]
        np.testing.assert_allclose([offset[1].x - offset[0].x, offset[1].y - offset[0].y, offset[1].z - offset[0].z],
                                   [0.0, -BASELINE, 0.0], atol=1e-12)
        assert {"cam_left_optical_frame", "cam_right_optical_frame"} <= set(static)


STEREO_RUN = ["robot.sensors.cameras.0.stereo={baseline: 0.11}", "robot.sensors.cameras.0.outputs=[rgb, depth]"]


@pytest.fixture(scope="module")
def stereo_run(tmp_path_factory, asset_cache) -> Path:
    folder = tmp_path_factory.mktemp("stereo-run")
    generate(load_experiment(CONFIGS / "demo.yaml", [*TINY_RUN, *STEREO_RUN]), folder, cache=asset_cache, wait=True)
    return folder


def test_a_recorded_pair_reads_back_with_one_timeline(stereo_run):
    recording = Recording.open(stereo_run)
    assert recording.cameras == ["camera_left", "camera_right"]
    left, right = recording.camera("camera_left"), recording.camera("camera_right")
    assert [f.time for f in left] == [f.time for f in right] and len(left) > 0
    relative = np.linalg.inv(left[0].pose) @ right[0].pose  # right optical in left optical: +x by the baseline
    np.testing.assert_allclose(relative, transform(np.eye(3), [BASELINE, 0, 0]), atol=1e-9)
    assert recording.camera_config("camera_right").stereo_side.pair == "camera"
    dumped = yaml.safe_load((stereo_run / "run.json").read_text())["config"]["robot"]["sensors"]["cameras"]
    assert [(c["name"], c["stereo"]) for c in dumped] == [("camera", {"baseline": BASELINE})]


def test_kitti_writes_the_pair_with_the_baseline_in_calib(stereo_run, tmp_path):
    assert run_grade("export", "kitti", str(stereo_run), "--out", str(tmp_path / "kitti")).returncode == 0
    sequence = tmp_path / "kitti" / "sequences" / "00"
    frames = len(Recording.open(stereo_run).camera("camera_left"))
    for folder in ("image_0", "image_1", "image_2", "image_3"):
        assert len(list((sequence / folder).iterdir())) == frames
    calib = {line.split(":")[0]: np.array(line.split()[1:], float)
             for line in (sequence / "calib.txt").read_text().splitlines()}
    fx = calib["P0"][0]
    assert calib["P0"][3] == 0.0 and calib["P1"][3] == pytest.approx(-fx * BASELINE, abs=1e-9)
    assert calib["P3"][3] == calib["P1"][3] and calib["P2"][3] == 0.0
    assert (tmp_path / "kitti" / "sequences.txt").read_text() == f"00 {stereo_run.name} camera\n"


def test_euroc_writes_cam0_and_cam1_with_the_right_cameras_t_bs(stereo_run, tmp_path):
    assert run_grade("export", "euroc", str(stereo_run), "--out", str(tmp_path / "euroc")).returncode == 0
    mav = tmp_path / "euroc" / stereo_run.name / "mav0"
    cam0, cam1 = (yaml.safe_load((mav / cam / "sensor.yaml").read_text()) for cam in ("cam0", "cam1"))
    np.testing.assert_array_equal(np.reshape(cam0["T_BS"]["data"], (4, 4)), np.eye(4))
    np.testing.assert_allclose(np.reshape(cam1["T_BS"]["data"], (4, 4)), transform(np.eye(3), [BASELINE, 0, 0]),
                               atol=1e-12)
    assert cam0["intrinsics"] == cam1["intrinsics"] and cam0["resolution"] == cam1["resolution"]
    assert (mav / "cam0" / "data.csv").read_text() == (mav / "cam1" / "data.csv").read_text()


@pytest.mark.parametrize(("setting", "mentions"), [
    ("robot.sensors.cameras.0.stereo={baseline: 0}", ["robot.sensors.cameras.0.stereo.baseline", "greater than 0"]),
    ("robot.sensors.cameras.0.stereo={baseline: -0.1}", ["robot.sensors.cameras.0.stereo.baseline"]),
    ("robot.sensors.imus.0.name=camera_right", ["robot.sensors.cameras.0.stereo", "'camera_right'"]),
], ids=["zero baseline", "negative baseline", "derived name clash"])
def test_bad_stereo_input_exits_2_naming_the_field(setting, mentions):
    settings = ["robot.sensors.cameras.0.stereo={baseline: 0.1}", setting]
    result = run_grade("config", "validate", str(CONFIGS / "demo.yaml"),
                       *(arg for each in settings for arg in ("--set", each)))
    assert_refused(result, *mentions)


@pytest.mark.slow
def test_orbslam3_stereo_tracks_a_stereo_camera_without_naming_the_right_one(asset_cache, tmp_path):
    # test_slam_runners' UAV flight (3 s, 320x240, 106 frames) with the camera made a pair: measured 106 of 106
    # frames tracked, ATE 1.2 cm; the bound is test_slam_runners' ORB-SLAM3 bound.
    from core.formats.tum import TUM_FILE
    from evaluation.orbslam import SETTINGS_FILE, run_orbslam3
    from evaluation.vocabulary import build_vocabulary
    from tests.test_slam_runners import (
        ORBSLAM_ATE_BOUND,
        UAV,
        VOCABULARY_EVERY,
        VOCABULARY_K,
        VOCABULARY_LEVELS,
        evo_ate,
    )

    run = tmp_path / "run"
    generate(load_experiment(CONFIGS / "demo.yaml", [*UAV, "robot.sensors.cameras.0.stereo={baseline: 0.11}"]),
             run, cache=asset_cache)
    left = Recording.open(run).camera("camera_left")
    vocabulary = build_vocabulary((frame.rgb() for frame in list(left)[::VOCABULARY_EVERY]), tmp_path / "voc.txt",
                                  k=VOCABULARY_K, levels=VOCABULARY_LEVELS, seed=7)
    (tmp_path / "orb").mkdir()
    result = run_orbslam3(run, tmp_path / "orb", mode="stereo", camera="camera", vocabulary=vocabulary)
    assert result.tracked >= 0.9 * result.frames and result.frames == len(left)
    ate = evo_ate(left.folder / TUM_FILE, result.trajectory)
    assert ate < ORBSLAM_ATE_BOUND, f"ORB-SLAM3 stereo ATE {ate:.4f} m"
    settings = (tmp_path / "orb" / SETTINGS_FILE).read_text()
    baseline = settings.split("Stereo.T_c1_c2")[1].split("data: [1.0, 0.0, 0.0, ")[1].split(",")[0]
    assert float(baseline) == pytest.approx(BASELINE, abs=1e-9)


def test_a_slam_benchmark_method_takes_stereo_without_naming_the_right_camera():
    """The runner finds the recording's `stereo:` pair; `right_camera` stays for pairs made of two cameras."""
    from pydantic import ValidationError

    from pipeline.benchmark_config import SlamMethod

    assert SlamMethod(name="stereo", runner="orbslam3", mode="stereo").right_camera is None
    assert SlamMethod(name="pair", runner="orbslam3", mode="stereo", right_camera="right").right_camera == "right"
    with pytest.raises(ValidationError, match="only orbslam3's stereo mode takes `right_camera`"):
        SlamMethod(name="rgbd", runner="orbslam3", mode="rgbd", right_camera="right")


def test_replay_with_adds_a_stereo_pair_to_a_recorded_run(tiny_run, tmp_path):
    """`grade replay --with` adds a `stereo:` camera as its two cameras, rendered at the recorded run's times, the right
    one `baseline` along -y of the mount."""
    overrides = tmp_path / "with.yaml"
    overrides.write_text(yaml.safe_dump({"sensors": [{"type": "camera", "name": "pair", "mount": MOUNT, "width": 64,
                                                      "height": 48, "stereo": {"baseline": BASELINE}}]}))
    result = run_grade("replay", str(tiny_run), "--out", str(tmp_path / "replay"), "--with", str(overrides))
    assert result.returncode == 0, result.stderr
    replayed = Recording.open(tmp_path / "replay")
    left, right = replayed.camera("pair_left"), replayed.camera("pair_right")
    assert [f.time for f in left] == [f.time for f in right] == [f.time for f in Recording.open(tiny_run).camera(
        "camera")]
    offset = np.linalg.inv(left[0].pose) @ right[0].pose  # the right camera in the left's optical frame
    assert np.allclose(offset[:3, 3], [BASELINE, 0.0, 0.0], atol=1e-9) and np.allclose(offset[:3, :3], np.eye(3))

"""Sensors as kinds (core.config.sensor_kinds, simulation.recording.sensor_streams): the typed list and the
earlier form it normalises, and several LiDARs on one robot, each read back from the bags by rosbags' AnyReader
at its own topic and frame, and each ground-truth stream equal to an analytic ray cast of its own beams."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import CONFIGS, TINY_RUN, assert_refused, run_grade
from rosbags.highlevel import AnyReader
from scipy.spatial.transform import Rotation

from core.config import ExperimentConfig, LidarConfig
from core.config_io import dump_yaml, load_experiment
from core.errors import ConfigError
from core.formats.lidar import read_sweep, sweep_files
from core.formats.run_layout import BAGS_DIR, GT_DIR
from core.recording import Recording
from pipeline.generate import generate
from replay.overrides import ReplayOverrides, replay_config
from simulation.embedded import EmbeddedWorld
from tests.test_backend import UAV_START, box_scene, record_steps, room_distance, transform  # noqa: F401 (box_scene: a fixture)

FRONT = {"link": "base_link", "translation": [0.05, 0.02, 0.1], "rpy_deg": [10.0, -5.0, 30.0]}
REAR = {"link": "base_link", "translation": [-0.1, 0.0, 0.05], "rpy_deg": [0.0, 15.0, 180.0]}
LIDAR_HZ = 60.0
STEPS = 12  # four sweeps each at 60 Hz of the 240 Hz physics


def two_lidars() -> ExperimentConfig:
    lidar = {"type": "lidar", "channels": 4, "vertical_fov_deg": {"min": -20, "max": 20},
             "horizontal_resolution_deg": 7.5, "min_range": 0.1, "max_range": 3.0, "rate_hz": LIDAR_HZ}
    return ExperimentConfig.model_validate({
        "name": "lidars",
        "robot": {"kind": "uav", "sensors": [
            {**lidar, "name": "front", "mount": FRONT},
            {"type": "imu", "name": "imu", "mount": {"link": "base_link"}},
            {**lidar, "name": "rear", "mount": REAR, "channels": 3, "horizontal_fov_deg": 90.0},
        ]},
        "recording": {"bag_formats": ["ros1", "ros2"]},
    })


def mount_pose(mount: dict) -> np.ndarray:
    return transform(Rotation.from_euler("xyz", mount["rpy_deg"], degrees=True).as_matrix(), mount["translation"])


def cloud_points(message) -> np.ndarray:
    """The x, y, z of a sensor_msgs/PointCloud2, from its own field table."""
    offsets = {field.name: field.offset for field in message.fields}
    rows = np.frombuffer(bytes(message.data), np.uint8).reshape(-1, message.point_step)
    return np.stack([rows[:, offsets[axis]:offsets[axis] + 4].copy().view(np.float32)[:, 0] for axis in "xyz"],
                    axis=1)


@pytest.fixture(scope="module")
def recorded(box_scene, tmp_path_factory):  # noqa: F811 (the fixture imported above)
    config = two_lidars()
    folder = tmp_path_factory.mktemp("lidars")
    world = EmbeddedWorld(config, box_scene)
    record_steps(world, config, folder, STEPS)
    return config, folder


@pytest.mark.parametrize("bag", ["lidars.bag", "lidars"])
def test_each_lidar_is_read_back_from_the_bag_at_its_own_topic_and_frame(recorded, bag):
    config, folder = recorded
    with AnyReader([folder / BAGS_DIR / bag]) as reader:
        topics = {connection.topic: connection for connection in reader.connections}
        for lidar in config.robot.sensors.lidars:
            connection = topics[f"/{lidar.name}/points"]
            assert connection.msgtype == "sensor_msgs/msg/PointCloud2"
            messages = [reader.deserialize(raw, connection.msgtype)
                        for _, _, raw in reader.messages(connections=[connection])]
            sweeps = [read_sweep(path) for path in sweep_files(folder / GT_DIR / lidar.name)]
            assert len(messages) == len(sweeps) == STEPS * LIDAR_HZ / 240 + 1
            for message, sweep in zip(messages, sweeps, strict=True):
                assert message.header.frame_id == lidar.name
                assert message.width == len(sweep.points)
                np.testing.assert_array_equal(cloud_points(message), sweep.points)


def test_each_lidar_ground_truth_is_a_ray_cast_of_its_own_beams(recorded):
    config, folder = recorded
    poses = {}
    for lidar in config.robot.sensors.lidars:
        sweeps = [read_sweep(path) for path in sweep_files(folder / GT_DIR / lidar.name)]
        low, high = lidar.vertical_fov_deg.min, lidar.vertical_fov_deg.max
        elevation = np.radians(np.linspace(low, high, lidar.channels))
        fov, resolution = lidar.horizontal_fov_deg, lidar.horizontal_resolution_deg
        azimuth = (np.radians(np.arange(-180.0, 180.0, resolution)) if fov == 360.0 else
                   np.radians(-fov / 2 + np.arange(round(fov / resolution) + 1) * resolution))
        e, a = np.meshgrid(elevation, azimuth, indexing="ij")
        beams = np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=-1).reshape(-1, 3)
        for sweep in sweeps:
            assert sweep.ranges.shape == (lidar.channels, len(azimuth))
            distance = room_distance(sweep.pose[:3, 3], beams @ sweep.pose[:3, :3].T)
            expected = np.where((distance >= lidar.min_range) & (distance <= lidar.max_range), distance, 0.0)
            np.testing.assert_allclose(sweep.ranges.reshape(-1), expected, atol=1e-4)
        poses[lidar.name] = sweeps[0].pose
    x, y, z, yaw = UAV_START
    base = transform(Rotation.from_euler("z", yaw).as_matrix(), (x, y, z))
    for name, mount in (("front", FRONT), ("rear", REAR)):
        np.testing.assert_allclose(poses[name], base @ mount_pose(mount), atol=1e-6)


def test_two_sensors_with_one_name_are_refused_naming_the_field():
    assert_refused(run_grade("config", "validate", str(CONFIGS / "demo.yaml"), "--set",
                             "robot.sensors=[{type: lidar, name: l}, {type: imu, name: l}]"),
                   "robot.sensors.1.name", "'l'")
    assert_refused(run_grade("config", "validate", str(CONFIGS / "demo-tiago.yaml"), "--set",
                             "robot.sensors.lidar.name=imu_head"), "robot.sensors.lidar.name", "imus.1")


def test_the_earlier_form_is_normalised_and_dumped_as_it_was_given():
    config = load_experiment(CONFIGS / "demo-tiago.yaml")
    sensors = config.robot.sensors
    assert [sensor.type for sensor in sensors.root] == ["camera", "imu", "imu", "lidar"]
    dumped = config.model_dump(mode="json")["robot"]["sensors"]
    assert list(dumped) == ["cameras", "imus", "lidar"] and dumped["lidar"]["name"] == "lidar"
    assert "type" not in dumped["cameras"][0]
    # `grade config show` prints the list, which reads back as the same config.
    shown = yaml.safe_load(dump_yaml(config))
    assert [entry["type"] for entry in shown["robot"]["sensors"]] == ["camera", "imu", "imu", "lidar"]
    again = ExperimentConfig.model_validate(shown)
    assert again.model_dump(mode="json") == config.model_dump(mode="json")


def test_several_lidars_dump_as_the_list_and_errors_name_list_keys():
    config = two_lidars()
    assert [entry["name"] for entry in config.model_dump(mode="json")["robot"]["sensors"]] == ["front", "imu", "rear"]
    with pytest.raises(ConfigError, match=r"robot\.sensors\.2\.rate_hz = 7 Hz must divide"):
        sensors = "[{type: imu, name: a}, {type: imu, name: b}, {type: lidar, name: c, rate_hz: 7}]"
        load_experiment(CONFIGS / "demo.yaml", [f"robot.sensors={sensors}"])
    with pytest.raises(ConfigError, match=r"robot\.sensors\.0\.type: type must be one of camera, imu, lidar"):
        load_experiment(CONFIGS / "demo.yaml", ["robot.sensors=[{type: sonar, name: a}]"])


def test_replay_puts_sensors_in_by_name():
    recorded = load_experiment(CONFIGS / "demo-tiago.yaml").model_dump(mode="json")
    rear = {"type": "lidar", "name": "rear", "mount": {"link": "base_laser_link"}}
    overrides = ReplayOverrides.model_validate({"sensors": [rear]})
    config = replay_config(recorded, overrides, "test")
    assert [lidar.name for lidar in config.robot.sensors.lidars] == ["lidar", "rear"]
    # The replay's record (defaults left out) still says what type each added sensor is.
    assert overrides.model_dump(mode="json", exclude_defaults=True)["sensors"] == [rear]
    # `lidar:` replaces the run's one LiDAR whatever its name, as before the list.
    config = replay_config(recorded, ReplayOverrides(lidar=LidarConfig(name="velodyne", channels=32,
                                                                       mount={"link": "base_laser_link"})), "test")
    assert [(lidar.name, lidar.channels) for lidar in config.robot.sensors.lidars] == [("velodyne", 32)]
    assert list(config.model_dump(mode="json")["robot"]["sensors"]) == ["cameras", "imus", "lidar"]


LIST_SENSORS = ("robot.sensors=[{type: camera, name: camera, mount: {link: camera_link}, width: 96, height: 72}, "
                "{type: lidar, name: front, mount: {link: base_link}, channels: 4, horizontal_resolution_deg: 6}, "
                "{type: imu, name: imu_body}, "
                "{type: lidar, name: rear, mount: {link: base_link, rpy_deg: [0, 0, 180]}, channels: 2, "
                "horizontal_fov_deg: 90, horizontal_resolution_deg: 3, rate_hz: 20}]")


def tree_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] in ("gt", "bags")}


@pytest.mark.slow
def test_a_generated_run_with_two_lidars_reads_back_and_replays_byte_for_byte(asset_cache, tmp_path):
    config = load_experiment(CONFIGS / "demo.yaml", [*TINY_RUN, LIST_SENSORS])
    generate(config, tmp_path / "run", cache=asset_cache)
    recording = Recording.open(tmp_path / "run")
    assert recording.lidars == ["front", "rear"]
    counts = recording.info.frame_counts
    for name in ("front", "rear"):
        assert counts[f"lidar/{name}"] == len(recording.lidar(name)) > 0
    assert (counts["lidar/front"], counts["lidar/rear"]) == (8, 16)  # 10 Hz and 20 Hz over [0, 0.75] s
    # run.json keeps the list, and reads back as the config recorded.
    dumped = json.loads((tmp_path / "run" / "run.json").read_text())["config"]["robot"]["sensors"]
    assert [(entry["type"], entry["name"]) for entry in dumped] == [
        ("camera", "camera"), ("lidar", "front"), ("imu", "imu_body"), ("lidar", "rear")]
    assert recording.experiment_config().robot.sensors == config.robot.sensors
    result = run_grade("replay", str(tmp_path / "run"), "--out", str(tmp_path / "replay"))
    assert result.returncode == 0, result.stderr
    assert tree_hashes(tmp_path / "replay") == tree_hashes(tmp_path / "run")

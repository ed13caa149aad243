"""`grade generate` end to end on tiny runs: bags read back with rosbags' AnyReader (through
core.formats.bags.reader), ground truth, the state log, determinism and interrupted runs."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import cv2
import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.interfaces import QosDurability, QosHistory
from scipy.spatial.transform import Rotation

from core.config_io import load_experiment
from core.formats.bags.reader import (
    bag_summary,
    camera_matrix,
    image_array,
    point_cloud_array,
    pose_matrix,
    read_messages,
    stamp_ns,
    transform_matrix,
)
from core.formats.manifest import StageStatus, read_manifest, stage_status
from core.formats.run_info import read_run_info
from core.formats.states import load_states
from core.recording import Recording
from core.seeding import derived_seed
from pipeline.generate import generate
from simulation.robots.uav_model import CAMERA_OFFSET
from tests.conftest import CONFIGS, run_grade

pytestmark = pytest.mark.slow  # each test records a demo run (the module's recordings take ~60 s)


DURATION, BOOTSTRAP = 1.0, 0.5
TOTAL = DURATION + BOOTSTRAP
WIDTH, HEIGHT = 96, 72
TINY = [
    f"simulation.duration={DURATION}", f"simulation.bootstrap={BOOTSTRAP}",
    "humans.count={min: 2, max: 2}", "flying_objects.count={min: 1, max: 1}",
    "recording.bag_formats=[ros1, ros2]",
]
UAV = TINY + [f"robot.sensors.cameras.0.width={WIDTH}", f"robot.sensors.cameras.0.height={HEIGHT}",
              "robot.sensors.lidar={name: lidar, channels: 4, horizontal_resolution_deg: 5, rate_hz: 10}"]
NS = 1_000_000_000


def _config(overrides: list[str], name: str = "demo.yaml"):
    return load_experiment(CONFIGS / name, overrides)


@pytest.fixture(scope="module")
def assets(asset_cache) -> Path:
    """The session's converted assets: the runs here convert nothing already converted."""
    return asset_cache


@pytest.fixture(scope="module")
def uav_run(tmp_path_factory, assets) -> Path:
    run = tmp_path_factory.mktemp("uav") / "run"
    generate(_config(UAV), run, cache=assets)
    return run


def _messages(bag: Path) -> dict[str, list[tuple[int, object]]]:
    topics = defaultdict(list)
    for topic, timestamp, msg in read_messages(bag):
        topics[topic].append((timestamp, msg))
    return topics


def _frames(run: Path, camera: str = "camera") -> list[dict]:
    return [json.loads(line) for line in (run / "gt" / camera / "frames.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------- bags


@pytest.mark.parametrize("bag", ["demo.bag", "demo"])
def test_topic_counts_are_rate_times_duration(uav_run, bag):
    config = _config(UAV)
    rates = config.simulation.rates
    expected = {"/clock": rates.clock_hz, "/imu_body": 240, "/imu_camera": 240, "/tf": rates.tf_hz,
                "/joint_states": rates.joint_states_hz, "/camera/pose": rates.pose_hz, "/odom": rates.odom_hz,
                "/camera/rgb/image_raw": 30, "/camera/depth/image_raw": 30, "/camera/camera_info": 30,
                "/lidar/points": 10}
    summary = bag_summary(uav_run / "bags" / bag)
    assert set(summary) == set(expected) | {"/starting_experiment", "/tf_static"}
    for topic, rate in expected.items():
        assert abs(summary[topic].count - rate * TOTAL) <= 1, topic
    assert summary["/starting_experiment"].count == summary["/tf_static"].count == 1
    assert summary["/starting_experiment"].first_ns == round(BOOTSTRAP * NS)


@pytest.mark.parametrize("bag", ["demo.bag", "demo"])
def test_stamps_are_sorted_sim_time_on_each_rate_grid(uav_run, bag):
    topics = _messages(uav_run / "bags" / bag)
    order = [timestamp for topic in topics.values() for timestamp, _ in topic]
    all_in_bag_order = [timestamp for _, timestamp, _ in read_messages(uav_run / "bags" / bag)]
    assert all_in_bag_order == sorted(all_in_bag_order) and len(order) == len(all_in_bag_order)
    # ROS 1 files t = 0 at its TIME_MIN (1 ns); header stamps stay simulation time.
    recorded = (lambda t: max(t, 1)) if bag.endswith(".bag") else (lambda t: t)
    clock = [msg.clock.sec * NS + msg.clock.nanosec for _, msg in topics["/clock"]]
    assert [recorded(c) for c in clock] == [timestamp for timestamp, _ in topics["/clock"]]
    assert clock[0] == 0 and np.allclose(np.diff(clock), NS / 240, atol=1)
    for topic, rate in (("/camera/rgb/image_raw", 30), ("/odom", 60), ("/imu_body", 240), ("/tf", 120)):
        stamps = []
        for timestamp, msg in topics[topic]:
            header = msg.transforms[0].header if topic == "/tf" else msg.header
            assert recorded(stamp_ns(header)) == timestamp, topic
            stamps.append(stamp_ns(header))
        assert np.allclose(np.array(stamps) * rate / NS, np.arange(len(stamps)), atol=1e-6), topic


def test_camera_pose_topic_equals_frames_jsonl(uav_run):
    frames = {round(f["time"] * NS): np.array(f["pose"]) for f in _frames(uav_run)}
    messages = _messages(uav_run / "bags" / "demo")["/camera/pose"]
    poses = {timestamp: pose_matrix(msg.pose) for timestamp, msg in messages}
    common = sorted(set(frames) & set(poses))
    assert len(common) == len(frames)  # 60 Hz poses include every 30 Hz frame time
    for timestamp in common:
        assert np.allclose(poses[timestamp], frames[timestamp], atol=1e-9)
    assert {msg.header.frame_id for _, msg in messages} == {"world"}


def test_images_match_ground_truth_files(uav_run):
    topics = _messages(uav_run / "bags" / "demo.bag")
    frames = _frames(uav_run)
    (_, rgb_msg), (_, depth_msg), (_, info) = (topics[t][3] for t in (
        "/camera/rgb/image_raw", "/camera/depth/image_raw", "/camera/camera_info"))
    assert (rgb_msg.encoding, rgb_msg.width, rgb_msg.height) == ("rgb8", WIDTH, HEIGHT)
    assert depth_msg.encoding == "32FC1" and rgb_msg.header.frame_id == "camera_optical_frame"
    png = cv2.cvtColor(cv2.imread(str(uav_run / "gt" / "camera" / frames[3]["files"]["rgb"])), cv2.COLOR_BGR2RGB)
    assert np.array_equal(image_array(rgb_msg), png)
    depth_mm = cv2.imread(str(uav_run / "gt" / "camera" / frames[3]["files"]["depth"]), cv2.IMREAD_UNCHANGED)
    assert depth_mm.dtype == np.uint16 and depth_mm.shape == (HEIGHT, WIDTH)
    depth = image_array(depth_msg)
    hit = np.isfinite(depth)
    assert hit.mean() > 0.5 and np.array_equal(hit, depth_mm > 0)
    assert np.abs(depth[hit] * 1000 - depth_mm[hit]).max() <= 0.5 + 1e-3
    assert np.allclose(camera_matrix(info), frames[3]["K"])


# camera body frame (x forward, y left, z up) <- ROS optical frame (z forward, x right, y down)
BODY_FROM_OPTICAL = np.array([[0, 0, 1, 0], [-1, 0, 0, 0], [0, -1, 0, 0], [0, 0, 0, 1]], dtype=float)


def _bag_tf(bag: Path) -> tuple[dict[str, tuple[str, np.ndarray]], object, list[tuple[int, str, str, np.ndarray]]]:
    """The bag's TF, read with rosbags: /tf_static as child -> (parent, parent <- child), the /tf_static
    connection's extension (ROS 1 latching, ROS 2 QoS) and every /tf transform as (stamp, parent, child, matrix)."""
    static, ext, moving = {}, None, []
    with AnyReader([bag]) as reader:
        connections = [c for c in reader.connections if c.topic in ("/tf", "/tf_static")]
        for connection, _, raw in reader.messages(connections):
            for t in reader.deserialize(raw, connection.msgtype).transforms:
                if connection.topic == "/tf_static":
                    assert t.child_frame_id not in static  # one /tf_static message, each frame once
                    static[t.child_frame_id], ext = (t.header.frame_id, transform_matrix(t.transform)), connection.ext
                else:
                    moving.append((stamp_ns(t.header), t.header.frame_id, t.child_frame_id,
                                   transform_matrix(t.transform)))
    return static, ext, moving


def _world_from(tf: tuple, frame: str, stamp: int) -> tuple[np.ndarray, list[str]]:
    """world <- `frame` composed from a bag's TF (_bag_tf) alone: /tf_static, then per edge the latest /tf at or
    before `stamp`; with the frames walked through."""
    static, _, moving = tf
    parents = dict(static)
    for when, parent, child, matrix in sorted(moving, key=lambda item: item[0]):
        if when <= stamp:
            parents[child] = (parent, matrix)
    pose, chain = np.eye(4), [frame]
    while chain[-1] != "world":
        up, transform = parents[chain[-1]]
        pose = transform @ pose
        chain.append(up)
        assert len(chain) <= len(parents) + 1, f"{frame} does not reach world"
    return pose, chain


def _mount(mount) -> np.ndarray:
    """link <- sensor of a config mount: translation, then roll/pitch/yaw about the fixed x, y, z axes."""
    matrix = np.eye(4)
    matrix[:3, :3] = Rotation.from_euler("xyz", mount.rpy_deg, degrees=True).as_matrix()
    matrix[:3, 3] = mount.translation
    return matrix


@pytest.mark.parametrize("bag", ["demo.bag", "demo"])
def test_tf_static_holds_the_mounts_and_the_tree_composes_to_the_camera_pose(uav_run, bag):
    path, recording = uav_run / "bags" / bag, Recording.open(uav_run)
    tf = _bag_tf(path)
    static, ext, moving = tf
    if bag.endswith(".bag"):
        assert ext.latching == 1
    else:
        (qos,) = ext.offered_qos_profiles
        assert (qos.durability, qos.history, qos.depth) == (QosDurability.TRANSIENT_LOCAL, QosHistory.KEEP_LAST, 1)
    assert {(parent, child) for _, parent, child, _ in moving} == {("world", "base_link")}  # the robot only
    config = recording.experiment_config().robot.sensors
    for sensor in [*config.cameras, *config.imus, config.lidar]:
        assert static[sensor.name][0] == sensor.mount.link
        np.testing.assert_allclose(static[sensor.name][1], _mount(sensor.mount), atol=1e-9)
    np.testing.assert_allclose(static["camera_optical_frame"][1], BODY_FROM_OPTICAL, atol=1e-12)
    np.testing.assert_allclose(static["camera_link"][1][:3, 3], CAMERA_OFFSET, atol=1e-12)
    for frame in recording.camera("camera")[1:4]:
        pose, chain = _world_from(tf, "camera_optical_frame", round(frame.time * NS))
        assert chain == ["camera_optical_frame", "camera", "camera_link", "base_link", "world"]
        np.testing.assert_allclose(pose, frame.pose, atol=1e-6)


def test_lidar_points_and_odometry(uav_run):
    topics = _messages(uav_run / "bags" / "demo")
    _, cloud = topics["/lidar/points"][2]
    points = point_cloud_array(cloud)
    scan = np.load(uav_run / "gt" / "lidar" / "000002.npz")
    assert len(points) == len(scan["points"]) > 0 and cloud.header.frame_id == "lidar"
    assert np.allclose(np.stack([points["x"], points["y"], points["z"]], axis=1), scan["points"])
    states = load_states(uav_run / "states.npz")
    timestamp, odom = topics["/odom"][-1]
    step = round(timestamp / NS * 240)
    assert np.allclose([odom.pose.pose.position.x, odom.pose.pose.position.y, odom.pose.pose.position.z],
                       states["robot_position"][step], atol=1e-9)
    assert (odom.header.frame_id, odom.child_frame_id) == ("world", "base_link")


# ---------------------------------------------------------------- ground truth and state log


def test_ground_truth_counts_shapes_and_boxes(uav_run):
    frames = _frames(uav_run)
    assert len(frames) == round(30 * TOTAL) + 1
    instances = json.loads((uav_run / "gt" / "camera" / "instances.json").read_text())
    kinds = {info["kind"] for info in instances["instances"].values()}
    assert {"environment", "human", "object"} <= kinds
    seen_ids: set[int] = set()
    for frame in frames[::10]:
        for kind in ("rgb", "depth", "instance", "semantic"):
            image = cv2.imread(str(uav_run / "gt" / "camera" / frame["files"][kind]), cv2.IMREAD_UNCHANGED)
            assert image.shape[:2] == (HEIGHT, WIDTH), kind
        instance = cv2.imread(str(uav_run / "gt" / "camera" / frame["files"]["instance"]), cv2.IMREAD_UNCHANGED)
        assert instance.dtype == np.uint16
        ids = set(np.unique(instance).tolist()) - {0}
        assert ids <= {int(i) for i in instances["instances"]}
        assert {b["instance_id"] for b in frame["boxes_2d_tight"]} == ids
        for tight, loose in zip(frame["boxes_2d_tight"], frame["boxes_2d_loose"]):
            rows, cols = np.nonzero(instance == tight["instance_id"])
            assert (tight["x_min"], tight["y_min"], tight["x_max"], tight["y_max"]) == (
                cols.min(), rows.min(), cols.max(), rows.max())
            assert loose["x_min"] <= tight["x_min"] and loose["x_max"] >= tight["x_max"]
        seen_ids |= ids
    assert seen_ids
    tum = np.loadtxt(uav_run / "gt" / "camera" / "poses.tum")
    assert tum.shape == (len(frames), 8) and np.allclose(tum[:, 0], [f["time"] for f in frames])
    assert np.allclose(tum[:, 1:4], [np.array(f["pose"])[:3, 3] for f in frames])


def test_state_log_imu_and_humans(uav_run):
    states = load_states(uav_run / "states.npz")
    steps = round(TOTAL * 240) + 1
    assert states["time"].shape == (steps,) and np.allclose(states["time"], np.arange(steps) / 240)
    assert states["human_animation_time"].shape == (steps, 2) and states["object_position"].shape == (steps, 1, 3)
    assert list(states["checkpoint_steps"]) == [0, 240]
    assert not states["command"][0].any() and states["command"].shape == (steps, 6)
    imu = np.load(uav_run / "gt" / "imu.npz")
    assert np.allclose(imu["imu_body.time"], np.arange(round(TOTAL * 240)) / 240)
    # Hovering through the bootstrap: the body IMU reads gravity up and no rotation.
    rest = imu["imu_body.time"] < BOOTSTRAP
    assert np.allclose(imu["imu_body.linear_acceleration"][rest], [0, 0, 9.81], atol=0.05)
    assert np.allclose(imu["imu_body.angular_velocity"][rest], 0, atol=1e-6)
    humans = json.loads((uav_run / "humans" / "humans.json").read_text())
    assert len(humans["humans"]) == 2
    files = sorted((uav_run / "humans").glob("*.npz"))
    assert len(files) == round(30 * TOTAL) + 1
    first = np.load(files[0])
    for human in humans["humans"]:
        joints = first[f"{human['name']}.joints"]
        assert joints.shape == (len(human["joint_names"]), 3)
        assert joints[:, 2].min() > -0.05 and joints[:, 2].max() < 2.2  # a standing person


def test_run_json_and_manifest(uav_run):
    info = read_run_info(uav_run)
    assert info.status == "complete" and info.sim_time_end == pytest.approx(TOTAL)
    assert info.frame_counts["camera/camera"] == round(30 * TOTAL) + 1
    assert info.mission["planner"] == "tour"
    assert info.derived_seeds["placement/humans"] == derived_seed(info.master_seed, "placement/humans")
    manifest = read_manifest(uav_run)
    assert manifest.stage == "record"
    assert any(f.startswith("gt/camera/rgb/") for f in manifest.files)
    assert not any(f.startswith(("assets/", "scene/")) for f in manifest.files)
    assert not any(uav_run.glob(".*.partial"))


def test_same_seed_gives_identical_ground_truth_and_a_rerun_is_skipped(uav_run, assets, tmp_path):
    again = generate(_config(UAV), tmp_path / "again", cache=assets)
    assert not again.skipped
    first, second = read_manifest(uav_run).files, read_manifest(tmp_path / "again").files
    truth = [f for f in first if f.startswith(("gt/", "humans/")) or f == "states.npz"]
    assert len(truth) > 100
    assert {f: first[f].sha256 for f in truth} == {f: second[f].sha256 if f in second else None for f in truth}
    assert generate(_config(UAV), tmp_path / "again", cache=assets).skipped


def test_a_failed_run_is_marked_and_never_looks_complete(assets, tmp_path, monkeypatch):
    from simulation.recording import recorder

    calls = {"n": 0}
    original = recorder.Recorder.sample

    def failing(self, world):
        calls["n"] += 1
        if calls["n"] == 100:
            raise RuntimeError("disk full")
        original(self, world)

    monkeypatch.setattr(recorder.Recorder, "sample", failing)
    run = tmp_path / "run"
    with pytest.raises(RuntimeError, match="disk full"):
        generate(_config(TINY + ["robot.sensors.cameras.0.width=48", "robot.sensors.cameras.0.height=36"]),
                 run, cache=assets)
    info = read_run_info(run)
    assert info.status == "failed" and "disk full" in info.error
    assert stage_status(run) is StageStatus.INCOMPLETE
    assert not any(run.glob(".*.partial")) and not (run / "gt").exists()
    monkeypatch.undo()
    result = generate(_config(TINY + ["robot.sensors.cameras.0.width=48", "robot.sensors.cameras.0.height=36"]),
                      run, cache=assets)
    assert not result.skipped and read_run_info(run).status == "complete"


# ---------------------------------------------------------------- other robots and planners


def test_tiago_demo_variant_records_lidar_and_its_tf_chain_under_a_namespace(assets, tmp_path):
    overrides = TINY + ["robot.sensors.cameras.0.width=64", "robot.sensors.cameras.0.height=48",
                        "robot.sensors.lidar.channels=4", "robot.sensors.lidar.horizontal_resolution_deg=5",
                        "recording.bag_formats=[ros2]", "recording.ros2_storage=sqlite3",
                        "recording.namespace=my_robot_0"]
    run = generate(_config(overrides, "demo-tiago.yaml"), tmp_path / "tiago", cache=assets).run
    bag, recording = run / "bags" / "demo-tiago", Recording.open(run)
    summary, topics = bag_summary(bag), recording.topics
    # Every robot topic under the namespace, found through the Recording reader; the shared ones stay global.
    assert {t for t in summary if not t.startswith("/my_robot_0/")} == {"/clock", "/tf", "/tf_static",
                                                                      "/starting_experiment"}
    assert abs(summary[topics.points("lidar")].count - 10 * TOTAL) <= 1
    assert abs(summary[topics.rgb("head_camera")].count - 30 * TOTAL) <= 1
    assert summary[topics.rgb("head_camera")] == summary["/my_robot_0/head_camera/rgb/image_raw"]
    assert {topics.imu("imu_base"), topics.imu("imu_head"), topics.odometry, topics.joint_states,
            topics.camera_pose("head_camera"), topics.depth("head_camera"), topics.camera_info("head_camera")} <= set(
        summary)
    # The real TIAGo++ chain: the torso and head joints' links on /tf, the laser's on /tf_static with the mount
    # (25 deg tilt) and optical rotation as configured.
    tf = _bag_tf(bag)
    static, moving = tf[0], {child for _, _, child, _ in tf[2]}
    joints = {f"my_robot_0/{link}" for link in ("torso_lift_link", "head_1_link", "head_2_link")}
    assert joints <= moving and not joints & set(static) and "my_robot_0/base_laser_link" in static
    mount = recording.camera_config("head_camera").mount
    np.testing.assert_allclose(static["my_robot_0/head_camera"][1], _mount(mount), atol=1e-9)
    np.testing.assert_allclose(static["my_robot_0/head_camera_optical_frame"][1], BODY_FROM_OPTICAL, atol=1e-12)
    frame = recording.camera("head_camera")[2]
    pose, chain = _world_from(tf, "my_robot_0/head_camera_optical_frame", round(frame.time * NS))
    assert chain == [f"my_robot_0/{name}" for name in ("head_camera_optical_frame", "head_camera", "head_2_link",
                                                       "head_1_link", "torso_lift_link", "base_link")] + ["world"]
    np.testing.assert_allclose(pose, frame.pose, atol=1e-6)


def test_waypoints_planner_flies_through_the_waypoints(assets, tmp_path):
    config = _config(TINY + ["robot.sensors.cameras.0.width=32", "robot.sensors.cameras.0.height=24",
                             "simulation.duration=3", "recording.bag_formats=[]"])
    start = json.loads((generate(config.model_copy(update={"exploration": config.exploration.model_copy(
        update={"planner": "none"})}), tmp_path / "still", cache=assets).run / "scene" / "placement.json")
        .read_text())["robot"]
    target = (start["x"] + 0.4 * np.cos(start["yaw"]), start["y"] + 0.4 * np.sin(start["yaw"]), start["z"] - 0.2)
    still = load_states(tmp_path / "still" / "states.npz")
    assert np.allclose(still["robot_position"], still["robot_position"][0], atol=1e-3)  # planner none: stays put
    config.exploration = config.exploration.model_copy(update={"planner": "waypoints", "waypoints": [target]})
    result = generate(config, tmp_path / "fly", cache=assets)
    assert result.info.mission["reached"] is True
    final = load_states(tmp_path / "fly" / "states.npz")["robot_position"][-1]
    assert np.linalg.norm(final - np.array(target)) < 0.15


# ---------------------------------------------------------------- CLI


def test_generate_cli_and_bad_input(tmp_path):
    bad = run_grade("generate", str(CONFIGS / "demo.yaml"), "--out", str(tmp_path / "x"),
                    "--set", "robot.sensors.cameras.0.fov_deg=0")
    assert bad.returncode == 2 and "fov_deg" in bad.stderr + bad.stdout
    missing = run_grade("generate", str(CONFIGS / "paper-indoor.yaml"), "--out", str(tmp_path / "y"))
    assert missing.returncode == 2 and "environment.path" in missing.stderr + missing.stdout
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()

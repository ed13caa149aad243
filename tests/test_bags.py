"""ROS bags: a synthetic sensor stream written through BagWriter to ROS 1, ROS 2 MCAP and ROS 2 sqlite3,
read back with rosbags' AnyReader (through bag_reader) and compared with the inputs; the real ROS 2
sample bags read with the same reader code."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.interfaces import QosDurability, QosHistory, QosReliability
from scipy.spatial.transform import Rotation

from core.errors import InputError
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
from core.formats.bags.writer import ROS1_TIME_MIN_NS, BagWriter
from core.seeding import generator

STEP = 1.0 / 240.0
STEPS = 120  # 0.5 s
# Every how many physics steps each stream is written (240 / 120 / 60 / 30 / 10 Hz).
EVERY = {"clock": 1, "imu": 1, "tf": 2, "joints": 2, "pose": 4, "image": 8, "cloud": 24}
MARKER_STEP = 60
WIDTH, HEIGHT = 32, 24
K = np.array([[40.0, 0.0, 15.5], [0.0, 41.0, 11.5], [0.0, 0.0, 1.0]])
JOINTS = ["wheel_fl", "wheel_fr", "head_pan"]
CLOUD_POINTS = 7
MARKER_TEXT = "start experiment"
# Depth in metres -> expected 16UC1 millimetres, worked out by hand (0 = no return, rounding, clipping).
# float32 3.4465 is 3.44650006 m and 4.5175 is 4.51749992 m: a float32 product would round them to 3446.5 and 4517.5
# and then to the even 3446 and 4518.
DEPTH_MM_CASES = [(0.0, 0), (1.2344, 1234), (1.2346, 1235), (2.0, 2000), (0.0014, 1), (65.535, 65535), (70.0, 65535),
                  (3.4465, 3447), (4.5175, 4517)]

TOPICS = {
    "/clock": "rosgraph_msgs/msg/Clock", "/imu": "sensor_msgs/msg/Imu", "/tf": "tf2_msgs/msg/TFMessage",
    "/tf_static": "tf2_msgs/msg/TFMessage",
    "/joint_states": "sensor_msgs/msg/JointState", "/cam/pose": "geometry_msgs/msg/PoseStamped",
    "/odom": "nav_msgs/msg/Odometry", "/cam/rgb/image_raw": "sensor_msgs/msg/Image",
    "/cam/depth/image_raw": "sensor_msgs/msg/Image", "/cam/depth_mm/image_raw": "sensor_msgs/msg/Image",
    "/cam/camera_info": "sensor_msgs/msg/CameraInfo", "/lidar/points": "sensor_msgs/msg/PointCloud2",
    "/starting_experiment": "std_msgs/msg/String",
}


def rigid(rotation: np.ndarray, translation) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, :3] = rotation
    matrix[:3, 3] = translation
    return matrix


# Fixed transforms, including exact 90 and 180 degree rotations (quaternion components 0 and +-1).
ROT_Z90 = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
ROT_Z180 = np.diag([-1.0, -1.0, 1.0])
ROT_X180 = np.diag([1.0, -1.0, -1.0])
# camera_link (x forward, z up) <- optical frame (z forward, x right, y down)
ROT_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
FIXED_TF = [
    ("base_link", "head_link", rigid(ROT_Z90, [0.1, 0.0, 1.2])),
    ("head_link", "cam_link", rigid(ROT_X180, [0.05, 0.0, 0.1])),
    ("cam_link", "cam_optical_frame", rigid(ROT_OPTICAL, [0.0, 0.0, 0.0])),
    ("base_link", "imu", rigid(np.eye(3), [0.0, 0.0, 0.3])),
    ("base_link", "lidar", rigid(ROT_Z180, [0.2, 0.0, 0.5])),
]


def base_pose(t: float) -> np.ndarray:
    """world <- base_link: a turning, slightly tilted robot (a general rotation every step)."""
    rotation = Rotation.from_euler("zyx", [0.8 * t + 0.3, 0.05 * np.sin(3 * t), -0.02]).as_matrix()
    return rigid(rotation, [0.5 * t, 0.2 * t * t, 0.01])


def depth_image(frame: int) -> np.ndarray:
    depth = np.full((HEIGHT, WIDTH), 1.5 + 0.1 * frame, dtype=np.float32)
    depth[0, : len(DEPTH_MM_CASES)] = [metres for metres, _ in DEPTH_MM_CASES]
    depth[5:8, 10:20] = 0.0  # a patch with no return
    return depth


def write_sequence(folder: Path, formats, storage: str) -> dict:
    """Write the synthetic stream; return what went in, per topic, in write order."""
    rng = generator(7, "tests/bags")
    sent: dict[str, list] = defaultdict(list)
    with BagWriter(folder, "run", formats, storage) as bags:
        for k in range(STEPS):
            t = k * STEP
            bags.clock(t)
            sent["/clock"].append((t, None))
            accel, gyro = rng.normal(size=3), rng.normal(size=3)
            bags.imu("/imu", "imu", t, accel, gyro)
            sent["/imu"].append((t, (accel, gyro)))
            if k == 0:
                bags.tf_static(t, FIXED_TF)
                sent["/tf_static"].append((t, FIXED_TF))
            if k % EVERY["tf"] == 0:
                transforms = [("world", "base_link", base_pose(t))]
                bags.tf(t, transforms)
                sent["/tf"].append((t, transforms))
            if k % EVERY["joints"] == 0:
                positions, velocities = rng.normal(size=3), rng.normal(size=3)
                bags.joint_states("/joint_states", t, JOINTS, positions, velocities)
                sent["/joint_states"].append((t, (positions, velocities)))
            if k % EVERY["pose"] == 0:
                cam = base_pose(t) @ FIXED_TF[0][2] @ FIXED_TF[1][2] @ FIXED_TF[2][2]
                bags.pose("/cam/pose", t, "world", cam)
                sent["/cam/pose"].append((t, cam))
                linear, angular = rng.normal(size=3), rng.normal(size=3)
                bags.odometry("/odom", t, "world", "base_link", base_pose(t), linear, angular)
                sent["/odom"].append((t, (base_pose(t), linear, angular)))
            if k % EVERY["image"] == 0:
                frame = k // EVERY["image"]
                rgb = rng.integers(0, 256, size=(HEIGHT, WIDTH, 3), dtype=np.uint8)
                bags.image("/cam/rgb/image_raw", t, "cam_optical_frame", rgb)
                sent["/cam/rgb/image_raw"].append((t, rgb))
                depth = depth_image(frame)
                bags.depth("/cam/depth/image_raw", t, "cam_optical_frame", depth, "32FC1")
                sent["/cam/depth/image_raw"].append((t, depth))
                bags.depth("/cam/depth_mm/image_raw", t, "cam_optical_frame", depth, "16UC1")
                sent["/cam/depth_mm/image_raw"].append((t, depth))
                bags.camera_info("/cam/camera_info", t, "cam_optical_frame", K, WIDTH, HEIGHT)
                sent["/cam/camera_info"].append((t, None))
            if k % EVERY["cloud"] == 0:
                points = rng.normal(size=(CLOUD_POINTS, 3)) * 5
                intensity = rng.uniform(0, 255, size=CLOUD_POINTS)
                ring = np.arange(CLOUD_POINTS, dtype=np.int64) * 10000 + 1  # up to 60001: needs 16 unsigned bits
                bags.point_cloud("/lidar/points", t, "lidar", points, intensity, ring)
                sent["/lidar/points"].append((t, (points, intensity, ring)))
            if k == MARKER_STEP:
                bags.marker("/starting_experiment", t, MARKER_TEXT)
                sent["/starting_experiment"].append((t, MARKER_TEXT))
    return sent


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    """ROS 1 + ROS 2 MCAP from one writer (the same stream to both), ROS 2 sqlite3 from another."""
    both = tmp_path_factory.mktemp("both")
    sent = write_sequence(both, ["ros1", "ros2"], "mcap")
    sqlite = tmp_path_factory.mktemp("sqlite")
    assert write_sequence(sqlite, ["ros2"], "sqlite3").keys() == sent.keys()
    return {"sent": sent, "ros1": both / "run.bag", "ros2-mcap": both / "run", "ros2-sqlite3": sqlite / "run"}


BAGS = ["ros1", "ros2-mcap", "ros2-sqlite3"]


def test_bag_files_are_where_the_format_says(written):
    assert written["ros1"].is_file()
    for kind, suffix in (("ros2-mcap", ".mcap"), ("ros2-sqlite3", ".db3")):
        assert sorted(p.name for p in written[kind].iterdir()) == ["metadata.yaml", f"run{suffix}"]
    # No temporary folders left next to the bags.
    assert sorted(p.name for p in written["ros1"].parent.iterdir()) == ["run", "run.bag"]


def recorded_ns(kind: str, stamp: int) -> int:
    """The bag's record time of a message stamped `stamp`: ROS 1 files t = 0 at ros::TIME_MIN (1 ns)."""
    return max(stamp, ROS1_TIME_MIN_NS) if kind == "ros1" else stamp


@pytest.mark.parametrize("kind", BAGS)
def test_summary_counts_types_and_times(written, kind):
    sent = written["sent"]
    summary = bag_summary(written[kind])
    assert set(summary) == set(TOPICS)
    for topic, msgtype in TOPICS.items():
        expected_ns = [recorded_ns(kind, round(t * 1e9)) for t, _ in sent[topic]]
        assert (summary[topic].msgtype, summary[topic].count) == (msgtype, len(expected_ns)), topic
        assert (summary[topic].first_ns, summary[topic].last_ns) == (expected_ns[0], expected_ns[-1]), topic
    assert summary["/clock"].count == STEPS and summary["/cam/rgb/image_raw"].count == STEPS // EVERY["image"]


@pytest.mark.parametrize("kind", BAGS)
def test_stamps_are_sim_time_and_monotonic(written, kind):
    sent = written["sent"]
    seen: dict[str, list[int]] = defaultdict(list)
    previous = -1
    for topic, bag_ns, msg in read_messages(written[kind]):
        assert bag_ns >= previous
        previous = bag_ns
        if topic == "/clock":
            stamp = stamp_ns(msg.clock)
        elif topic in ("/tf", "/tf_static"):
            (stamp,) = {stamp_ns(tr.header) for tr in msg.transforms}
        elif topic != "/starting_experiment":
            stamp = stamp_ns(msg.header)
            if kind == "ros1":  # ROS 1 headers count per topic
                assert msg.header.seq == len(seen[topic])
        else:
            stamp = bag_ns
        assert recorded_ns(kind, stamp) == bag_ns, topic
        seen[topic].append(stamp)
    for topic, items in sent.items():
        expected = [round(t * 1e9) for t, _ in items]
        assert seen[topic] == expected, topic
        # round(t * 1e9) of t = k / 240 s is within a nanosecond of the exact k * 1e9 / 240
        assert all(abs(ns - round(t / STEP) * 1e9 / 240) <= 1 for ns, (t, _) in zip(seen[topic], items))


def messages_by_topic(path: Path, topics) -> dict[str, list]:
    out: dict[str, list] = defaultdict(list)
    for topic, _, msg in read_messages(path, topics):
        out[topic].append(msg)
    return out


@pytest.mark.parametrize("kind", BAGS)
def test_images_depth_and_camera_info(written, kind):
    sent = written["sent"]
    got = messages_by_topic(written[kind], ["/cam/rgb/image_raw", "/cam/depth/image_raw",
                                            "/cam/depth_mm/image_raw", "/cam/camera_info"])
    for msg, (_, rgb) in zip(got["/cam/rgb/image_raw"], sent["/cam/rgb/image_raw"], strict=True):
        assert (msg.encoding, msg.width, msg.height, msg.step) == ("rgb8", WIDTH, HEIGHT, WIDTH * 3)
        assert msg.header.frame_id == "cam_optical_frame"
        assert bytes(msg.data) == rgb.tobytes()
        assert np.array_equal(image_array(msg), rgb)
    for msg, (_, depth) in zip(got["/cam/depth/image_raw"], sent["/cam/depth/image_raw"], strict=True):
        assert (msg.encoding, msg.is_bigendian, msg.step) == ("32FC1", 0, WIDTH * 4)
        metres = image_array(msg)
        assert metres.dtype == np.float32
        assert np.array_equal(np.isnan(metres), depth == 0)  # REP 118: NaN = no return
        assert np.array_equal(metres[depth > 0], depth[depth > 0])
    for msg, (_, depth) in zip(got["/cam/depth_mm/image_raw"], sent["/cam/depth_mm/image_raw"], strict=True):
        assert (msg.encoding, msg.step) == ("16UC1", WIDTH * 2)
        mm = image_array(msg)
        assert mm.dtype == np.uint16
        assert mm[0, : len(DEPTH_MM_CASES)].tolist() == [expected for _, expected in DEPTH_MM_CASES]
        assert np.all(mm[5:8, 10:20] == 0)
        assert np.all((mm == 0) == (depth == 0)) and mm[10, 0] == round(float(depth[10, 0]) * 1000)
    infos = got["/cam/camera_info"]
    assert len(infos) == len(sent["/cam/camera_info"])
    for msg in infos:
        assert np.array_equal(camera_matrix(msg), K)
        assert (msg.width, msg.height, msg.distortion_model) == (WIDTH, HEIGHT, "plumb_bob")
        d, r, p = (msg.D, msg.R, msg.P) if kind == "ros1" else (msg.d, msg.r, msg.p)
        assert np.array_equal(d, np.zeros(5)) and np.array_equal(np.reshape(r, (3, 3)), np.eye(3))
        assert np.array_equal(np.reshape(p, (3, 4)), np.hstack([K, np.zeros((3, 1))]))


@pytest.mark.parametrize("kind", BAGS)
def test_tf_round_trip_and_tree(written, kind):
    sent = written["sent"]
    got = messages_by_topic(written[kind], ["/tf", "/tf_static"])
    (static,) = got["/tf_static"]
    assert len(got["/tf"]) == len(sent["/tf"])
    for msg, (_, transforms) in zip([static, *got["/tf"]], [*sent["/tf_static"], *sent["/tf"]], strict=True):
        assert [(tr.header.frame_id, tr.child_frame_id) for tr in msg.transforms] == [(p, c) for p, c, _ in transforms]
        for tr, (_, _, matrix) in zip(msg.transforms, transforms):
            np.testing.assert_allclose(transform_matrix(tr.transform), matrix, atol=1e-12)
    for msg in got["/tf"]:
        parents = {tr.child_frame_id: tr.header.frame_id for tr in [*static.transforms, *msg.transforms]}
        assert len(parents) == len(msg.transforms) + len(static.transforms)  # each frame has exactly one parent
        for frame in parents:  # every frame reaches the single root without a cycle
            chain = [frame]
            while chain[-1] in parents:
                chain.append(parents[chain[-1]])
                assert len(chain) <= len(parents) + 1
            assert chain[-1] == "world"
    # ROS quaternion order (x, y, z, w), against hand-derived values for the exact rotations.
    by_child = {tr.child_frame_id: tr.transform.rotation for tr in static.transforms}
    quat = {child: (q.x, q.y, q.z, q.w) for child, q in by_child.items()}
    half = np.sqrt(0.5)
    np.testing.assert_allclose(quat["head_link"], (0, 0, half, half), atol=1e-15)  # 90 deg about z
    np.testing.assert_allclose(quat["cam_link"], (1, 0, 0, 0), atol=1e-15)  # 180 deg about x
    np.testing.assert_allclose(quat["lidar"], (0, 0, 1, 0), atol=1e-15)  # 180 deg about z
    np.testing.assert_allclose(quat["cam_optical_frame"], (-0.5, 0.5, -0.5, 0.5), atol=1e-15)


@pytest.mark.parametrize("kind", BAGS)
def test_imu_joints_pose_odometry_cloud_marker(written, kind):
    sent = written["sent"]
    got = messages_by_topic(written[kind], ["/imu", "/joint_states", "/cam/pose", "/odom", "/lidar/points",
                                            "/starting_experiment"])
    for msg, (_, (accel, gyro)) in zip(got["/imu"], sent["/imu"], strict=True):
        a, w = msg.linear_acceleration, msg.angular_velocity
        assert [a.x, a.y, a.z] == accel.tolist() and [w.x, w.y, w.z] == gyro.tolist()
        assert msg.orientation_covariance[0] == -1.0 and msg.header.frame_id == "imu"
    for msg, (_, (positions, velocities)) in zip(got["/joint_states"], sent["/joint_states"], strict=True):
        assert list(msg.name) == JOINTS
        assert msg.position.tolist() == positions.tolist() and msg.velocity.tolist() == velocities.tolist()
    for msg, (_, cam) in zip(got["/cam/pose"], sent["/cam/pose"], strict=True):
        assert msg.header.frame_id == "world"
        np.testing.assert_allclose(pose_matrix(msg.pose), cam, atol=1e-12)
    for msg, (_, (pose, linear, angular)) in zip(got["/odom"], sent["/odom"], strict=True):
        assert (msg.header.frame_id, msg.child_frame_id) == ("world", "base_link")
        np.testing.assert_allclose(pose_matrix(msg.pose.pose), pose, atol=1e-12)
        twist = msg.twist.twist
        assert [twist.linear.x, twist.linear.y, twist.linear.z] == linear.tolist()
        assert [twist.angular.x, twist.angular.y, twist.angular.z] == angular.tolist()
    for msg, (_, (points, intensity, ring)) in zip(got["/lidar/points"], sent["/lidar/points"], strict=True):
        assert (msg.height, msg.width, msg.is_dense, bool(msg.is_bigendian)) == (1, CLOUD_POINTS, True, False)
        assert [(f.name, f.datatype, f.count) for f in msg.fields] == [
            ("x", 7, 1), ("y", 7, 1), ("z", 7, 1), ("intensity", 7, 1), ("ring", 4, 1)]
        cloud = point_cloud_array(msg)
        assert cloud.shape == (CLOUD_POINTS,)
        for axis, name in enumerate("xyz"):
            assert np.array_equal(cloud[name], points[:, axis].astype(np.float32))
        assert np.array_equal(cloud["intensity"], intensity.astype(np.float32))
        assert cloud["ring"].dtype == np.uint16 and cloud["ring"].tolist() == ring.tolist()
    assert [msg.data for msg in got["/starting_experiment"]] == [MARKER_TEXT]


def test_tf_static_is_latched_and_other_topics_are_not(written):
    """What a latched publisher leaves in a bag, read from the connection records by rosbags: ROS 1
    `latching=1` (tf2_ros' static broadcaster advertises latched), ROS 2 the offered QoS of tf2_ros'
    StaticBroadcasterQoS (keep last 1, reliable, transient local) in metadata.yaml."""
    for kind in BAGS:
        with AnyReader([written[kind]]) as reader:
            connections = {c.topic: c.ext for c in reader.connections}
        assert set(connections) == set(TOPICS)
        for topic, ext in connections.items():
            if kind == "ros1":
                assert ext.latching == (1 if topic == "/tf_static" else None), (kind, topic)
            elif topic == "/tf_static":
                (qos,) = ext.offered_qos_profiles
                assert (qos.durability, qos.reliability, qos.history, qos.depth) == (
                    QosDurability.TRANSIENT_LOCAL, QosReliability.RELIABLE, QosHistory.KEEP_LAST, 1), kind
            else:
                assert not ext.offered_qos_profiles, (kind, topic)


# ---------------------------------------------------------------- errors and atomicity


def test_backwards_stamp_raises_naming_the_topic(tmp_path):
    with pytest.raises(ValueError, match="/imu"), BagWriter(tmp_path, "run", ["ros1", "ros2"]) as bags:
        bags.clock(0.5)
        bags.imu("/imu", "imu", 0.25, np.zeros(3), np.zeros(3))
    assert list(tmp_path.iterdir()) == []


def test_equal_stamps_are_allowed_and_topic_types_are_fixed(tmp_path):
    with BagWriter(tmp_path, "run", ["ros2"]) as bags:
        bags.clock(0.5)
        bags.marker("/m", 0.5, "a")
        bags.clock(0.5)
        with pytest.raises(ValueError, match="/m"):
            bags.imu("/m", "imu", 0.5, np.zeros(3), np.zeros(3))
    assert bag_summary(tmp_path / "run")["/clock"].count == 2


def test_exception_inside_with_leaves_no_bag_and_keeps_the_old_one(tmp_path):
    with BagWriter(tmp_path, "run", ["ros1", "ros2"]) as bags:
        bags.marker("/m", 0.0, "old")
    with pytest.raises(RuntimeError, match="boom"), BagWriter(tmp_path, "run", ["ros1", "ros2"]) as bags:
        bags.marker("/m", 0.0, "new")
        raise RuntimeError("boom")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "run.bag"]  # no partial folder left
    for path in (tmp_path / "run.bag", tmp_path / "run"):
        assert [msg.data for _, _, msg in read_messages(path)] == ["old"]

    fresh = tmp_path / "fresh"
    with pytest.raises(RuntimeError), BagWriter(fresh, "run", ["ros1", "ros2"], "sqlite3") as bags:
        bags.clock(0.0)
        raise RuntimeError("interrupted")
    assert list(fresh.iterdir()) == []


def test_existing_bag_is_replaced_on_close(tmp_path):
    for text in ("first", "second"):
        with BagWriter(tmp_path, "run", ["ros1", "ros2"], "sqlite3") as bags:
            bags.marker("/m", 1.0, text)
    for path in (tmp_path / "run.bag", tmp_path / "run"):
        assert [msg.data for _, _, msg in read_messages(path)] == ["second"]


def test_bad_arguments_raise(tmp_path):
    with pytest.raises(ValueError, match="formats"):
        BagWriter(tmp_path, "run", ["ros3"])
    with BagWriter(tmp_path, "run", ["ros1"]) as bags:
        with pytest.raises(ValueError, match="/tf"):  # not a rotation
            bags.tf(0.0, [("world", "base_link", np.diag([1.0, 1.0, 2.0, 1.0]))])
        with pytest.raises(ValueError, match="/cam/rgb"):
            bags.image("/cam/rgb", 0.0, "cam", np.zeros((4, 4, 3), dtype=np.float32))
        with pytest.raises(ValueError, match="/cam/depth"):
            bags.depth("/cam/depth", 0.0, "cam", np.full((4, 4), -1.0, dtype=np.float32), "16UC1")
        bags.clock(0.0)
    assert bag_summary(tmp_path / "run.bag")["/clock"].count == 1


def test_reader_rejects_missing_and_non_bag_paths(tmp_path):
    (tmp_path / "notes.bag").write_text("not a bag")
    (tmp_path / "folder").mkdir()
    for path in (tmp_path / "missing", tmp_path / "notes.bag", tmp_path / "folder"):
        with pytest.raises(InputError) as info:
            bag_summary(path)
        assert info.value.file == str(path)
    with BagWriter(tmp_path, "run", ["ros1"]) as bags:
        bags.clock(0.0)
    with pytest.raises(InputError, match="/nope"):
        list(read_messages(tmp_path / "run.bag", ["/nope"]))


# ---------------------------------------------------------------- real ROS 2 samples


REAL_TOPICS = 94
REAL_MESSAGES_PER_TOPIC = 2  # realdata/README.md: "94 topics ..., 2 messages each"


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["test_bag_mcap", "test_bag_sqlite3"])
def test_real_ros2_samples(realdata, name):
    path = realdata / "rosbag2" / name
    summary = bag_summary(path)
    assert len(summary) == REAL_TOPICS
    assert {s.count for s in summary.values()} == {REAL_MESSAGES_PER_TOPIC}
    assert summary["/test/sensor_msgs/image"].msgtype == "sensor_msgs/msg/Image"

    got = messages_by_topic(path, ["/test/sensor_msgs/imu", "/test/sensor_msgs/image",
                                   "/test/sensor_msgs/point_cloud2", "/test/stereo_msgs/disparity_image"])
    imu = got["/test/sensor_msgs/imu"][0]
    a, w = imu.linear_acceleration, imu.angular_velocity
    assert ([a.x, a.y, a.z], [w.x, w.y, w.z]) == ([0.1, 0.2, 9.8], [0.01, 0.02, 0.03])
    q = imu.orientation
    assert (q.x, q.y, q.z, q.w) == (0.0, 0.0, 0.0, 1.0) and imu.header.frame_id == "test_frame"
    assert stamp_ns(imu.header) > 1_700_000_000 * 10**9  # a 2025 wall-clock stamp

    # The sample images declare 640x480 but carry only the first pixels (the upstream test writer
    # truncates them): the decoder must refuse the size mismatch ...
    image = got["/test/sensor_msgs/image"][0]
    assert (image.encoding, image.width, image.height, image.step) == ("rgb8", 640, 480, 1920)
    with pytest.raises(InputError, match="921600"):
        image_array(image)
    # ... and decode the bytes that are there once the header matches them: 10 red pixels.
    pixels = image_array(dataclasses.replace(image, height=1, width=len(image.data) // 3, step=len(image.data)))
    assert pixels.shape == (1, 10, 3) and pixels.reshape(-1, 3).tolist() == [[255, 0, 0]] * 10
    disparity = got["/test/stereo_msgs/disparity_image"][0].image
    assert disparity.encoding == "32FC1"
    values = image_array(dataclasses.replace(disparity, height=1, width=len(disparity.data) // 4,
                                             step=len(disparity.data)))
    assert values.dtype == np.float32 and values.shape == (1, 100) and np.all(values == 1.0)

    cloud = point_cloud_array(got["/test/sensor_msgs/point_cloud2"][0])
    assert cloud.dtype.names == ("x", "y", "z") and cloud.shape == (3,)
    assert all(cloud.dtype[name] == np.float32 for name in "xyz") and np.all(cloud["x"] == 0)

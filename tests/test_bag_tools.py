"""Bag tools: small ROS 1 / ROS 2 bags written with our BagWriter (and rosbags' writer for a multi-chunk
ROS 1 bag), transformed or re-indexed by postprocess.bag_tools and read back with rosbags' AnyReader
(through core.formats.bags.reader); the real ROS 2 samples pass through crop, shift and renames."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from io import BytesIO
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.interfaces import QosDurability
from rosbags.rosbag1 import Reader as Ros1Reader
from rosbags.rosbag1 import Writer as Ros1Writer
from rosbags.rosbag1.reader import RecordType
from rosbags.rosbag1.writer import Header as Ros1RecordHeader

from core.errors import ConfigError, InputError
from core.formats.bags import messages as m
from core.formats.bags.reader import bag_summary, image_array, read_messages, stamp_ns
from core.formats.bags.writer import ROS1_TIME_MIN_NS, BagWriter
from core.seeding import generator
from postprocess.bag_tools import ROS1_MAGIC, BagOptions, default_reindex_path, reindex_ros1, transform_bag

NS = 1_000_000_000
T0 = 5.0  # the recording starts at sim time 5 s, so shifting to 0 is visible
STEP = 1.0 / 240.0
STEPS = 240  # 1 s
MARKER_STEP = 60  # the experiment starts 0.25 s in
DURATION = 0.5
DEPTH_MAX = 3.0
# The depth images hold every depth from 0.5 m to 6 m, and 0 (no return) in one pixel.
DEPTH = np.concatenate([[0.0], np.linspace(0.5, 6.0, 47)]).reshape(6, 8).astype(np.float32)
IDENTITY = np.eye(4)
BAG_HEADER_BYTES = 4096


def write_stream(folder: Path) -> None:
    """240 Hz clock and IMU, the latched /tf_static (base_link -> cam) once, /tf at 120 Hz (world -> base_link),
    /odom at 60 Hz, depth (32FC1 and 16UC1) at 30 Hz, the experiment marker at step 60; to ROS 1 and ROS 2 MCAP."""
    rng = generator(11, "tests/bag_tools")
    with BagWriter(folder, "run", ["ros1", "ros2"], "mcap") as bags:
        for k in range(STEPS):
            t = T0 + k * STEP
            bags.clock(t)
            bags.imu("/imu", "imu", t, rng.normal(size=3), rng.normal(size=3))
            if k == 0:
                bags.tf_static(t, [("base_link", "cam", IDENTITY)])
            if k % 2 == 0:
                bags.tf(t, [("world", "base_link", IDENTITY)])
            if k % 4 == 0:
                bags.odometry("/odom", t, "world", "base_link", IDENTITY, np.zeros(3), np.zeros(3))
            if k % 8 == 0:
                bags.depth("/cam/depth", t, "cam", DEPTH, "32FC1")
                bags.depth("/cam/depth_mm", t, "cam", DEPTH, "16UC1")
            if k == MARKER_STEP:
                bags.marker("/starting_experiment", t, "start")


@pytest.fixture(scope="module")
def source(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("source")
    write_stream(folder)
    return {"ros1": folder / "run.bag", "ros2": folder / "run"}


def digest(path: Path) -> str:
    """Hash of a bag file or of every file of a bag folder (names and bytes)."""
    sha = hashlib.sha256()
    for file in sorted([path] if path.is_file() else path.rglob("*")):
        sha.update(file.name.encode())
        sha.update(file.read_bytes())
    return sha.hexdigest()


def read_back(path: Path) -> dict[str, list[tuple[int, object]]]:
    messages = defaultdict(list)
    for topic, bag_ns, msg in read_messages(path):
        messages[topic].append((bag_ns, msg))
    return messages


def recorded(kind: str, ns: int) -> int:
    return max(ns, ROS1_TIME_MIN_NS) if kind == "ros1" else ns


EXPERIMENT = BagOptions(
    crop_to_experiment=True, duration_s=DURATION, shift_to_zero=True, rates_hz={"/imu": 60, "/tf": 30.0},
    drop_topics=["/clock"], rename_topics={"/imu": "/imu_body"}, rename_frames={"base_link": "robot_gt"},
    depth_max_m={"/cam/depth": DEPTH_MAX, "/cam/depth_mm": DEPTH_MAX},
)


@pytest.mark.parametrize("kind", ["ros1", "ros2"])
def test_crop_retime_shift_rename_drop_and_depth_cut(source, tmp_path, kind):
    src = source[kind]
    before = digest(src)
    dst = tmp_path / ("out.bag" if kind == "ros1" else "out")
    report = transform_bag(src, dst, EXPERIMENT)
    assert digest(src) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [dst.name]  # no temporary left beside it

    out = read_back(dst)
    assert set(out) == {"/imu_body", "/tf", "/tf_static", "/odom", "/cam/depth", "/cam/depth_mm",
                        "/starting_experiment"}
    window_ns = round(DURATION * NS)
    for topic, items in out.items():
        assert all(0 <= bag_ns < window_ns for bag_ns, _ in items), topic
    # The marker opens the window, so it is the first message, at 0 (1 ns in ROS 1).
    assert out["/starting_experiment"][0][0] == recorded(kind, 0)
    assert min(bag_ns for items in out.values() for bag_ns, _ in items) == recorded(kind, 0)

    # Retimed: rate x duration messages, one on each tick of the grid, header stamps on it too.
    for topic, rate in (("/imu_body", 60), ("/tf", 30)):
        ticks = [round(k * NS / rate) for k in range(round(rate * DURATION))]
        assert [bag_ns for bag_ns, _ in out[topic]] == [recorded(kind, t) for t in ticks], topic
        headers = [msg.header if topic == "/imu_body" else msg.transforms[0].header for _, msg in out[topic]]
        assert [stamp_ns(h) for h in headers] == ticks
    # Not retimed: every source message inside the window, shifted.
    odom_ns = [round((MARKER_STEP + 4 * k) * STEP * NS) - round(MARKER_STEP * STEP * NS) for k in range(30)]
    assert [stamp_ns(msg.header) for _, msg in out["/odom"]] == pytest.approx(odom_ns, abs=1)

    for _, msg in out["/tf"]:
        assert [(tr.header.frame_id, tr.child_frame_id) for tr in msg.transforms] == [("world", "robot_gt")]
    # The latched /tf_static, sent before the window, holds inside it: kept at the window start, still latched.
    ((static_ns, static),) = out["/tf_static"]
    assert static_ns == recorded(kind, 0) and stamp_ns(static.transforms[0].header) == 0
    assert [(tr.header.frame_id, tr.child_frame_id) for tr in static.transforms] == [("robot_gt", "cam")]
    with AnyReader([dst]) as reader:
        (ext,) = [c.ext for c in reader.connections if c.topic == "/tf_static"]
    if kind == "ros1":
        assert ext.latching == 1
    else:
        assert [qos.durability for qos in ext.offered_qos_profiles] == [QosDurability.TRANSIENT_LOCAL]
    assert {(msg.header.frame_id, msg.child_frame_id) for _, msg in out["/odom"]} == {("world", "robot_gt")}
    assert {msg.header.frame_id for _, msg in out["/imu_body"]} == {"imu"}

    beyond = DEPTH > DEPTH_MAX
    for _, msg in out["/cam/depth"]:
        metres = image_array(msg)
        assert np.all(np.isnan(metres[beyond | (DEPTH == 0)]))
        assert np.array_equal(metres[~beyond & (DEPTH > 0)], DEPTH[~beyond & (DEPTH > 0)])
    for _, msg in out["/cam/depth_mm"]:
        millimetres = image_array(msg)
        assert np.all(millimetres[beyond] == 0)
        assert np.array_equal(millimetres[~beyond], np.rint(DEPTH[~beyond].astype(np.float64) * 1000))

    assert report.topics["/clock"].output_topic is None and report.topics["/clock"].count_out == 0
    assert report.topics["/imu"].output_topic == "/imu_body"
    assert (report.topics["/imu"].count_in, report.topics["/imu"].count_out) == (STEPS, 30)
    assert report.topics["/cam/depth"].count_out == len(out["/cam/depth"]) == 15  # 30 Hz x 0.5 s
    assert report.window_start_ns == report.shift_ns == round((T0 + MARKER_STEP * STEP) * NS)
    assert (report.first_ns, report.last_ns) == (recorded(kind, 0), out["/imu_body"][-1][0])


def test_copy_without_options_keeps_every_message(source, tmp_path):
    dst = tmp_path / "copy.bag"
    report = transform_bag(source["ros1"], dst, BagOptions())
    assert bag_summary(dst) == bag_summary(source["ros1"])
    assert all(t.count_in == t.count_out for t in report.topics.values())


def test_hook_modifies_and_drops_messages(source, tmp_path):
    seen = []

    def hook(topic: str, msgtype: str, msg: object, timestamp_ns: int) -> object | None:
        seen.append((topic, timestamp_ns))
        if msgtype != m.IMU:
            return msg
        if len(seen) % 2:
            return None
        msg.linear_acceleration.x = 100.0
        return msg

    dst = tmp_path / "hooked"
    options = BagOptions(crop_to_experiment=True, duration_s=DURATION, shift_to_zero=True,
                         rename_topics={"/imu": "/imu_noisy"})
    report = transform_bag(source["ros2"], dst, options, message_hook=hook)
    assert [ns for _, ns in seen] == sorted(ns for _, ns in seen)  # called in output order
    imu = [msg for topic, _, msg in read_messages(dst) if topic == "/imu_noisy"]
    assert 0 < len(imu) < 120 and {msg.linear_acceleration.x for msg in imu} == {100.0}
    assert report.topics["/imu"].count_out == len(imu)


def test_ros1_to_ros2_conversion(source, tmp_path):
    dst = tmp_path / "converted"
    transform_bag(source["ros1"], dst, BagOptions(output_format="ros2", ros2_storage="sqlite3",
                                                  drop_topics=["/clock"]))
    assert any(dst.glob("*.db3"))
    summary, original = bag_summary(dst), bag_summary(source["ros1"])
    assert {t: s.count for t, s in summary.items()} == {t: s.count for t, s in original.items() if t != "/clock"}
    depth = [msg for topic, _, msg in read_messages(dst, ["/cam/depth_mm"])]
    assert np.array_equal(image_array(depth[0]), np.rint(DEPTH.astype(np.float64) * 1000))


def test_bad_inputs_name_the_file_and_field(source, tmp_path):
    src = source["ros1"]

    def fails(options: BagOptions, field: str | None, dst: Path | None = None, bag: Path = src) -> None:
        with pytest.raises(InputError) as info:
            transform_bag(bag, dst or tmp_path / "out.bag", options)
        assert info.value.field == field and info.value.file is not None

    fails(BagOptions(drop_topics=["/nope"]), "drop_topics")
    fails(BagOptions(rename_topics={"/nope": "/x"}), "rename_topics")
    fails(BagOptions(rename_topics={"/imu": "/odom"}), "rename_topics")
    for rate in (0, -30.0, float("nan"), float("inf")):
        fails(BagOptions(rates_hz={"/imu": rate}), "rates_hz")
    fails(BagOptions(rates_hz={"/nope": 30}), "rates_hz")
    fails(BagOptions(depth_max_m={"/imu": 3.0}), "depth_max_m")
    for duration in (0.0, float("nan"), 1e300):  # 1e300 s overflows the bag's int64 nanoseconds
        fails(BagOptions(duration_s=duration), "duration_s")
    fails(BagOptions(start_s=1e300), "start_s")
    fails(BagOptions(crop_to_experiment=True, start_s=1.0), "start_s")
    with pytest.raises(ConfigError, match="lies inside the input"):  # the source itself
        transform_bag(src, src, BagOptions())
    fails(BagOptions(), None, dst=tmp_path / "out")  # a ROS 1 bag must end in .bag
    fails(BagOptions(), None, bag=tmp_path / "missing.bag")
    garbage = tmp_path / "garbage.bag"
    garbage.write_text("not a bag\n")
    fails(BagOptions(), None, bag=garbage)
    no_marker = tmp_path / "no_marker.bag"
    transform_bag(src, no_marker, BagOptions(drop_topics=["/starting_experiment"]))
    fails(BagOptions(crop_to_experiment=True), "crop_to_experiment", bag=no_marker)
    fails(BagOptions(), None, dst=no_marker)  # exists already
    assert sorted(p.name for p in tmp_path.iterdir()) == ["garbage.bag", "no_marker.bag"]


# ---------------------------------------------------------------- reindex


def write_multichunk_ros1(path: Path) -> None:
    """A ROS 1 bag with many small uncompressed chunks (as `rosbag record` makes them), via rosbags."""
    store = m.ros1_typestore()
    builder = m.MessageBuilder(store, ros1=True)
    writer = Ros1Writer(path)
    writer.chunk_threshold = 1500  # rosbags' default is 1 MiB; small chunks give several of them
    rng = generator(5, "tests/bag_tools/reindex")
    with writer:
        imu = writer.add_connection("/imu", m.IMU, typestore=store)
        marker = writer.add_connection("/starting_experiment", m.STRING, typestore=store, latching=1)
        for k in range(100):
            stamp = round((T0 + k * STEP) * NS)
            msg = builder.imu(builder.header(stamp, "imu", k), rng.normal(size=3), rng.normal(size=3))
            writer.write(imu, stamp, store.serialize_ros1(msg, m.IMU))
            if k == 40:
                writer.write(marker, stamp, store.serialize_ros1(builder.string("start"), m.STRING))


def kill_recording(complete: Path, killed: Path) -> None:
    """Emulate `rosbag record` killed while writing its last chunk (rosbag's Bag::startWritingChunk /
    stopWritingChunk): the bag header still says "no index" (index_pos 0, no connections or chunks), the
    index section at the end was never written, and the last chunk is still open: its header carries data
    length 0 (filled in only when a chunk closes) and its records follow it, without their IDXDATA
    records, the last one cut in half. That last record holds the bag's last message."""
    with Ros1Reader(complete) as reader:
        positions = sorted(info.pos for info in reader.chunk_infos)
        last = reader.chunks[positions[-1]]
        last_offset = max(e.offset for index in reader.indexes.values() for e in index if e.chunk_pos == positions[-1])
    data = complete.read_bytes()
    assert len(positions) > 3

    header = BytesIO()
    header.write(ROS1_MAGIC)
    fields = Ros1RecordHeader()
    fields.set_uint64("index_pos", 0)
    fields.set_uint32("conn_count", 0)
    fields.set_uint32("chunk_count", 0)
    size = fields.write(header, RecordType.BAGHEADER)
    padding = BAG_HEADER_BYTES - 4 - size  # the bag header record fills 4096 bytes, padded with spaces
    header.write(padding.to_bytes(4, "little") + b" " * padding)
    assert header.tell() == positions[0]

    open_chunk = BytesIO()
    fields = Ros1RecordHeader()
    fields.set_string("compression", "none")
    fields.set_uint32("size", 0)
    fields.write(open_chunk, RecordType.CHUNK)
    open_chunk.write((0).to_bytes(4, "little"))
    # The closed chunks (with their IDXDATA records), then the open chunk's records, cut in the last one.
    chunk_records = data[last.datapos : last.datapos + last.datasize]
    killed.write_bytes(header.getvalue() + data[positions[0] : positions[-1]] + open_chunk.getvalue()
                       + chunk_records[: last_offset + 20])


def raw_messages(path: Path) -> list[tuple[str, int, bytes]]:
    with AnyReader([path]) as reader:
        return [(c.topic, t, bytes(raw)) for c, t, raw in reader.messages()]


def test_reindex_recovers_every_complete_message_of_a_killed_recording(tmp_path):
    complete = tmp_path / "complete.bag"
    write_multichunk_ros1(complete)
    killed = tmp_path / "run.bag.active"
    kill_recording(complete, killed)
    with pytest.raises(InputError, match="not a readable"):
        bag_summary(killed)  # rosbags refuses a bag without index
    before = digest(killed)

    report = reindex_ros1(killed)
    assert report.dst == tmp_path / "run.bag" == default_reindex_path(killed)
    assert digest(killed) == before
    expected = raw_messages(complete)
    assert raw_messages(report.dst) == expected[:-1]  # all but the message that was cut in half
    assert report.counts == {"/imu": 99, "/starting_experiment": 1}
    assert report.skipped_bytes == 20
    with AnyReader([report.dst]) as reader:
        (marker,) = [c for c in reader.connections if c.topic == "/starting_experiment"]
        assert marker.ext.latching == 1  # connection headers carried over

    # A complete bag re-indexes to the same messages; an existing output is refused.
    again = reindex_ros1(complete, tmp_path / "again.bag")
    assert raw_messages(again.dst) == expected and again.skipped_bytes == 0
    with pytest.raises(InputError):
        reindex_ros1(complete, tmp_path / "again.bag")


def test_reindex_refuses_what_is_not_a_ros1_bag(tmp_path):
    garbage = tmp_path / "x.bag.active"
    garbage.write_bytes(b"#ROSBAG V1.2\n")
    with pytest.raises(InputError, match="not a ROS 1 v2.0 bag") as info:
        reindex_ros1(garbage)
    assert info.value.file == str(garbage)
    with pytest.raises(InputError, match="not found"):
        reindex_ros1(tmp_path / "missing.bag")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.bag.active"]


# ---------------------------------------------------------------- real ROS 2 samples

REAL_MESSAGES_PER_TOPIC = 2


@pytest.mark.parametrize("name", ["test_bag_mcap", "test_bag_sqlite3"])
def test_real_ros2_samples_crop_shift_rename(realdata, tmp_path, name):
    src = realdata / "rosbag2" / name
    before = digest(src)
    original = bag_summary(src)
    start_ns = min(s.first_ns for s in original.values())
    dst = tmp_path / "out"
    options = BagOptions(start_s=start_ns / NS, duration_s=60.0, shift_to_zero=True,
                         rename_topics={"/test/sensor_msgs/imu": "/imu"}, rename_frames={"test_frame": "robot_gt"})
    report = transform_bag(src, dst, options)
    assert digest(src) == before
    out = bag_summary(dst)
    assert len(out) == len(original) == 94 and "/imu" in out and "/test/sensor_msgs/imu" not in out
    assert {s.count for s in out.values()} == {REAL_MESSAGES_PER_TOPIC}
    assert min(s.first_ns for s in out.values()) == 0 == report.first_ns
    first_ns = round(start_ns / NS * NS)  # start_s went through seconds
    for topic, summary in original.items():
        new = out[report.topics[topic].output_topic]
        assert (new.msgtype, new.first_ns, new.last_ns) == (
            summary.msgtype, summary.first_ns - first_ns, summary.last_ns - first_ns), topic
    for topic, _, msg in read_messages(dst, ["/imu", "/test/sensor_msgs/image", "/test/tf2_msgs/tf_message"]):
        headers = [msg.header] if topic != "/test/tf2_msgs/tf_message" else [t.header for t in msg.transforms]
        assert {h.frame_id for h in headers} == {"robot_gt"}
        assert all(0 <= stamp_ns(h) < 60 * NS for h in headers)


def test_retime_keeps_the_nearest_message_and_latched_tf_static_survives_the_crop(tmp_path):
    """Jittered 100 Hz IMU retimed to 50 Hz: the message nearest each tick, filed on the tick, its header
    keeping the acquisition time; /tf_static (latched, before the window) is kept, at the window start."""
    store = m.ros1_typestore()
    builder = m.MessageBuilder(store, ros1=True)
    rng = generator(3, "tests/bag_tools/retime")
    jitter = np.rint(rng.uniform(-2e6, 2e6, size=100)).astype(int)  # within +-2 ms of 100 Hz
    jitter[0] = 0  # a negative jitter would put the first message before the window
    acquired = [2 * NS + k * 10_000_000 + int(jitter[k]) for k in range(100)]
    src = tmp_path / "jitter.bag"
    with Ros1Writer(src) as writer:
        static = writer.add_connection("/tf_static", m.TF, typestore=store, latching=1)
        imu = writer.add_connection("/imu", m.IMU, typestore=store)
        tf = builder.tf(NS, 0, [("base_link", "cam", np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]))])
        writer.write(static, NS, store.serialize_ros1(tf, m.TF))
        for k, stamp in enumerate(acquired):
            msg = builder.imu(builder.header(stamp, "imu", k), np.zeros(3), np.zeros(3))
            writer.write(imu, stamp, store.serialize_ros1(msg, m.IMU))
    dst = tmp_path / "retimed.bag"
    options = BagOptions(start_s=2.0, duration_s=0.5, shift_to_zero=True, rates_hz={"/imu": 50},
                         rename_frames={"base_link": "robot_gt"})
    transform_bag(src, dst, options)
    out = read_back(dst)
    ticks = [k * 20_000_000 for k in range(25)]
    assert [bag_ns for bag_ns, _ in out["/imu"]] == [max(t, ROS1_TIME_MIN_NS) for t in ticks]
    assert [stamp_ns(msg.header) for _, msg in out["/imu"]] == [acquired[2 * k] - 2 * NS for k in range(25)]
    ((bag_ns, static_msg),) = out["/tf_static"]
    assert bag_ns == ROS1_TIME_MIN_NS and stamp_ns(static_msg.transforms[0].header) == 0  # 1 s -> before 0
    assert static_msg.transforms[0].header.frame_id == "robot_gt"


def test_a_rewrite_shows_its_progress_in_the_bags_time(source, tmp_path, monkeypatch):
    """The progress bar of a rewrite runs over the window in bag time (0.5 s here, from the experiment marker),
    redrawn every tenth of a second of it and ending full, under the pass's label."""
    import contextlib

    from postprocess import bag_tools

    bars = []

    @contextlib.contextmanager
    def subtask(description, total):
        bars.append((description, total, []))
        yield bars[-1][2].append

    monkeypatch.setattr(bag_tools, "subtask", subtask)
    transform_bag(source["ros1"], tmp_path / "out.bag", EXPERIMENT, label="cropping run.bag")
    ((label, total, shown),) = bars
    assert label == "cropping run.bag" and total == pytest.approx(DURATION)
    assert shown == sorted(shown) and shown[-1] == pytest.approx(DURATION)
    assert len(shown) == pytest.approx(DURATION / 0.1 + 1, abs=1)


@pytest.mark.parametrize("garbage", ["random", "ros1_header", "mcap_body"])
def test_garbage_bags_are_refused_naming_the_bag(source, tmp_path, garbage):
    """Bytes that are not a bag, behind a bag's name or magic, give the one 'not a readable bag' error from the
    reader, not the parser's UnicodeDecodeError or OverflowError; nothing is written."""
    import shutil

    rng = generator(3, f"tests/garbage_bag/{garbage}")
    noise = rng.integers(0, 256, 20_000, dtype=np.uint8).tobytes()
    if garbage == "mcap_body":
        bag = tmp_path / "bag"
        shutil.copytree(source["ros2"], bag)
        (mcap,) = bag.glob("*.mcap")
        mcap.write_bytes(mcap.read_bytes()[:8] + noise)  # the MCAP magic, then garbage
    else:
        bag = tmp_path / "bag.bag"
        bag.write_bytes((ROS1_MAGIC if garbage == "ros1_header" else b"") + noise)
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(InputError, match="not a readable ROS 1 .bag file or ROS 2 bag folder") as error:
        bag_summary(bag)
    assert error.value.file == str(bag)
    with pytest.raises(InputError, match="not a readable"):
        transform_bag(bag, tmp_path / "out.bag", BagOptions())
    assert sorted(tmp_path.rglob("*")) == before

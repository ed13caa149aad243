"""Bag tools: rewrite a ROS 1 `.bag` or ROS 2 bag folder into a new bag (crop, retime, shift, drop,
rename topics and TF frames, depth cut-off, a caller's per-message hook) and re-index a ROS 1 bag whose
recording was killed (GRADE's `.bag.active` files).

Both read through rosbags' AnyReader and write through rosbags' writers; the source is never modified
and the output is built under a hidden temporary name beside `dst` and renamed into place at the end,
so `dst` holds either nothing or a complete bag.

Times: `BagOptions` names topics by their source names and gives times in source bag time (seconds).
The output window is [start, start + duration). With `shift_to_zero` every bag timestamp and every
std_msgs/Header stamp (and rosgraph_msgs/Clock) has the window start subtracted; a header stamp that
would become negative (a latched /tf_static stamped before the window, an unset stamp) is written as 0.
ROS 1 output files a message at 0 ns under 1 ns, as core.formats.bags.writer does (ROS 1 tools reject
record time 0); its header stamp stays 0.
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from heapq import heappop, heappush
from io import BytesIO
from pathlib import Path
from typing import BinaryIO, NamedTuple

import numpy as np
from rosbags.convert.converter import STATIC_MSGTYPE_RENAMES, create_connections_converters
from rosbags.highlevel import AnyReader
from rosbags.interfaces import Connection, ConnectionExtRosbag1, ConnectionExtRosbag2, QosDurability
from rosbags.rosbag1 import ReaderError as Ros1ReaderError
from rosbags.rosbag1 import Writer as Ros1Writer
from rosbags.rosbag1.reader import Header as Ros1RecordHeader
from rosbags.rosbag1.reader import RecordType, decompressors, read_bytes, read_uint32
from rosbags.rosbag2 import Writer as Ros2Writer
from rosbags.typesys.msg import normalize_msgtype

from core.errors import InputError
from core.formats.bags import messages as m
from core.formats.bags.layout import ACTIVE_SUFFIX, ROS1_SUFFIX
from core.formats.bags.reader import image_array, open_bag, stamp_ns
from core.formats.bags.ros1_definitions import canonical_definition, has_canonical_definition
from core.formats.bags.topics import EXPERIMENT_MARKER, TF_STATIC
from core.formats.bags.writer import (
    BAG_FORMATS,
    ROS1_TIME_MIN_NS,
    ROS2_BAG_VERSION,
    ROS2_STORAGES,
    BagFormat,
    Ros2Storage,
    mcap_chunk_crcs,
)
from core.formats.images import MM_PER_M
from core.outputs import check_apart
from core.progress import subtask
from core.rundir import partial_folder

NS_PER_S = 1_000_000_000
HEADER = "std_msgs/msg/Header"
ROS1_MAGIC = b"#ROSBAG V2.0\n"
# Rates are kept as exact fractions so that tick times do not drift over long bags.
RATE_DENOMINATOR_LIMIT = 1_000_000
PROGRESS_STEP_NS = NS_PER_S // 10
SQLITE3_SUFFIX = ".db3"
# Errors rosbags raises for a bag it cannot read (at open or while reading messages).

# (output topic, msgtype, message, output bag timestamp ns) -> the message to write, or None to drop it.
MessageHook = Callable[[str, str, object, int], object | None]


@dataclass(frozen=True)
class BagOptions:
    """What `transform_bag` does; topics are named by their names in the source bag.

    crop_to_experiment / start_s: the window starts at the first `/starting_experiment` message, or at
    source bag time start_s (seconds); neither: at the bag's first message. duration_s: the window's
    length (None: to the end). rates_hz: topic -> nominal rate; of each topic only the message nearest
    each tick start + k / rate is kept, filed at the tick (its header stamp keeps its acquisition time).
    depth_max_m: depth image topic -> cut-off in metres (32FC1: beyond -> NaN; 16UC1 mm: beyond -> 0).
    rename_frames applies to /tf and /tf_static transforms, every header frame_id and every
    child_frame_id (nav_msgs/Odometry). output_format / ros2_storage: None keeps the source's.
    """

    crop_to_experiment: bool = False
    start_s: float | None = None
    duration_s: float | None = None
    shift_to_zero: bool = False
    rates_hz: Mapping[str, float] = field(default_factory=dict)
    drop_topics: Sequence[str] = ()
    rename_topics: Mapping[str, str] = field(default_factory=dict)
    rename_frames: Mapping[str, str] = field(default_factory=dict)
    depth_max_m: Mapping[str, float] = field(default_factory=dict)
    output_format: BagFormat | None = None
    ros2_storage: Ros2Storage | None = None


@dataclass(frozen=True)
class TopicReport:
    """One source topic: its output name (None when dropped), message type and message counts."""

    topic: str
    output_topic: str | None
    msgtype: str
    count_in: int
    count_out: int


@dataclass(frozen=True)
class BagReport:
    """What `transform_bag` wrote. window_*_ns are source bag times (end None: to the end of the bag);
    first_ns / last_ns are the output's bag timestamps (None when nothing was written)."""

    src: Path
    dst: Path
    output_format: BagFormat
    topics: dict[str, TopicReport]
    window_start_ns: int
    window_end_ns: int | None
    shift_ns: int
    first_ns: int | None
    last_ns: int | None


@dataclass(frozen=True)
class ReindexReport:
    """What `reindex_ros1` recovered: messages per topic, and the bytes at the end of the source that held
    no complete record (the tail a killed recording was writing)."""

    src: Path
    dst: Path
    counts: dict[str, int]
    skipped_bytes: int


# ---------------------------------------------------------------- shared helpers


@contextmanager
def _atomic_output(dst: Path) -> Iterator[Path]:
    """Yield a path to build `dst` at (in a hidden folder beside it); on success rename it to `dst`,
    which must still not exist; on any error remove what was built."""
    with partial_folder(dst.parent, dst.name) as tmp:
        built = tmp / dst.name
        yield built
        if dst.exists() or dst.is_symlink():
            raise InputError("output already exists; not overwriting", dst)
        os.rename(built, dst)


def check_new_output(src: Path, dst: Path) -> None:
    """`dst` may be written from `src`: apart from it, and not there yet."""
    check_apart(dst, [src], "output bag")
    if dst.exists() or dst.is_symlink():
        raise InputError("output already exists; not overwriting", dst)


def _seconds_to_ns(value: float, src: Path, name: str, positive: bool) -> int:
    # Bag times are int64 nanoseconds: a larger value (1e300) would overflow in round() below.
    if not math.isfinite(value) or value < 0 or (positive and value == 0) or value * NS_PER_S >= 2**63:
        raise InputError(f"must be a number {'> 0' if positive else '>= 0'} of at most {2**63 / NS_PER_S:.3g} s "
                         f"(a bag's int64 nanoseconds), got {value!r}", src, name)
    return round(value * NS_PER_S)


# ---------------------------------------------------------------- message rewriting


class _Rewriter:
    """Shifts header stamps and renames frames in place, walking nested messages (a TFMessage's
    transforms); numpy arrays (image and cloud data) are not walked."""

    def __init__(self, shift_ns: int, frames: Mapping[str, str]):
        self.shift_ns = shift_ns
        self.frames = dict(frames)

    @property
    def active(self) -> bool:
        return bool(self.shift_ns or self.frames)

    def _time(self, stamp: object) -> object:
        sec, nanosec = divmod(max(stamp_ns(stamp) - self.shift_ns, 0), NS_PER_S)
        return dataclasses.replace(stamp, sec=sec, nanosec=nanosec)

    def rewrite(self, msg: object) -> None:
        msgtype = getattr(msg, "__msgtype__", None)
        if msgtype == HEADER:
            msg.stamp = self._time(msg.stamp)
            msg.frame_id = self.frames.get(msg.frame_id, msg.frame_id)
            return
        if msgtype == m.CLOCK:
            msg.clock = self._time(msg.clock)
            return
        for item in dataclasses.fields(msg):
            if item.name.startswith("__"):
                continue
            value = getattr(msg, item.name)
            if item.name == "child_frame_id" and isinstance(value, str):
                setattr(msg, item.name, self.frames.get(value, value))
            elif dataclasses.is_dataclass(value):
                self.rewrite(value)
            elif isinstance(value, list):
                for element in value:
                    if dataclasses.is_dataclass(element):
                        self.rewrite(element)


def _cut_depth(msg: object, max_m: float, builder: m.MessageBuilder, src: Path, topic: str) -> object:
    """A depth image with every pixel beyond max_m set to no return (32FC1 NaN, 16UC1 0)."""
    if msg.encoding not in m.DEPTH_ENCODINGS:
        raise InputError(f"depth cut-off needs a {' or '.join(m.DEPTH_ENCODINGS)} image, got {msg.encoding!r}",
                         src, f"depth_max_m[{topic}]")
    pixels = image_array(msg)
    if msg.encoding == "32FC1":
        pixels[pixels > max_m] = np.nan
        pixels = pixels.astype("<f4")
    else:
        pixels[pixels > max_m * MM_PER_M] = 0
        pixels = pixels.astype("<u2")
    return builder.image(msg.header, pixels, msg.encoding)


# ---------------------------------------------------------------- transform_bag


@dataclass
class _Candidate:
    """The message nearest one tick of a retimed topic, so far."""

    tick: int
    distance: int
    connection: Connection
    raw: bytes


class _Grid:
    """A topic's tick grid start + k / rate, k in [0, count) (count None: unbounded)."""

    def __init__(self, start_ns: int, rate_hz: float, duration_ns: int | None):
        self.start_ns = start_ns
        self.period = Fraction(NS_PER_S) / Fraction(rate_hz).limit_denominator(RATE_DENOMINATOR_LIMIT)
        self.count = None if duration_ns is None else math.ceil(duration_ns / self.period)
        self.half_ns = math.ceil(self.period / 2)

    def nearest(self, t_ns: int) -> int:
        """Index of the tick nearest t (a message half-way between two ticks goes to the later one)."""
        return math.floor((t_ns - self.start_ns) / self.period + Fraction(1, 2))

    def time(self, k: int) -> int:
        return self.start_ns + round(k * self.period)

    def inside(self, k: int) -> bool:
        return k >= 0 and (self.count is None or k < self.count)


@dataclass
class _Plan:
    """The validated options against one source bag."""

    output_format: BagFormat
    ros2_storage: Ros2Storage
    kept: list[Connection]
    output_topics: dict[str, str]
    start_ns: int
    end_ns: int | None
    shift_ns: int
    grids: dict[str, _Grid]
    depth_max_m: dict[str, float]


def _source_format(src: Path) -> tuple[BagFormat, Ros2Storage | None]:
    if src.is_dir():
        storage: Ros2Storage = "sqlite3" if any(src.glob(f"*{SQLITE3_SUFFIX}")) else "mcap"
        return "ros2", storage
    return "ros1", None


def _check_topics(src: Path, name: str, topics: Sequence[str], known: Mapping[str, object]) -> None:
    missing = sorted(set(topics) - set(known))
    if missing:
        raise InputError(f"topics {missing} not in the bag; it has {sorted(known)}", src, name)


def _experiment_start(reader: AnyReader, src: Path) -> int:
    markers = [c for c in reader.connections if c.topic == EXPERIMENT_MARKER]
    # An empty connection list would make rosbags read every topic.
    for _, timestamp, _ in reader.messages(connections=markers) if markers else ():
        return timestamp
    raise InputError(f"no {EXPERIMENT_MARKER} message to crop to", src, "crop_to_experiment")


def _plan(reader: AnyReader, src: Path, dst: Path, options: BagOptions) -> _Plan:
    topics = reader.topics
    for name in ("rates_hz", "drop_topics", "rename_topics", "depth_max_m"):
        _check_topics(src, name, list(getattr(options, name)), topics)
    source_format, source_storage = _source_format(src)
    output_format = options.output_format or source_format
    if output_format not in BAG_FORMATS:
        raise InputError(f"must be one of {BAG_FORMATS}, got {output_format!r}", src, "output_format")
    ros2_storage = options.ros2_storage or source_storage or "mcap"
    if ros2_storage not in ROS2_STORAGES:
        raise InputError(f"must be one of {tuple(ROS2_STORAGES)}, got {ros2_storage!r}", src, "ros2_storage")
    if (dst.suffix == ROS1_SUFFIX) != (output_format == "ros1"):
        # AnyReader tells the formats apart by this suffix.
        raise InputError(f"a {output_format} bag's path must {'' if output_format == 'ros1' else 'not '}end in "
                         f"{ROS1_SUFFIX}", dst)

    dropped = set(options.drop_topics)
    for name, topic_set in (("rates_hz", options.rates_hz), ("rename_topics", options.rename_topics),
                            ("depth_max_m", options.depth_max_m)):
        both = sorted(dropped & set(topic_set))
        if both:
            raise InputError(f"topics {both} are also in drop_topics", src, name)
    output_topics = {t: options.rename_topics.get(t, t) for t in topics if t not in dropped}
    for topic, new in output_topics.items():
        if not new.startswith("/") or new != new.strip() or "//" in new:
            raise InputError(f"{topic}: new name {new!r} is not an absolute topic name", src, "rename_topics")
    names = list(output_topics.values())
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise InputError(f"two topics would both be written as {clashes}", src, "rename_topics")
    for topic, max_m in options.depth_max_m.items():
        if topics[topic].msgtype != m.IMAGE:
            raise InputError(f"{topic} carries {topics[topic].msgtype}, not {m.IMAGE}", src, "depth_max_m")
        if not math.isfinite(max_m) or max_m <= 0:
            raise InputError(f"{topic}: cut-off must be a finite number of metres > 0, got {max_m!r}", src,
                             "depth_max_m")

    if options.crop_to_experiment and options.start_s is not None:
        raise InputError("give either crop_to_experiment or start_s, not both", src, "start_s")
    if options.crop_to_experiment:
        start_ns = _experiment_start(reader, src)
    elif options.start_s is not None:
        start_ns = _seconds_to_ns(options.start_s, src, "start_s", positive=False)
    else:
        start_ns = reader.start_time if reader.message_count else 0
    duration_ns = (None if options.duration_s is None
                   else _seconds_to_ns(options.duration_s, src, "duration_s", positive=True))
    grids = {}
    for topic, rate in options.rates_hz.items():
        if not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
            raise InputError(f"{topic}: rate must be a finite number of Hz > 0, got {rate!r}", src, "rates_hz")
        grids[topic] = _Grid(start_ns, rate, duration_ns)
    return _Plan(output_format=output_format, ros2_storage=ros2_storage,
                 kept=[c for c in reader.connections if c.topic in output_topics], output_topics=output_topics,
                 start_ns=start_ns, end_ns=None if duration_ns is None else start_ns + duration_ns,
                 shift_ns=start_ns if options.shift_to_zero else 0, grids=grids,
                 depth_max_m=dict(options.depth_max_m))


def _latched(connection: Connection) -> bool:
    """Whether a topic's last message before the window still holds inside it (ROS 1 latching, ROS 2
    transient-local durability, or /tf_static by convention)."""
    ext = connection.ext
    if isinstance(ext, ConnectionExtRosbag1):
        latched = bool(ext.latching)
    else:
        assert isinstance(ext, ConnectionExtRosbag2)
        latched = any(q.durability == QosDurability.TRANSIENT_LOCAL for q in ext.offered_qos_profiles)
    return latched or connection.topic == TF_STATIC


def _add_canonical_ros1_connections(connections: list[Connection], writer: Ros1Writer) -> None:
    """Add the ROS 1 output connections of the types core.formats.bags.ros1_definitions knows, with their canonical
    definitions, before rosbags' converter adds its own: it reuses a connection of the same topic, type and
    connection header (callerid, latching; a ROS 2 topic is latched where its QoS is transient local), and would
    otherwise store its shortened text, which ROS 1's tools take for a type to migrate. From a ROS 2 bag too: the
    known types (common_msgs and friends) have the same layout in ROS 2, Header's seq aside, which the converter
    adds (ROS 1's genpy reads such a converted bag back)."""
    typestore = m.ros1_typestore()
    for connection in connections:
        msgtype = STATIC_MSGTYPE_RENAMES.get(connection.msgtype, connection.msgtype)
        if not has_canonical_definition(msgtype):
            continue
        ext = connection.ext
        if not isinstance(ext, ConnectionExtRosbag1):
            ext = ConnectionExtRosbag1(None, int(any(q.durability == QosDurability.TRANSIENT_LOCAL
                                                     for q in ext.offered_qos_profiles)))
        if any((c.topic, c.msgtype, c.ext) == (connection.topic, msgtype, ext) for c in writer.connections):
            continue
        msgdef, md5sum = canonical_definition(msgtype, typestore)
        writer.add_connection(connection.topic, msgtype, msgdef=msgdef, md5sum=md5sum, callerid=ext.callerid,
                              latching=ext.latching)


def _writer(path: Path, output_format: BagFormat, storage: Ros2Storage) -> Ros1Writer | Ros2Writer:
    if output_format == "ros1":
        return Ros1Writer(path)
    return Ros2Writer(path, version=ROS2_BAG_VERSION, storage_plugin=ROS2_STORAGES[storage])


class _Transformer:
    """One pass over the window: selection per tick, a time-ordered output buffer, rewriting and writing."""

    def __init__(self, reader: AnyReader, src: Path, plan: _Plan, writer: Ros1Writer | Ros2Writer,
                 hook: MessageHook | None, options: BagOptions, label: str):
        self.reader, self.src, self.plan, self.writer, self.hook = reader, src, plan, writer, hook
        self.label = label
        self.ros1_out = plan.output_format == "ros1"
        renamed = [c._replace(topic=plan.output_topics[c.topic]) for c in plan.kept]
        if isinstance(writer, Ros1Writer):
            _add_canonical_ros1_connections(renamed, writer)
        # rosbags' converter creates the output connections and, when the formats differ, converts each
        # message's bytes (ROS 1 <-> CDR, Header.seq) the way `rosbags-convert` does.
        self.connmap, self.convmap = create_connections_converters(renamed, None, reader, writer)
        self.rewriter = _Rewriter(plan.shift_ns, options.rename_frames)
        self.builder = m.MessageBuilder(reader.typestore, not reader.is2)
        self.candidates: dict[str, _Candidate] = {}
        self.pending: list[tuple[int, int, Connection, bytes]] = []
        self.order = 0
        # A message selected for a tick is filed up to half a period before it arrived, so the buffer
        # holds back one longest period to keep the output in time order.
        self.hold_ns = max((math.ceil(g.period) for g in plan.grids.values()), default=0)
        self.counts = {c.topic: 0 for c in plan.kept}
        self.first_ns: int | None = None
        self.last_ns: int | None = None

    def run(self) -> None:
        plan = self.plan
        if not plan.kept:  # rosbags reads every topic when given no connections
            return
        latched = [c for c in plan.kept if _latched(c)]
        if latched and plan.start_ns > 0:
            for connection, _, raw in self.reader.messages(connections=latched, stop=plan.start_ns):
                self._push(plan.start_ns, connection, raw)
        # Progress in the bag's own time, redrawn every PROGRESS_STEP_NS of it (not per message: bags hold 1e5).
        end_ns = plan.end_ns if plan.end_ns is not None else self.reader.end_time
        shown_ns = plan.start_ns
        with subtask(self.label, max(end_ns - plan.start_ns, 0) / 1e9) as update:
            for connection, timestamp, raw in self.reader.messages(connections=plan.kept, start=plan.start_ns,
                                                                   stop=plan.end_ns):
                self._finalize(timestamp)
                grid = plan.grids.get(connection.topic)
                if grid is None:
                    self._push(timestamp, connection, raw)
                else:
                    self._select(grid, connection, timestamp, raw)
                self._flush(timestamp - self.hold_ns)
                if timestamp - shown_ns >= PROGRESS_STEP_NS:
                    shown_ns = timestamp
                    update((timestamp - plan.start_ns) / 1e9)
            self._finalize(None)
            self._flush(None)
            update((end_ns - plan.start_ns) / 1e9)

    def _select(self, grid: _Grid, connection: Connection, timestamp: int, raw: bytes) -> None:
        tick = grid.nearest(timestamp)
        if not grid.inside(tick):
            return
        distance = abs(timestamp - grid.time(tick))
        current = self.candidates.get(connection.topic)
        if current is not None and current.tick == tick:
            if distance < current.distance:
                self.candidates[connection.topic] = _Candidate(tick, distance, connection, raw)
            return
        if current is not None:
            self._push(grid.time(current.tick), current.connection, current.raw)
        self.candidates[connection.topic] = _Candidate(tick, distance, connection, raw)

    def _finalize(self, now_ns: int | None) -> None:
        """Write out the selections no message at or after now_ns can beat (None: all of them)."""
        for topic, candidate in list(self.candidates.items()):
            grid = self.plan.grids[topic]
            tick_ns = grid.time(candidate.tick)
            if now_ns is None or tick_ns + grid.half_ns < now_ns:
                self._push(tick_ns, candidate.connection, candidate.raw)
                del self.candidates[topic]

    def _push(self, out_ns: int, connection: Connection, raw: bytes) -> None:
        heappush(self.pending, (out_ns, self.order, connection, raw))
        self.order += 1

    def _flush(self, until_ns: int | None) -> None:
        while self.pending and (until_ns is None or self.pending[0][0] <= until_ns):
            out_ns, _, connection, raw = heappop(self.pending)
            self._write(out_ns - self.plan.shift_ns, connection, raw)

    def _write(self, out_ns: int, connection: Connection, raw: bytes) -> None:
        topic = connection.topic
        max_m = self.plan.depth_max_m.get(topic)
        data: bytes | memoryview = raw
        if self.rewriter.active or max_m is not None or self.hook is not None:
            msg = self.reader.deserialize(raw, connection.msgtype)
            self.rewriter.rewrite(msg)
            if max_m is not None:
                msg = _cut_depth(msg, max_m, self.builder, self.src, topic)
            if self.hook is not None:
                msg = self.hook(self.plan.output_topics[topic], connection.msgtype, msg, out_ns)
                if msg is None:
                    return
            typestore = self.reader.typestore
            data = (typestore.serialize_cdr(msg, connection.msgtype) if self.reader.is2
                    else typestore.serialize_ros1(msg, connection.msgtype))
        data = self.convmap[connection.msgtype](data)
        record_ns = max(out_ns, ROS1_TIME_MIN_NS) if self.ros1_out else out_ns
        self.writer.write(self.connmap[(connection.id, connection.owner)], record_ns, data)
        self.counts[topic] += 1
        self.first_ns = record_ns if self.first_ns is None else self.first_ns
        self.last_ns = record_ns


def transform_bag(src: Path, dst: Path, options: BagOptions, message_hook: MessageHook | None = None,
                  label: str | None = None) -> BagReport:
    """Write a new bag at `dst` from the ROS 1 `.bag` or ROS 2 bag folder `src`, as `options` say.

    `message_hook(output_topic, msgtype, msg, bag_timestamp_ns)` sees every message about to be written,
    in output time order, after the built-in changes (shift, frame renames, depth cut-off); it returns
    the message to write (it may modify `msg` in place and return it) or None to drop it. `label` names the pass
    on its progress bar (default: `rewriting SRC`). A topic keeps
    its message type. Raises InputError naming the file and the field for a missing or unreadable bag,
    unknown topics, bad rates or times, or an existing `dst`.
    """
    src, dst = Path(src), Path(dst)
    if not src.exists():
        raise InputError("bag not found", src)
    check_new_output(src, dst)
    with open_bag(src) as reader:
        plan = _plan(reader, src, dst, options)
        # The writer aborts (no index; the temporary folder is removed) when the body raises.
        with _atomic_output(dst) as built, _writer(built, plan.output_format, plan.ros2_storage) as writer:
            mcap_chunk_crcs(writer)
            transformer = _Transformer(reader, src, plan, writer, message_hook, options,
                                       label or f"rewriting {src.name}")
            transformer.run()
        topics = {}
        for topic, info in reader.topics.items():
            out = plan.output_topics.get(topic)
            topics[topic] = TopicReport(topic, out, info.msgtype or "", info.msgcount,
                                        transformer.counts.get(topic, 0))
    return BagReport(src=src, dst=dst, output_format=plan.output_format, topics=topics,
                     window_start_ns=plan.start_ns, window_end_ns=plan.end_ns, shift_ns=plan.shift_ns,
                     first_ns=transformer.first_ns, last_ns=transformer.last_ns)


# ---------------------------------------------------------------- reindex_ros1


class _Ros1Connection(NamedTuple):
    """A connection record's fields, as rosbags' ROS 1 writer takes them (msgtype normalised)."""

    topic: str
    msgtype: str
    msgdef: str
    md5sum: str
    callerid: str | None
    latching: int | None


class _MessageRecord(NamedTuple):
    conn_id: int
    time_ns: int
    data: bytes


class _Ros1Scanner:
    """Every complete connection and message record of a ROS 1 v2.0 bag, in file order, read from the
    chunks themselves (the index records are not needed).

    `rosbag record` writes each chunk's header with a zero data length and fills the length in when it
    closes the chunk, so a killed recording leaves its last chunk (uncompressed) with length 0 and that
    chunk's records after it, the last one possibly cut short; they are read up to the first incomplete
    record. A compressed chunk cut short cannot be decoded and is skipped with everything after it.
    `end` is the file offset after the last complete record used.
    """

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.end = stream.tell()
        self.connections: dict[int, _Ros1Connection] = {}

    def messages(self) -> Iterator[_MessageRecord]:
        for header, data in self._records(self.stream):
            op = header.get_uint8("op")
            if op == RecordType.CHUNK:
                compression = header.get_string("compression")
                if not data and compression == "none":
                    yield from self._chunk(self.stream, in_file=True)
                    return
                try:
                    inner = decompressors[compression](data)
                except (KeyError, OSError, ValueError, RuntimeError):
                    return
                yield from self._chunk(BytesIO(inner), in_file=False)
            elif op == RecordType.CONNECTION:
                self._connection(header, data)
            self.end = self.stream.tell()

    def _chunk(self, stream: BinaryIO, in_file: bool) -> Iterator[_MessageRecord]:
        for header, data in self._records(stream):
            op = header.get_uint8("op")
            if op == RecordType.CONNECTION:
                self._connection(header, data)
            elif op == RecordType.MSGDATA:
                yield _MessageRecord(header.get_uint32("conn"), header.get_time("time"), data)
            elif in_file:
                return
            if in_file:
                self.end = stream.tell()

    def _connection(self, header: Ros1RecordHeader, data: bytes) -> None:
        fields = Ros1RecordHeader.read(BytesIO(len(data).to_bytes(4, "little") + data))
        latching = fields.get_string("latching") if "latching" in fields else ""
        self.connections[header.get_uint32("conn")] = _Ros1Connection(
            topic=header.get_string("topic"), msgtype=normalize_msgtype(fields.get_string("type")),
            msgdef=fields.get_string("message_definition"), md5sum=fields.get_string("md5sum"),
            callerid=fields.get_string("callerid") if "callerid" in fields else None,
            latching=int(latching) if latching else None)

    @staticmethod
    def _records(stream: BinaryIO) -> Iterator[tuple[Ros1RecordHeader, bytes]]:
        """(header, data) of each complete record from the stream's position, up to the first incomplete one."""
        while True:
            try:
                header = Ros1RecordHeader.read(stream)
                header.get_uint8("op")
                data = read_bytes(stream, read_uint32(stream))
            except Ros1ReaderError:
                return
            yield header, data


def default_reindex_path(src: Path) -> Path:
    """`run.bag.active` -> `run.bag`; any other `x.bag` -> `x.reindexed.bag`."""
    src = Path(src)
    if src.name.endswith(ROS1_SUFFIX + ACTIVE_SUFFIX):
        return src.with_name(src.name[: -len(ACTIVE_SUFFIX)])
    return src.with_name(f"{src.name.removesuffix(ROS1_SUFFIX)}.reindexed{ROS1_SUFFIX}")


def reindex_ros1(src: Path, dst: Path | None = None) -> ReindexReport:
    """Write a complete, indexed ROS 1 bag at `dst` (default: `default_reindex_path(src)`) holding every
    complete message of `src`, a ROS 1 bag whose recording may have been killed before it wrote its index.

    rosbags has no re-indexer (its reader refuses a bag without index), so the chunks are scanned here
    with rosbags' record parsing and the messages written again through rosbags' writer. Raises
    InputError for a missing file, a file that is not a ROS 1 v2.0 bag, or an existing `dst`.
    """
    src = Path(src)
    dst = default_reindex_path(src) if dst is None else Path(dst)
    if not src.is_file():
        raise InputError("bag not found (a ROS 1 bag is a file)", src)
    if dst.suffix != ROS1_SUFFIX:
        raise InputError(f"a ROS 1 bag's path must end in {ROS1_SUFFIX}", dst)
    check_new_output(src, dst)
    counts: dict[str, int] = {}
    with src.open("rb") as stream, _atomic_output(dst) as built:
        if stream.readline() != ROS1_MAGIC:
            raise InputError(f"not a ROS 1 v2.0 bag (the file does not start with {ROS1_MAGIC!r})", src)
        scanner = _Ros1Scanner(stream)
        written: dict[_Ros1Connection, Connection] = {}
        with Ros1Writer(built) as writer:
            for record in scanner.messages():
                if record.conn_id not in scanner.connections:
                    raise InputError(f"message on connection {record.conn_id} before its connection record "
                                     f"(offset {scanner.end})", src)
                info = scanner.connections[record.conn_id]
                if info not in written:
                    written[info] = writer.add_connection(
                        info.topic, info.msgtype, msgdef=info.msgdef, md5sum=info.md5sum,
                        callerid=info.callerid, latching=info.latching)
                writer.write(written[info], record.time_ns, record.data)
                counts[info.topic] = counts.get(info.topic, 0) + 1
        skipped = src.stat().st_size - scanner.end
    return ReindexReport(src=src, dst=dst, counts=counts, skipped_bytes=skipped)

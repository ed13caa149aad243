"""Writing one message stream to ROS 1 `.bag` and/or ROS 2 bags (MCAP or sqlite3) with rosbags.

Every message is stamped with simulation time: header stamp = bag timestamp = round(t * 1e9) ns.
Messages must arrive in non-decreasing time order (a bag written in order needs no re-indexing);
a stamp going backwards raises ValueError naming the topic.

The bags are built in a hidden temporary folder next to their final paths and moved into place by
`close()`; `abort()` (or an exception inside `with BagWriter(...)`) removes them, so a final path
holds either the previous bag or a complete new one, never a partial one.

Compression (`compression`, recording.bag_compression) is rosbags' own: ROS 1 chunks lz4 or bz2 (the chunk
header's `compression` field), ROS 2 MCAP chunks zstd or lz4 (each chunk record's `compression`), ROS 2
sqlite3 zstd per message (rosbag2's message compression: metadata.yaml `compression_mode: message`,
`compression_format: zstd`). rosbags' readers (bag_reader) decompress all of them. Every MCAP chunk carries
the CRC-32 of its records (`mcap_chunk_crcs`), which the readers check. A ROS 1 connection stores its type's canonical message definition
(core.formats.bags.ros1_definitions), so ROS 1's tools see no type to migrate.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Literal, Protocol, Self

import lz4.frame
import numpy as np
from rosbags.interfaces import (
    Connection,
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.rosbag1 import Writer as Ros1Writer
from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin
from rosbags.rosbag2 import Writer as Ros2Writer
from rosbags.rosbag2.storage_mcap import McapWriter
from rosbags.typesys.store import Typestore

from core.formats.bags import messages as m
from core.formats.bags.layout import ros1_bag_path, ros2_bag_path
from core.formats.bags.ros1_definitions import canonical_definition
from core.formats.bags.topics import CLOCK, TF, TF_STATIC
from core.rundir import new_partial

BagFormat = Literal["ros1", "ros2"]
Ros2Storage = Literal["mcap", "sqlite3"]
BagCompression = Literal["none", "lz4", "zstd", "bz2"]
BAG_FORMATS = ("ros1", "ros2")
ROS2_STORAGES: dict[str, StoragePlugin] = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
ROS2_BAG_VERSION = Ros2Writer.VERSION_LATEST
# What each kind of bag (ros1, or the ROS 2 storage) can be compressed with; core.config.RecordingConfig
# refuses the other combinations.
BAG_COMPRESSIONS: dict[str, tuple[str, ...]] = {"ros1": ("none", "lz4", "bz2"), "mcap": ("none", "lz4", "zstd"),
                                                "sqlite3": ("none", "zstd")}
# Where an MCAP Chunk record's uncompressed_crc lies from the record's start: after its opcode (1 byte), record
# length (8), message start and end times (8 + 8) and uncompressed size (8) (MCAP spec, Chunk op 0x06).
MCAP_CHUNK_CRC_AT = 1 + 8 + 8 + 8 + 8

# Builds the message of one bag from that bag's builder and the topic's ROS 1 sequence number.
MessageFactory = Callable[[m.MessageBuilder, int], object]


ROS1_TIME_MIN_NS = 1
# A latched topic's connection: ROS 1 `latching=1` in the connection header (what a latched publisher such as
# tf2_ros' static_transform_broadcaster advertises), ROS 2 the offered QoS of tf2_ros' StaticBroadcasterQoS:
# keep last 1, reliable, transient local (late subscribers and `ros2 bag play` get the last message); the
# remaining policies are rclcpp's defaults (0 s = the RMW default, i.e. none).
ROS1_LATCHING = 1
DEFAULT_QOS_TIME = QosTime(sec=0, nsec=0)
LATCHED_QOS = Qos(history=QosHistory.KEEP_LAST, depth=1, reliability=QosReliability.RELIABLE,
                  durability=QosDurability.TRANSIENT_LOCAL, deadline=DEFAULT_QOS_TIME, lifespan=DEFAULT_QOS_TIME,
                  liveliness=QosLiveliness.SYSTEM_DEFAULT, liveliness_lease_duration=DEFAULT_QOS_TIME,
                  avoid_ros_namespace_conventions=False)


class MessageSerializer:
    """Builds and serialises one stream's messages as one kind of bag stores them (ROS 1 or ROS 2 CDR), numbering
    each topic's messages (the ROS 1 header seq) from 0: a bag's sink and a live publisher (a `MessageTap`) use
    it alike, so the bytes they send are the same."""

    def __init__(self, typestore: Typestore, ros1: bool):
        self.typestore, self.ros1 = typestore, ros1
        self.builder = m.MessageBuilder(typestore, ros1)
        self.seq: dict[str, int] = {}

    def serialize(self, topic: str, msgtype: str, factory: MessageFactory) -> bytes:
        seq = self.seq.get(topic, 0)
        message = factory(self.builder, seq)
        data = (self.typestore.serialize_ros1(message, msgtype) if self.ros1
                else self.typestore.serialize_cdr(message, msgtype))
        self.seq[topic] = seq + 1
        return bytes(data)


class MessageTap(Protocol):
    """Another consumer of a BagWriter's stream (a live publisher): shown every message as it is written, in time
    order, on the writing thread; it builds its own message with `factory` (a MessageSerializer does)."""

    def write(self, topic: str, msgtype: str, stamp_ns: int, factory: MessageFactory, latched: bool) -> None:
        """One message (`latched`: its topic keeps its last message for late subscribers, as /tf_static)."""


class _Sink:
    """One open bag: its rosbags writer, connections and the serializer of its kind."""

    def __init__(self, writer: Ros1Writer | Ros2Writer, typestore: Typestore, ros1: bool, final_path: Path):
        self.writer = writer
        self.typestore = typestore
        self.ros1 = ros1
        self.final_path = final_path
        self.serializer = MessageSerializer(typestore, ros1)
        self.connections: dict[str, Connection] = {}

    def write(self, topic: str, msgtype: str, stamp_ns: int, factory: MessageFactory, latched: bool) -> None:
        if topic not in self.connections:
            options: dict[str, object] = {}
            if self.ros1:
                options["msgdef"], options["md5sum"] = canonical_definition(msgtype, self.typestore)
                if latched:
                    options["latching"] = ROS1_LATCHING
            elif latched:
                options["offered_qos_profiles"] = [LATCHED_QOS]
            self.connections[topic] = self.writer.add_connection(topic, msgtype, typestore=self.typestore, **options)
        data = self.serializer.serialize(topic, msgtype, factory)
        # ROS 1 tools reject record times below ros::TIME_MIN (1 ns) and `rosbag play` skips them, so the
        # t = 0 messages are filed at 1 ns there; their header stamps stay 0.
        record_ns = max(stamp_ns, ROS1_TIME_MIN_NS) if self.ros1 else stamp_ns
        self.writer.write(self.connections[topic], record_ns, data)


def _mcap_lz4_chunks(writer: Ros2Writer) -> None:
    """Make an open MCAP writer compress its chunks with lz4 (the LZ4 frame format the MCAP spec names).
    rosbags reads lz4 chunks but its writer offers only zstd, so this sets the chunk compressor of its MCAP
    storage, before any chunk is written."""
    storage = writer.storage
    if not (hasattr(storage, "compression") and hasattr(storage, "compressor") and hasattr(storage, "chunks")
            and not storage.chunks):
        raise RuntimeError("lz4 MCAP chunks need rosbags' MCAP writer with a chunk compressor (rosbags 0.11)")
    storage.compression = "lz4"
    storage.compressor = lz4.frame.compress


def mcap_chunk_crcs(writer: Ros1Writer | Ros2Writer) -> None:
    """Make an open MCAP writer record each chunk's CRC-32 of its uncompressed records (the MCAP spec's
    uncompressed_crc), which rosbags' writer leaves 0 ("not computed"); rosbags' reader checks a non-zero one, so
    a byte changed in a chunk is refused (core.formats.bags.reader.open_bag) instead of read. A no-op on other
    writers (ROS 1 and sqlite3 bags have no such checksum)."""
    storage = getattr(writer, "storage", None)
    if not isinstance(storage, McapWriter):
        return
    close_chunk = storage.close_chunk

    def close_chunk_with_crc() -> None:
        with storage.chunk.bio.getbuffer() as records:
            crc = zlib.crc32(records)
        start = storage.bio.tell()
        close_chunk()
        end = storage.bio.tell()
        storage.bio.seek(start + MCAP_CHUNK_CRC_AT)
        storage.bio.write(struct.pack("<I", crc))
        storage.bio.seek(end)

    storage.close_chunk = close_chunk_with_crc


class BagWriter:
    """The recorder's bag output: the same stream to each requested format.

    ROS 1 goes to `folder/<name>.bag`, ROS 2 to the bag folder `folder/<name>/` (metadata.yaml and
    `<name>.mcap` or `<name>.db3`). Use as a context manager, or call `close()` / `abort()`.
    """

    def __init__(self, folder: Path, name: str, formats: Sequence[BagFormat], ros2_storage: Ros2Storage = "mcap",
                 compression: BagCompression = "none", taps: Sequence[MessageTap] = ()):
        formats = list(formats)
        if not (formats or taps) or len(set(formats)) != len(formats) or any(f not in BAG_FORMATS for f in formats):
            raise ValueError(f"formats must be distinct values from {BAG_FORMATS}, got {formats}")
        if ros2_storage not in ROS2_STORAGES:
            raise ValueError(f"ros2_storage must be one of {tuple(ROS2_STORAGES)}, got {ros2_storage!r}")
        for kind in ("ros1" if f == "ros1" else ros2_storage for f in formats):
            if compression not in BAG_COMPRESSIONS[kind]:
                raise ValueError(f"compression {compression!r} is not available for {kind} bags "
                                 f"(they take {BAG_COMPRESSIONS[kind]})")
        if not name or name.startswith(".") or Path(name).name != name:
            raise ValueError(f"bag name must be a plain, non-hidden file name, got {name!r}")
        self.folder = Path(folder)
        self.name = name
        self._taps = list(taps)
        self._sinks: list[_Sink] = []
        self._tmp: Path | None = None
        if formats:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._tmp = new_partial(self.folder, name)
        self._topic_types: dict[str, str] = {}
        self._last_ns = 0
        self._last_topic: str | None = None
        self._open = True
        try:
            for bag_format in formats:
                self._sinks.append(self._open_sink(bag_format, ros2_storage, compression))
        except BaseException:
            self.abort()
            raise

    def _open_sink(self, bag_format: str, ros2_storage: str, compression: str) -> _Sink:
        if bag_format == "ros1":
            writer = Ros1Writer(ros1_bag_path(self._tmp, self.name))
            if compression != "none":
                writer.set_compression(Ros1Writer.CompressionFormat[compression.upper()])
            writer.open()
            return _Sink(writer, m.ros1_typestore(), True, ros1_bag_path(self.folder, self.name))
        writer = Ros2Writer(ros2_bag_path(self._tmp, self.name), version=ROS2_BAG_VERSION,
                            storage_plugin=ROS2_STORAGES[ros2_storage])
        if compression == "zstd":
            # MCAP: zstd chunks (rosbags' storage-side compression); sqlite3: rosbag2's per-message zstd.
            writer.set_compression(CompressionMode.STORAGE if ros2_storage == "mcap" else CompressionMode.MESSAGE,
                                   CompressionFormat.ZSTD)
        writer.open()
        if compression == "lz4":
            _mcap_lz4_chunks(writer)
        mcap_chunk_crcs(writer)
        return _Sink(writer, m.ros2_typestore(), False, ros2_bag_path(self.folder, self.name))

    @property
    def paths(self) -> list[Path]:
        """The final bag paths (they exist once `close()` has returned)."""
        return [sink.final_path for sink in self._sinks]

    # ------------------------------------------------------------ the stream

    def _write(self, topic: str, msgtype: str, stamp_ns: int, factory: MessageFactory, latched: bool = False) -> None:
        if not self._open:
            raise ValueError(f"{topic}: the bag writer is closed")
        known = self._topic_types.setdefault(topic, msgtype)
        if known != msgtype:
            raise ValueError(f"{topic}: topic already carries {known}, cannot write {msgtype}")
        if stamp_ns < self._last_ns:
            raise ValueError(f"{topic}: stamp {stamp_ns} ns goes backwards (the last message, on "
                             f"{self._last_topic}, was at {self._last_ns} ns); bags must be written in time order")
        for sink in self._sinks:
            sink.write(topic, msgtype, stamp_ns, factory, latched)
        for tap in self._taps:
            tap.write(topic, msgtype, stamp_ns, factory, latched)
        self._last_ns, self._last_topic = stamp_ns, topic

    def clock(self, t: float) -> None:
        """/clock rosgraph_msgs/Clock."""
        topic = CLOCK
        stamp = m.stamp_from_seconds(t, topic)
        self._write(topic, m.CLOCK, stamp, lambda b, seq: b.clock(stamp))

    def imu(self, topic: str, frame_id: str, t: float, linear_acceleration: np.ndarray,
            angular_velocity: np.ndarray) -> None:
        """sensor_msgs/Imu without orientation (orientation_covariance[0] = -1, other covariances 0)."""
        stamp = m.stamp_from_seconds(t, topic)
        acc = m.vector3(linear_acceleration, topic, "linear_acceleration")
        gyro = m.vector3(angular_velocity, topic, "angular_velocity")
        self._write(topic, m.IMU, stamp, lambda b, seq: b.imu(b.header(stamp, frame_id, seq), acc, gyro))

    def tf(self, t: float, transforms: Sequence[tuple[str, str, np.ndarray]]) -> None:
        """/tf tf2_msgs/TFMessage (the moving transforms); each entry is (parent, child, parent <- child 4x4)."""
        self._transforms(TF, t, transforms, latched=False)

    def tf_static(self, t: float, transforms: Sequence[tuple[str, str, np.ndarray]]) -> None:
        """/tf_static tf2_msgs/TFMessage, latched (LATCHED_QOS): the fixed transforms, all in one message as
        tf2_ros' static broadcaster sends them; entries as `tf`."""
        self._transforms(TF_STATIC, t, transforms, latched=True)

    def _transforms(self, topic: str, t: float, transforms: Sequence[tuple[str, str, np.ndarray]],
                    latched: bool) -> None:
        stamp = m.stamp_from_seconds(t, topic)
        names = [f"transform {parent} -> {child}" for parent, child, _ in transforms]
        matrices = np.array([matrix for _, _, matrix in transforms], dtype=np.float64).reshape(-1, 4, 4)
        translations, quats = m.split_transforms(matrices, topic, names)
        parts = [(str(parent), str(child), translation, quat)
                 for (parent, child, _), translation, quat in zip(transforms, translations, quats)]
        self._write(topic, m.TF, stamp, lambda b, seq: b.tf(stamp, seq, parts), latched)

    def joint_states(self, topic: str, t: float, names: Sequence[str], positions: np.ndarray,
                     velocities: np.ndarray) -> None:
        """sensor_msgs/JointState (empty effort, empty frame_id)."""
        stamp = m.stamp_from_seconds(t, topic)
        joint_names, pos, vel = m.joint_arrays(names, positions, velocities, topic)
        self._write(topic, m.JOINT_STATE, stamp,
                    lambda b, seq: b.joint_state(b.header(stamp, "", seq), joint_names, pos, vel))

    def pose(self, topic: str, t: float, frame_id: str, pose: np.ndarray) -> None:
        """geometry_msgs/PoseStamped from a frame_id <- body 4x4."""
        stamp = m.stamp_from_seconds(t, topic)
        translation, quat = m.split_transform(pose, topic, "pose")
        self._write(topic, m.POSE_STAMPED, stamp,
                    lambda b, seq: b.pose_stamped(b.header(stamp, frame_id, seq), translation, quat))

    def odometry(self, topic: str, t: float, frame_id: str, child_frame_id: str, pose: np.ndarray,
                 linear_velocity: np.ndarray, angular_velocity: np.ndarray) -> None:
        """nav_msgs/Odometry: pose frame_id <- child (4x4); the velocities must already be expressed in the
        child frame (ROS convention for the twist), they are written as given. Covariances are 0."""
        stamp = m.stamp_from_seconds(t, topic)
        translation, quat = m.split_transform(pose, topic, "pose")
        linear = m.vector3(linear_velocity, topic, "linear_velocity")
        angular = m.vector3(angular_velocity, topic, "angular_velocity")
        self._write(topic, m.ODOMETRY, stamp, lambda b, seq: b.odometry(
            b.header(stamp, frame_id, seq), child_frame_id, translation, quat, linear, angular))

    def image(self, topic: str, t: float, frame_id: str, rgb: np.ndarray) -> None:
        """sensor_msgs/Image rgb8 from an (H, W, 3) uint8 array."""
        stamp = m.stamp_from_seconds(t, topic)
        pixels = m.rgb_image(rgb, topic)
        self._write(topic, m.IMAGE, stamp, lambda b, seq: b.image(b.header(stamp, frame_id, seq), pixels, "rgb8"))

    def depth(self, topic: str, t: float, frame_id: str, depth: np.ndarray, encoding: m.DepthEncoding) -> None:
        """sensor_msgs/Image from float metres (0 = no return): 32FC1 metres with NaN for no return (REP 118),
        or 16UC1 millimetres rounded to the nearest, 0 for no return, clipped to 65535."""
        stamp = m.stamp_from_seconds(t, topic)
        pixels = m.encode_depth(depth, encoding, topic)
        self._write(topic, m.IMAGE, stamp, lambda b, seq: b.image(b.header(stamp, frame_id, seq), pixels, encoding))

    def camera_info(self, topic: str, t: float, frame_id: str, K: np.ndarray, width: int, height: int,
                    distortion_model: str = m.PLUMB_BOB, D: np.ndarray | None = None, tx: float = 0.0) -> None:
        """sensor_msgs/CameraInfo, R = I, P = [K | (tx, 0, 0)]: plumb_bob with zero distortion, or the lens's model
        (plumb_bob or equidistant, as ROS's camera_calibration names them) and coefficients `D`; `tx` is ROS's
        stereo term, -fx * baseline for a pair's right camera, else 0."""
        stamp = m.stamp_from_seconds(t, topic)
        matrix = m.intrinsics(K, width, height, topic)
        self._write(topic, m.CAMERA_INFO, stamp,
                    lambda b, seq: b.camera_info(b.header(stamp, frame_id, seq), matrix, width, height,
                                                 distortion_model, D, tx))

    def point_cloud(self, topic: str, t: float, frame_id: str, points: np.ndarray, intensity: np.ndarray,
                    ring: np.ndarray) -> None:
        """sensor_msgs/PointCloud2, one row, dense, little-endian: x y z intensity float32, ring uint16."""
        stamp = m.stamp_from_seconds(t, topic)
        records = m.point_records(points, intensity, ring, topic)
        self._write(topic, m.POINT_CLOUD2, stamp,
                    lambda b, seq: b.point_cloud(b.header(stamp, frame_id, seq), records))

    def events(self, topic: str, t: float, frame_id: str, events: np.ndarray, width: int, height: int) -> None:
        """dvs_msgs/EventArray: each event's x, y, polarity and stamp (its own t, ns); the header stamp is `t`."""
        stamp = m.stamp_from_seconds(t, topic)
        records = m.event_records(events, width, height, topic)
        self._write(topic, m.EVENT_ARRAY, stamp,
                    lambda b, seq: b.event_array(b.header(stamp, frame_id, seq), records, width, height))

    def marker(self, topic: str, t: float, text: str) -> None:
        """std_msgs/String (no header; the bag timestamp carries t)."""
        stamp = m.stamp_from_seconds(t, topic)
        self._write(topic, m.STRING, stamp, lambda b, seq: b.string(str(text)))

    # ------------------------------------------------------------ finishing

    def close(self) -> None:
        """Finish every bag and move it to its final path, replacing what was there. Idempotent."""
        if not self._open:
            return
        self._open = False
        if self._tmp is None:  # taps only: no bag
            return
        try:
            for sink in self._sinks:
                sink.writer.close()
            trash = self._tmp / ".replaced"
            trash.mkdir()
            for index, sink in enumerate(self._sinks):
                built = self._tmp / sink.final_path.name
                if sink.final_path.exists() or sink.final_path.is_symlink():
                    os.replace(sink.final_path, trash / str(index))
                os.replace(built, sink.final_path)
        except BaseException:
            self._discard()
            raise
        shutil.rmtree(self._tmp, ignore_errors=True)

    def abort(self) -> None:
        """Drop the bags being written; the final paths are left untouched. Idempotent."""
        if not self._open:
            return
        self._open = False
        self._discard()

    def _discard(self) -> None:
        for sink in self._sinks:
            # The partial bag is deleted below whether or not the writer aborts cleanly.
            with contextlib.suppress(Exception):
                sink.writer.abort()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

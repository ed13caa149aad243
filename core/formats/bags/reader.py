"""Reading ROS 1 and ROS 2 bags (ours or anyone's) with rosbags' AnyReader, and decoding the messages
the recorder writes into numpy arrays.

Message type names are rosbags' (`sensor_msgs/msg/Image`) for ROS 1 bags too. ROS 2 bags whose
metadata carries no type definitions (older rosbag2 sqlite3 bags) are read with ROS 2 Humble's types.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rosbags.highlevel import AnyReader, AnyReaderError
from rosbags.rosbag1 import ReaderError as Ros1ReaderError
from rosbags.rosbag2 import ReaderError as Ros2ReaderError
from rosbags.rosbag2 import storage_mcap
from rosbags.typesys import Stores, get_typestore
from scipy.spatial.transform import Rotation

from core.errors import InputError

READ_ERRORS = (AnyReaderError, Ros1ReaderError, Ros2ReaderError, OSError)
# What rosbags' parsers raise on bytes that are not a bag (a garbage header's text, an MCAP record length past the
# file, a truncated struct), instead of their own ReaderError.
GARBAGE_ERRORS = (UnicodeDecodeError, OverflowError, struct.error, EOFError)
# What an MCAP chunk's decompressor raises on damaged data (lz4: RuntimeError; zstd: its ZstdError, from the
# module rosbags imports); only a damaged chunk found by `damaged_mcap_chunk` turns one into an InputError.
DECOMPRESS_ERRORS = (RuntimeError, storage_mcap.zstd.ZstdError)
MCAP_MAGIC = b"\x89MCAP0\r\n"
MCAP_CHUNK, MCAP_DATA_END, MCAP_FOOTER = 0x06, 0x0F, 0x02  # record opcodes (MCAP spec)

DEFAULT_ROS2_STORE = Stores.ROS2_HUMBLE
NS_PER_S = 1_000_000_000

# sensor_msgs/Image encoding -> (numpy base type, channels); the byte order comes from is_bigendian.
IMAGE_ENCODINGS: dict[str, tuple[str, int]] = {
    "rgb8": ("u1", 3), "bgr8": ("u1", 3), "rgba8": ("u1", 4), "bgra8": ("u1", 4),
    "mono8": ("u1", 1), "8UC1": ("u1", 1), "mono16": ("u2", 1), "16UC1": ("u2", 1),
    "32FC1": ("f4", 1),
}
# sensor_msgs/PointField datatype -> numpy base type.
POINT_FIELD_TYPES = {1: "i1", 2: "u1", 3: "i2", 4: "u2", 5: "i4", 6: "u4", 7: "f4", 8: "f8"}


@dataclass(frozen=True)
class TopicSummary:
    """One topic of a bag; first_ns / last_ns are None for a topic listed without messages."""

    topic: str
    msgtype: str
    count: int
    first_ns: int | None
    last_ns: int | None


def damaged_mcap_chunk(path: Path) -> tuple[Path, int, str] | None:
    """The first damaged chunk of a ROS 2 bag's MCAP files (`path`: the bag folder or an .mcap file): (file, the
    chunk record's byte offset, why), where its data does not decompress to its recorded size or its records do not
    match its CRC-32 (checked by rosbags' own chunk decoder; a chunk whose CRC is 0 was written without one and
    cannot be checked); None when none is. Reads the whole bag: called only once reading it has failed."""
    path = Path(path)
    files = sorted(path.glob("*.mcap")) if path.is_dir() else [path] if path.suffix == ".mcap" else []
    for file in files:
        file_size = file.stat().st_size
        with file.open("rb") as stream:
            if stream.read(len(MCAP_MAGIC)) != MCAP_MAGIC:
                continue
            while len(head := stream.read(9)) == 9:
                opcode, (length,) = head[0], struct.unpack_from("<Q", head, 1)
                offset = stream.tell() - 9
                if opcode in (MCAP_DATA_END, MCAP_FOOTER) or offset + 9 + length > file_size:  # the data section ended
                    break  # (or a record runs past the file: garbage that is not chunks, rosbags' error says so)
                if opcode != MCAP_CHUNK:
                    stream.seek(length, 1)
                    continue
                record = stream.read(length)
                try:
                    _, _, uncompressed, crc, name_length = struct.unpack_from("<QQQII", record)
                    compression = record[32:32 + name_length].decode()
                    (compressed_size,) = struct.unpack_from("<Q", record, 32 + name_length)
                    data = record[40 + name_length:40 + name_length + compressed_size]
                    storage_mcap.decompress(data, compression, uncompressed, crc)
                except (*READ_ERRORS, *GARBAGE_ERRORS, *DECOMPRESS_ERRORS) as exc:
                    return file, offset, str(exc) or type(exc).__name__
    return None


def _unreadable(path: Path, exc: Exception, reading: bool) -> InputError | None:
    """The InputError for a bag rosbags failed to read: naming the damaged MCAP chunk when one is the cause, else
    the bag. None, while `reading` (the caller's code runs too), for a decompressor's error (a RuntimeError, say)
    that no damaged chunk explains: not the bag's to report."""
    damaged = damaged_mcap_chunk(path) if path.is_dir() or path.suffix == ".mcap" else None
    if damaged is not None:
        file, offset, why = damaged
        return InputError(f"the MCAP chunk is damaged ({why}): the bag's bytes changed after it was written (a bad "
                          "copy or disk); copy it again from its source", file, f"chunk at byte {offset}")
    if reading and isinstance(exc, DECOMPRESS_ERRORS):
        return None
    return InputError(f"not a readable ROS 1 .bag file or ROS 2 bag folder ({exc})", path)


@contextmanager
def open_bag(path: Path) -> Iterator[AnyReader]:
    """AnyReader on a ROS 1 .bag or ROS 2 bag folder (ROS 2 bags without type definitions are read with ROS 2
    Humble's types); rosbags' errors, at open or while reading, become an InputError naming it, or naming the
    damaged MCAP chunk (its file and byte offset) where one is the cause (rosbags checks each chunk's CRC-32 as it
    reads it)."""
    path = Path(path)
    if not path.exists():
        raise InputError("bag not found", path)
    try:
        reader = AnyReader([path], default_typestore=get_typestore(DEFAULT_ROS2_STORE))
        reader.open()
    except (*READ_ERRORS, *GARBAGE_ERRORS, *DECOMPRESS_ERRORS) as exc:  # nothing of the caller's runs yet
        raise _unreadable(path, exc, reading=False) from exc
    try:
        yield reader
    except (*READ_ERRORS, *GARBAGE_ERRORS, *DECOMPRESS_ERRORS) as exc:
        error = _unreadable(path, exc, reading=True)
        if error is None:
            raise
        raise error from exc
    finally:
        reader.close()


def bag_summary(path: Path) -> dict[str, TopicSummary]:
    """Topic -> type, message count and first/last bag timestamps (ns), counted from the messages."""
    with open_bag(path) as reader:
        summary = {topic: TopicSummary(topic, info.msgtype or "", 0, None, None)
                   for topic, info in reader.topics.items()}
        for connection, timestamp, _ in reader.messages():
            seen = summary[connection.topic]
            summary[connection.topic] = TopicSummary(
                seen.topic, seen.msgtype, seen.count + 1,
                timestamp if seen.first_ns is None else min(seen.first_ns, timestamp),
                timestamp if seen.last_ns is None else max(seen.last_ns, timestamp))
        return summary


def read_messages(path: Path, topics: Sequence[str] | None = None) -> Iterator[tuple[str, int, object]]:
    """(topic, bag timestamp ns, deserialised message) in bag (time) order, optionally only `topics`."""
    with open_bag(path) as reader:
        connections = reader.connections
        if topics is not None:
            wanted = set(topics)
            missing = sorted(wanted - {c.topic for c in connections})
            if missing:
                raise InputError(f"topics {missing} not in the bag; it has {sorted(reader.topics)}", path, "topics")
            connections = [c for c in connections if c.topic in wanted]
            if not connections:
                return
        for connection, timestamp, raw in reader.messages(connections=connections):
            yield connection.topic, timestamp, reader.deserialize(raw, connection.msgtype)


# ---------------------------------------------------------------- decoding messages


def stamp_ns(header: object) -> int:
    """A std_msgs/Header's stamp (or a builtin_interfaces/Time itself, e.g. Clock.clock) in integer ns."""
    stamp = getattr(header, "stamp", header)
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def image_array(msg: object) -> np.ndarray:
    """sensor_msgs/Image -> (H, W, C) uint8 for colour encodings (channels in the encoding's order),
    (H, W) uint8 / uint16 / float32 for mono8, mono16 / 16UC1, 32FC1. A copy in native byte order."""
    encoding = msg.encoding
    if encoding not in IMAGE_ENCODINGS:
        raise InputError(f"unsupported image encoding {encoding!r}; supported: {sorted(IMAGE_ENCODINGS)}",
                         None, "encoding")
    base, channels = IMAGE_ENCODINGS[encoding]
    dtype = np.dtype(base).newbyteorder(">" if msg.is_bigendian else "<")
    height, width, step = int(msg.height), int(msg.width), int(msg.step)
    data = np.asarray(msg.data, dtype=np.uint8)
    row_bytes = width * channels * dtype.itemsize
    if step < row_bytes:
        raise InputError(f"step {step} is shorter than a {width}-pixel {encoding} row ({row_bytes} bytes)", None, "step")
    if data.size != height * step:
        raise InputError(f"image data has {data.size} bytes, expected height * step = {height} * {step} = "
                         f"{height * step} ({width}x{height} {encoding})", None, "data")
    rows = data.reshape(height, step)[:, :row_bytes]
    pixels = np.ascontiguousarray(rows).view(dtype).astype(dtype.newbyteorder("="))
    return pixels.reshape(height, width, channels) if channels > 1 else pixels.reshape(height, width)


def point_cloud_array(msg: object) -> np.ndarray:
    """sensor_msgs/PointCloud2 -> flat structured array (height * width points) with the message's fields
    (a field with count > 1 becomes a sub-array), in native byte order."""
    order = ">" if msg.is_bigendian else "<"
    names, formats, offsets = [], [], []
    for field in msg.fields:
        if field.datatype not in POINT_FIELD_TYPES:
            raise InputError(f"field {field.name!r} has unknown datatype {field.datatype}", None, "fields")
        base = np.dtype(order + POINT_FIELD_TYPES[field.datatype])
        names.append(field.name)
        formats.append((base, (field.count,)) if field.count > 1 else base)
        offsets.append(field.offset)
    point_step, width, height = int(msg.point_step), int(msg.width), int(msg.height)
    try:
        dtype = np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": point_step})
    except ValueError as exc:
        raise InputError(f"fields do not fit in point_step {point_step} ({exc})", None, "fields") from exc
    data = np.asarray(msg.data, dtype=np.uint8)
    row_step = int(msg.row_step)
    if row_step < width * point_step or data.size != height * row_step:
        raise InputError(f"cloud data has {data.size} bytes, expected height * row_step = {height} * {row_step} "
                         f"with row_step >= width * point_step = {width} * {point_step}", None, "data")
    rows = data.reshape(height, row_step)[:, :width * point_step]
    points = np.ascontiguousarray(rows).view(dtype).reshape(-1)
    return points.astype(points.dtype.newbyteorder("="))


def _matrix(translation: object, rotation: object) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, :3] = Rotation.from_quat([rotation.x, rotation.y, rotation.z, rotation.w]).as_matrix()
    matrix[:3, 3] = translation.x, translation.y, translation.z
    return matrix


def transform_matrix(transform: object) -> np.ndarray:
    """geometry_msgs/Transform -> 4x4 (parent <- child)."""
    return _matrix(transform.translation, transform.rotation)


def pose_matrix(pose: object) -> np.ndarray:
    """geometry_msgs/Pose -> 4x4 (frame <- body)."""
    return _matrix(pose.position, pose.orientation)


def camera_matrix(msg: object) -> np.ndarray:
    """sensor_msgs/CameraInfo -> K (3x3); ROS 1 names it K, ROS 2 k."""
    values = msg.K if hasattr(msg, "K") else msg.k
    return np.asarray(values, dtype=np.float64).reshape(3, 3)

"""Live ROS 2 over DDS with Eclipse Cyclone DDS's Python binding (`cyclonedds`, the optional `live` extra).

A ROS 2 node on the same network sees what GRADE records as it records it, and can steer the robot, without GRADE
depending on a ROS install: topics and types are named on DDS as ROS 2's DDS-based RMWs name them (the tests check
this with Cyclone's own tools, not against a ROS 2 install):

- `DdsPublisher` is a tap of `core.formats.bags.writer.BagWriter`: it is shown every message the recorder writes
  and publishes it on the DDS topic ROS 2 maps the ROS topic to (`/camera/rgb/image_raw` ->
  `rt/camera/rgb/image_raw`), with ROS 2's type name (`sensor_msgs/msg/Image` -> `sensor_msgs::msg::dds_::Image_`)
  and QoS. The payload is rosbags' own CDR (`Typestore.serialize_cdr`), the bytes a ROS 2 bag of the same
  recording stores, handed to Cyclone as they are.
- `DdsSubscriber` reads command topics (`/cmd_vel`, `/command/pose`, ...) and the lockstep answers and hands over
  what arrives; `Ros2Node` is the two together, the live run's node (simulation.live.node).

How the raw bytes go through: Cyclone's Python binding writes and reads samples of `IdlStruct` classes, whose
`DataWriter.write(sample)` serialises the sample (XCDR1, with its 4-byte encapsulation header) and passes the bytes
to its C layer, `cyclonedds._clayer.ddspy_write(writer._ref, data)`; `DataReader.take` gets each sample's bytes
from `ddspy_take(reader._ref, mask, n)` and deserialises them. Here the IdlStruct classes are generated from the
rosbags typestore's field definitions (`IdlTypes`), only to give each topic its type: its ROS 2 name and its XTypes
type information, so that DDS tools and ROS 2 discover and match it (and `cyclonedds subscribe` can decode it). The
data itself skips the Python (de)serialiser: rosbags' bytes go to `ddspy_write` and `ddspy_take`'s bytes go to
rosbags. Final (non-extensible) structs of ROS 2 types serialise in XCDR1 exactly as plain CDR, which is what
rosbags writes, so a typed reader decodes these bytes as the sample rosbags serialised; the endpoints are pinned to
XCDR1 (DataRepresentation), as rmw_cyclonedds' are, so a writer offering XCDR2 only (which rosbags could not
read) never matches a command reader.

The one change made to rosbags' bytes: a serialized payload is padded to a multiple of 4 bytes, with the number of
padding bytes in the low two bits of the encapsulation header's options (DDS-XTypes 1.3), as DDS
implementations write it; rosbags' reader ignores both (it allows up to 3 trailing bytes).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

from rosbags.typesys.base import Nodetype

from core.errors import GradeError, InputError
from core.formats.bags.messages import HEADER, ros2_typestore
from core.formats.bags.writer import MessageSerializer
from simulation.live.node import Received

if TYPE_CHECKING:
    from rosbags.typesys.store import Typestore

    from core.formats.bags.writer import MessageFactory

INSTALL_HINT = "pip install 'grade[live]'"  # pip install -e '.[live]' in a checkout
ROS_TOPIC_PREFIX = "rt"  # ROS 2's DDS topic of ROS topic /a/b is rt/a/b (rmw's "ros topic" prefix)
MAX_DOMAIN_ID = 232  # the largest DDS domain id (DDS's port mapping); ROS 2 advises 0-101
DEFAULT_DEPTH = 10  # rclcpp's default QoS: keep last 10, reliable, volatile
LATCHED_DEPTH = 1  # tf2_ros' StaticBroadcasterQoS: keep last 1, reliable, transient local
# How long a reliable write may block when the writer's history is full of unacknowledged samples (the DDS
# default for writers); keep-last writers replace their oldest sample instead of blocking in most cases.
MAX_BLOCKING_MS = 100
CDR_HEADER = 4  # the encapsulation header: representation id (2 bytes) and options (2 bytes, big endian)
CDR_ALIGN = 4  # a serialized payload's length is a multiple of 4 (the low 2 option bits count the padding)
TAKE_BATCH = 64  # samples taken from a reader per call of its data-available listener (it loops until empty)

def cyclonedds_module() -> Any:
    """Cyclone DDS's Python binding, or a GradeError that names the extra to install."""
    try:
        import cyclonedds.core
        import cyclonedds.domain
        import cyclonedds.idl
        import cyclonedds.pub
        import cyclonedds.qos
        import cyclonedds.sub
        import cyclonedds.topic
        import cyclonedds.util
    except ImportError as exc:
        raise GradeError(f"live ROS 2 publishing needs Eclipse Cyclone DDS's Python binding (cyclonedds), which is "
                         f"not installed ({exc}): it comes with the optional `live` extra, installed with "
                         f"{INSTALL_HINT}") from None
    return cyclonedds


def ros_domain_id() -> int:
    """ROS 2's DDS domain (ROS_DOMAIN_ID, as ROS 2 reads it; 0 when unset)."""
    text = os.environ.get("ROS_DOMAIN_ID", "").strip() or "0"
    if not text.isdecimal() or not 0 <= int(text) <= MAX_DOMAIN_ID:
        raise InputError(f"ROS_DOMAIN_ID={text!r} is not a DDS domain id (0 to {MAX_DOMAIN_ID})", field="ROS_DOMAIN_ID")
    return int(text)


def dds_topic_name(topic: str) -> str:
    """The DDS topic of ROS 2 topic `topic` (`/camera/rgb/image_raw` -> `rt/camera/rgb/image_raw`)."""
    if not topic.startswith("/") or topic.endswith("/") or "//" in topic:
        raise InputError(f"{topic!r} is not an absolute ROS topic name (/a/b)")
    return ROS_TOPIC_PREFIX + topic


def dds_type_name(msgtype: str) -> str:
    """ROS 2's DDS type name of `msgtype` (`sensor_msgs/msg/Image` -> `sensor_msgs::msg::dds_::Image_`)."""
    *namespace, name = msgtype.split("/")
    if not namespace or not name:
        raise InputError(f"{msgtype!r} is not a ROS 2 message type (package/msg/Name)")
    return "::".join(namespace) + "::dds_::" + name + "_"


def pad_cdr(data: bytes) -> bytes:
    """`data` (CDR with its encapsulation header) padded with zeros to a multiple of 4 bytes, the padding's length
    in the low two bits of the header's options."""
    pad = -len(data) % CDR_ALIGN
    if not pad:
        return data
    options = int.from_bytes(data[2:CDR_HEADER], "big") & ~(CDR_ALIGN - 1) | pad
    return data[:2] + options.to_bytes(2, "big") + data[CDR_HEADER:] + bytes(pad)


class IdlTypes:
    """Cyclone IdlStruct classes generated from a rosbags typestore's field definitions, one per ROS 2 message type
    (nested types included), named as ROS 2 names them on DDS; they carry a topic's type, never its data."""

    def __init__(self, typestore: Typestore):
        dds = cyclonedds_module()
        t = dds.idl.types
        self.typestore = typestore
        self._make_struct = dds.idl.make_idl_struct
        self._array, self._sequence, self._bounded_str = t.array, t.sequence, t.bounded_str
        # ROS 2 base types as rosidl maps them to IDL: byte is an octet, char an uint8 (both one byte on the wire).
        self._base: dict[str, Any] = {
            "bool": bool, "byte": t.byte, "char": t.uint8, "int8": t.int8, "uint8": t.uint8, "int16": t.int16,
            "uint16": t.uint16, "int32": t.int32, "uint32": t.uint32, "int64": t.int64, "uint64": t.uint64,
            "float32": t.float32, "float64": t.float64,
        }
        self._classes: dict[str, type] = {}

    def __getitem__(self, msgtype: str) -> type:
        cls = self._classes.get(msgtype)
        if cls is None:
            if msgtype not in self.typestore.fielddefs:
                raise InputError(f"{msgtype!r} is not a message type of the ROS 2 typestore")
            _, fields = self.typestore.fielddefs[msgtype]  # constants are not part of the DDS type
            members = {name: self._field(msgtype, name, node) for name, node in fields}
            cls = self._make_struct(msgtype.rsplit("/", 1)[-1] + "_", dds_type_name(msgtype), members)
            self._classes[msgtype] = cls
        return cls

    def _field(self, msgtype: str, name: str, node: tuple[int, Any]) -> Any:
        kind, desc = node
        if kind == Nodetype.BASE:
            base, bound = desc
            if base == "string":
                return self._bounded_str[bound] if bound else str
            if base not in self._base:
                raise InputError(f"{msgtype}.{name}: base type {base!r} has no DDS mapping here")
            return self._base[base]
        if kind == Nodetype.NAME:
            return self[desc]
        element, size = desc
        element_type = self._field(msgtype, name, element)
        if kind == Nodetype.ARRAY:
            return self._array[element_type, size]
        return self._sequence[element_type, size] if size else self._sequence[element_type]


def _qos(dds: Any, latched: bool) -> Any:
    """ROS 2's QoS for a topic: rclcpp's default (reliable, volatile, keep last 10) or, for a latched topic such
    as /tf_static, tf2_ros' StaticBroadcasterQoS (reliable, transient local, keep last 1); XCDR1 data, as
    rmw_cyclonedds writes it (and all rosbags reads)."""
    policy = dds.qos.Policy
    return dds.qos.Qos(
        policy.Reliability.Reliable(max_blocking_time=dds.util.duration(milliseconds=MAX_BLOCKING_MS)),
        policy.Durability.TransientLocal if latched else policy.Durability.Volatile,
        policy.History.KeepLast(LATCHED_DEPTH if latched else DEFAULT_DEPTH),
        policy.DataRepresentation(use_cdrv0_representation=True),
    )


class DdsPublisher:
    """Publishes a recording's messages live on DDS as ROS 2 topics (a BagWriter tap).

    Each topic gets its writer at its first message (or at `advertise`); `wait_for_subscribers` blocks until a
    topic's writer has matched readers, for a caller that must not lose the first messages of a volatile topic."""

    def __init__(self, domain_id: int = 0):
        self._dds = cyclonedds_module()
        self.domain_id = domain_id
        self.typestore = ros2_typestore()
        self.serializer = MessageSerializer(self.typestore, False)  # as the ROS 2 bag's sink builds them
        self.types = IdlTypes(self.typestore)
        self._participant: Any = self._dds.domain.DomainParticipant(domain_id)
        self._writers: dict[str, tuple[str, bool, Any, Any]] = {}  # topic -> (msgtype, latched, writer, topic)
        self._matched = threading.Condition()
        self._subscribers: dict[str, int] = {}  # topic -> readers its writer matches

    def advertise(self, topic: str, msgtype: str, latched: bool = False) -> None:
        """Create `topic`'s writer now (DDS readers discover it from here on)."""
        self._writer(topic, msgtype, latched)

    def _writer(self, topic: str, msgtype: str, latched: bool) -> Any:
        if self._participant is None:
            raise ValueError(f"{topic}: the DDS publisher is closed")
        known = self._writers.get(topic)
        if known is not None:
            if (known[0], known[1]) != (msgtype, latched):
                raise ValueError(f"{topic}: published as {known[0]} (latched={known[1]}), "
                                 f"cannot publish {msgtype} (latched={latched})")
            return known[2]
        dds = self._dds
        dds_topic = dds.topic.Topic(self._participant, dds_topic_name(topic), self.types[msgtype])
        # The listener gets the writer's matched count as it changes (on one of Cyclone's threads, or on this one
        # while the writer is created and matches the readers of this process).
        listener = dds.core.Listener(
            on_publication_matched=lambda _writer, status, t=topic: self._on_matched(t, status.current_count))
        writer = dds.pub.DataWriter(self._participant, dds_topic, qos=_qos(dds, latched), listener=listener)
        self._writers[topic] = (msgtype, latched, writer, dds_topic)
        return writer

    def _on_matched(self, topic: str, count: int) -> None:
        with self._matched:
            self._subscribers[topic] = count
            self._matched.notify_all()

    def subscribers(self, topic: str) -> int:
        """How many DDS readers `topic`'s writer has matched now (0 before its writer exists)."""
        with self._matched:
            return self._subscribers.get(topic, 0)

    def wait_for_subscribers(self, topic: str, count: int = 1, timeout_s: float = 5.0) -> bool:
        """Block until `topic`'s writer (`advertise` it first) has matched `count` readers; False on timeout."""
        if topic not in self._writers:
            raise ValueError(f"{topic}: not advertised")
        with self._matched:
            return self._matched.wait_for(lambda: self._subscribers.get(topic, 0) >= count, timeout_s)

    def write(self, topic: str, msgtype: str, stamp_ns: int, factory: MessageFactory, latched: bool) -> None:
        """Publish one message: built by `factory`, serialised by rosbags, its CDR bytes written as they are.
        (`stamp_ns` is the recording's time; DDS stamps the sample with the wall clock, as ROS 2 does.)"""
        self._writer(topic, msgtype, latched)
        data = self.serializer.serialize(topic, msgtype, factory)
        self.publish_cdr(topic, data)

    def publish_cdr(self, topic: str, data: bytes) -> None:
        """Write one CDR payload (rosbags' serialize_cdr output, header included) on `topic` (advertised)."""
        from cyclonedds._clayer import ddspy_write

        ret = ddspy_write(self._writers[topic][2]._ref, pad_cdr(data))
        if ret < 0:
            raise self._dds.core.DDSException(ret, f"writing on {dds_topic_name(topic)}")

    def close(self) -> None:
        """Delete the participant and with it every writer (latched topics stop serving late subscribers)."""
        if self._participant is not None:
            participant, self._participant = self._participant, None
            self._writers.clear()
            _delete(participant)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class DdsSubscriber:
    """Reads ROS 2 topics on DDS and keeps what arrives raw (rosbags' CDR, `Received.type` "": the topic fixes the
    type), in arrival order, until `take_received` hands it over. Every topic is read with rclcpp's default QoS
    (reliable, volatile, keep last 10), XCDR1; messages arrive on Cyclone's listener thread."""

    def __init__(self, domain_id: int = 0):
        self._dds = dds = cyclonedds_module()
        self.domain_id = domain_id
        self.typestore = ros2_typestore()
        self.types = IdlTypes(self.typestore)
        self._cond = threading.Condition()
        self._pending: list[Received] = []
        self._count = 0  # every message received
        self._errors: list[str] = []
        self._readers: dict[str, Any] = {}
        self._mask = dds.core.SampleState.Any | dds.core.ViewState.Any | dds.core.InstanceState.Any
        self._participant: Any = dds.domain.DomainParticipant(domain_id)

    def subscribe(self, topic: str, msgtype: str) -> None:
        if topic in self._readers:
            raise ValueError(f"{topic}: subscribed already")
        dds = self._dds
        dds_topic = dds.topic.Topic(self._participant, dds_topic_name(topic), self.types[msgtype])
        listener = dds.core.Listener(on_data_available=lambda _reader, t=topic: self._drain(t))
        reader = dds.sub.DataReader(self._participant, dds_topic, qos=_qos(dds, False), listener=listener)
        with self._cond:
            self._readers[topic] = reader
        self._drain(topic)  # what arrived before the reader was registered here, if anything

    def _drain(self, topic: str) -> None:
        """Take everything `topic`'s reader holds (called on Cyclone's listener thread)."""
        from cyclonedds._clayer import ddspy_take

        with self._cond:
            reader = self._readers.get(topic)
            if reader is None:  # data arrived while the reader was being created: drained right after
                return
            received = 0
            while True:
                samples = ddspy_take(reader._ref, self._mask, TAKE_BATCH)
                if isinstance(samples, int):  # a DDS error code
                    self._errors.append(f"{topic}: taking samples failed with DDS return code {samples}")
                    break
                for data, info in samples:
                    if info.valid_data:  # not an instance state change (writer gone), which has no data
                        self._pending.append(Received(self._count, topic, "", bytes(data)))
                        self._count += 1
                        received += 1
                if len(samples) < TAKE_BATCH:
                    break
            if received or self._errors:
                self._cond.notify_all()

    def _raise_errors(self) -> None:
        if self._errors:
            errors, self._errors = self._errors, []
            raise GradeError("; ".join(errors))

    def take_received(self) -> list[Received]:
        """The messages received since the last take, in arrival order."""
        with self._cond:
            self._raise_errors()
            taken, self._pending = self._pending, []
            return taken

    def wait_received(self, predicate: Callable[[list[Received]], bool], timeout: float) -> bool:
        """Block until `predicate(the messages received and not taken)` holds, asked again as each one arrives;
        False after `timeout` s."""
        with self._cond:
            ok = self._cond.wait_for(lambda: bool(self._errors) or predicate(self._pending), timeout)
            self._raise_errors()
            return bool(ok)

    def deserialize(self, data: bytes, msgtype: str) -> Any:
        return self.typestore.deserialize_cdr(data, msgtype)

    def close(self) -> None:
        """Delete the participant and its readers; what was received and not taken stays for `take_received`."""
        if self._participant is not None:
            participant, self._participant = self._participant, None
            with self._cond:
                self._readers.clear()
            _delete(participant)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Ros2Node:
    """A live run's node on ROS 2 (simulation.live.node.Node): the recording's publisher, whose writers also carry
    the lockstep requests, and a subscriber for the commands and answers."""

    def __init__(self, domain_id: int = 0):
        self.publisher = DdsPublisher(domain_id)
        try:
            self.subscriber = DdsSubscriber(domain_id)
        except BaseException:
            self.publisher.close()
            raise
        self.typestore = self.subscriber.typestore
        self.serializer = MessageSerializer(self.typestore, False)  # not the tap's: each keeps its own seq count
        self.subscribe = self.subscriber.subscribe
        self.take_received = self.subscriber.take_received
        self.wait_received = self.subscriber.wait_received
        self.deserialize = self.subscriber.deserialize
        self.advertise = self.publisher.advertise

    def publish(self, topic: str, msgtype: str, data: bytes, latched: bool = False) -> None:
        self.publisher.advertise(topic, msgtype, latched)
        self.publisher.publish_cdr(topic, data)

    def wait_subscriber(self, topic: str, timeout: float) -> bool:
        return self.publisher.wait_for_subscribers(topic, 1, timeout)

    def answer(self, data: bytes) -> tuple[int, int]:
        """ROS 2's Header has no seq: the count is its frame_id, in decimal."""
        header = self.typestore.deserialize_cdr(data, HEADER)
        if not (header.frame_id.isascii() and header.frame_id.isdecimal()):
            raise ValueError(f"frame_id {header.frame_id[:40]!r} is not the count of command messages published "
                             "(a decimal number)")
        return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec, int(header.frame_id)

    def close(self) -> None:
        self.subscriber.close()
        self.publisher.close()


def _delete(entity: Any) -> None:
    """Delete a Cyclone entity and its children now. The binding deletes an entity when its Python object is
    collected (Entity.__del__: forget the handle, dds_delete it); an explicit close must not wait for the garbage
    collector, so it runs that now (a second run, at collection, finds the handle forgotten and does nothing; the
    children's objects, collected later, delete handles that are gone already, which Cyclone refuses harmlessly)."""
    entity.__del__()

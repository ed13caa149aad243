"""Live ROS 2 over DDS (simulation/live/dds.py, Cyclone DDS's Python binding: the optional `live` extra).

Each test runs in a DDS domain of its own, chosen from the test process' id and the test, and restricts Cyclone to
the loopback interface (unicast discovery to 127.0.0.1: lo carries no multicast), so parallel test processes and
the machine's network do not see each other's traffic. Everything waits on events (DDS wait sets, matched
publications, a condition, a subprocess' output) with a deadline, never for a fixed time; the one fixed duration
is the `--runtime` discovery scan that the cyclonedds command line tool takes as an argument.

Payload comparisons: a CDR payload starts with a 4-byte encapsulation header (2 bytes representation id, 2 bytes
options). The tests compare the representation id (CDR little endian, 00 01) and the body after the header byte for
byte with rosbags' `serialize_cdr`; the options differ only in their low two bits, the count of the zero bytes DDS
pads the payload with to a multiple of 4, which the tests check too.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, requires_extra, with_default_sigint

from core.errors import ConfigError, GradeError, InputError
from core.formats.bags import messages as m

# Cyclone on loopback only; lo has no multicast, so discovery goes by unicast to the peers' ports on 127.0.0.1.
LOOPBACK_URI = ("<CycloneDDS><Domain><General><Interfaces><NetworkInterface address=\"127.0.0.1\"/></Interfaces>"
                "<AllowMulticast>false</AllowMulticast></General><Discovery><ParticipantIndex>auto</ParticipantIndex>"
                "<Peers><Peer address=\"127.0.0.1\"/></Peers></Discovery></Domain></CycloneDDS>")
# DDS domain ids: their ports (7400 + 250 * id + ...) fit in 16 bits up to id 232.
DOMAINS = 230
CLI = Path(sys.executable).with_name("cyclonedds")
DEADLINE_S = 30.0  # an upper bound for each awaited event; the tests take well under a second per event
CDR_LE = b"\x00\x01"

IMU_TOPIC, IMAGE_TOPIC, TF_STATIC = "/imu", "/camera/rgb/image_raw", "/tf_static"


@pytest.fixture
def domain(request, monkeypatch) -> int:
    """A DDS domain id for this test (from the process id and the test's name), Cyclone on loopback only."""
    monkeypatch.setenv("CYCLONEDDS_URI", LOOPBACK_URI)
    offset = sum(request.node.name.encode()) % 7
    return 1 + (os.getpid() * 7 + offset) % DOMAINS


def cli_env() -> dict[str, str]:
    # Unbuffered, so the tool's lines arrive as it prints them; wide, so rich wraps no topic or type name.
    return {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", "NO_COLOR": "1"}


def read_until(proc: subprocess.Popen, needles: list[str], timeout_s: float) -> str:
    """The subprocess' stdout up to the moment it holds every needle (or it ends, or the deadline passes)."""
    out = b""
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while not all(n.encode() in out for n in needles):
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                break
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            out += chunk
    return out.decode(errors="replace")


def stop(proc: subprocess.Popen) -> None:
    """End the tool as Ctrl-C does (it subscribes until then)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    proc.stdout.close()


def imu(b: m.MessageBuilder, seq: int) -> object:
    return b.imu(b.header(1_500_000_000, "imu_link", seq), np.array([0.1, -0.2, 9.81]), np.array([0.01, 0.02, 0.03]))


def image(b: m.MessageBuilder, seq: int) -> object:
    pixels = np.arange(3 * 5 * 3, dtype=np.uint8).reshape(3, 5, 3)  # 45 bytes: the payload ends unaligned
    return b.image(b.header(1_500_000_000, "camera_rgb_optical_frame", seq), pixels, "rgb8")


def tf_static(b: m.MessageBuilder, seq: int) -> object:
    return b.tf(0, seq, [("base_link", "camera_link", np.array([0.1, 0.0, 0.5]), np.array([0.0, 0.0, 0.0, 1.0])),
                         ("base_link", "imu_link", np.array([0.0, 0.0, 0.2]), np.array([0.0, 0.0, 0.0, 1.0]))])


def clock(stamp_ns: int):
    return lambda b, seq: b.clock(stamp_ns)


# (ROS topic, msgtype, factory, latched) as the recorder writes them.
STREAM = [
    (TF_STATIC, m.TF, tf_static, True),
    ("/clock", m.CLOCK, clock(1_500_000_000), False),
    (IMU_TOPIC, m.IMU, imu, False),
    (IMAGE_TOPIC, m.IMAGE, image, False),
]


def reference_cdr(msgtype: str, factory) -> bytes:
    store = m.ros2_typestore()
    return bytes(store.serialize_cdr(factory(m.MessageBuilder(store, False), 0), msgtype))


def assert_same_payload(received: bytes, expected: bytes) -> None:
    """`received` is `expected` (rosbags' CDR) as DDS carries it: same representation and body, zero-padded to a
    multiple of 4 with the padding counted in the options' low two bits."""
    pad = -len(expected) % 4
    assert received[:2] == expected[:2] == CDR_LE
    assert int.from_bytes(received[2:4], "big") & 3 == pad
    assert received[4:len(expected)] == expected[4:]
    assert received[len(expected):] == bytes(pad)


@requires_extra("cyclonedds")
def test_topics_and_ros2_type_names_are_discovered_by_cyclone_tools(domain):
    from simulation.live.dds import DdsPublisher

    with DdsPublisher(domain) as publisher:
        for topic, msgtype, factory, latched in STREAM:
            publisher.write(topic, msgtype, 0, factory, latched)
        ls = subprocess.run([str(CLI), "ls", "-i", str(domain), "-r", "1s", "--suppress-progress-bar",
                             "--color", "none"], check=False, capture_output=True, text=True, env=cli_env(), timeout=DEADLINE_S)
        assert ls.returncode == 0, ls.stderr
        for topic, type_name in [("rt/clock", "rosgraph_msgs::msg::dds_::Clock_"),
                                 ("rt/imu", "sensor_msgs::msg::dds_::Imu_"),
                                 ("rt/camera/rgb/image_raw", "sensor_msgs::msg::dds_::Image_"),
                                 ("rt/tf_static", "tf2_msgs::msg::dds_::TFMessage_")]:
            assert topic in ls.stdout and type_name in ls.stdout, ls.stdout

        # The tool builds a reader from the type it fetches over XTypes and the writer's QoS: transient local on
        # /tf_static, so it gets the static transforms written before it started, decoded from rosbags' bytes.
        proc = subprocess.Popen(with_default_sigint([str(CLI), "subscribe", "rt/tf_static", "-i", str(domain), "-r",
                                                     "1s", "--suppress-progress-bar", "--color", "none"]),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=cli_env())
        try:
            out = read_until(proc, ["child_frame_id='camera_link'", "child_frame_id='imu_link'"], DEADLINE_S)
        finally:
            stop(proc)
        assert "TFMessage_(" in out and "child_frame_id='camera_link'" in out, out
        assert "child_frame_id='imu_link'" in out and "z=0.5" in out, out


RAW_READER = textwrap.dedent("""
    # Another DDS application: a reader of each topic of STREAM that prints the payload bytes of the first sample it
    # takes (raw: ddspy_take, the C layer under DataReader.take, gives each sample's CDR with its header), and a
    # typed reader of /clock whose type is written from ROS 2's IDL, which decodes the sample.
    import json
    import sys

    from cyclonedds._clayer import ddspy_take
    from cyclonedds.core import InstanceState, ReadCondition, SampleState, ViewState, WaitSet
    from cyclonedds.domain import DomainParticipant
    from cyclonedds.idl import make_idl_struct
    from cyclonedds.idl.types import int32, uint32
    from cyclonedds.qos import Policy, Qos
    from cyclonedds.sub import DataReader
    from cyclonedds.topic import Topic
    from cyclonedds.util import duration

    from core.formats.bags.messages import ros2_typestore
    from simulation.live.dds import IdlTypes

    domain, stream = int(sys.argv[1]), json.loads(sys.argv[2])
    types = IdlTypes(ros2_typestore())
    participant = DomainParticipant(domain)
    mask = SampleState.Any | ViewState.Any | InstanceState.Any
    waitset = WaitSet(participant)
    readers = {}
    for topic, msgtype, latched in stream:
        qos = Qos(Policy.Reliability.Reliable(duration(milliseconds=100)),
                  Policy.Durability.TransientLocal if latched else Policy.Durability.Volatile,
                  Policy.History.KeepLast(10))
        readers[topic] = DataReader(participant, Topic(participant, "rt" + topic, types[msgtype]), qos=qos)
        waitset.attach(ReadCondition(readers[topic], mask))
    time_ = make_idl_struct("Time_", "builtin_interfaces::msg::dds_::Time_", {"sec": int32, "nanosec": uint32})
    clock_ = make_idl_struct("Clock_", "rosgraph_msgs::msg::dds_::Clock_", {"clock": time_})
    readers["typed"] = DataReader(participant, Topic(participant, "rt/clock", clock_))
    waitset.attach(ReadCondition(readers["typed"], mask))

    received = {}
    while len(received) < len(readers):
        if waitset.wait(duration(seconds=15)) == 0:
            sys.exit(f"received only {sorted(received)}")
        for topic, reader in readers.items():
            if topic == "typed":
                samples = [(s.clock.sec, s.clock.nanosec) for s in reader.take(10)]
            else:
                samples = [data.hex() for data, info in ddspy_take(reader._ref, mask, 10) if info.valid_data]
            if samples:
                received.setdefault(topic, []).extend(samples)
    print(json.dumps(received), flush=True)
""")


@requires_extra("cyclonedds")
def test_payload_bytes_are_rosbags_cdr(domain):
    import json

    from simulation.live.dds import DdsPublisher

    with DdsPublisher(domain) as publisher:
        for topic, msgtype, _, latched in STREAM:
            publisher.advertise(topic, msgtype, latched)
        stream = json.dumps([(topic, msgtype, latched) for topic, msgtype, _, latched in STREAM])
        reader = subprocess.Popen([sys.executable, "-c", RAW_READER, str(domain), stream], cwd=ROOT,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The other process' readers match: the volatile topics' messages are written once they would get them.
            for topic, *_ in STREAM:
                assert publisher.wait_for_subscribers(topic, 2 if topic == "/clock" else 1, DEADLINE_S), topic
            for topic, msgtype, factory, latched in STREAM:
                publisher.write(topic, msgtype, 1_500_000_000, factory, latched)
            out, err = reader.communicate(timeout=DEADLINE_S)
        finally:
            if reader.poll() is None:
                reader.kill()
                reader.communicate()
    assert reader.returncode == 0, err
    received = json.loads(out.splitlines()[-1])
    for topic, msgtype, factory, _ in STREAM:
        [payload] = received[topic]
        assert_same_payload(bytes.fromhex(payload), reference_cdr(msgtype, factory))
    assert len(reference_cdr(m.IMAGE, image)) % 4 != 0  # so the padding was exercised
    assert received["typed"] == [[1, 500_000_000]]


TALKER = textwrap.dedent("""
    # Another DDS application (as a ROS 2 node publishes): a Twist on rt/cmd_vel and a Header on rt/grade/step_done,
    # with types written from ROS 2's IDL, each written once its reader has matched and acknowledged.
    import sys
    from dataclasses import dataclass

    from cyclonedds.core import DDSStatus, WaitSet
    from cyclonedds.domain import DomainParticipant
    from cyclonedds.idl import IdlStruct
    from cyclonedds.idl.types import float64, int32, uint32
    from cyclonedds.pub import DataWriter
    from cyclonedds.qos import Policy, Qos
    from cyclonedds.topic import Topic
    from cyclonedds.util import duration

    @dataclass
    class Vector3_(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
        x: float64
        y: float64
        z: float64

    @dataclass
    class Twist_(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
        linear: Vector3_
        angular: Vector3_

    @dataclass
    class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
        sec: int32
        nanosec: uint32

    @dataclass
    class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
        stamp: Time_
        frame_id: str

    participant = DomainParticipant(int(sys.argv[1]))
    qos = Qos(Policy.Reliability.Reliable(duration(milliseconds=100)), Policy.Durability.Volatile,
              Policy.History.KeepLast(10), Policy.DataRepresentation(use_cdrv0_representation=True))
    for name, sample in [("rt/cmd_vel", Twist_(Vector3_(0.5, -0.25, 0.0), Vector3_(0.0, 0.0, 1.25))),
                         ("rt/grade/step_done", Header_(Time_(7, 250), "step 3"))]:
        writer = DataWriter(participant, Topic(participant, name, type(sample)), qos=qos)
        writer.set_status_mask(DDSStatus.PublicationMatched)
        waitset = WaitSet(participant)
        waitset.attach(writer)
        while writer.get_publication_matched_status().current_count < 1:
            if waitset.wait(duration(seconds=15)) == 0:
                sys.exit(f"{name}: no reader matched")
        writer.write(sample)
        if not writer.wait_for_acks(duration(seconds=15)):
            sys.exit(f"{name}: not acknowledged")
""")


@requires_extra("cyclonedds")
def test_the_node_receives_commands_and_answers_from_another_participant(domain):
    from simulation.live.dds import Ros2Node

    topics = [("/cmd_vel", "geometry_msgs/msg/Twist"), ("/command/pose", "geometry_msgs/msg/PoseStamped"),
              ("/command/trajectory", "trajectory_msgs/msg/MultiDOFJointTrajectory"),
              ("/grade/step_done", "std_msgs/msg/Header")]
    node = Ros2Node(domain)
    try:
        for topic, msgtype in topics:
            node.subscribe(topic, msgtype)
        assert node.take_received() == []
        assert not node.wait_received(lambda pending: len(pending) > 0, 0.0)
        talker = subprocess.run([sys.executable, "-c", TALKER, str(domain)], check=False, capture_output=True,
                                text=True, timeout=2 * DEADLINE_S)
        assert talker.returncode == 0, talker.stderr
        assert node.wait_received(lambda pending: {r.topic for r in pending} >= {"/cmd_vel", "/grade/step_done"},
                                  DEADLINE_S)
        received = {r.topic: r for r in node.take_received()}
        assert node.take_received() == []
    finally:
        node.close()
    assert sorted(r.index for r in received.values()) == [0, 1] and {r.type for r in received.values()} == {""}
    twist = node.deserialize(received["/cmd_vel"].data, "geometry_msgs/msg/Twist")
    assert twist.__msgtype__ == "geometry_msgs/msg/Twist"
    assert (twist.linear.x, twist.linear.y, twist.linear.z) == (0.5, -0.25, 0.0)
    assert (twist.angular.x, twist.angular.y, twist.angular.z) == (0.0, 0.0, 1.25)
    # ROS 2's Header has no seq: the answer's count is its frame_id, and one that is not a number is refused.
    header = node.deserialize(received["/grade/step_done"].data, "std_msgs/msg/Header")
    assert (header.stamp.sec, header.stamp.nanosec, header.frame_id) == (7, 250, "step 3")
    with pytest.raises(ValueError, match="'step 3' is not the count"):
        node.answer(received["/grade/step_done"].data)
    store = node.typestore
    answer = store.types["std_msgs/msg/Header"](stamp=store.types["builtin_interfaces/msg/Time"](sec=7, nanosec=250),
                                                frame_id="12")
    assert node.answer(bytes(store.serialize_cdr(answer, "std_msgs/msg/Header"))) == (7_000_000_250, 12)


@requires_extra("cyclonedds")
def test_ros2_names_and_type_mapping():
    from simulation.live.dds import IdlTypes, dds_topic_name, dds_type_name, pad_cdr

    assert dds_topic_name("/camera/rgb/image_raw") == "rt/camera/rgb/image_raw"
    assert dds_type_name("sensor_msgs/msg/Image") == "sensor_msgs::msg::dds_::Image_"
    for bad in ("camera", "/camera/", "/a//b"):
        with pytest.raises(InputError):
            dds_topic_name(bad)
    assert pad_cdr(b"\x00\x01\x00\x00\x05") == b"\x00\x01\x00\x03\x05\x00\x00\x00"
    assert pad_cdr(b"\x00\x01\x00\x00\x05\x06\x07\x08") == b"\x00\x01\x00\x00\x05\x06\x07\x08"

    store = m.ros2_typestore()
    types = IdlTypes(store)
    # The generated types serialise (XCDR1) exactly as rosbags does: an independent check of the type mapping
    # (strings, fixed arrays, sequences of structs and of bytes, nested types) that the live topics announce.
    for msgtype, factory in [(m.IMU, imu), (m.IMAGE, image), (m.TF, tf_static), (m.CLOCK, clock(3))]:
        data = reference_cdr(msgtype, factory)
        cls = types[msgtype]
        assert cls.__idl_typename__ == dds_type_name(msgtype)
        assert cls.deserialize(data).serialize(use_version_2=False) == data
    assert types["trajectory_msgs/msg/MultiDOFJointTrajectory"].__idl_typename__ == \
        "trajectory_msgs::msg::dds_::MultiDOFJointTrajectory_"
    with pytest.raises(InputError, match="not a message type"):
        types["nope_msgs/msg/Nothing"]


def test_missing_binding_names_the_extra(monkeypatch):
    from simulation.live import dds

    monkeypatch.setitem(sys.modules, "cyclonedds", None)  # import cyclonedds now raises ImportError
    for make in (lambda: dds.DdsPublisher(0), lambda: dds.DdsSubscriber(0), lambda: dds.Ros2Node(0)):
        with pytest.raises(GradeError, match=r"pip install 'grade\[live\]'"):
            make()


def test_external_control_needs_a_middleware_and_ros2_takes_lockstep():
    from core.config_io import load_experiment
    from tests.conftest import CONFIGS

    with pytest.raises(ConfigError, match=r"exploration.planner .external. \(robot\).*set live.middleware"):
        load_experiment(CONFIGS / "demo-tiago.yaml", ["exploration.planner=external"])
    for middleware in ("ros1", "ros2"):
        config = load_experiment(CONFIGS / "demo-tiago.yaml",
                                 ["exploration.planner=external", f"live.middleware={middleware}"])
        assert (config.live.middleware, config.live.pacing) == (middleware, "lockstep")

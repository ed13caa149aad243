"""ROS 1 for a live run: the bridge process (ros1_bridge.py, a rospy node under `live.ros_python`) and the tap that
hands it every message the recorder writes, serialised as the ROS 1 bag stores it (core.formats.bags.writer's
MessageSerializer, the canonical definition and MD5), so the live topics carry the bags' messages byte for byte.

Received messages (commands, step answers) come back raw, with the topic they came on, in arrival order; each
topic's own order is its publisher's (ROS 1 keeps order per connection, not across topics).
"""

from __future__ import annotations

import http.client
import os
import subprocess
import tempfile
import threading
import xmlrpc.client
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.errors import InputError
from core.formats.bags import messages as m
from core.formats.bags.ros1_definitions import canonical_definition, ros1_name
from core.formats.bags.writer import MessageFactory, MessageSerializer
from core.progress import get_logger
from simulation.live import ros1_bridge
from simulation.live.node import Received
from simulation.live.ros1_bridge import read_frame, write_frame

log = get_logger("live")

DEFAULT_MASTER_URI = "http://localhost:11311"
MASTER_CHECK_TIMEOUT_S = 3.0
ROS1_PACKAGES = "ros-core python3-rospy (Debian/Ubuntu: apt install ros-core python3-rospy; or a ROS 1 distribution)"


class _Timeout(xmlrpc.client.Transport):
    def make_connection(self, host: object) -> http.client.HTTPConnection:
        connection = super().make_connection(host)
        connection.timeout = MASTER_CHECK_TIMEOUT_S
        return connection


def master_uri() -> str:
    return os.environ.get("ROS_MASTER_URI") or DEFAULT_MASTER_URI


def check_master(uri: str) -> None:
    """InputError unless a ROS master answers at `uri` (rospy would otherwise wait for one forever)."""
    try:
        code, message, _ = xmlrpc.client.ServerProxy(uri, transport=_Timeout()).getSystemState("/grade")
    except (OSError, http.client.HTTPException, xmlrpc.client.Error) as exc:
        raise InputError(f"no ROS master answers at {uri} ({exc}): start one (`roscore`, or `roscore -p PORT` with "
                         "ROS_MASTER_URI=http://localhost:PORT) and run again", field="live.middleware") from None
    if code != 1:
        raise InputError(f"the ROS master at {uri} refused a request: {message}", field="live.middleware")


def check_ros_python(python: Path) -> None:
    """InputError unless `python` runs and imports rospy."""
    try:
        result = subprocess.run([str(python), "-c", "import rospy"], capture_output=True, text=True, timeout=60,
                                check=False)
    except OSError as exc:
        raise InputError(f"cannot run {python} ({exc.strerror}); live ROS 1 needs a Python with rospy: install "
                         f"{ROS1_PACKAGES}, or point live.ros_python at a ROS Python", field="live.ros_python") from None
    if result.returncode != 0:
        raise InputError(f"{python} cannot import rospy; install {ROS1_PACKAGES}, or point live.ros_python at the "
                         "Python of your ROS 1 installation", field="live.ros_python")


class Ros1Node:
    """The bridge process: started, registered with the master and ready when the constructor returns."""

    def __init__(self, python: Path, timeout: float):
        uri = master_uri()  # check_ros_python and check_master said it can start (simulation.live.middleware)
        self.timeout = timeout
        self.typestore = m.ros1_typestore()
        self.serializer = MessageSerializer(self.typestore, True)
        self._received: list[Received] = []  # since the last take_received
        self._count = 0  # every message received
        self._advertised: set[str] = set()
        self._subscribed: dict[str, bool] = {}
        self._changed = threading.Condition()
        self._closed = False
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 - the bridge's stderr for as long as it runs
        env = {**os.environ, "ROS_MASTER_URI": uri, "PYTHONUNBUFFERED": "1"}
        self._process = subprocess.Popen([str(python), ros1_bridge.__file__], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self._stderr, env=env)
        self._send_lock = threading.Lock()
        self.node = ""
        self._reader = threading.Thread(target=self._read, name="ros1-bridge", daemon=True)
        self._reader.start()
        if not self._wait(lambda: bool(self.node), timeout):
            self.close()
            raise InputError(f"the ROS 1 bridge did not start within {timeout:g} s (live.timeout){self._tail()}",
                             field="live.middleware")
        log.info("ROS 1 node %s on %s", self.node, uri)

    def _tail(self) -> str:
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace").strip()
        return f": {text[-1500:]}" if text else ""

    def _read(self) -> None:
        stream = self._process.stdout
        while (frame := read_frame(stream)) is not None:
            header, payload = frame
            with self._changed:
                op = header.get("op")
                if op == "ready":
                    self.node = header["node"]
                elif op == "message":
                    self._received.append(Received(self._count, header["topic"], header["type"], payload))
                    self._count += 1
                elif op == "subscribed":
                    self._subscribed[header["topic"]] = bool(header["ok"])
                elif op == "error":  # a protocol mistake of ours, not the user's
                    log.error("the ROS 1 bridge: %s", header["message"])
                self._changed.notify_all()
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def _wait(self, predicate: Callable[[], bool], timeout: float) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: predicate() or self._closed, timeout) and predicate()

    def _send(self, header: dict, payload: bytes = b"") -> None:
        with self._send_lock:
            try:
                write_frame(self._process.stdin, header, payload)
            except (BrokenPipeError, ValueError):
                raise InputError(f"the ROS 1 bridge stopped{self._tail()}", field="live.middleware") from None

    # ------------------------------------------------------------ the node's interface

    def advertise(self, topic: str, msgtype: str, latched: bool = False) -> None:
        """Advertise `topic` now, so that subscribers connect before its first message."""
        self._send(self._announce({"op": "advertise", "topic": topic}, msgtype, latched))

    def publish(self, topic: str, msgtype: str, data: bytes, latched: bool = False) -> None:
        """Publish ROS 1 bytes of `msgtype` (rosbags' name, e.g. sensor_msgs/msg/Image) on `topic`; its type,
        MD5 and definition go to the bridge with the topic's first message, which advertises it."""
        self._send(self._announce({"op": "publish", "topic": topic}, msgtype, latched), data)

    def _announce(self, header: dict, msgtype: str, latched: bool) -> dict:
        """`header` with the topic's type, MD5 and definition the first time the topic is named to the bridge."""
        if header["topic"] not in self._advertised:
            definition, md5 = canonical_definition(msgtype, self.typestore)
            header |= {"type": ros1_name(msgtype), "md5": md5, "definition": definition, "latched": latched}
            self._advertised.add(header["topic"])
        return header

    def subscribe(self, topic: str, msgtype: str) -> None:
        """The bridge subscribes with AnyMsg: any type is received, and the sender's type comes with each message
        (`msgtype` is what the session expects and checks)."""
        self._send({"op": "subscribe", "topic": topic})

    def wait_subscriber(self, topic: str, timeout: float) -> bool:
        """True once `topic` (published already) has a subscriber; False after `timeout` s."""
        self._subscribed.pop(topic, None)
        self._send({"op": "wait_subscriber", "topic": topic, "timeout": timeout})
        return self._wait(lambda: topic in self._subscribed, timeout + 5.0) and self._subscribed[topic]

    def take_received(self) -> list[Received]:
        """The messages received since the last take, in arrival order."""
        with self._changed:
            taken, self._received = self._received, []
            return taken

    def wait_received(self, predicate: Callable[[list[Received]], bool], timeout: float) -> bool:
        """Block until `predicate(the messages received and not taken)` holds, asked again as each one arrives;
        False after `timeout` s or if the bridge stopped."""
        return self._wait(lambda: predicate(self._received), timeout)

    def deserialize(self, data: bytes, msgtype: str) -> Any:
        return self.typestore.deserialize_ros1(data, msgtype)

    def answer(self, data: bytes) -> tuple[int, int]:
        """ROS 1's Header has a seq: the count is there."""
        header = self.typestore.deserialize_ros1(data, m.HEADER)
        return header.stamp.sec * 1_000_000_000 + header.stamp.nanosec, header.seq

    def close(self) -> None:
        """Stop the bridge (it unregisters from the master)."""
        if self._process.poll() is None:
            try:
                self._send({"op": "shutdown"})
                self._process.stdin.close()
            except (InputError, OSError):
                pass
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._reader.join(timeout=10)
        self._stderr.close()


class Ros1Tap:
    """A BagWriter tap (core.formats.bags.writer.MessageTap): every recorded message, as the ROS 1 bag has it,
    published on the node."""

    def __init__(self, node: Ros1Node):
        self.node = node
        self.serializer = MessageSerializer(node.typestore, True)  # not the node's: each keeps its own seq count

    def write(self, topic: str, msgtype: str, stamp_ns: int, factory: MessageFactory, latched: bool) -> None:
        data = self.serializer.serialize(topic, msgtype, factory)
        self.node.publish(topic, msgtype, data, latched)

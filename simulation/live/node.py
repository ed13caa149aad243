"""What a live run needs of its middleware's node (ROS 1's bridge, ROS 2's DDS participant): publish serialised
messages, receive commands and lockstep answers raw, in arrival order, and read them back. `LiveSession` paces and
routes through this interface only, so the handshake and the commands are the same on every middleware."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from rosbags.typesys.store import Typestore

from core.formats.bags.writer import MessageSerializer


@dataclass(frozen=True)
class Received:
    """A message the node received: its topic, the sender's type name where the middleware says it per message
    (ROS 1; "" where the topic fixes it: DDS) and its serialised bytes; `index` counts every message received in
    the run, in arrival order."""

    index: int
    topic: str
    type: str
    data: bytes


class Node(Protocol):
    typestore: Typestore
    serializer: MessageSerializer  # builds the messages the session publishes, in the node's wire format

    def advertise(self, topic: str, msgtype: str, latched: bool = False) -> None:
        """Offer `topic` now, so that subscribers connect before its first message."""

    def publish(self, topic: str, msgtype: str, data: bytes, latched: bool = False) -> None:
        """Publish serialised `data` of `msgtype` (rosbags' name) on `topic`."""

    def subscribe(self, topic: str, msgtype: str) -> None:
        """Receive `topic`'s messages from now on."""

    def wait_subscriber(self, topic: str, timeout: float) -> bool:
        """True once `topic` (published already) has a subscriber; False after `timeout` s."""

    def take_received(self) -> list[Received]:
        """The messages received since the last take, in arrival order."""

    def wait_received(self, predicate: Callable[[list[Received]], bool], timeout: float) -> bool:
        """Block until `predicate(the messages received and not taken)` holds, asked again as each one arrives;
        False after `timeout` s."""

    def deserialize(self, data: bytes, msgtype: str) -> Any:
        """The message in `data` (raises on malformed bytes)."""

    def answer(self, data: bytes) -> tuple[int, int]:
        """A lockstep answer (std_msgs/Header) as (the stamp it answers, ns; the command messages its node has
        published in all); ValueError when it does not say the count the middleware's way."""

"""The live middlewares (`live.middleware`), one entry each: what a middleware needs, checked before a run writes
anything, and what it opens for the run: the tap that publishes the recorder's messages and the node that takes
commands and paces the run (simulation.live.node)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.config import LiveConfig
from core.formats.bags.writer import MessageTap
from simulation.live.dds import Ros2Node, cyclonedds_module, ros_domain_id
from simulation.live.node import Node
from simulation.live.ros1 import Ros1Node, Ros1Tap, check_master, check_ros_python, master_uri


@dataclass
class Link:
    """A run's connection to its middleware."""

    tap: MessageTap
    node: Node  # where commands and lockstep answers come from
    close: Callable[[], None]


def _check_ros1(live: LiveConfig) -> None:
    check_ros_python(live.ros_python)
    check_master(master_uri())


def _open_ros1(live: LiveConfig) -> Link:
    node = Ros1Node(live.ros_python, live.timeout)
    return Link(Ros1Tap(node), node, node.close)


def _check_ros2(live: LiveConfig) -> None:
    cyclonedds_module()
    ros_domain_id()


def _open_ros2(live: LiveConfig) -> Link:
    node = Ros2Node(ros_domain_id())
    return Link(node.publisher, node, node.close)


MIDDLEWARES: dict[str, tuple[Callable[[LiveConfig], None], Callable[[LiveConfig], Link]]] = {
    "ros1": (_check_ros1, _open_ros1),
    "ros2": (_check_ros2, _open_ros2),
}


def check_middleware(live: LiveConfig) -> None:
    """InputError, saying what to install or start, unless the middleware can run here."""
    MIDDLEWARES[live.middleware][0](live)


def open_middleware(live: LiveConfig) -> Link:
    return MIDDLEWARES[live.middleware][1](live)

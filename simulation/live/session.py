"""A live run's pacing and commands (config `live`; the handshake is docs/guides/live-ros.md's):

Every control period (`live.control_hz`), at time t, the simulator

- lockstep: publishes t on the latched `/grade/step_request` (rosgraph_msgs/Clock) and waits for the answer on
  `/grade/step_done` (std_msgs/Header): `stamp` = t, and how many command messages the node has published in all
  so far: in `seq` on ROS 1, in `frame_id` as a decimal number on ROS 2 (whose Header has no seq). Neither ROS 1
  nor DDS keeps order across topics, so the count tells the simulator which commands
  the answer covers: it waits until it has received that many, then applies every command received, in a fixed
  order (topic by topic in config order, each topic in its publisher's order), at t. The same node and seed give
  the same run. The recorder publishes on its writer thread, so the request can come before the observations
  stamped t (a camera frame is published once rendered; ROS 1 would not keep their order across topics anyway):
  the node waits for those it needs (examples/ros1/grade_lockstep.py's `observe`), while the frame renders and the
  simulator waits. No answer within `live.timeout` s stops the run there (saved complete; commands.json says when).
- realtime: waits until the wall clock reaches t / rate_factor from the start, then applies the commands received
  so far; how late each period was (the jitter of /clock against the wall clock) is reported at the end.

At the end the simulator publishes the end time on the latched `/grade/finished` (rosgraph_msgs/Clock).

The humans, which the bags do not carry (their joints are in the run's humans/ folder), are published live only: at
every control period, every human's joints in `world` on `/grade/humans` (sensor_msgs/PointCloud2, the LiDAR's
point layout: intensity = the human's index in the run, ring = the joint's index in its skeleton), for RViz and for
a navigation stack's obstacle layer.

Commands that come before a robot is under external control (the bootstrap) take effect, in order, when it begins;
commands on a robot whose planner is not `external` are logged as ignored.
"""

from __future__ import annotations

import time as wallclock
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.config import ExperimentConfig
from core.errors import InputError
from core.formats.bags import messages as m
from core.formats.bags.topics import WORLD_FRAME, BagTopics
from core.formats.commands import CommandEntry, CommandLog, write_command_log
from core.progress import get_logger
from core.robot_catalogue import robot_body
from simulation.backend import World
from simulation.live.commands import Command, Refused, check_joints, command_topics, decode
from simulation.live.node import Node, Received

log = get_logger("live")

STEP_REQUEST = "/grade/step_request"
STEP_DONE = "/grade/step_done"
FINISHED = "/grade/finished"
HUMANS = "/grade/humans"
FINISH_WAIT_S = 5.0  # s of wall clock for the node to connect to /grade/finished before the bridge goes


@dataclass
class _Route:
    robot: str | None  # its name in a multi-robot run
    name: str  # its name in the config
    msgtype: str
    order: int  # the topic's place in the fixed order commands are applied in
    joints: tuple[str, ...] = ()  # a joint controller's topic: its joints


@dataclass
class LiveReport:
    """The live part of run.json: how the run was paced and, for realtime, how late each period was (ms)."""

    pacing: str
    control_periods: int = 0
    late_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict:
        report: dict = {"pacing": self.pacing, "control_periods": self.control_periods}
        if self.late_ms:
            late = np.abs(np.array(self.late_ms))
            report["clock_jitter_ms"] = {"mean": round(float(late.mean()), 3),
                                         "p99": round(float(np.percentile(late, 99)), 3),
                                         "max": round(float(late.max()), 3)}
        return report


class LiveSession:
    """The pacing and the command routes of one live run on its middleware's `node`; `drain` waits until
    everything recorded so far is published (at the end, before /grade/finished)."""

    def __init__(self, config: ExperimentConfig, world: World, node: Node, drain: Callable[[], None]):
        self.config, self.node, self.drain = config, node, drain
        live = config.live
        self.every = round(config.simulation.physics_hz / live.control_hz)
        self.lockstep = live.pacing == "lockstep"
        self.timeout = live.timeout
        self.dt = world.timestep
        self.routes: dict[str, _Route] = {}
        multi = config.multi_robot
        for name in config.robot_names:
            alone = config.for_robot(name)
            topics = BagTopics(alone.recording.namespace)
            for topic, (msgtype, joints) in command_topics(topics, robot_body(alone.robot)).items():
                self.routes[topic] = _Route(name if multi else None, name, msgtype, len(self.routes), joints)
        self._external = {name for name in config.robot_names
                          if config.for_robot(name).exploration.planner == "external"}
        for topic, route in self.routes.items():
            node.subscribe(topic, route.msgtype)
        if self.lockstep:
            node.subscribe(STEP_DONE, m.HEADER)
        # Offered from the start, so that a node has connected by the end, when the run publishes it and goes.
        node.advertise(FINISHED, m.CLOCK, latched=True)
        self.log = CommandLog(middleware=live.middleware, pacing=live.pacing, control_hz=live.control_hz)
        self.report = LiveReport(live.pacing)
        self._inboxes: dict[str, list[tuple[Command | None, CommandEntry]]] = {name: [] for name in config.robot_names}
        # The lockstep count, kept as messages arrive: command messages received in all, each answer's count by
        # the time it answers, and how far into the messages not yet taken they are counted.
        self._commands_received = 0
        self._answers: dict[int, int] = {}
        self._counted = 0
        self._wall_start: float | None = None
        self._malformed_answers = 0

    # ------------------------------------------------------------ pacing

    def sync(self, world: World) -> bool:
        """At a control period's step: pace (the request and its answer, or the wall clock), and route the commands
        that answer it. False when the node did not answer in time (the run stops)."""
        step = round(world.time / self.dt)
        if step % self.every:
            return True
        t = step * self.dt
        stamp = m.stamp_from_seconds(t, STEP_REQUEST)
        self._publish_humans(world, stamp)
        if self.lockstep:
            self._publish_clock(STEP_REQUEST, stamp)
            if self.report.control_periods == 0 and not self.node.wait_subscriber(STEP_REQUEST, self.timeout):
                raise InputError(f"no node subscribed to {STEP_REQUEST} within {self.timeout:g} s (live.timeout): "
                                 "start your node (see docs/guides/live-ros.md) and run again", field="live.timeout")
            if not self.node.wait_received(lambda received: self._answered(received, stamp), self.timeout):
                log.warning("no answer on %s for t = %.4f s within %g s (live.timeout): the run stops here",
                            STEP_DONE, t, self.timeout)
                self.log.timeouts.append(t)
                return False
        else:
            now = wallclock.monotonic()
            if self._wall_start is None:
                self._wall_start = now - t / self.config.live.rate_factor
            due = self._wall_start + t / self.config.live.rate_factor
            if due > now:
                wallclock.sleep(due - now)
            self.report.late_ms.append((wallclock.monotonic() - due) * 1000.0)
        self.report.control_periods += 1
        self._route(t)
        return True

    def finish(self, world: World) -> None:
        """The run is over: everything recorded is published, and the end time on the latched /grade/finished
        (rosgraph_msgs/Clock) tells the node it may stop. Commands no robot took (they answered the last period)
        are logged as ignored."""
        for items in self._inboxes.values():
            for _, entry in items:
                if entry.status != "refused":
                    entry.status, entry.reason = "ignored", "after the robot's external control ended"
            items.clear()
        self.drain()
        self._publish_clock(FINISHED, m.stamp_from_seconds(world.time, FINISHED))
        if self.lockstep:  # the node gets the latched message once connected: wait for that before going
            self.node.wait_subscriber(FINISHED, min(self.timeout, FINISH_WAIT_S))

    def save(self, folder: Path) -> None:
        """commands.json into the run `folder`."""
        write_command_log(folder, self.log)

    def _publish_clock(self, topic: str, stamp: int) -> None:
        data = self.node.serializer.serialize(topic, m.CLOCK, lambda b, _: b.clock(stamp))
        self.node.publish(topic, m.CLOCK, data, latched=True)

    def _publish_humans(self, world: World, stamp: int) -> None:
        joints = list(world.human_joints().values())
        if not joints:
            return
        records = m.point_records(np.concatenate(joints),
                                  np.concatenate([np.full(len(j), i, np.float64) for i, j in enumerate(joints)]),
                                  np.concatenate([np.arange(len(j), dtype=np.uint16) for j in joints]), HUMANS)
        data = self.node.serializer.serialize(
            HUMANS, m.POINT_CLOUD2, lambda b, seq: b.point_cloud(b.header(stamp, WORLD_FRAME, seq), records))
        self.node.publish(HUMANS, m.POINT_CLOUD2, data)

    def _count(self, received: list[Received]) -> None:
        """Count the messages not yet counted: commands, and the answers with their counts by stamp."""
        for message in received[self._counted:]:
            if message.topic == STEP_DONE:
                try:
                    stamp, count = self.node.answer(message.data)
                except Exception as exc:  # noqa: BLE001 - rosbags raises several types on malformed bytes
                    self._malformed_answers += 1
                    if self._malformed_answers == 1:  # once: a broken node sends them at every period
                        log.warning("an answer on %s is ignored: %s", STEP_DONE, exc)
                    continue
                self._answers[stamp] = count
            elif message.topic in self.routes:
                self._commands_received += 1
        self._counted = len(received)

    def _answered(self, received: list[Received], stamp: int) -> bool:
        """Whether an answer for `stamp` has come with every command it counts (asked as each message arrives)."""
        self._count(received)
        return stamp in self._answers and self._commands_received >= self._answers[stamp]

    # ------------------------------------------------------------ commands

    def _route(self, t: float) -> None:
        """Every message received since the last period, to its robot's inbox (or the log, when ignored)."""
        received = self.node.take_received()
        self._count(received)
        self._counted = 0
        self._answers.clear()  # answers are to the request just past or earlier ones
        new = sorted((r for r in received if r.topic in self.routes),
                     key=lambda r: (self.routes[r.topic].order, r.index))
        for message in new:
            route = self.routes[message.topic]
            entry = CommandEntry(time=t, robot=route.robot, topic=message.topic, type=route.msgtype,
                                 status="applied")
            command = None
            if message.type and message.type != route.msgtype.replace("/msg/", "/"):
                entry.status, entry.reason = "refused", f"{message.type} on a {route.msgtype} topic"
            elif route.name not in self._external:
                entry.status, entry.reason = "ignored", "the robot's planner is not external"
            else:
                try:
                    command = decode(route.msgtype, message.data, self.node.deserialize)
                    check_joints(command, route.joints)
                except Refused as exc:
                    entry.status, entry.reason = "refused", str(exc)
                    log.warning("%s at t = %.4f s refused: %s", message.topic, t, exc)
            # The entry is logged now; the robot's external control fills in what it applied.
            self.log.commands.append(entry)
            if entry.status != "ignored":
                self._inboxes[route.name].append((command, entry))

    def inbox(self, name: str) -> Callable[[], list[tuple[Command | None, CommandEntry]]]:
        """Robot `name`'s commands for the current control period (its external control calls it once a period)."""

        def take() -> list[tuple[Command | None, CommandEntry]]:
            items, self._inboxes[name] = self._inboxes[name], []
            return items

        return take

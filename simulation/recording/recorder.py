"""The recorder: called once per physics step, it samples every stream that is due (schedule.py) and
hands the data to the bags, the ground-truth writers, the IMU log, the humans log and the state log.
Bag messages and camera frames are written in call order on the writer thread (writes.py), so the robot steps
on while a frame renders and is written.

Stamps are simulation time. IMU readings refer to the state a step started from, so the reading taken
after step k -> k+1 is stamped k * dt (and sampled when k is due); everything else is stamped with the
state's own time. Within one call the IMU (one step older) is written first, so the bags come out sorted.

TF tree: world -> base_link (the robot's pose), then the robot's link tree (each link under its parent link,
e.g. TIAGo base_link -> torso_lift_link -> head_1_link -> head_2_link), link -> each sensor frame (named after
the sensor: IMUs, LiDARs, each camera's body frame), camera -> <camera>_optical_frame. Fixed transforms (the
links no joint moves, the sensor mounts, the optical frames) go once, at the first sample, on the latched
/tf_static; /tf carries the moving ones at the TF rate. Topic and frame names (namespace included) come from
core.formats.bags.topics.

Several robots (a multi-robot run): one /clock, one /tf and /tf_static holding every robot's transforms (each
robot's frames under its namespace, its name), each robot's topics under its namespace and its ground truth in
gt/<robot>/ (cameras, LiDARs, imu.npz); run.json's frame counts name each robot's streams `<robot>/<stream>`.

Taps (a live run's publishers, simulation.live) are shown every bag message as the bags get it, bags or not.
An optional observer (observer.py: the live view) is shown the robot's pose at every step and the camera frames,
LiDAR sweeps and humans as they are recorded; it only reads them, so the files are the same with or without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.config import ExperimentConfig
from core.formats.bags.topics import EXPERIMENT_MARKER, WORLD_FRAME, BagTopics
from core.formats.bags.writer import BagWriter, MessageTap
from core.formats.humans import (
    HUMANS_DIR,
    HumanEntry,
    HumansDocument,
    HumansFrame,
    save_humans_frame,
    write_humans_document,
)
from core.formats.run_layout import BAGS_DIR, GT_DIR
from core.formats.states import STATES_FILE
from simulation.backend import Robot, World
from simulation.recording.observer import RecordingObserver
from simulation.recording.schedule import Schedule
from simulation.recording.sensor_streams import RECORDERS
from simulation.recording.states import StateLog
from simulation.recording.writes import OrderedWrites

MARKER_TEXT = "start"
IMAGE_WRITER_THREADS = 1  # one encoder thread beside the two ray threads of this 2-core default


@dataclass
class RecordingCounts:
    """Samples written per stream (run.json frame_counts)."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, stream: str) -> None:
        self.counts[stream] = self.counts.get(stream, 0) + 1


def _leaf(prim_path: str) -> str:
    return prim_path.rsplit("/", 1)[-1]


class _RobotStreams:
    """One robot's streams: its TF transforms, joint states, odometry and, through one recorder per sensor kind
    (sensor_streams/), its sensors, under its topics (`config`: the experiment as this robot sees it,
    Experiment.for_robot) into `gt` (gt/, or gt/<robot>/ in a multi-robot run), counted as `<prefix><stream>`."""

    def __init__(self, robot: Robot, config: ExperimentConfig, gt: Path, prefix: str, pool: ThreadPoolExecutor,
                 bags: BagWriter | None, writes: OrderedWrites, counts: RecordingCounts,
                 observer: RecordingObserver | None, name: str | None):
        self.robot, self.config, self.gt, self.prefix, self.pool = robot, config, gt, prefix, pool
        self.bags, self.writes, self.counts = bags, writes, counts
        self.observer, self.name = observer, name
        self.schedule = Schedule.from_config(config)
        self.topics = BagTopics(config.recording.namespace)
        sensors = config.robot.sensors
        self.recorders = [recorder(self, sensors.of(kind)) for kind, recorder in RECORDERS.items()]
        edges = robot.link_tree()
        self._moving_links = [(edge.parent, edge.child) for edge in edges if not edge.fixed]
        self.static = self._fixed_links([(edge.parent, edge.child) for edge in edges if edge.fixed])
        self.static += self._mount_transforms()

    def _link_transform(self, parent: str, child: str) -> tuple[str, str, np.ndarray]:
        """(parent frame, child frame, parent <- child) of two robot links, at the current state."""
        robot, frame = self.robot, self.topics.frame
        return frame(parent), frame(child), np.linalg.inv(robot.link_pose(parent)) @ robot.link_pose(child)

    def _fixed_links(self, edges: list[tuple[str, str]]) -> list[tuple[str, str, np.ndarray]]:
        return [self._link_transform(parent, child) for parent, child in edges]

    def _mount_transforms(self) -> list[tuple[str, str, np.ndarray]]:
        """(parent, child, parent <- child) of every sensor frame, then the kinds' own (camera optical frames):
        fixed."""
        robot, frame = self.robot, self.topics.frame
        transforms = [(frame(mount.link), frame(name), np.linalg.inv(robot.link_pose(mount.link)) @ robot.sensor_pose(name))
                      for _, name, mount in self.config.robot.sensors.mounts()]
        return transforms + [transform for recorder in self.recorders for transform in recorder.static_transforms()]

    def tf(self) -> list[tuple[str, str, np.ndarray]]:
        """The moving transforms: the robot's pose and its links that joints move."""
        moving = [self._link_transform(parent, child) for parent, child in self._moving_links]
        return [(WORLD_FRAME, self.topics.base_frame, self.robot.pose()), *moving]

    def count(self, stream: str) -> None:
        self.counts.add(self.prefix + stream)

    def samples(self, stream: str) -> int:
        return self.counts.counts.get(self.prefix + stream, 0)

    def sample(self, step: int, t: float) -> None:
        """The robot's streams due at `step` (after the shared clock and TF)."""
        schedule, bags, topics, robot, write = self.schedule, self.bags, self.topics, self.robot, self.writes.call
        if schedule.due("joint_states", step):
            if bags:
                joints = robot.joint_states()
                names = list(joints)
                write(bags.joint_states, topics.joint_states, t, names, np.array([joints[n][0] for n in names]),
                      np.array([joints[n][1] for n in names]))
            self.count("joint_states")
        if schedule.due("odom", step):
            if bags:
                linear, angular = robot.velocity()
                write(bags.odometry, topics.odometry, t, WORLD_FRAME, topics.base_frame, robot.pose(), linear,
                      angular)
            self.count("odom")
        if schedule.due("pose", step):
            for recorder in self.recorders:
                recorder.sample_pose(t)
            self.count("pose")
        for recorder in self.recorders:
            recorder.sample(step, t)

    def sample_step_start(self, step: int) -> None:
        for recorder in self.recorders:
            recorder.sample_step_start(step)

    def close(self) -> None:
        for recorder in self.recorders:
            recorder.close()

    def save(self) -> None:
        for recorder in self.recorders:
            recorder.save()

    def abort(self) -> None:
        for recorder in self.recorders:
            recorder.abort()


class Recorder:
    """Writes one run into `folder` (a temporary folder the caller moves into place when complete): the shared
    streams (clock, one TF tree, humans, the marker, the state log) and each robot's (`_RobotStreams`), showing
    them to `observer` (the live view) if given."""

    def __init__(self, world: World, config: ExperimentConfig, folder: Path, observer: RecordingObserver | None = None,
                 taps: Sequence[MessageTap] = ()):
        self.world, self.config, self.folder, self._observer = world, config, folder, observer
        self.schedule = Schedule.from_config(config.for_robot())  # the shared streams' (the first robot's view)
        self.counts = RecordingCounts()
        recording = config.recording
        self._pool = ThreadPoolExecutor(IMAGE_WRITER_THREADS, thread_name_prefix="gt-writer")
        self._writes = OrderedWrites()
        try:
            self._bags = (self._writes.run(BagWriter, folder / BAGS_DIR, config.name, recording.bag_formats,
                                           recording.ros2_storage, recording.bag_compression, taps)
                          if recording.bag_formats or taps else None)
        except BaseException:
            self._writes.abort()
            self._pool.shutdown(wait=False)
            raise
        multi = config.multi_robot
        self._robots = [_RobotStreams(world.robot(name), config.for_robot(name),
                                      folder / GT_DIR / name if multi else folder / GT_DIR, f"{name}/" if multi else "",
                                      self._pool, self._bags, self._writes, self.counts, observer,
                                      name if multi else None)
                        for name in config.robot_names]
        self._states = StateLog(world, self.schedule.checkpoint_every, config.robot_names if multi else None)
        self._static = [transform for robot in self._robots for transform in robot.static]
        self._static_sent = False
        self._humans = world.humans()
        self._humans_frames = 0
        if self._humans:
            document = HumansDocument(rate_hz=config.simulation.rates.humans_hz, humans=[
                HumanEntry(prim_path=h.prim_path, name=_leaf(h.prim_path), asset_id=h.asset_id,
                           joint_names=list(h.joint_names)) for h in self._humans])
            (folder / HUMANS_DIR).mkdir(parents=True, exist_ok=True)
            write_humans_document(folder / HUMANS_DIR, document)

    # ------------------------------------------------------------ per step

    def sample(self, world: World) -> None:
        """Record whatever is due at the world's current step (call at step 0 and after every step)."""
        step = round(world.time / world.timestep)
        t = step * world.timestep
        if step > 0:
            for robot in self._robots:
                robot.sample_step_start(step - 1)
        self._states.record(world, step)
        if self._observer:
            for robot in self._robots:
                self._observer.robot_pose(robot.name, t, robot.robot.pose())
        schedule, bags, counts, write = self.schedule, self._bags, self.counts, self._writes.call
        if not self._static_sent:  # at the first sample: step 0, or a replay window's first step
            if bags:
                write(bags.tf_static, t, self._static)
            self._static_sent = True
        if schedule.due("clock", step):
            if bags:
                write(bags.clock, t)
            counts.add("clock")
        if schedule.due("tf", step):
            if bags:
                write(bags.tf, t, [transform for robot in self._robots for transform in robot.tf()])
            counts.add("tf")
        for robot in self._robots:
            robot.sample(step, t)
        if self._humans and schedule.due("humans", step):
            self._record_humans(t)
        if step == schedule.marker_step:
            if bags:
                write(bags.marker, EXPERIMENT_MARKER, t, MARKER_TEXT)
            counts.add("starting_experiment")
        self._writes.flush()

    def _record_humans(self, t: float) -> None:
        joints = {_leaf(prim): value for prim, value in self.world.human_joints().items()}
        vertices = ({_leaf(prim): value for prim, value in self.world.human_vertices().items()}
                    if self.config.recording.human_vertices else {})
        self._writes.call(save_humans_frame, self.folder / HUMANS_DIR, self._humans_frames, HumansFrame(t, joints, vertices))
        if self._observer:
            self._observer.humans(t, joints)
        self._humans_frames += 1
        self.counts.add("humans")

    def drain(self) -> None:
        """Wait until everything sampled so far is written (and shown to the taps: a live run's publishers)."""
        self._writes.drain()

    # ------------------------------------------------------------ end

    def close(self) -> None:
        """Finish every file (bags, frames, logs); raises if any write failed."""
        try:
            self._writes.drain()
            for robot in self._robots:
                robot.close()
            self._pool.shutdown(wait=True)
            for robot in self._robots:
                robot.save()
            self._states.save(self.folder / STATES_FILE)
            if self._bags:
                self._writes.run(self._bags.close)
            self._writes.close()
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def abort(self) -> None:
        """Stop writing after a failure (the caller removes the folder)."""
        self._writes.abort()
        self._pool.shutdown(wait=True, cancel_futures=True)
        for robot in self._robots:
            robot.abort()
        if self._bags:
            self._bags.abort()

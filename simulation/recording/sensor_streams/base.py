"""What every kind's recorder is (`SensorRecorder`) and what it may use of its robot's recording
(`RobotRecording`): the calls a robot's recording makes at fixed points of each step (see the package's doc)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from core.config import ExperimentConfig
from core.config.sensor_kind import SensorKind
from core.config.sensor_kinds import KINDS
from core.formats.bags.topics import BagTopics
from core.formats.bags.writer import BagWriter
from simulation.backend import Robot
from simulation.recording.observer import RecordingObserver
from simulation.recording.schedule import Schedule
from simulation.recording.writes import OrderedWrites


class RobotRecording(Protocol):
    """What a kind's recorder uses of its robot's recording (recorder._RobotStreams)."""

    robot: Robot
    config: ExperimentConfig
    gt: Path  # gt/, or gt/<robot>/ in a multi-robot run
    bags: BagWriter | None
    writes: OrderedWrites
    topics: BagTopics
    schedule: Schedule
    pool: ThreadPoolExecutor
    observer: RecordingObserver | None
    name: str | None  # the robot's, in a multi-robot run

    def count(self, stream: str) -> None: ...

    def samples(self, stream: str) -> int:
        """How many samples of `stream` were counted so far."""


class SensorRecorder:
    """Samples and writes the sensors of one kind on one robot."""

    kind: ClassVar[str]

    def __init__(self, recording: RobotRecording, sensors: list[Any]) -> None:
        self.recording, self.sensors = recording, sensors

    @property
    def sensor_kind(self) -> SensorKind:
        return KINDS[self.kind]

    def stream(self, sensor: Any) -> str:
        return self.sensor_kind.stream(sensor.name)

    def due(self, sensor: Any, step: int) -> bool:
        return self.recording.schedule.due(self.stream(sensor), step)

    def static_transforms(self) -> list[tuple[str, str, np.ndarray]]:
        """Fixed frames of the kind's own beyond each sensor's frame in its link: (parent, child, parent <-
        child), sent once on /tf_static."""
        return []

    def optical_frames(self, sensors: list[Any]) -> list[tuple[str, str, np.ndarray]]:
        """The static transforms of rendering sensors: each one's optical frame in its body frame."""
        robot, topics = self.recording.robot, self.recording.topics
        return [(topics.frame(sensor.name), topics.optical_frame(sensor.name),
                 np.linalg.inv(robot.sensor_pose(sensor.name)) @ robot.camera_pose(sensor.name))
                for sensor in sensors]

    def sample_step_start(self, step: int) -> None:
        """The readings of the step from `step` to `step + 1`, stamped with the state it started from."""

    def sample_pose(self, t: float) -> None:
        """The poses published at the pose rate."""

    def sample(self, step: int, t: float) -> None:
        """The readings due at `step` (time `t`)."""

    def close(self) -> None:
        """Finish the files written on the writer threads (after every write was drained)."""

    def save(self) -> None:
        """Write what is kept in memory to the end (after the writer threads stopped)."""

    def abort(self) -> None:
        """Close open files after a failure, writing nothing more."""

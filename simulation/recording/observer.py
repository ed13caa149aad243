"""An optional observer of a recording (the live view, live_view.py): the recorder hands it the data it records,
as it records it. An observer only reads what it is given, so the recorded files are the same with or without one.
`robot` is None in a one-robot run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from core.config.sensors import CameraConfig
from core.formats.lidar import LidarSweep
from simulation.render import Frame


class RecordingObserver(Protocol):
    def robot_pose(self, robot: str | None, time: float, pose: np.ndarray) -> None:
        """The robot's pose (world <- base_link) at every physics step."""

    def camera_frame(self, robot: str | None, camera: CameraConfig, time: float, frame: Frame) -> None:
        """A recorded camera frame, on the recorder's writer thread, in frame order."""

    def lidar_sweep(self, robot: str | None, lidar: str, sweep: LidarSweep) -> None:
        """A recorded LiDAR sweep."""

    def humans(self, time: float, joints: Mapping[str, np.ndarray]) -> None:
        """The humans' skeleton joints (J, 3, world) by name, at the humans' rate."""

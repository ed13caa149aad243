"""What the config and every layer after it know of one kind of sensor (`SensorKind`). Each kind's module defines
its entry model (the config of one sensor of the kind, `type: <kind>`) and its SensorKind; its line in
core.config.sensor_kinds.KINDS adds it to `robot.sensors`. The layers read the kind's facts here instead of naming
the kind: the embedded backend what to render for it and how to mount it, the seeding whether it draws random
numbers, the Recording reader which file holds its ground truth and how to read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from core.config.base import Strict


@dataclass(frozen=True)
class SensorKind:
    """A kind of sensor: its `type`, its entry model, and the key of the form before the list (`legacy_key`;
    `many`: a list of them there, else at most one)."""

    type: str
    entry: type[Strict]
    legacy_key: str | None = None  # none for a kind newer than the list
    many: bool = True
    # Sampled at every physics step rather than at a `rate_hz`: the sensor decides itself when it measures.
    every_step: bool = False
    # What the backend renders for each sensor: "display" a camera's frame as its entry asks (exposed colour,
    # depth, boxes, ...); "linear" the scene-linear light of its entry's projection() (a CameraConfig) only.
    renders: Literal["display", "linear"] | None = None
    # How the backend mounts it: a frame on its link, or an inertial unit (the physics' accelerometer and gyro).
    mount: Literal["frame", "inertial"] = "frame"
    # Draws random numbers from a generator of its own (seed_stream), listed in run.json's derived seeds.
    seeded: bool = False
    # Its ground truth, one file per sensor in gt/<name>/ (Recording.sensor), and the function reading it.
    gt_file: str | None = None
    read: Callable[[Path], Any] | None = None
    title: str = ""  # how messages name one ("event camera"); its type when empty

    @property
    def noun(self) -> str:
        return self.title or self.type

    def stream(self, name: str) -> str:
        """The sensor's stream: its key in the rate schedule and in run.json's frame counts."""
        return f"{self.type}/{name}"

    def seed_stream(self, name: str, robot: str | None = None) -> str:
        """The name of the sensor's random generator under the master seed (core.seeding), listed in run.json's
        derived seeds; `robot` in a multi-robot run."""
        return "/".join(part for part in ("sensors", self.type, robot, name) if part)

"""`gt/<camera>/frames.jsonl`: one JSON object per camera frame, appended as the frames are rendered.

Fields of a line: `frame` (index), `time` (simulation s), `pose` (4x4 world <- ROS optical frame: z
forward, x right, y down), `K` (3x3), `width`, `height`, `near`, `far` (m), for a camera with a lens other
than a pinhole `distortion_model` and `D` as sensor_msgs/CameraInfo has them (`plumb_bob`: OpenCV's k1, k2, p1,
p2, k3; `equidistant`: cv2.fisheye's k1..k4, whose depth images hold the range along each pixel's ray, not z, and
whose near and far are spheres), `files` (output kind ->
path relative to the camera folder, core.formats.images), and when the camera records them, as
omni.replicator.core annotators: `boxes_2d_tight` / `boxes_2d_loose` (inclusive pixel bounds; an
instance not in view has x_min > x_max) and `boxes_3d` (local extents and the local -> world
`transform`). Keys of later minor versions are kept, not checked, so Isaac Sim output with extra
annotator fields reads too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from core.errors import InputError
from core.rundir import parse_json, read_utf8

FRAMES_FILE = "frames.jsonl"


def _square(rows: list[list[float]], size: int) -> list[list[float]]:
    if len(rows) != size or any(len(row) != size for row in rows):
        raise ValueError(f"must be a {size}x{size} matrix (a list of {size} rows of {size} numbers)")
    return rows


class Box2D(BaseModel):
    """A tight or loose 2D box (the annotator's field names, inclusive pixel bounds)."""

    model_config = ConfigDict(extra="allow")

    instance_id: int
    semanticId: int
    x_min: int
    y_min: int
    x_max: int
    y_max: int
    occlusionRatio: float

    @property
    def empty(self) -> bool:
        """The recorder writes x_min > x_max for an instance that is not in view."""
        return self.x_min > self.x_max or self.y_min > self.y_max


class Box3D(BaseModel):
    """A 3D box: extents in the instance's local frame and the local -> world 4x4 `transform`."""

    model_config = ConfigDict(extra="allow")

    instance_id: int
    semanticId: int
    x_min: float
    y_min: float
    z_min: float
    x_max: float
    y_max: float
    z_max: float
    transform: list[list[float]]
    occlusionRatio: float

    @field_validator("transform")
    @classmethod
    def _transform_4x4(cls, value: list[list[float]]) -> list[list[float]]:
        return _square(value, 4)


class FrameRecord(BaseModel):
    """One line of frames.jsonl."""

    model_config = ConfigDict(extra="allow")

    frame: int
    time: float
    pose: list[list[float]]
    K: list[list[float]]
    width: int
    height: int
    near: float
    far: float
    distortion_model: Literal["plumb_bob", "equidistant"] | None = None  # None (left out): an ideal pinhole
    D: list[float] | None = None
    files: dict[str, str]
    boxes_2d_tight: list[Box2D] = []
    boxes_2d_loose: list[Box2D] = []
    boxes_3d: list[Box3D] = []

    @field_validator("pose")
    @classmethod
    def _pose_4x4(cls, value: list[list[float]]) -> list[list[float]]:
        return _square(value, 4)

    @field_validator("K")
    @classmethod
    def _k_3x3(cls, value: list[list[float]]) -> list[list[float]]:
        return _square(value, 3)

    @property
    def pose_matrix(self) -> np.ndarray:
        """(4, 4) world <- optical frame."""
        return np.asarray(self.pose, dtype=np.float64)

    @property
    def K_matrix(self) -> np.ndarray:
        return np.asarray(self.K, dtype=np.float64)


class FramesWriter:
    """Appends FrameRecords to frames.jsonl, in frame order, one line each.

    Boxes the camera does not record are left out of the line (not written as empty lists), so a
    reader can tell "not recorded" from "nothing in view" by the key.
    """

    def __init__(self, path: Path):
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 (kept open until close())

    def write(self, record: FrameRecord) -> None:
        self._file.write(json.dumps(record.model_dump(exclude_unset=True), allow_nan=False) + "\n")  # JSON has no NaN

    def close(self) -> None:
        self._file.close()


@dataclass
class FrameLog:
    frames: list[FrameRecord]
    dropped_tail: bool  # an interrupted run's last, half-written line was skipped


def read_frames(path: Path, tolerate_truncated_tail: bool = False) -> FrameLog:
    """Parse frames.jsonl. A malformed line raises InputError naming the file and the line number, as does a frame
    listed twice, a time not after the line before's or a size other than the line before's.

    With `tolerate_truncated_tail` (an incomplete run), a last line that does not parse and has no
    newline is the write the interruption cut short: it is skipped, not an error.
    """
    path = Path(path)
    text = read_utf8(path)
    lines = text.split("\n")
    frames: list[FrameRecord] = []
    lines_of: dict[int, int] = {}  # frame index -> its line
    previous: tuple[int, FrameRecord] | None = None  # the last frame's line and record
    dropped = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = parse_json(line)
        except json.JSONDecodeError as exc:
            if tolerate_truncated_tail and number == len(lines) and not text.endswith("\n"):
                dropped = True
                continue
            raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", path, f"line {number}") from exc
        except ValueError as exc:  # NaN or Infinity
            raise InputError(f"malformed JSON ({exc})", path, f"line {number}") from exc
        try:
            record = FrameRecord.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(part) for part in err["loc"])
            raise InputError(err["msg"], path, f"line {number}: {where}" if where else f"line {number}") from exc
        _check_order(record, number, lines_of, previous, path)
        lines_of[record.frame], previous = number, (number, record)
        frames.append(record)
    return FrameLog(frames, dropped)


def _check_order(record: FrameRecord, number: int, lines_of: dict[int, int],
                 previous: tuple[int, FrameRecord] | None, path: Path) -> None:
    """One line per frame, in time order, all of one size: a frame listed twice (its stamps repeated, a velocity
    from them NaN) or a size that changes is refused, naming the line and the field."""
    if record.frame in lines_of:
        raise InputError(f"frame {record.frame} is listed twice (also on line {lines_of[record.frame]}); a camera's "
                         "frames have one line each", path, f"line {number}: frame")
    if previous is None:
        return
    line, last = previous
    if not record.time > last.time:
        raise InputError(f"time {record.time!r} s is not after line {line}'s {last.time!r} s (frame {last.frame}); "
                         "a camera's frames are in strictly increasing time order", path, f"line {number}: time")
    if (record.width, record.height) != (last.width, last.height):
        raise InputError(f"{record.width}x{record.height} differs from line {line}'s {last.width}x{last.height}; "
                         "a camera's frames all have its one size", path, f"line {number}: width")

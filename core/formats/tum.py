"""`gt/<camera>/poses.tum`: the camera poses of frames.jsonl in the TUM RGB-D trajectory format.

One line per frame: `time tx ty tz qx qy qz qw` (simulation s; world <- optical frame translation in m
and rotation as a unit quaternion in ROS order, w >= 0), time with 6 decimals, the rest with 9. The reader also
takes other tools' files (`#` comments, blank lines) and refuses values no trajectory holds: times beyond 1e10 s,
positions beyond 1e9 m, quaternions whose norm is not 1 within 0.1.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.geometry import compose, matrix_to_quat_wxyz, quat_wxyz_to_matrix, wxyz_to_xyzw, xyzw_to_wxyz
from core.rundir import atomic_write_text, read_utf8

TUM_FILE = "poses.tum"
COLUMNS = 8
# The largest values a trajectory may hold, so that its errors and their squares stay finite floats. Times: beyond
# 1e10 s a float64 no longer holds TUM's microseconds (Unix times are ~1.7e9 s; nanosecond stamps, ~1e18, are the
# usual mistake). Positions: 1e9 m, a million km.
MAX_TIME_S = 1e10
MAX_POSITION_M = 1e9
# A rotation is a unit quaternion; files round its digits, so a norm within this of 1 is normalised on reading.
QUATERNION_NORM_TOLERANCE = 0.1


def tum_line(time: float, pose: np.ndarray) -> str:
    x, y, z, w = wxyz_to_xyzw(matrix_to_quat_wxyz(pose[:3, :3]))
    t = pose[:3, 3]
    return f"{time:.6f} {t[0]:.9f} {t[1]:.9f} {t[2]:.9f} {x:.9f} {y:.9f} {z:.9f} {w:.9f}\n"


def write_tum_file(path: Path, times: np.ndarray, poses: np.ndarray) -> Path:
    """A whole trajectory in one atomic write (readers never see half a file), for trajectories that exist
    before they are written (evaluation, exports); a recorder streams with TumWriter instead."""
    return atomic_write_text(path, "".join(tum_line(float(t), pose) for t, pose in zip(times, poses, strict=True)))


class TumWriter:
    """Appends one pose per line, in time order."""

    def __init__(self, path: Path):
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 (kept open until close())

    def write(self, time: float, pose: np.ndarray) -> None:
        self._file.write(tum_line(time, pose))

    def close(self) -> None:
        self._file.close()


def read_tum(path: Path, tolerate_truncated_tail: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(times (N,), poses (N, 4, 4) world <- optical frame). Blank lines and `#` comment lines (TUM RGB-D's
    ground-truth files open with some) are skipped. A malformed line (a value that is not a finite number or out of
    range, a quaternion that is not a unit one) raises InputError naming the file and line; with
    `tolerate_truncated_tail` a last line without a newline (an interrupted write) that does not parse is skipped."""
    path = Path(path)
    text = read_utf8(path)
    lines = text.split("\n")
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            values = [float(v) for v in line.split()]
            if len(values) != COLUMNS:
                raise ValueError(f"expected {COLUMNS} numbers (time tx ty tz qx qy qz qw), got {len(values)}")
            _check_ranges(values)
        except ValueError as exc:
            if tolerate_truncated_tail and number == len(lines) and not text.endswith("\n"):
                continue
            raise InputError(str(exc), path, f"line {number}") from exc
        rows.append(values)
    table = np.array(rows, dtype=np.float64).reshape(-1, COLUMNS)
    rotations = quat_wxyz_to_matrix(xyzw_to_wxyz(table[:, 4:])) if len(table) else np.zeros((0, 3, 3))
    return table[:, 0], compose(rotations, table[:, 1:4])


def _check_ranges(values: list[float]) -> None:
    """ValueError naming the first value of a `time tx ty tz qx qy qz qw` line that is not finite or out of range."""
    if not all(math.isfinite(v) for v in values):
        raise ValueError("expected finite numbers, got inf or nan")
    if abs(values[0]) > MAX_TIME_S:
        raise ValueError(f"time {values[0]:g} s is beyond +-{MAX_TIME_S:g} s (TUM times are seconds)")
    if max(abs(v) for v in values[1:4]) > MAX_POSITION_M:
        raise ValueError(f"position {values[1:4]} is beyond +-{MAX_POSITION_M:g} m")
    norm = math.hypot(*values[4:])  # no overflow or underflow for any finite components
    if not abs(norm - 1.0) <= QUATERNION_NORM_TOLERANCE:
        raise ValueError(f"the quaternion qx qy qz qw {values[4:]} has norm {norm:g}, not 1 (a unit quaternion)")

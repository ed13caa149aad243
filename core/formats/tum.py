"""`gt/<camera>/poses.tum`: the camera poses of frames.jsonl in the TUM RGB-D trajectory format.

One line per frame: `time tx ty tz qx qy qz qw` (simulation s; world <- optical frame translation in m
and rotation as a unit quaternion in ROS order, w >= 0), time with 6 decimals, the rest with 9.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.errors import InputError
from core.geometry import compose, matrix_to_quat_wxyz, quat_wxyz_to_matrix, wxyz_to_xyzw, xyzw_to_wxyz
from core.rundir import atomic_write_text

TUM_FILE = "poses.tum"
COLUMNS = 8


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
    ground-truth files open with some) are skipped. A malformed line (a value that is not a finite number, a
    zero quaternion) raises InputError naming the file and line; with `tolerate_truncated_tail` a last line
    without a newline (an interrupted write) that does not parse is skipped."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path)
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    rows = []
    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            values = [float(v) for v in line.split()]
            if len(values) != COLUMNS:
                raise ValueError(f"expected {COLUMNS} numbers (time tx ty tz qx qy qz qw), got {len(values)}")
            if not np.all(np.isfinite(values)):
                raise ValueError("expected finite numbers, got inf or nan")
            if not any(values[4:]):
                raise ValueError("the quaternion qx qy qz qw is zero")
        except ValueError as exc:
            if tolerate_truncated_tail and number == len(lines) and not text.endswith("\n"):
                continue
            raise InputError(str(exc), path, f"line {number}") from exc
        rows.append(values)
    table = np.array(rows, dtype=np.float64).reshape(-1, COLUMNS)
    rotations = quat_wxyz_to_matrix(xyzw_to_wxyz(table[:, 4:])) if len(table) else np.zeros((0, 3, 3))
    return table[:, 0], compose(rotations, table[:, 1:4])

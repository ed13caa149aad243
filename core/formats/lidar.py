"""`gt/<lidar>/NNNNNN.npz`: one LiDAR sweep per file, numbered in time order.

    time    ()          float64  simulation s
    pose    (4, 4)      float64  world <- sensor
    ranges  (C, A)      float32  m per channel (lowest beam first) and azimuth column; 0 = no return
    points  (N, 3)      float32  the returns in the sensor frame, row-major over (channel, column)
    ring    (N,)        uint16   each point's channel
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.formats.images import frame_name
from core.rundir import load_npz_checked

ARRAYS = ("time", "pose", "ranges", "points", "ring")


@dataclass
class LidarSweep:
    time: float
    pose: np.ndarray
    ranges: np.ndarray
    points: np.ndarray
    ring: np.ndarray


def save_sweep(folder: Path, index: int, sweep: LidarSweep) -> Path:
    """Write sweep `index` as NNNNNN.npz (arrays stored with the dtypes they come in)."""
    path = folder / frame_name(index, ".npz")
    np.savez(path, time=sweep.time, pose=sweep.pose, ranges=sweep.ranges, points=sweep.points, ring=sweep.ring)
    return path


def sweep_files(folder: Path) -> list[Path]:
    return sorted(Path(folder).glob("[0-9]" * 6 + ".npz"))


def read_sweep(path: Path) -> LidarSweep:
    """One sweep; InputError naming the file and array when one is missing or misshaped."""
    path = Path(path)
    arrays = load_npz_checked(path, list(ARRAYS))
    if arrays["pose"].shape != (4, 4):
        raise InputError(f"expected shape (4, 4), got {arrays['pose'].shape}", path, "pose")
    if arrays["ranges"].ndim != 2:
        raise InputError(f"expected (channels, columns), got shape {arrays['ranges'].shape}", path, "ranges")
    points = arrays["points"]
    if points.ndim != 2 or points.shape[1] != 3:
        raise InputError(f"expected shape (N, 3), got {points.shape}", path, "points")
    if arrays["ring"].shape != (len(points),):
        raise InputError(f"expected shape ({len(points)},), got {arrays['ring'].shape}", path, "ring")
    return LidarSweep(float(arrays["time"]), arrays["pose"], arrays["ranges"], points, arrays["ring"])

"""`gt/imu.npz`: every IMU reading of a run, three arrays per IMU named after it.

    <imu>.time                 (M,)   float64  simulation s (the state the physics step started from)
    <imu>.linear_acceleration  (M, 3) float64  specific force in the sensor frame, m/s^2 (+9.81 up at rest)
    <imu>.angular_velocity     (M, 3) float64  sensor frame, rad/s

A robot without IMUs writes no file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.rundir import load_npz_checked

IMU_FILE = "imu.npz"  # in gt/
SERIES = ("linear_acceleration", "angular_velocity")


@dataclass
class ImuSeries:
    name: str
    time: np.ndarray  # (M,) s
    linear_acceleration: np.ndarray  # (M, 3) m/s^2, sensor frame
    angular_velocity: np.ndarray  # (M, 3) rad/s, sensor frame


def save_imu(path: Path, series: list[ImuSeries]) -> None:
    """Write the IMUs in the given order (np.savez keeps it, so equal inputs give equal bytes)."""
    arrays = {}
    for imu in series:
        arrays[f"{imu.name}.time"] = np.asarray(imu.time, dtype=np.float64)
        for kind in SERIES:
            arrays[f"{imu.name}.{kind}"] = np.asarray(getattr(imu, kind), dtype=np.float64).reshape(-1, 3)
    np.savez(path, **arrays)


def _series(arrays: dict[str, np.ndarray], name: str, path: Path) -> ImuSeries:
    time = arrays[f"{name}.time"]
    if time.ndim != 1:
        raise InputError(f"expected a 1D array, got shape {time.shape}", path, f"{name}.time")
    values = {}
    for kind in SERIES:
        key = f"{name}.{kind}"
        if key not in arrays:
            raise InputError("missing array", path, key)
        if arrays[key].shape != (len(time), 3):
            raise InputError(f"expected shape ({len(time)}, 3), got {arrays[key].shape}", path, key)
        values[kind] = arrays[key]
    return ImuSeries(name, time, **values)


def read_imu(path: Path) -> dict[str, ImuSeries]:
    """Every IMU in the file by name, sorted; an empty file gives an empty dict."""
    arrays = load_npz_checked(path, [])
    names = sorted(key.removesuffix(".time") for key in arrays if key.endswith(".time"))
    if arrays and not names:
        raise InputError(f"no '<imu>.time' arrays; found {sorted(arrays)}", path)
    return {name: _series(arrays, name, Path(path)) for name in names}

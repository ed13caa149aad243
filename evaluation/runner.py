"""What every SLAM runner (ORB-SLAM3, KISS-ICP, external commands) hands back, and how it leaves its folder.

A runner folder holds the method's trajectory, `trajectory.tum` (TUM lines, core.formats.tum: simulation time,
world <- sensor pose; the method's own world frame, so compare it after alignment), and `runner.json`
(core.formats.runner: counts, timing, settings, per-frame tracking states). Both are written atomically, the
record last, so a folder with a record holds a whole run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.formats.runner import FrameState, RunnerRecord, write_runner_record
from core.formats.tum import write_tum_file

TRAJECTORY_FILE = "trajectory.tum"
INSTALL_HINT = "pip install -e '.[slam]'"  # the optional `slam` extra: pyorbslam3 (GPL-3.0) and kiss-icp


@dataclass(frozen=True)
class RunnerResult:
    method: str
    trajectory: Path  # TUM file written by the runner
    frames: int
    tracked: int
    seconds: float
    fps: float  # frames / seconds of tracking


def finish_run(out: Path, method: str, source: Path, times: Sequence[float], poses: Sequence[np.ndarray],
               frames: int, seconds: float, settings: dict[str, Any],
               states: Sequence[tuple[float, str]] = ()) -> RunnerResult:
    """Write the trajectory (one pose per tracked frame) and then runner.json into `out`; the result."""
    trajectory = write_tum_file(Path(out) / TRAJECTORY_FILE, np.asarray(times, dtype=np.float64),
                                np.asarray(poses, dtype=np.float64).reshape(-1, 4, 4))
    return record_run(out, method, source, trajectory, frames, len(times), seconds, settings, states)


def record_run(out: Path, method: str, source: Path, trajectory: Path, frames: int, tracked: int, seconds: float,
               settings: dict[str, Any], states: Sequence[tuple[float, str]] = ()) -> RunnerResult:
    """Write runner.json for a trajectory already in `out`; the result. fps is 0 when nothing was timed."""
    fps = frames / seconds if seconds > 0 else 0.0
    write_runner_record(out, RunnerRecord(
        method=method, source=str(Path(source).resolve()), trajectory=Path(trajectory).name, frames=frames,
        tracked=tracked, seconds=seconds, fps=fps, settings=settings,
        states=[FrameState(time=t, state=s) for t, s in states]))
    return RunnerResult(method, Path(trajectory), frames, tracked, seconds, fps)

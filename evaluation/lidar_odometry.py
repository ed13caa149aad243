"""KISS-ICP (MIT, the optional `slam` extra) LiDAR odometry on a recording's LiDAR sweeps.

Each sweep (core.formats.lidar: points in the sensor frame) is registered with KISS-ICP's Python pipeline in
time order. The embedded backend casts a whole sweep at one instant, so there is no motion within a sweep to
undo: deskewing is off and no per-point timestamps are given. The range limits are the LiDAR's configured
ones; the voxel size is KISS-ICP's rule, max range / 100.

`trajectory.tum` holds KISS-ICP's pose of every sweep, world <- LiDAR sensor frame, in KISS-ICP's world, which
is the first sweep's sensor frame (its first pose is the identity): compare it after SE(3) alignment.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.errors import GradeError, InputError
from core.progress import track
from core.recording import Recording
from core.rundir import Stopwatch
from evaluation.runner import INSTALL_HINT, RunnerResult, finish_run

METHOD = "kiss-icp"
TRACKED = "OK"  # KISS-ICP has no failure state: every sweep gets a pose


def choose_lidar(recording: Recording, lidar: str | None) -> str:
    """`lidar`, else the run's only LiDAR (InputError listing them when there is none or `lidar` is not one)."""
    if lidar is not None:
        recording.lidar(lidar)  # InputError listing the LiDARs when there is none of that name
        return lidar
    if not recording.lidars:
        raise InputError("the recording has no LiDAR sweeps (gt/<lidar>/NNNNNN.npz); KISS-ICP needs a robot "
                         "with a LiDAR, e.g. configs/demo-tiago.yaml", recording.path)
    return recording.lidars[0]


def run_kiss_icp(run: Path, out: Path, lidar: str | None = None) -> RunnerResult:
    """Run KISS-ICP on the sweeps of `lidar` (default: the run's LiDAR) and write its trajectory and
    runner.json into `out` (an existing folder; the CLI holds its lock)."""
    try:
        from kiss_icp.config import KISSConfig
        from kiss_icp.kiss_icp import KissICP
    except ImportError:
        raise GradeError(f"KISS-ICP is not installed: it comes with the optional `slam` extra, installed with "
                         f"{INSTALL_HINT}") from None
    recording = Recording.open(run)
    name = choose_lidar(recording, lidar)
    sweeps = recording.lidar(name)
    if len(sweeps) == 0:
        raise InputError(f"LiDAR {name!r} recorded no sweeps", recording.path)
    sensor = next((lidar for lidar in recording.experiment_config().robot.sensors.lidars if lidar.name == name), None)
    config = KISSConfig()
    config.data.deskew = False
    if sensor is not None:
        config.data.min_range, config.data.max_range = sensor.min_range, sensor.max_range
    config.mapping.voxel_size = config.data.max_range / 100.0
    odometry = KissICP(config)
    times, poses, states, tracking = [], [], [], 0.0
    for sweep in track(sweeps, f"KISS-ICP {name}", total=len(sweeps)):
        clock = Stopwatch()
        odometry.register_frame(sweep.points.astype(np.float64), np.zeros(0))
        tracking += clock.seconds()
        times.append(sweep.time)
        poses.append(np.array(odometry.last_pose, dtype=np.float64))
        states.append((sweep.time, TRACKED))
    settings = {"lidar": name, "min_range": config.data.min_range, "max_range": config.data.max_range,
                "voxel_size": config.mapping.voxel_size, "deskew": False}
    return finish_run(out, METHOD, run, times, poses, len(sweeps), tracking, settings, states)

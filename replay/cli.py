"""`grade replay RUN --out RUN2 [--with overrides.yaml]` and `grade replay RUN --verify`; registered in
pipeline/cli.py."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer

from core.formats.replay_report import REPLAY_FILE
from core.progress import console


def replay_command(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Recording folder to replay (holds run.json).")],
    out: Annotated[Path | None, typer.Option("--out", help="Folder of the replay's recording (never RUN itself).")]
    = None,
    with_: Annotated[Path | None, typer.Option(
        "--with", metavar="OVERRIDES.yaml", help="Cameras, IMUs, LiDAR, lights and hidden actors to change "
                                                 "(README 'Replaying a run').")] = None,
    mode: Annotated[str, typer.Option("--mode", metavar="teleport|physics", help="teleport (the logged state at every step: exact) or "
                                                     "physics (the logged commands from a checkpoint).")]
    = "teleport",
    start: Annotated[float | None, typer.Option("--from", help="Replay from this simulation time, s.")] = None,
    end: Annotated[float | None, typer.Option("--to", help="Replay up to this simulation time, s.")] = None,
    verify: Annotated[bool, typer.Option(
        "--verify", help="Replay unchanged and print the deviation (into --out, or a temporary folder).")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Queue behind another writer of --out.")] = False,
    robot: Annotated[str | None, typer.Option(
        "--robot", metavar="NAME", help="Multi-robot runs: the robot whose sensors --with changes and whose "
                                        "deviation is reported (default: the first; every robot is replayed).")]
    = None,
) -> None:
    """Simulate a recorded run again, with new sensors if asked.

    The run is replayed on its timeline into a new recording, and the deviation is reported.

    \b
    Examples:
      grade replay runs/demo --out runs/demo-fisheye --with new-camera.yaml
      grade replay runs/demo --verify
    """
    from core.errors import ConfigError
    from replay.overrides import load_overrides
    from replay.run import replay_run

    if verify and with_ is not None:
        raise ConfigError("--verify replays the run unchanged; leave out --with", field="--verify")
    if out is None and not verify:
        raise ConfigError("name the replay's folder with --out (or check the run with --verify)", field="--out")
    overrides = load_overrides(with_)
    if out is None:
        with tempfile.TemporaryDirectory(prefix="grade-verify-") as folder:
            result = replay_run(run, Path(folder) / "replay", overrides, mode, start, end, str(with_), wait, robot)
            _print(result.report, None)
        return
    result = replay_run(run, out, overrides, mode, start, end, str(with_), wait, robot)
    _print(result.report, result.run)


def _print(report, folder: Path | None) -> None:
    pose = report.pose
    console.print(f"robot pose over {pose.steps} steps: translation max {pose.max_translation:.3g} m "
                  f"(x {pose.mean['x']:.2g} +- {pose.std['x']:.2g}, y {pose.mean['y']:.2g} +- {pose.std['y']:.2g}, "
                  f"z {pose.mean['z']:.2g} +- {pose.std['z']:.2g}), rotation max {pose.max_rotation:.3g} rad",
                  soft_wrap=True)
    for name, camera in report.cameras.items():
        ssim = "n/a" if camera.ssim_mean is None else f"{camera.ssim_mean:.4f} (min {camera.ssim_min:.4f})"
        mae = "n/a" if camera.depth_mae_mm_mean is None else f"{camera.depth_mae_mm_mean:.3g} mm"
        console.print(f"camera {name}: {camera.identical_frames}/{camera.frames} frames identical, SSIM {ssim}, "
                      f"depth MAE {mae}", soft_wrap=True)
    for name, imu in report.imus.items():
        console.print(f"imu {name}: {imu.samples} samples, max deviation {imu.max_linear_acceleration:.3g} m/s^2, "
                      f"{imu.max_angular_velocity:.3g} rad/s", soft_wrap=True)
    if folder is not None:
        console.print(f"replay written to {folder} (report: {folder / REPLAY_FILE})", soft_wrap=True)

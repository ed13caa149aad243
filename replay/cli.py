"""`grade replay RUN --out RUN2 [--with overrides.yaml] [--set render.KEY=VALUE]`, `grade replay RUN --verify` and
the subset replay `grade replay RUN --out RUN2 --every N | --frames LIST | --sample K`; registered in
pipeline/cli.py."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated, Literal

import typer

from core.cli_values import finite
from core.formats.replay_report import REPLAY_FILE
from core.progress import console


def replay_command(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Recording folder to replay (holds run.json).")],
    out: Annotated[Path | None, typer.Option("--out", help="Folder of the replay's recording (never RUN itself).")]
    = None,
    with_: Annotated[Path | None, typer.Option(
        "--with", metavar="OVERRIDES.yaml", help="Cameras, IMUs, LiDAR, lights and hidden actors to change "
                                                 "(docs/guides/replay.md).")] = None,
    mode: Annotated[Literal["teleport", "physics"], typer.Option("--mode", help="teleport (the logged state at every step: exact) or "
                                                     "physics (the logged commands from a checkpoint).")]
    = "teleport",
    start: Annotated[float | None, typer.Option("--from", callback=finite, help="Replay from this simulation time, s.")] = None,
    end: Annotated[float | None, typer.Option("--to", callback=finite, help="Replay up to this simulation time, s.")] = None,
    verify: Annotated[bool, typer.Option(
        "--verify", help="Replay unchanged and print the deviation (into --out, or a temporary folder).")] = False,
    wait: Annotated[bool, typer.Option("--wait", help="Queue behind another writer of --out.")] = False,
    robot: Annotated[str | None, typer.Option(
        "--robot", metavar="NAME", help="Multi-robot runs: the robot whose sensors --with changes and whose "
                                        "deviation is reported (default: the first; every robot is replayed).")]
    = None,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", "-s", metavar="render.KEY=VALUE", help="Override a rendering key: --set render.rgb=cycles "
                                                         "(repeatable; render keys only).")] = None,
    every: Annotated[int | None, typer.Option(
        "--every", metavar="N", help="Render only the camera frames numbered 0, N, 2N, ... again, with the run's "
                                     "labels.")] = None,
    frames: Annotated[str | None, typer.Option(
        "--frames", metavar="LIST", help="Render only these camera frames again, e.g. 0,10,20.")] = None,
    sample: Annotated[int | None, typer.Option(
        "--sample", metavar="K", help="Render only K camera frames drawn with the run's seed again.")] = None,
    camera: Annotated[list[str] | None, typer.Option(
        "--camera", metavar="NAME", help="With --every/--frames/--sample: only this camera (repeatable; default: "
                                         "every camera recording RGB).")] = None,
    rerun: Annotated[Literal["spawn", "connect"] | None, typer.Option(
        "--rerun", help="Show the replay in the Rerun viewer as it records: spawn a viewer window, or connect to a "
                        "running one (--rerun-address); needs the viz extra. The recorded files are the same.")]
    = None,
    rerun_address: Annotated[str | None, typer.Option(
        "--rerun-address", metavar="ADDR", help="With --rerun connect: the viewer's rerun+http://HOST:PORT/proxy, "
                                                "HOST:PORT or PORT (default: 9876, the local viewer's).")] = None,
) -> None:
    """Simulate a recorded run again, with new sensors if asked.

    The run is replayed on its timeline into a new recording, and the deviation is reported.

    With --every, --frames or --sample only those camera frames are rendered again (photoreal with --set
    render.rgb=cycles), labelled with the run's own ground truth.

    \b
    Examples:
      grade replay runs/demo --out runs/demo-fisheye --with new-camera.yaml
      grade replay runs/demo --verify
      grade replay runs/demo --out runs/demo-photoreal --set render.rgb=cycles --every 10
      grade replay runs/demo --out runs/demo-again --rerun spawn
    """
    from core.errors import ConfigError
    from replay.overrides import load_overrides, render_settings
    from replay.subset import frame_rule
    from simulation.recording.live_target import live_target

    rule = frame_rule(every, frames, sample)
    render = render_settings(set_ or [])
    live = live_target(rerun, rerun_address)
    if rule is not None and live is not None:
        raise ConfigError(f"{rule.option} renders recorded frames again and records no run to show live",
                          field="--rerun")
    if rule is not None:
        _check_subset(rule.option, out, with_, mode, start, end, verify)
        _subset(run, out, rule, render, camera, robot, wait)
        return
    if camera:
        raise ConfigError("--camera chooses the cameras of a subset replay; add --every, --frames or --sample",
                          field="--camera")
    if verify and (with_ is not None or render):
        raise ConfigError("--verify replays the run unchanged; leave out --with and --set", field="--verify")
    if out is None and not verify:
        raise ConfigError("name the replay's folder with --out (or check the run with --verify)", field="--out")
    overrides = load_overrides(with_)
    overrides = overrides.model_copy(update={"set": {**overrides.set, **render}})
    from replay.run import replay_run  # after the checks (~1.5 s of imports): bad options are refused at once

    if out is None:
        with tempfile.TemporaryDirectory(prefix="grade-verify-") as folder:
            result = replay_run(run, Path(folder) / "replay", overrides, mode, start, end, str(with_), wait, robot,
                                live)
            _print(result.report, None)
        return
    result = replay_run(run, out, overrides, mode, start, end, str(with_), wait, robot, live)
    _print(result.report, result.run)


def _check_subset(option: str, out: Path | None, with_: Path | None, mode: str, start: float | None,
                  end: float | None, verify: bool) -> None:
    """A subset replay renders the recorded frames with the run's labels: ConfigError for what would change them."""
    from core.errors import ConfigError

    refused = {"--with": with_ is not None, "--mode physics": mode != "teleport", "--from": start is not None,
               "--to": end is not None, "--verify": verify}
    for name, given in refused.items():
        if given:
            raise ConfigError(f"{option} renders recorded frames again with the run's own labels and takes no "
                              f"{name}", field=name.split()[0])
    if out is None:
        raise ConfigError("name the replay's folder with --out", field="--out")


def _subset(run: Path, out: Path, rule, render: dict, cameras: list[str] | None, robot: str | None,
            wait: bool) -> None:
    from replay.subset_run import replay_subset

    result = replay_subset(run, out, rule, render, cameras, robot, wait)
    for name, numbers in result.frames.items():
        console.print(f"camera {name}: {len(numbers)} frames ({_numbers(numbers)})", soft_wrap=True)
    total = sum(map(len, result.frames.values()))
    state = "up to date" if result.skipped else f"rendered {result.rendered} of {total} frames"
    if not result.skipped and result.rendered < total:
        state += ", the others kept from the interrupted replay"
    console.print(f"replay written to {result.run} ({state})", soft_wrap=True)


def _numbers(numbers: list[int], shown: int = 8) -> str:
    text = ", ".join(map(str, numbers[:shown]))
    return text + (", ..." if len(numbers) > shown else "")


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

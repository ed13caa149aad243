"""`grade robot ...`: inspect a robot description, calibrate the TIAGo++ Omni S-curve and drive its models from
command files."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from core.config import MAX_SEED
from core.errors import GradeError
from core.progress import console, progress_task

robot_app = typer.Typer(help="Robots: inspect a URDF or MJCF, S-curve calibration and command-file driving.",
                        no_args_is_help=True)


@robot_app.command("calibrate")
def calibrate_command(
    recordings: Annotated[list[Path], typer.Argument(metavar="RECORDING...", help="Wheel-velocity recordings of step commands: CSV "
                                                          "(time, FL, FR, RL, RR [, vx, vy, wz]) or ROS bags.")],
    out: Annotated[Path, typer.Option("--out", help="Network file to write (.npz), for robot.tiago.s_curve.")],
    restarts: Annotated[int, typer.Option("--restarts", min=1, help="Random restarts; the best by validation "
                                                                   "error is kept.")] = 100,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Seed of the restarts and the validation split.")] = 0,
    iterations: Annotated[int | None, typer.Option("--iterations", min=1, help="Adam steps per restart "
                                                                                "(default 3000).")] = None,
) -> None:
    """Fit the S-curve network to recorded wheel velocities and save it.

    \b
    Example:
      grade robot calibrate steps/*.csv --out s_curve.npz --restarts 20
    """
    from core.formats.s_curve import save_network
    from simulation.tiago.calibration import ITERATIONS, fit_network, read_recording

    responses = [response for path in recordings for response in read_recording(path)]
    console.print(f"{len(responses)} step responses from {len(recordings)} recordings")
    with progress_task("calibrating", restarts) as advance:
        result = fit_network(responses, restarts, seed, iterations or ITERATIONS, lambda _: advance())
    save_network(result.network, out, validation_error=result.validation_error,
                 training_error=result.training_error)
    typer.echo(f"validation error {result.validation_error:.4f} (RMS, fraction of the step), "
               f"training error {result.training_error:.4f}; wrote {out}")


# The kinds `grade robot drive` has command-file models for (click refuses any other).
DrivenKind = enum.Enum("DrivenKind", {"tiago_omni": "tiago_omni"}, type=str)


@robot_app.command("drive")
def drive_command(
    robot: Annotated[DrivenKind, typer.Argument(help="Robot kind (this tool drives the TIAGo's base models).")],
    commands: Annotated[Path, typer.Option("--commands", help="Command file: lines 'vx vy wz seconds', or a "
                                                              "recorded cmd_vel .json.")],
    model: Annotated[str, typer.Option("--model", metavar="physical|lightweight", help="Base model: MuJoCo wheels or the kinematic one.")] = "lightweight",
    out: Annotated[Path | None, typer.Option("--out", help="BaseTrace CSV to write (time, x, y, yaw, vx, vy, "
                                                           "wz).")] = None,
    s_curve: Annotated[Path | None, typer.Option("--s-curve", help="Calibrated S-curve network (.npz); the "
                                                                   "built-in one if unset.")] = None,
) -> None:
    """Drive a robot model on an empty floor through a command file; print the final pose.

    \b
    Example:
      grade robot drive tiago_omni --commands square.txt --out trajectory.csv
    """
    import numpy as np

    from core.config import TiagoConfig
    from simulation.robots.s_curve import follower_for
    from simulation.tiago.drive import (
        TIAGO_MODELS,
        build_tiago,
        drive,
        read_commands,
        total_steps,
        write_trace_csv,
    )

    if model not in TIAGO_MODELS:
        raise GradeError(f"--model must be one of {sorted(TIAGO_MODELS)}, got {model!r}")
    steps = read_commands(commands)
    follower = follower_for(TiagoConfig(model=model, s_curve=s_curve))
    world = build_tiago(model)
    with progress_task(f"driving {model}", total_steps(steps, world.model.opt.timestep)) as advance:
        trajectory = drive(world, steps, follower, advance)
    if out is not None:
        write_trace_csv(trajectory, out)
    x, y, yaw = trajectory.final_pose()
    typer.echo(f"final pose after {trajectory.time[-1]:.3f} s: x {x:.4f} m, y {y:.4f} m, "
               f"yaw {np.degrees(yaw):.2f} deg" + (f"; wrote {out}" if out is not None else ""))


@robot_app.command("inspect")
def inspect_command(
    description: Annotated[Path, typer.Argument(metavar="DESCRIPTION", help="The robot's URDF (.urdf) or MJCF "
                                                                            "(.xml).")],
    package: Annotated[list[str] | None, typer.Option(
        "--package", metavar="NAME=FOLDER", help="Where package://NAME/ URIs point (repeat for each package).")] = None,
    base_link: Annotated[str | None, typer.Option("--base-link", help="The link that is the robot's base (default "
                                                                      "base_link, else the root link).")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="PNG of the front, side and top views (default: the "
                                                           "description's name with .png, in this folder).")] = None,
) -> None:
    """Print a robot description's links, joints, mass and footprint; draw it from three sides.

    Check a URDF or MJCF here before recording with it (config `robot.kind: custom`).

    \b
    Example:
      grade robot inspect husky.urdf --package husky_description=src/husky_description
    """
    from core.robot_description import load_description
    from core.rundir import atomic_write_bytes
    from simulation.robots.inspect import figure, summary

    packages = {}
    for entry in package or []:
        name, sep, folder = entry.partition("=")
        if not sep or not name or not folder:
            raise GradeError(f"--package takes NAME=FOLDER, got {entry!r}", field="--package")
        packages[name] = Path(folder)
    loaded = load_description(description, packages, base_link)
    png = out if out is not None else Path(description.stem + ".png")
    atomic_write_bytes(png, figure(loaded))
    typer.echo(summary(loaded))
    typer.echo(f"wrote {png}")

"""`grade view RUN`: a quick visual check of a recording (registered in pipeline/cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from core.progress import console
from postprocess import DEFAULT_FRAMES


def view_command(
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Recording folder (holds run.json).")],
    camera: Annotated[str | None, typer.Option("--camera", help="Only this camera (default: every camera in gt/).")]
    = None,
    frames: Annotated[int, typer.Option("--frames", min=1, help="Frames per contact sheet, spread evenly.")]
    = DEFAULT_FRAMES,
    out: Annotated[Path | None, typer.Option("--out", help="Output folder (default: RUN/view).")] = None,
    rerun: Annotated[Path | None, typer.Option(
        "--rerun", metavar="FILE.rrd", help="Also write a Rerun recording (needs the viz extra).")] = None,
    all_boxes: Annotated[bool, typer.Option(
        "--all-boxes", help="Also draw the environment's boxes (walls, floor, furniture).")] = False,
) -> None:
    """Contact sheets (RGB + boxes, depth, instance, semantic), trajectory.png and imu.png of a recording."""
    from postprocess.view import view_run  # heavy: OpenCV, matplotlib

    result = view_run(run, camera=camera, frames=frames, out=out, rerun=rerun, all_boxes=all_boxes)
    for warning in result.warnings:
        console.print(f"warning: {warning}", soft_wrap=True)
    for path in result.written:
        typer.echo(str(path))

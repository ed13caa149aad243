"""`grade convert ...`: one command per source dataset, each converting a file or a whole folder."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import typer
from rich.table import Table

from asset_converters.batch import BatchResult, Job, run_jobs
from asset_converters.front3d_lights import DEFAULT_LIGHT_INTENSITY
from core.config import (
    MAX_ANIMATED,
    MAX_FLYING_OBJECTS,
    MAX_FURNITURE,
    MAX_ROOMS,
    MAX_SEED,
    ClipWindowConfig,
)
from core.errors import ExitCode, GradeError, InputError, exit_code_help
from core.progress import console
from core.stage import output_folder

CLIP_WINDOW = ClipWindowConfig()  # the defaults of humans.window
convert_app = typer.Typer(help="Convert source datasets into USD asset packages.", no_args_is_help=True,
                          epilog=exit_code_help(ExitCode.BAD_INPUT, ExitCode.CONVERT_FAILURES))


def report(result: BatchResult) -> None:
    """Print the summary. A single input that failed is bad input (exit BAD_INPUT, its message); a batch with
    failures goes on past them and exits CONVERT_FAILURES with a table of what failed."""
    inputs = len(result.converted) + len(result.skipped) + len(result.failed)
    if inputs == 1 and result.failed:
        raise GradeError(result.failed[0][1])
    console.print(f"converted {len(result.converted)}, skipped {len(result.skipped)} (already converted), "
                  f"failed {len(result.failed)}")
    if result.failed:
        table = Table("input", "error", title="failures", show_lines=True)
        for source, message in result.failed:
            table.add_row(str(source), message)
        console.print(table)
        raise typer.Exit(ExitCode.CONVERT_FAILURES)


def convert_into(out: Path, jobs: list[Job], description: str) -> None:
    """Run conversion `jobs` (built first, so bad inputs are refused before anything is written) holding the
    writer lock of the `--out` folder: a second convert into it waits, then skips what the first converted.
    What an interrupted convert left half-written there is removed first."""
    with output_folder(out, what="--out folder", wait=True):
        report(run_jobs(jobs, description))


# Converter commands are registered below, one per source dataset.


@convert_app.command("front3d")
def convert_front3d(
    path: Path = typer.Argument(..., metavar="PATH", help="A 3D-Front house JSON, or a folder of them."),
    out: Path = typer.Option(..., "--out", help="Folder for the packages, one per house: OUT/<house>[_<room>]."),
    future_models: Path | None = typer.Option(None, "--future-models",
                                              help="3D-FUTURE-model folder (<jid>/raw_model.obj, model_info.json); "
                                                   "without it furniture becomes bbox boxes."),
    textures: Path | None = typer.Option(None, "--textures", help="3D-FRONT-texture folder (<id>/texture.png)."),
    room: str | None = typer.Option(None, "--room", help="Convert only this room (its instanceid)."),
    labels: Path | None = typer.Option(None, "--labels", help="JSON {raw category: class} remapping the labels."),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="Seed of the procedural materials of untextured meshes."),
    light_intensity: float = typer.Option(DEFAULT_LIGHT_INTENSITY, "--light-intensity", min=0.0,
                                          help="Luminance of the ceiling and lamp lights (USD sphere-light "
                                               "intensity, nits)."),
) -> None:
    """3D-Front houses -> environment packages (architecture + furniture, lights, Z up, semantics.json).

    \b
    Example:
      grade convert front3d 3D-FRONT/ --out assets/houses --textures 3D-FRONT-texture/
    """
    from asset_converters.front3d import front3d_jobs

    convert_into(out, front3d_jobs(path, out, future_models, textures, room, labels, seed, light_intensity),
                 "3D-Front houses")


def clip_window(select: str, duration: float, max_windows: int) -> ClipWindowConfig:
    """The window options as the config's model; a duration <= 0 is refused naming the option."""
    if not duration > 0:
        raise InputError(f"must be > 0, got {duration}", field="--window-duration")
    return ClipWindowConfig(select=select, duration=duration, max_windows=max_windows)


@convert_app.command("smpl")
def convert_smpl(
    path: Path = typer.Argument(..., metavar="PATH", help="An AMASS or plain SMPL sequence (.npz), or a folder of them."),
    body_model: Path = typer.Option(..., "--body-model", help="Folder with your licensed SMPL / SMPL-H model files "
                                    "(SMPL_NEUTRAL.pkl, basicmodel_*.pkl, SMPLH_*.npz, ...); never downloaded."),
    out: Path = typer.Option(..., "--out", help="Folder for the packages, one per sequence."),
    fps: float = typer.Option(30.0, "--fps", help="Frame rate of the package (rotations slerped, positions lerped)."),
    representation: Literal["skeleton", "points"] = typer.Option("skeleton", "--representation",
                                       help="skeleton (UsdSkel, linear blend skinning only) or points "
                                            "(time-sampled mesh with SMPL's pose correctives)."),
    up: Literal["z", "y"] | None = typer.Option(None, "--up", help="Up axis of the data (default: z for AMASS, y for "
                                                     "plain SMPL)."),
    gender: Literal["neutral", "male", "female"] | None = typer.Option(None, "--gender", help="Body model gender, overriding the file's."),
    window: Literal["least_sweep", "random", "split", "whole"] = typer.Option(
        CLIP_WINDOW.select, "--window", help="Frames to keep (humans.window.select): the least-sweep window, a seeded "
                                             "random one, consecutive windows as packages <name>_wNN, or the whole clip."),
    window_duration: float = typer.Option(CLIP_WINDOW.duration, "--window-duration", help="Seconds per window."),
    max_windows: int = typer.Option(CLIP_WINDOW.max_windows, "--max-windows", min=1, help="split: windows per clip."),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="Seed of the random window."),
) -> None:
    """AMASS / SMPL motion sequences -> animated packages (SMPL body and skeleton, Z up), one window each.

    \b
    Example:
      grade convert smpl AMASS/CMU/01/ --body-model models/smpl --out assets/humans
    """
    from asset_converters.smpl import sequence_jobs

    jobs = sequence_jobs(path, out, body_model, fps, representation, up, gender,
                         clip_window(window, window_duration, max_windows), seed)
    convert_into(out, jobs, "SMPL sequences")


@convert_app.command("cloth3d")
def convert_cloth3d_command(
    path: Path = typer.Argument(..., metavar="PATH", help="A CLOTH3D sample folder (info.mat, <garment>.obj/.pc16), or a folder "
                                          "of them."),
    body_model: Path = typer.Option(..., "--body-model", help="Folder with your licensed SMPL model files."),
    out: Path = typer.Option(..., "--out", help="Folder for the packages, one per sample."),
    fps: float = typer.Option(30.0, "--fps", help="Frame rate of the package."),
    window: Literal["least_sweep", "random", "split", "whole"] = typer.Option(
        CLIP_WINDOW.select, "--window", help="Frames to keep, as for grade convert smpl."),
    window_duration: float = typer.Option(CLIP_WINDOW.duration, "--window-duration", help="Seconds per window."),
    max_windows: int = typer.Option(CLIP_WINDOW.max_windows, "--max-windows", min=1, help="split: windows per clip."),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="Seed of the random window."),
) -> None:
    """CLOTH3D samples -> animated packages: the SMPL body plus point-cached garments, one window each.

    \b
    Example:
      grade convert cloth3d CLOTH3D/train/ --body-model models/smpl --out assets/humans
    """
    from asset_converters.smpl import cloth3d_jobs

    jobs = cloth3d_jobs(path, out, body_model, fps, window=clip_window(window, window_duration, max_windows), seed=seed)
    convert_into(out, jobs, "CLOTH3D samples")


@convert_app.command("gso")
def convert_gso_command(
    path: Path = typer.Argument(..., metavar="PATH", help="A Google Scanned Objects model folder or .zip, or a folder of them."),
    out: Path = typer.Option(..., "--out", help="Folder for the packages, one per model: OUT/<model>."),
    label: str | None = typer.Option(None, "--label", help="Semantic class (default: from model.config's name and "
                                                           "description, else the folder name)."),
) -> None:
    """GSO models (Z up, metres) -> textured object packages with a convex collision hull.

    \b
    Example:
      grade convert gso GSO/ --out assets/objects
    """
    from asset_converters.gso import gso_jobs

    convert_into(out, gso_jobs(path, out, label), "GSO models")


@convert_app.command("mesh")
def convert_mesh_command(
    path: Path = typer.Argument(..., metavar="PATH", help="An OBJ/PLY/STL/GLB/glTF file, or a folder searched recursively."),
    out: Path = typer.Option(..., "--out", help="Folder for the packages, one per file: OUT/<file stem>."),
    kind: Literal["object", "environment", "animated"] | None = typer.Option(None, "--kind", help="Package kind (default: animated for a "
                                                         "glTF with a skin and animations, else object)."),
    up: Literal["z", "y"] | None = typer.Option(None, "--up", help="Up axis of the file (default: y for glTF, else z)."),
    scale: float | None = typer.Option(None, "--scale", help="Metres per file unit (default 1)."),
    height: float | None = typer.Option(None, "--height", help="Scale the asset to this height in metres instead."),
    label: str | None = typer.Option(None, "--label", help="Semantic class (default: the file name; 'animal' for "
                                                           "animated glTF)."),
    animation: str | None = typer.Option(None, "--animation", help="glTF animation to convert (default: the first)."),
    fps: float = typer.Option(30.0, "--fps", help="Frame rate the animation is resampled at."),
    floor_label: str | None = typer.Option(None, "--floor-label", help="Environment: the geometry (node, material or "
                                                                       "label name) that is the floor."),
    terrain: bool = typer.Option(False, "--terrain", help="Environment: an outdoor terrain with uneven ground (the "
                                                          "floor-label geometry, else the one with the most "
                                                          "upward-facing area)."),
) -> None:
    """Generic meshes -> object or environment packages; skinned glTF -> animated packages.

    \b
    Example:
      grade convert mesh characters/zebra.glb --out assets/animals --height 1.4
    """
    from asset_converters.mesh import MeshOptions, mesh_jobs

    options = MeshOptions(kind, up, scale, height, label, animation, fps, floor_label, terrain)
    convert_into(out, mesh_jobs(path, out, options), "mesh files")


@convert_app.command("procedural")
def convert_procedural(
    out: Path = typer.Option(..., "--out", help="Folder for environment/, humans/ and objects/ packages."),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="Master seed: the same seed gives byte-identical packages."),
    rooms: int = typer.Option(3, min=1, max=MAX_ROOMS, help="Rooms in the house (one room gets an alcove)."),
    furniture: int = typer.Option(12, min=0, max=MAX_FURNITURE, help="Furniture pieces spread over the rooms."),
    humans: int = typer.Option(6, min=0, max=MAX_ANIMATED, help="Animated humans (walk, idle and wave in turn)."),
    objects: int = typer.Option(4, min=0, max=MAX_FLYING_OBJECTS, help="Household objects for flying distractors."),
) -> None:
    """Generate demo assets without any download: a furnished house, animated humans, objects.

    \b
    Example:
      grade convert procedural --out assets/procedural --seed 7 --humans 8
    """
    from asset_converters.procedural import demo_jobs  # imported on use: keeps `grade --help` fast

    convert_into(out, demo_jobs(out, seed, rooms, furniture, humans, objects), "procedural assets")

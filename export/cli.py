"""`grade export {coco,yolo,tum,euroc,webdataset,kitti} RUN... --out DIR`: the export commands, registered in pipeline/cli.py.
Each command opens the recordings, holds the output folder and hands the work to its exporter module."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from core.cli_values import finite
from core.progress import console

export_app = typer.Typer(help="COCO/YOLO training sets, WebDataset shards, TUM RGB-D/EuRoC/KITTI sequences.",
                         no_args_is_help=True)

Runs = Annotated[list[Path], typer.Argument(metavar="RUN", help="Recording folders (each holds run.json).")]
Out = Annotated[Path, typer.Option("--out", help="Export folder (new, empty, or an interrupted export to resume).")]
Cameras = Annotated[list[str] | None, typer.Option(
    "--camera", help="Export only this camera (repeatable; default: every camera of each run).")]


def report(summary: dict[str, int], out: Path) -> None:
    """One line: what was written where."""
    console.print(", ".join(f"{value} {key}" for key, value in summary.items()) + f" -> {out}", soft_wrap=True)


Robot = Annotated[str | None, typer.Option(
    "--robot", metavar="NAME", help="Multi-robot runs: export this robot's cameras (default: the first robot's).")]
ProcessedSensors = Annotated[bool, typer.Option(
    "--processed", help="Use `grade postprocess` outputs: blurred RGB, noisy depth, noisy IMU (fails if not made).")]


@export_app.command("tum")
def tum_command(
    runs: Runs,
    out: Out,
    camera: Cameras = None,
    processed: ProcessedSensors = False,
    robot: Robot = None,
    depth_min: Annotated[float, typer.Option("--depth-min", metavar="M", min=0.0, callback=finite,
                                             help="Depth nearer than this becomes 0 (invalid).")] = 0.0,
    depth_max: Annotated[float | None, typer.Option("--depth-max", metavar="M", min=0.0, callback=finite,
                                                    help="Depth farther than this becomes 0 (invalid).")] = None,
) -> None:
    """TUM RGB-D sequences, one folder per run and camera.

    Each holds rgb/, depth/ (uint16, metres x 5000), rgb.txt, depth.txt, associations.txt, groundtruth.txt
    (the camera's optical frame, simulation time) and camera.yaml.

    \b
    Example:
      grade export tum runs/demo runs/demo-2 --out datasets/tum --depth-max 10
    """
    from export.tum import TumOptions, export_tum

    report(export_tum(runs, out, camera, TumOptions(processed, depth_min, depth_max), robot), out)


@export_app.command("euroc")
def euroc_command(
    runs: Runs,
    out: Out,
    camera: Cameras = None,
    robot: Robot = None,
    imu: Annotated[str | None, typer.Option(
        "--imu", metavar="NAME", help="IMU for imu0 (default: the one on the camera's link, else the first).")] = None,
    processed: ProcessedSensors = False,
) -> None:
    """EuRoC/ASL sequences, one folder per run and camera.

    Each holds mav0/cam0 (images, data.csv, sensor.yaml), imu0 and state_groundtruth_estimate0 (the camera's
    optical-frame poses, nanosecond simulation time).

    \b
    Example:
      grade export euroc runs/demo --out datasets/euroc --imu imu_camera
    """
    from export.euroc import EurocOptions, export_euroc

    report(export_euroc(runs, out, camera, EurocOptions(imu, processed), robot), out)


def _filters(min_box: int, max_aspect: float, min_visible: float, bad_frames: bool):
    from export.annotate import Filters

    return Filters(min_box=min_box, max_aspect=max_aspect, min_visible=min_visible, bad_frames=bad_frames)


Categories = Annotated[str, typer.Option(
    "--categories", metavar="coco|nyu40|FILE", help="coco (COCO's 80 classes and ids, person = 1), nyu40 (the global class map) or a YAML "
                         "file of categories (docs/guides/export.md).")]
Processed = Annotated[bool, typer.Option(
    "--processed", help="Export the post-processed images (rgb_blur with its blur-aware labels) instead of the "
                        "clean ones; needs `grade postprocess RUN --blur` first.")]
MinBox = Annotated[int, typer.Option("--min-box", min=1, help="Drop instances whose box is narrower or lower (px).")]
MaxAspect = Annotated[float, typer.Option("--max-aspect", min=1.0, callback=finite, help="Drop instances whose box is more elongated.")]
MinVisible = Annotated[float, typer.Option(
    "--min-visible", min=0.0, max=1.0, callback=finite, help="Drop instances less visible than this (1 - occlusion ratio).")]
BadFrames = Annotated[bool, typer.Option(
    "--bad-frame-filter/--no-bad-frame-filter", help="Drop frames that are mostly dark and near, or very near "
                                                     "(GRADE's filter); export.json lists them.")]
Seed = Annotated[int, typer.Option("--seed", min=0, help="Seed of the split by sequence.")]


@export_app.command("coco")
def coco_command(runs: Runs, out: Out, camera: Cameras = None, robot: Robot = None, categories: Categories = "coco",
                 processed: Processed = False,
                 split: Annotated[str | None, typer.Option(
                     "--split", help="Split by sequence, e.g. train=0.8,val=0.2 (default: one instances_all.json).")]
                 = None,
                 keypoints: Annotated[bool, typer.Option(
                     "--keypoints/--no-keypoints", help="COCO person keypoints from the recorded skeletons.")] = True,
                 min_box: MinBox = 3, max_aspect: MaxAspect = 100.0, min_visible: MinVisible = 0.0,
                 bad_frames: BadFrames = True, seed: Seed = 0) -> None:
    """COCO instances (boxes, RLE masks, person keypoints) of one or many recordings.

    \b
    Examples:
      grade export coco runs/* --out datasets/coco --split train=0.8,val=0.2
      grade export coco runs/demo --out datasets/coco-nyu --categories nyu40 --processed
    """
    from export.coco import export_coco
    from export.common import open_sequences, parse_split

    fractions = parse_split(split) if split is not None else None
    counts = export_coco(open_sequences(runs, camera, robot), out, categories, _filters(min_box, max_aspect, min_visible,
                                                                                 bad_frames),
                         processed, fractions, seed, keypoints)
    report(counts, out)


@export_app.command("yolo")
def yolo_command(runs: Runs, out: Out, camera: Cameras = None, robot: Robot = None,
                 task: Annotated[Literal["detect", "segment"], typer.Option("--task", help="detect (boxes) or segment (polygons).")]
                 = "detect",
                 categories: Categories = "coco", processed: Processed = False,
                 split: Annotated[str, typer.Option(
                     "--split", help="Split by sequence (a sequence is never on two sides), seeded.")]
                 = "train=0.8,val=0.2",
                 min_box: MinBox = 3, max_aspect: MaxAspect = 100.0, min_visible: MinVisible = 0.0,
                 bad_frames: BadFrames = True, seed: Seed = 0) -> None:
    """YOLO training set (data.yaml, images/, labels/) of one or many recordings.

    \b
    Example:
      grade export yolo runs/* --out datasets/yolo --task segment
    """
    from export.common import open_sequences, parse_split
    from export.yolo import export_yolo

    counts = export_yolo(open_sequences(runs, camera, robot), out, task, categories,
                         _filters(min_box, max_aspect, min_visible, bad_frames), processed, parse_split(split), seed)
    report(counts, out)


@export_app.command("webdataset")
def webdataset_command(runs: Runs, out: Out, camera: Cameras = None, robot: Robot = None,
                       shard_size: Annotated[str, typer.Option(
                           "--shard-size", metavar="SIZE", help="Largest shard file, e.g. 1GB, 500MB, 64KiB (a "
                                                                "single larger sample gets a shard of its own).")]
                       = "1GB",
                       max_samples: Annotated[int | None, typer.Option(
                           "--max-samples", min=1, help="At most this many samples per shard (default: no limit).")]
                       = None,
                       categories: Categories = "coco",
                       processed: Annotated[bool, typer.Option(
                           "--processed", help="Samples of the post-processed images: rgb_blur, depth_noisy, "
                                               "instance_blur, semantic_blur (the labels blur-aware); needs `grade "
                                               "postprocess RUN --blur --depth MODEL` first.")] = False,
                       keypoints: Annotated[bool, typer.Option(
                           "--keypoints/--no-keypoints", help="COCO person keypoints from the recorded skeletons.")]
                       = True,
                       min_box: MinBox = 3, max_aspect: MaxAspect = 100.0, min_visible: MinVisible = 0.0,
                       bad_frames: BadFrames = True) -> None:
    """WebDataset tar shards (shard-000000.tar, ...): one sample per camera frame.

    Each sample holds rgb.png, depth.png (uint16 mm), instance.png, semantic.png and a json of ids, time, K,
    pose and the COCO export's boxes and keypoints; dataset.json lists the shards.

    \b
    Example:
      grade export webdataset runs/* --out datasets/wds --shard-size 500MB
    """
    from export.common import open_sequences
    from export.shards import ShardOptions, export_webdataset, parse_size

    options = ShardOptions(parse_size(shard_size), max_samples, categories,
                           _filters(min_box, max_aspect, min_visible, bad_frames), processed, keypoints)
    report(export_webdataset(open_sequences(runs, camera, robot), out, options), out)


@export_app.command("kitti")
def kitti_command(runs: Runs, out: Out, camera: Cameras = None, robot: Robot = None,
                  processed: Annotated[bool, typer.Option(
                      "--processed", help="The blurred images (rgb_blur) of `grade postprocess RUN --blur`.")]
                  = False) -> None:
    """KITTI odometry sequences, one numbered sequence per run and camera.

    poses/NN.txt (3x4 camera poses relative to the first frame, optical frame), sequences/NN/times.txt
    (simulation s), calib.txt (P0..P3, Tr), image_0/ (grey) and image_2/ (colour); sequences.txt names them.

    \b
    Example:
      grade export kitti runs/demo runs/demo-2 --out datasets/kitti
    """
    from export.kitti import export_kitti

    report(export_kitti(runs, out, camera, processed, robot), out)

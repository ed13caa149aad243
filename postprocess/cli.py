"""`grade view RUN` (a quick visual check) and `grade postprocess RUN` (sensor noise, blur) of a recording;
registered in pipeline/cli.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from core.cli_values import finite
from core.config import MAX_SEED, PostprocessConfig
from core.formats.bags.layout import ACTIVE_SUFFIX, ROS1_SUFFIX, is_bag
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
        "--rerun", metavar="FILE.rrd", help="Also write a Rerun recording (needs the viz extra: pip install -e '.[viz]').")] = None,
    all_boxes: Annotated[bool, typer.Option(
        "--all-boxes", help="Also draw the environment's boxes (walls, floor, furniture).")] = False,
) -> None:
    """Contact sheets, trajectory and IMU plots of a run.

    Sheets of RGB with boxes, depth, instance and semantic images; trajectory.png and imu.png.

    \b
    Examples:
      grade view runs/demo
      grade view runs/demo --camera camera --frames 12 --rerun runs/demo/demo.rrd
    """
    from postprocess.view import view_run  # heavy: OpenCV, matplotlib

    result = view_run(run, camera=camera, frames=frames, out=out, rerun=rerun, all_boxes=all_boxes)
    for warning in result.warnings:
        console.print(f"warning: {warning}", soft_wrap=True)
    for path in result.written:
        typer.echo(str(path))


def postprocess_settings(base: dict, preset: str | None, imu: bool, depth: str | None, blur: bool,
                         rolling_shutter: bool, overrides: list[str]) -> PostprocessConfig:
    """The settings to apply: `base` (the run's own config section), replaced by a preset, with the steps the
    flags name enabled at their defaults, then `--set` overrides (key paths inside the postprocess section)."""
    from core.config_io import apply_overrides, validate_model
    from postprocess.process_run import PRESETS

    data = dict(PRESETS[preset]) if preset is not None else dict(base)
    for step, wanted in (("imu", imu), ("blur", blur), ("rolling_shutter", rolling_shutter)):
        if wanted and data.get(step) is None:
            data[step] = {}
    if depth is not None:
        data["depth"] = {**(data.get("depth") or {}), "model": depth}
    return validate_model(PostprocessConfig, apply_overrides(data, overrides), "--set / flags")


def _pairs(values: list[str] | None, option: str, convert=str) -> dict[str, object]:
    """['A=B', ...] -> {A: convert(B)}, with a ConfigError naming the option for a malformed item."""
    from core.errors import ConfigError

    pairs = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        try:
            if not sep or not key:
                raise ValueError
            pairs[key] = convert(value)
        except ValueError:
            raise ConfigError(f"expected KEY=VALUE, got {item!r}", field=option) from None
    return pairs


def _postprocess_bag(path: Path, out: Path | None, settings: PostprocessConfig, seed: int, crop: bool,
                     duration: float | None, rates: list[str] | None, drop: list[str] | None,
                     rename_topics: list[str] | None, rename_frames: list[str] | None,
                     depth_max: list[str] | None, imu_topic: str, odom_topic: str) -> None:
    from postprocess.bag_tools import BagOptions, reindex_ros1
    from postprocess.process_bag import process_bag

    if path.name.endswith(ROS1_SUFFIX + ACTIVE_SUFFIX):  # a killed ROS 1 recording: index it first
        indexed = reindex_ros1(path)
        console.print(f"reindexed {path} -> {indexed.dst} ({sum(indexed.counts.values())} messages, "
                      f"{indexed.skipped_bytes} bytes of an incomplete record skipped)")
        path = indexed.dst
    if out is None:
        ros1 = path.suffix == ROS1_SUFFIX
        out = path.with_name(path.name.removesuffix(ROS1_SUFFIX) + "_noisy" + (ROS1_SUFFIX if ros1 else ""))
    options = BagOptions(crop_to_experiment=crop, duration_s=duration, shift_to_zero=crop,
                         rates_hz=_pairs(rates, "--rate", float), drop_topics=tuple(drop or ()),
                         rename_topics=_pairs(rename_topics, "--rename-topic"),
                         rename_frames=_pairs(rename_frames, "--rename-frame"),
                         depth_max_m=_pairs(depth_max, "--depth-max", float))
    report = process_bag(path, out, settings, options, seed, imu_topic, odom_topic)
    written = sum(t.count_out for t in report.topics.values())
    console.print(f"wrote {report.dst}: {written} messages on {sum(1 for t in report.topics.values() if t.count_out)} "
                  "topics")


def postprocess_command(
    path: Annotated[Path, typer.Argument(metavar="RUN|BAG", help="Recording folder, ROS 1 .bag or ROS 2 bag folder.")],
    imu: Annotated[bool, typer.Option("--imu", help="IMU noise (RotorS model, GRADE's defaults).")] = False,
    depth: Annotated[Literal["realsense", "kinect", "gaussian"] | None, typer.Option("--depth",
                                              help="Depth noise model.")] = None,
    blur: Annotated[bool, typer.Option("--blur", help="Motion blur over the exposure (0.02 s).")] = False,
    rolling_shutter: Annotated[bool, typer.Option("--rolling-shutter", help="Rolling-shutter readout.")] = False,
    preset: Annotated[Literal["grade-paper"] | None, typer.Option("--preset",
                                               help="The settings of a paper.")] = None,
    set_: Annotated[list[str] | None, typer.Option("--set", "-s", help="Override a setting inside the postprocess "
                                                                       "section: --set blur.exposure=0.01.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Redo it even if it is up to date.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="Bags: the new bag (default: NAME_noisy beside it).")]
    = None,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Bags: master seed of the noise.")] = 0,
    crop: Annotated[bool, typer.Option("--crop", help="Bags: from the /starting_experiment marker, time from 0.")]
    = False,
    duration: Annotated[float | None, typer.Option("--duration", callback=finite,
                                                                 help="Bags: seconds kept after the start.")] = None,
    rate: Annotated[list[str] | None, typer.Option("--rate", metavar="TOPIC=HZ",
                                                   help="Bags: retime a topic to its nominal rate.")] = None,
    drop: Annotated[list[str] | None, typer.Option("--drop", metavar="TOPIC", help="Bags: leave a topic out.")]
    = None,
    rename_topic: Annotated[list[str] | None, typer.Option("--rename-topic", metavar="OLD=NEW",
                                                           help="Bags: rename a topic, e.g. /imu=/imu_gt.")] = None,
    rename_frame: Annotated[list[str] | None, typer.Option("--rename-frame", metavar="OLD=NEW",
                                                           help="Bags: TF frame, e.g. base_link=base_link_gt.")]
    = None,
    depth_max: Annotated[list[str] | None, typer.Option("--depth-max", metavar="TOPIC=METRES",
                                                        help="Bags: depth beyond it becomes no return.")] = None,
    imu_topic: Annotated[str, typer.Option("--imu-topic", help="Bags, blur: the camera's IMU (sensor_msgs/Imu).")]
    = "/imu_camera",
    odom_topic: Annotated[str, typer.Option("--odom-topic", help="Bags, blur: the odometry (nav_msgs/Odometry).")]
    = "/odom",
) -> None:
    """Sensor noise, blur and rolling shutter; bag tools.

    A run gets new files beside the originals; a ROS 1 or ROS 2 bag is cropped, retimed or renamed and gets
    IMU and depth noise into a new bag (a killed ROS 1 recording's .bag.active is reindexed first).
    Without flags or a preset, a run's own `postprocess` config section is applied.

    \b
    Examples:
      grade postprocess runs/demo --preset grade-paper
      grade postprocess runs/demo --imu --depth realsense --blur
      grade postprocess recorded.bag --crop --duration 60 --imu
    """
    from core.errors import ConfigError
    from core.recording import Recording
    from core.stage import output_folder
    from postprocess.process_run import check_settings, process_run

    if is_bag(path):
        settings = postprocess_settings({}, preset, imu, depth, blur, rolling_shutter, set_ or [])
        if preset is not None:  # a bag has no camera motion to blur with
            settings = settings.model_copy(update={"blur": None, "rolling_shutter": None})
        _postprocess_bag(path, out, settings, seed, crop, duration, rate, drop, rename_topic, rename_frame, depth_max,
                         imu_topic, odom_topic)
        return
    if out is not None:  # a run's outputs go beside its recording (core.formats.postprocess): no --out to honour
        raise ConfigError("--out names a bag's new bag; a run's post-processed files are written beside its "
                          "recording, in RUN/gt", path, "--out")
    recording = Recording.open(path)
    settings = postprocess_settings(recording.config.get("postprocess") or {}, preset, imu, depth, blur,
                                    rolling_shutter, set_ or [])
    check_settings(recording, settings)  # refused before the lock, which would otherwise add .grade.lock to the run
    with output_folder(path, what="run folder"):
        result = process_run(path, settings, force=force)
    state = "up to date" if result.skipped else "done"
    console.print(f"post-processing {state}: {path / 'gt'}; cameras {', '.join(result.record.cameras) or 'none'}"
                  + (f"; IMU {result.record.imu_file}" if result.record.imu_file else ""))

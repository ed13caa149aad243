"""Post-process a recording: IMU noise, depth noise, motion blur and rolling shutter, blur-aware labels.

Reads the run through core.recording.Recording and writes new files beside the originals, which are never
changed (layout: core.formats.postprocess). Every random draw comes from a stream named after the step and
the sensor under the run's master seed ("postprocess/imu/<imu>", "postprocess/depth/<camera>",
"postprocess/exposure/<camera>"), so the same run and settings give byte-identical outputs. The record
`gt/postprocess.json` is written last: a run whose record matches the settings is up to date; anything else
(other settings, an interrupted run) is redone from scratch.

A camera with a lens other than pinhole (its frames.jsonl `distortion_model` and `D`) is post-processed through
its lens: blur, rolling shutter and label warps reproject each pixel along the lens's own ray with its depth (z
for radtan, the range along the ray for equidistant) and project through the lens's model (lens_warp.py); depth
noise applies to its depth as recorded. Two settings have no meaning through a lens and are refused for such a
camera before anything is written: `blur.model: homography` (a pinhole's homography of a plane) and, for an
equidistant camera, `depth.model: realsense` (a rectified pinhole stereo pair's error, z^2 / (f b), on a depth
that is the range here).

The camera's motion during an exposure comes from the state log: the robot's pose at every physics step,
interpolated between steps, composed with the camera's mount at the frame (base <- camera, exact for
cameras rigidly mounted during one exposure).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.config import PostprocessConfig
from core.config.lens import Lens
from core.errors import InputError
from core.formats.frames import Box2D
from core.formats.images import (
    DEPTH_NOISY,
    DERIVED,
    INSTANCE_BLUR,
    RGB_BLUR,
    SEMANTIC_BLUR,
    encode,
    frame_file,
    write_image,
)
from core.formats.imu import ImuSeries, save_imu
from core.formats.postprocess import (
    BLUR_FILE,
    IMU_NOISY_FILE,
    POSTPROCESS_FILE,
    BlurFrame,
    BlurLogWriter,
    CameraPostprocess,
    PostprocessRecord,
    read_postprocess_record,
    write_postprocess_record,
)
from core.formats.run_layout import GT_DIR
from core.geometry import compose, quat_wxyz_to_matrix
from core.progress import get_logger, progress_task
from core.recording import Camera, Frame, Recording
from core.rundir import partial_folder
from core.seeding import derived_seed, generator
from postprocess.blur import (
    PoseCurve,
    blur_and_shutter,
    boxes_from_mask,
    interpolate_pose,
    sequence_timing,
    warp_labels,
)
from postprocess.depth_noise import apply_depth_noise
from postprocess.imu_noise import apply_imu_noise

log = get_logger("postprocess")

# `--preset` settings. grade-paper: the GRADE paper's post-processing (its IMU model and defaults, a
# RealSense-like depth camera cut at 3.5 m, 0.02 s blur, a rolling shutter).
PRESETS: dict[str, dict] = {
    "grade-paper": {"imu": {}, "depth": {"model": "realsense", "max_range": 3.5}, "blur": {"exposure": 0.02},
                    "rolling_shutter": {}},
}


@dataclass
class ProcessResult:
    record: PostprocessRecord
    skipped: bool  # already post-processed with these settings


def _streams(imus: list[str], cameras: list[str], settings: PostprocessConfig) -> list[str]:
    names = [f"postprocess/imu/{name}" for name in imus] if settings.imu else []
    for camera in cameras:
        names += [f"postprocess/depth/{camera}"] if settings.depth else []
        names += [f"postprocess/exposure/{camera}"] if settings.blur or settings.rolling_shutter else []
    return names


def _up_to_date(gt: Path, settings: PostprocessConfig) -> PostprocessRecord | None:
    if not (gt / POSTPROCESS_FILE).is_file():
        return None
    try:
        record = read_postprocess_record(gt)
    except InputError:
        return None
    return record if record.settings == settings.model_dump(mode="json") else None


def _outputs(cameras: list[str]) -> list[Path]:
    """Every post-processing output, relative to gt/ (only GRADE's own names: the originals are never touched)."""
    return [Path(IMU_NOISY_FILE)] + [Path(camera) / name for camera in cameras for name in (BLUR_FILE, *DERIVED)]


def _install(built: Path, gt: Path, cameras: list[str]) -> None:
    """Replace the earlier outputs in `gt` by those in `built` (a partial folder laid out like gt/). The record
    goes first, so a run killed while installing is not up to date and is redone."""
    (gt / POSTPROCESS_FILE).unlink(missing_ok=True)
    for relative in _outputs(cameras):
        target = gt / relative
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        if (built / relative).exists():
            os.replace(built / relative, target)


def _noisy_imus(recording: Recording, settings: PostprocessConfig, seed: int) -> list[ImuSeries]:
    noisy = []
    for name, series in sorted(recording.imu().items()):
        result = apply_imu_noise(series.time, series.linear_acceleration, series.angular_velocity, settings.imu,
                                 generator(seed, f"postprocess/imu/{name}"))
        noisy.append(ImuSeries(name, series.time, result.linear_acceleration, result.angular_velocity))
    return noisy


def _robot_pose_at(recording: Recording) -> PoseCurve:
    path = recording.robot_path()
    return interpolate_pose(path.time, compose(quat_wxyz_to_matrix(path.quat_wxyz), path.position))


def _write(folder: Path, kind: str, frame: Frame, image: np.ndarray) -> None:
    path = folder / frame_file(kind, frame.index)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_image(path, encode(kind, image))


def _blur_boxes(frame: Frame, instance: np.ndarray) -> list[Box2D]:
    """The frame's tight boxes recomputed from the warped instance mask (ids, classes and occlusion kept)."""
    boxes = boxes_from_mask(instance)
    out = []
    for box in frame.boxes_2d_tight:
        if box.instance_id in boxes:
            x_min, y_min, x_max, y_max = boxes[box.instance_id]
            out.append(box.model_copy(update={"x_min": int(x_min), "y_min": int(y_min), "x_max": int(x_max),
                                              "y_max": int(y_max)}))
    return out


def _lens(camera: Camera) -> Lens:
    """The camera's lens, as its first frame records it (a camera keeps its lens for the whole run)."""
    if not len(camera):
        return Lens()
    record = camera[0].record
    return Lens.from_ros(record.distortion_model, record.D)


def _process_camera(camera: Camera, folder: Path, settings: PostprocessConfig, seed: int, robot_at: PoseCurve,
                    advance: Callable[..., None]) -> CameraPostprocess:
    """`camera`'s outputs, written into `folder` (the camera's folder in the partial gt/)."""
    depth_rng = generator(seed, f"postprocess/depth/{camera.name}")
    lens = _lens(camera)
    moving = settings.blur is not None or settings.rolling_shutter is not None
    exposure, readout = sequence_timing(settings.blur, settings.rolling_shutter,
                                        generator(seed, f"postprocess/exposure/{camera.name}"))
    sub_poses = settings.blur.sub_poses if settings.blur is not None else 1
    model = settings.blur.model if settings.blur is not None else "depth_aware"
    plane = settings.blur.plane_distance if settings.blur is not None else 1.0
    outputs = ([DEPTH_NOISY] if settings.depth else []) + ([RGB_BLUR, INSTANCE_BLUR, SEMANTIC_BLUR] if moving else [])
    folder.mkdir(parents=True, exist_ok=True)
    blur_log = BlurLogWriter(folder / BLUR_FILE) if moving else None
    try:
        for frame in camera:
            depth = frame.depth()
            if depth is None:
                raise InputError("post-processing needs the camera's depth; record it (outputs: depth)",
                                 camera.folder, "depth")
            if settings.depth is not None:
                _write(folder, DEPTH_NOISY, frame, apply_depth_noise(depth, frame.K, settings.depth, depth_rng))
            if moving:
                mount = np.linalg.inv(robot_at(frame.time)) @ frame.pose  # base <- camera at this frame

                def camera_at(times: np.ndarray, mount: np.ndarray = mount) -> np.ndarray:
                    return robot_at(times) @ mount

                result = blur_and_shutter(frame.rgb(), depth, frame.K, camera_at, frame.time, exposure, readout,
                                          sub_poses, model, plane, lens)
                _write(folder, RGB_BLUR, frame, result.image)
                # Labels move with what the blurred image shows: the scene's depth, or GRADE's plane.
                label_depth = depth if model == "depth_aware" else np.full_like(depth, plane)
                warped = {kind: warp_labels(labels, label_depth, frame.K, frame.pose, result.mean_poses, lens)
                          for kind, labels in ((INSTANCE_BLUR, frame.instance()), (SEMANTIC_BLUR, frame.semantic()))
                          if labels is not None}
                for kind, labels in warped.items():
                    _write(folder, kind, frame, labels)
                boxes = _blur_boxes(frame, warped[INSTANCE_BLUR]) if INSTANCE_BLUR in warped else []
                blur_log.write(BlurFrame(frame=frame.index, time=frame.time, exposure=exposure, readout=readout,
                                         sub_poses=result.params["sub_pose_transforms"], boxes_2d_tight=boxes))
            advance()
    finally:
        if blur_log is not None:
            blur_log.close()
    return CameraPostprocess(exposure=exposure if settings.blur else None,
                             readout=readout if settings.rolling_shutter else None, outputs=outputs)


def check_settings(recording: Recording, settings: PostprocessConfig) -> None:
    """What can be refused before the run is touched (the CLI checks it before taking the run's lock)."""
    if not settings.enabled:
        raise InputError("nothing to apply: enable at least one of imu, depth, blur, rolling_shutter",
                         field="postprocess")
    if len(recording.robots) > 1:
        raise InputError(f"post-processing takes one-robot runs; this one has {', '.join(recording.robots)} (their "
                         "ground truth in gt/<robot>/)", recording.path, "robots")
    moving = settings.blur is not None or settings.rolling_shutter is not None
    for name in recording.cameras:
        lens = _lens(recording.camera(name))
        if lens.pinhole:
            continue
        if moving and settings.blur is not None and settings.blur.model == "homography":
            raise InputError(f"camera {name!r} has a {lens.model} lens: the homography blur model warps a pinhole's "
                             "image of a plane; use blur.model: depth_aware, which reprojects through the lens",
                             recording.path, "blur.model")
        if settings.depth is not None and settings.depth.model == "realsense" and lens.model == "equidistant":
            raise InputError(f"camera {name!r} has an equidistant lens: the realsense depth model is a rectified "
                             "pinhole stereo pair's error (z^2 / (f b)), and this camera's depth is the range along "
                             "each ray; use depth.model: kinect or gaussian", recording.path, "depth.model")


def process_run(run: Path, settings: PostprocessConfig, force: bool = False) -> ProcessResult:
    """Apply `settings` to the complete recording `run` (the caller holds the run folder's lock). The outputs are
    built in a partial folder in gt/ and installed at the end, so a failure leaves the run as it was; the partial
    folder of a killed one is removed by the next writer of the run (core.stage.output_folder)."""
    recording = Recording.open(run)
    check_settings(recording, settings)
    gt = recording.path / GT_DIR
    seed = recording.info.master_seed
    done = None if force else _up_to_date(gt, settings)
    if done is not None:
        log.info("post-processing up to date: %s (use --force to redo it)", gt / POSTPROCESS_FILE)
        return ProcessResult(done, skipped=True)
    cameras = recording.cameras
    imus = sorted(recording.imu())
    record = PostprocessRecord(settings=settings.model_dump(mode="json"), master_seed=seed,
                               streams={name: derived_seed(seed, name) for name in _streams(imus, cameras, settings)})
    with partial_folder(gt, "postprocess") as built:
        if settings.imu is not None and imus:
            save_imu(built / IMU_NOISY_FILE, _noisy_imus(recording, settings, seed))
            record.imu_file = IMU_NOISY_FILE
        if settings.depth or settings.blur or settings.rolling_shutter:
            robot = _robot_pose_at(recording)
            total = sum(len(recording.camera(name)) for name in cameras)
            with progress_task("post-processing frames", total) as advance:
                for name in cameras:
                    record.cameras[name] = _process_camera(recording.camera(name), built / name, settings, seed,
                                                           robot, advance)
        _install(built, gt, cameras)
    write_postprocess_record(gt, record)
    return ProcessResult(record, skipped=False)

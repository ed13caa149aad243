"""A Rerun recording (.rrd) of a GRADE run, on the simulation-time timeline.

Entities: `world` (Z up) holds the robot (`world/robot`, its pose at every physics step, and the whole
path as a line), the humans' start positions, and one entity per camera (`world/<camera>`: its pose
world <- optical frame and pinhole, with `rgb`, `depth`, `instance`, `semantic` images and the tight
2D `boxes` as children). Semantic classes carry their names and the contact sheet's colours.

rerun-sdk is the optional extra `viz`; it is imported here only, on use.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

from core.errors import GradeError, InputError
from core.formats.run_info import RunInfo
from core.formats.states import RobotPath
from core.geometry import wxyz_to_xyzw
from core.progress import track
from core.recording import Camera
from core.rundir import FILE_MODE
from postprocess.backdrop import MapBackdrop
from postprocess.contact_sheet import box_caption, id_palette

APPLICATION_ID = "grade"
TIMELINE = "sim_time"
PATH_RADIUS_M = 0.01
HUMAN_RADIUS_M = 0.15
ROBOT_AXIS_LENGTH_M = 0.3
METRES = 1.0  # depth images are logged in metres


def import_rerun() -> ModuleType:
    try:
        import rerun
    except ImportError as exc:
        raise GradeError("the Rerun export needs rerun-sdk: install the viz extra: pip install -e .[viz]") from exc
    return rerun


def _colour(palette: np.ndarray, index: int) -> tuple[int, int, int]:
    return tuple(int(c) for c in palette[index % len(palette)])


def _log_static(rr: ModuleType, rec, sequences: list[Camera], robot: RobotPath | None,
                layout: MapBackdrop | None) -> None:
    rec.log("world", rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)
    semantic = id_palette("semantic")
    classes = {}
    for sequence in sequences:
        classes.update({i: name for name, i in sequence.instances.semantic_classes.items()})
    rec.log("world", rr.AnnotationContext([(i, name, _colour(semantic, i)) for i, name in sorted(classes.items())]),
            static=True)
    instance = id_palette("instance")
    for sequence in sequences:
        labels = sorted((i, entry.semantic_class) for i, entry in sequence.instances.instances.items())
        # Instance images get their own context: their ids are instances, not classes.
        rec.log(f"world/{sequence.name}/instance", rr.AnnotationContext(
            [(i, f"{name or 'unlabelled'} #{i}", _colour(instance, i)) for i, name in labels]), static=True)
    if robot is not None:
        rec.log("world/robot_path", rr.LineStrips3D([robot.position], radii=PATH_RADIUS_M), static=True)
        rec.log("world/robot", rr.TransformAxes3D(ROBOT_AXIS_LENGTH_M), static=True)
    if layout is not None and len(layout.humans):
        rec.log("world/humans", rr.Points3D(layout.humans, radii=HUMAN_RADIUS_M, labels=layout.human_ids),
                static=True)


def _log_robot(rr: ModuleType, rec, robot: RobotPath) -> None:
    rec.send_columns("world/robot", indexes=[rr.TimeColumn(TIMELINE, duration=robot.time)],
                     columns=rr.Transform3D.columns(translation=robot.position,
                                                    quaternion=wxyz_to_xyzw(robot.quat_wxyz)))


def _log_camera(rr: ModuleType, rec, camera: Camera) -> None:
    root = f"world/{camera.name}"
    for frame in track(camera.frames, f"rerun: {camera.name}"):
        rec.set_time(TIMELINE, duration=frame.time)
        pose = frame.pose
        rec.log(root, rr.Transform3D(translation=pose[:3, 3], mat3x3=pose[:3, :3]))
        # ROS optical frame: x right, y down, z forward (RDF).
        rec.log(root, rr.Pinhole(image_from_camera=frame.K, width=frame.width, height=frame.height,
                                 camera_xyz=rr.ViewCoordinates.RDF))
        rgb = frame.path("rgb")
        if rgb is not None:
            if not rgb.is_file():
                raise InputError("file not found", rgb, "rgb")
            rec.log(f"{root}/rgb", rr.EncodedImage(contents=rgb.read_bytes(), media_type="image/png"))
        for kind, image in (("depth", frame.depth()), ("instance", frame.instance()), ("semantic", frame.semantic())):
            if image is not None:
                archetype = rr.DepthImage(image, meter=METRES) if kind == "depth" else rr.SegmentationImage(image)
                rec.log(f"{root}/{kind}", archetype)
        boxes = [b for b in frame.boxes_2d_tight if not b.empty]
        # Inclusive pixel bounds: the box covers x_min .. x_max + 1 in Rerun's continuous image coordinates.
        mins = np.array([(b.x_min, b.y_min) for b in boxes], dtype=np.float32).reshape(-1, 2)
        sizes = np.array([(b.x_max - b.x_min + 1, b.y_max - b.y_min + 1) for b in boxes], dtype=np.float32)
        rec.log(f"{root}/boxes", rr.Boxes2D(mins=mins, sizes=sizes.reshape(-1, 2),
                                            labels=[box_caption(b, camera.instances) for b in boxes],
                                            class_ids=[b.semanticId for b in boxes]))


def export_rerun(path: Path, info: RunInfo, sequences: list[Camera], robot: RobotPath | None,
                 layout: MapBackdrop | None) -> Path:
    """Write `path` (.rrd) atomically: it appears only once the whole recording is in it."""
    rr = import_rerun()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        # No wall-clock timelines or start-time property: only simulation time goes into the file.
        rec = rr.RecordingStream(APPLICATION_ID, recording_id=f"{info.name}-seed{info.master_seed}",
                                 send_properties=False)
        rec.set_log_time_enabled(False)
        rec.set_log_tick_enabled(False)
        rec.save(tmp)
        _log_static(rr, rec, sequences, robot, layout)
        if robot is not None:
            _log_robot(rr, rec, robot)
        for sequence in sequences:
            _log_camera(rr, rec, sequence)
        rec.flush()
        rec.disconnect()
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path

"""A Rerun recording (.rrd) of a finished GRADE run, on the simulation-time timeline.

Entities and how each is logged: core.rerun_log, shared with the live view of a run as it records
(`grade generate --rerun`), so both look the same. Here the robot's whole path is known, so it is one static line,
and its pose is logged at every physics step from states.npz. An event camera's events (gt/<name>/events.h5) are
logged as one image per 30 Hz window (`grade view`'s event frames: each pixel its last event's polarity, ON blue,
OFF red, on white) at the window's end; the live view does not show them.

rerun-sdk is the optional extra `viz`; it is imported on use only.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import cv2

from core.config.lens import Lens
from core.errors import GradeError, InputError
from core.formats.events import EventFile
from core.formats.run_info import RunInfo
from core.formats.states import RobotPath
from core.geometry import wxyz_to_xyzw
from core.progress import track
from core.recording import Camera, Humans, Lidar
from core.rerun_log import (
    TIMELINE,
    CameraImages,
    RobotEntities,
    import_rerun,
    log_camera_frame,
    log_camera_labels,
    log_camera_lens,
    log_event_frame,
    log_humans,
    log_lidar_sweep,
    log_robot_marker,
    log_robot_path,
    log_world,
    new_stream,
)
from core.rundir import FILE_MODE
from postprocess.event_frames import EVENT_WINDOW_NS, event_frame


@dataclass
class RobotExport:
    """What the export shows of one robot: `name` None in a one-robot run; `path` None when states.npz is not
    written yet (an incomplete run)."""

    name: str | None
    cameras: list[Camera]
    path: RobotPath | None
    lidars: list[Lidar]
    events: dict[str, EventFile] = field(default_factory=dict)  # event camera name -> its events


def _log_path(rr: ModuleType, rec, entities: RobotEntities, path: RobotPath) -> None:
    log_robot_marker(rr, rec, entities)
    log_robot_path(rr, rec, entities, path.position)
    rec.send_columns(entities.pose, indexes=[rr.TimeColumn(TIMELINE, duration=path.time)],
                     columns=rr.Transform3D.columns(translation=path.position,
                                                    quaternion=wxyz_to_xyzw(path.quat_wxyz)))


def _log_camera(rr: ModuleType, rec, entities: RobotEntities, camera: Camera) -> None:
    entity = entities.sensor(camera.name)
    log_camera_labels(rr, rec, entity, camera.instances)
    lens = None
    for frame in track(camera.frames, f"rerun: {camera.name}"):
        if lens is None:  # a camera keeps its lens for the whole run
            lens = Lens.from_ros(frame.record.distortion_model, frame.record.D)
            log_camera_lens(rr, rec, entity, lens)
        rgb = frame.path("rgb")
        if rgb is not None and not rgb.is_file():
            raise InputError("file not found", rgb, "rgb")
        images = CameraImages(rgb.read_bytes() if rgb is not None else None, frame.depth(), frame.instance(),
                              frame.semantic())
        log_camera_frame(rr, rec, entity, frame.time, frame.pose, frame.K, (frame.width, frame.height), images,
                         frame.boxes_2d_tight, camera.instances, lens)


def _log_events(rr: ModuleType, rec, entities: RobotEntities, name: str, events: EventFile) -> None:
    """One image per 30 Hz window [k w, (k + 1) w) of simulation time that the events span, at its end."""
    records = events.events
    if not len(records):
        return
    first, last = int(records["t"][0]) // EVENT_WINDOW_NS, int(records["t"][-1]) // EVENT_WINDOW_NS
    for window in track(range(first, last + 1), f"rerun: {name}"):
        start, end = window * EVENT_WINDOW_NS, (window + 1) * EVENT_WINDOW_NS
        image = event_frame(records, events.width, events.height, start, end)
        ok, png = cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))  # PNG: a tenth of the raw image
        if not ok:
            raise GradeError(f"OpenCV could not encode the event image of {name!r} as PNG")
        log_event_frame(rr, rec, entities.sensor(name), end / 1e9, png.tobytes())


def _log_lidar(rr: ModuleType, rec, entities: RobotEntities, lidar: Lidar) -> None:
    for sweep in track(lidar, f"rerun: {lidar.name}"):
        log_lidar_sweep(rr, rec, entities.sensor(lidar.name), sweep.time, sweep.pose, sweep.points)


def export_rerun(path: Path, info: RunInfo, robots: list[RobotExport], humans: Humans | None) -> Path:
    """Write `path` (.rrd) atomically: it appears only once the whole recording is in it."""
    rr = import_rerun()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    try:
        rec = new_stream(rr, f"{info.name}-seed{info.master_seed}")
        rec.save(tmp)
        classes = {name: i for robot in robots for camera in robot.cameras
                   for name, i in camera.instances.semantic_classes.items()}
        log_world(rr, rec, classes)
        for robot in robots:
            entities = RobotEntities(robot.name)
            if robot.path is not None:
                _log_path(rr, rec, entities, robot.path)
            for camera in robot.cameras:
                _log_camera(rr, rec, entities, camera)
            for lidar in robot.lidars:
                _log_lidar(rr, rec, entities, lidar)
            for name, events in robot.events.items():
                _log_events(rr, rec, entities, name, events)
        if humans is not None:
            for index in track(range(len(humans)), "rerun: humans"):
                frame = humans[index]
                log_humans(rr, rec, frame.time, frame.joints)
        rec.flush()
        rec.disconnect()
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path

"""`grade view RUN`: read a recording folder and write a quick visual check of it.

Outputs (default RUN/view/): one contact sheet per camera (RGB with tight 2D boxes, depth, instance,
semantic for a few frames spread over the sequence), one strip of event frames per event camera (each
gt/<camera>/events.h5: `events_<camera>.png`), `trajectory.png` (the robot's path on the
environment's 2D occupancy map), `imu.png` and, for a robot that explored, `coverage.png` (the share of the
floor it could reach that its map knew, over time: run.json `mission.reachable_floor_coverage`); optionally a
Rerun `.rrd` recording.

The recording is read through core.recording.Recording, whose format readers raise InputError naming
the file and the field, so a broken recording is reported, never half-drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from core.errors import GradeError, InputError
from core.formats.events import EVENTS_FILE, read_events
from core.formats.frames import FRAMES_FILE
from core.formats.imu import IMU_FILE
from core.formats.run_layout import GT_DIR, RECORD_OUTPUTS
from core.formats.states import STATES_FILE, RobotPath
from core.outputs import check_apart
from core.recording import Camera, Recording
from core.rundir import atomic_write_bytes
from core.stage import output_folder
from postprocess import DEFAULT_FRAMES
from postprocess.backdrop import read_map_backdrop
from postprocess.event_frames import EVENT_WINDOW_NS, event_frame
from postprocess.rerun_export import RobotExport

VIEW_DIR = "view"
EVENT_GAP_PX = 4


def select_frames(count: int, wanted: int) -> list[int]:
    """`wanted` indices spread evenly over 0..count-1, first and last included (all when count <= wanted)."""
    if count <= 0 or wanted <= 0:
        return []
    return sorted(set(np.round(np.linspace(0, count - 1, min(wanted, count))).astype(int).tolist()))


def event_strip(path: Path, frames: int) -> np.ndarray:
    """`frames` event frames spread evenly over the file's events, side by side (core.formats.events' reader
    names the file and dataset of a malformed one)."""
    read = read_events(path)
    events, gap = read.events, np.full((read.height, EVENT_GAP_PX, 3), 255, np.uint8)
    if not len(events):
        raise InputError("no events to draw", path)
    starts = np.linspace(events["t"][0], max(events["t"][-1] - EVENT_WINDOW_NS, events["t"][0]), frames)
    panels = [event_frame(events, read.width, read.height, int(s), int(s) + EVENT_WINDOW_NS) for s in starts]
    return np.hstack([part for panel in panels for part in (panel, gap)][:-1])


# ---------------------------------------------------------------- the view


@dataclass
class ViewResult:
    """What `view_run` wrote, in order, and what the user should be told about the recording."""

    written: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _png(path: Path, rgb: np.ndarray) -> bytes:
    ok, encoded = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    if not ok:
        raise GradeError("OpenCV could not encode the image as PNG", path)
    return encoded.tobytes()


def _cameras(recording: Recording, camera: str | None) -> list[Camera]:
    available = recording.cameras
    if camera is not None and camera not in available:
        listed = ", ".join(available) if available else "none"
        raise InputError(f"no camera {camera!r} in this recording; available: {listed}", recording.path / GT_DIR,
                         "--camera")
    if not available:
        raise InputError(f"the recording has no frames: no gt/<camera>/frames.jsonl (run.json status: "
                         f"{recording.info.status!r})", recording.path / GT_DIR)
    cameras = [recording.camera(name) for name in ([camera] if camera else available)]
    for sequence in cameras:
        if not len(sequence):
            raise InputError("the recording has no frames for this camera", sequence.folder / FRAMES_FILE)
    return cameras


def _contact_sheet(recording: Recording, camera: Camera, frames: int, all_boxes: bool) -> np.ndarray:
    from postprocess.contact_sheet import render_contact_sheet, sheet_row

    picked = [camera[i] for i in select_frames(len(camera), frames)]
    rows = [sheet_row(frame) for frame in picked]
    if not all_boxes:
        for row in rows:
            row.boxes = [b for b in row.boxes if not camera.instances.is_environment(b.instance_id)]
    return render_contact_sheet(rows, camera.instances, f"{recording.info.name} / {camera.name}")


def _robot_path(recording: Recording, result: ViewResult) -> RobotPath | None:
    states = recording.path / STATES_FILE
    if not states.is_file() and recording.complete:
        raise InputError("file not found (the run says it is complete)", states)
    if not states.is_file():
        result.warnings.append(f"{states}: not written yet, so no trajectory.png")
        return None
    return recording.robot_path()


def view_run(run: Path, camera: str | None = None, frames: int = DEFAULT_FRAMES, out: Path | None = None,
             rerun: Path | None = None, all_boxes: bool = False) -> ViewResult:
    """Write the contact sheets, trajectory.png, imu.png, coverage.png (a robot that explored; and a .rrd with
    `rerun`) for recording `run`.

    Contact sheets draw the boxes of humans and objects; `all_boxes` adds the environment's (walls,
    floor, furniture), which cover most of an indoor image. An incomplete run is shown with a warning."""
    from postprocess.plots import plot_coverage, plot_imu, plot_trajectory

    if frames < 1:
        raise InputError(f"must be at least 1, got {frames}", field="--frames")
    if rerun is not None:
        from core.rerun_log import import_rerun

        import_rerun()  # fail before writing anything when the viz extra is missing
    recording = Recording.open(run, allow_incomplete=True)
    info, result = recording.info, ViewResult()
    if not recording.complete:
        result.warnings.append(f"run {info.name!r} is incomplete (status {info.status!r}): showing what was recorded")
    out = Path(out) if out is not None else recording.path / VIEW_DIR
    # What the recording wrote is the input: the view may sit beside it in the run (RUN/view, the default), never
    # in it or around it.
    recorded = [recording.path / name for name in RECORD_OUTPUTS]
    check_apart(out, recorded, "view folder")
    if rerun is not None:
        check_apart(rerun, recorded, "Rerun file", "--rerun")
    multi = len(recording.robots) > 1
    # Everything is read and drawn first and written last, so a broken recording leaves no partial view. A
    # multi-robot run's pictures are per robot, named after it (contact_sheet_<robot>_<camera>.png, ...).
    pictures: dict[Path, bytes] = {}
    exported: list[RobotExport] = []
    for name in recording.robots if multi else [None]:
        robot_view = recording.robot(name)
        tag = f"_{name}" if multi else ""
        cameras = _cameras(robot_view, camera)
        result.warnings += [f"{c.folder / FRAMES_FILE}: skipped the half-written last line" for c in cameras
                            if c.dropped_tail]
        for sequence in cameras:
            path = out / f"contact_sheet{tag}_{sequence.name}.png"
            pictures[path] = _png(path, _contact_sheet(robot_view, sequence, frames, all_boxes))

        robot = _robot_path(robot_view, result)
        layout = read_map_backdrop(recording.path) if robot is not None else None
        if robot is not None:
            camera_xy = {c.name: np.array([f.pose[:2, 3] for f in c]) for c in cameras}
            pictures[out / f"trajectory{tag}.png"] = plot_trajectory(robot, layout, camera_xy,
                                                                     f"{info.name}{' ' + name if multi else ''}")

        exported.append(RobotExport(name, cameras, robot, [robot_view.lidar(lidar) for lidar in robot_view.lidars],
                                    {event: robot_view.events(event) for event in robot_view.event_cameras}))
        imus = robot_view.imu()
        if imus:
            pictures[out / f"imu{tag}.png"] = plot_imu(list(imus.values()), f"{info.name}{tag}: IMUs")
        else:
            result.warnings.append(f"{recording.path / GT_DIR / IMU_FILE}: no IMU readings, so no imu{tag}.png")
        covered = robot_view.floor_coverage()
        if covered is not None and len(covered):
            pictures[out / f"coverage{tag}.png"] = plot_coverage(covered, f"{info.name}{' ' + name if multi else ''}")

    for events in sorted((recording.path / GT_DIR).glob(f"*/{EVENTS_FILE}")):
        path = out / f"events_{events.parent.name}.png"
        pictures[path] = _png(path, event_strip(events, frames))

    with output_folder(out, what="view folder"):
        result.written += [atomic_write_bytes(path, data) for path, data in pictures.items()]

    if rerun is not None:
        from postprocess.rerun_export import export_rerun

        result.written.append(export_rerun(Path(rerun), info, exported, recording.humans()))
    return result

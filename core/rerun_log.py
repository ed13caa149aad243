"""A GRADE run as Rerun shows it: the entity paths, the simulation-time timeline and how each kind of data is logged.

Shared by the offline export of a finished recording (postprocess.rerun_export) and the live view of a run as it
records (simulation.recording.live_view), so both look the same. Entities: `world` (Z up, the semantic classes
with their names and the contact sheet's colours); per robot (under `world/<robot>/` in a multi-robot run) its pose
`robot`, its path `robot_path`, one entity per camera (`<camera>`: pose world <- optical frame and pinhole, with
`rgb`, `depth`, `instance`, `semantic` images and the tight 2D `boxes` as children), per LiDAR (`<lidar>`: pose
world <- sensor, with the sweep's returns as `points`) and per event camera (`<event camera>/events`: an image of
each 30 Hz window's events, drawn as `grade view` draws them); the humans' skeletons, `world/humans/<human>`.

Rerun's Pinhole has no lens distortion (rerun-sdk 0.41), so a camera with a radtan or equidistant lens is logged
without one: its images and boxes show in 2D views at their pixels, and the 3D view shows its pose but does not
project them (a pinhole of its K would put every pixel on the wrong ray, and cannot hold a fisheye's 180 degrees
and more); a static text `<camera>/lens` says so and gives the model and coefficients.

Only simulation time is logged (the `sim_time` timeline): no wall-clock or tick timelines, no start-time property.
rerun-sdk is the optional extra `viz`: callers import it through `import_rerun` and pass the module in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from core.config.lens import PINHOLE, Lens
from core.errors import GradeError
from core.formats.frames import Box2D
from core.formats.instances import Instances
from core.id_display import box_caption, id_palette

if TYPE_CHECKING:
    from rerun import RecordingStream

APPLICATION_ID = "grade"
TIMELINE = "sim_time"
WORLD = "world"
HUMANS = "world/humans"
PATH_RADIUS_M = 0.01
HUMAN_JOINT_RADIUS_M = 0.04
LIDAR_POINT_RADIUS_M = 0.02
ROBOT_AXIS_LENGTH_M = 0.3
METRES = 1.0  # depth images are logged in metres
VIZ_EXTRA = 'rerun-sdk is not installed; install the viz extra: pip install ".[viz]"'


def import_rerun() -> ModuleType:
    try:
        import rerun
    except ImportError as exc:
        raise GradeError(VIZ_EXTRA) from exc
    return rerun


def new_stream(rr: ModuleType, recording_id: str) -> RecordingStream:
    """A recording stream with no sink yet that logs simulation time only."""
    rec = rr.RecordingStream(APPLICATION_ID, recording_id=recording_id, send_properties=False)
    rec.set_log_time_enabled(False)
    rec.set_log_tick_enabled(False)
    return rec


@dataclass(frozen=True)
class RobotEntities:
    """The entity paths of one robot's data: `robot` is None in a one-robot run."""

    robot: str | None = None

    @property
    def root(self) -> str:
        return WORLD if self.robot is None else f"{WORLD}/{self.robot}"

    @property
    def pose(self) -> str:
        return f"{self.root}/robot"

    @property
    def path(self) -> str:
        return f"{self.root}/robot_path"

    def sensor(self, name: str) -> str:
        return f"{self.root}/{name}"


@dataclass
class CameraImages:
    """One camera frame's images; None where the camera does not record that output. `rgb` is an (H, W, 3) uint8
    array, or a PNG file's bytes as stored (logged without decoding)."""

    rgb: np.ndarray | bytes | None
    depth: np.ndarray | None  # (H, W) float metres, 0 = no return
    instance: np.ndarray | None
    semantic: np.ndarray | None


def _colour(palette: np.ndarray, index: int) -> tuple[int, int, int]:
    return tuple(int(c) for c in palette[index % len(palette)])


def log_world(rr: ModuleType, rec: RecordingStream, classes: Mapping[str, int]) -> None:
    """The world's axes and the semantic classes (name -> id) for every segmentation image and box."""
    rec.log(WORLD, rr.ViewCoordinates.RIGHT_HAND_Z_UP, static=True)
    semantic = id_palette("semantic")
    rec.log(WORLD, rr.AnnotationContext([(i, name, _colour(semantic, i)) for name, i in
                                         sorted(classes.items(), key=lambda kv: kv[1])]), static=True)


def log_camera_labels(rr: ModuleType, rec: RecordingStream, camera: str, instances: Instances) -> None:
    """A camera's instance image gets its own context: its ids are instances, not classes."""
    palette = id_palette("instance")
    labels = sorted((i, entry.semantic_class) for i, entry in instances.instances.items())
    rec.log(f"{camera}/instance", rr.AnnotationContext(
        [(i, f"{name or 'unlabelled'} #{i}", _colour(palette, i)) for i, name in labels]), static=True)


def log_robot_marker(rr: ModuleType, rec: RecordingStream, robot: RobotEntities) -> None:
    rec.log(robot.pose, rr.TransformAxes3D(ROBOT_AXIS_LENGTH_M), static=True)


def log_robot_path(rr: ModuleType, rec: RecordingStream, robot: RobotEntities, positions: np.ndarray,
                   time: float | None = None) -> None:
    """The path as one line: static when the whole path is known (`time` None), else the path up to `time`."""
    strip = rr.LineStrips3D([positions], radii=PATH_RADIUS_M)
    if time is None:
        rec.log(robot.path, strip, static=True)
        return
    rec.set_time(TIMELINE, duration=time)
    rec.log(robot.path, strip)


def log_pose(rr: ModuleType, rec: RecordingStream, entity: str, time: float, pose: np.ndarray) -> None:
    """`entity`'s 4x4 pose (world <- entity) at `time`."""
    rec.set_time(TIMELINE, duration=time)
    rec.log(entity, rr.Transform3D(translation=pose[:3, 3], mat3x3=pose[:3, :3]))


def log_camera_lens(rr: ModuleType, rec: RecordingStream, camera: str, lens: Lens) -> None:
    """For a camera with a lens other than pinhole, the static note that it has no Rerun pinhole (module doc)."""
    if lens.pinhole:
        return
    rec.log(f"{camera}/lens", rr.TextDocument(
        f"{lens.model} lens, coefficients {list(lens.coefficients)}: Rerun's Pinhole has no distortion, so this "
        "camera is logged without one. Its images and boxes are at their pixels in 2D views; the 3D view shows "
        "the camera's pose only."), static=True)


def log_camera_frame(rr: ModuleType, rec: RecordingStream, camera: str, time: float, pose: np.ndarray, K: np.ndarray,
                     size: tuple[int, int], images: CameraImages, boxes: list[Box2D], instances: Instances,
                     lens: Lens = PINHOLE) -> None:
    """One frame of camera entity `camera`: its pose (world <- optical frame), pinhole (`size`: width, height; none
    through another `lens`, see the module doc), images and tight 2D boxes (captions from `instances`)."""
    log_pose(rr, rec, camera, time, pose)
    if lens.pinhole:  # ROS optical frame: x right, y down, z forward (RDF)
        rec.log(camera, rr.Pinhole(image_from_camera=K, width=size[0], height=size[1],
                                   camera_xyz=rr.ViewCoordinates.RDF))
    if isinstance(images.rgb, bytes):
        rec.log(f"{camera}/rgb", rr.EncodedImage(contents=images.rgb, media_type="image/png"))
    elif images.rgb is not None:
        rec.log(f"{camera}/rgb", rr.Image(images.rgb, color_model="RGB"))
    if images.depth is not None:
        rec.log(f"{camera}/depth", rr.DepthImage(images.depth, meter=METRES))
    for kind, ids in (("instance", images.instance), ("semantic", images.semantic)):
        if ids is not None:
            rec.log(f"{camera}/{kind}", rr.SegmentationImage(ids))
    shown = [b for b in boxes if not b.empty]
    # Inclusive pixel bounds: the box covers x_min .. x_max + 1 in Rerun's continuous image coordinates.
    mins = np.array([(b.x_min, b.y_min) for b in shown], dtype=np.float32).reshape(-1, 2)
    sizes = np.array([(b.x_max - b.x_min + 1, b.y_max - b.y_min + 1) for b in shown], dtype=np.float32)
    rec.log(f"{camera}/boxes", rr.Boxes2D(mins=mins, sizes=sizes.reshape(-1, 2),
                                          labels=[box_caption(b, instances) for b in shown],
                                          class_ids=[b.semanticId for b in shown]))


def log_event_frame(rr: ModuleType, rec: RecordingStream, camera: str, time: float, png: bytes) -> None:
    """The image (PNG bytes) of an event camera's events in the window ending at `time`."""
    rec.set_time(TIMELINE, duration=time)
    rec.log(f"{camera}/events", rr.EncodedImage(contents=png, media_type="image/png"))


def log_lidar_sweep(rr: ModuleType, rec: RecordingStream, lidar: str, time: float, pose: np.ndarray,
                    points: np.ndarray) -> None:
    """One sweep of LiDAR entity `lidar`: its pose (world <- sensor) and its returns in the sensor frame."""
    log_pose(rr, rec, lidar, time, pose)
    rec.log(f"{lidar}/points", rr.Points3D(points, radii=LIDAR_POINT_RADIUS_M))


def log_humans(rr: ModuleType, rec: RecordingStream, time: float, joints: Mapping[str, np.ndarray]) -> None:
    """Each human's skeleton joints (J, 3, world) at `time`, by the human's name."""
    rec.set_time(TIMELINE, duration=time)
    for name, positions in joints.items():
        rec.log(f"{HUMANS}/{name}", rr.Points3D(positions, radii=HUMAN_JOINT_RADIUS_M))

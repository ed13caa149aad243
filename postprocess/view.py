"""`grade view RUN`: read a recording folder and write a quick visual check of it.

Outputs (default RUN/view/): one contact sheet per camera (RGB with tight 2D boxes, depth, instance,
semantic for a few frames spread over the sequence), `trajectory.png` (the robot's path on the
environment's 2D occupancy map) and `imu.png`; optionally a Rerun `.rrd` recording.

The readers here check what they read and raise InputError naming the file and the field, so a broken
recording is reported, never half-drawn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from core.errors import GradeError, InputError
from core.rundir import RunInfo, atomic_write_bytes, load_npz_checked, read_json, read_run_info
from placement import load_placement
from postprocess import DEFAULT_FRAMES

VIEW_DIR = "view"
FRAMES_FILE = "frames.jsonl"
INSTANCES_FILE = "instances.json"
MM_PER_M = 1000.0
COMPLETE = "complete"


# ---------------------------------------------------------------- frames.jsonl


class Box2D(BaseModel):
    """A tight or loose 2D box (omni.replicator.core fields, inclusive pixel bounds)."""

    model_config = ConfigDict(extra="allow")

    instance_id: int
    semanticId: int  # the annotator's field names
    x_min: int
    y_min: int
    x_max: int
    y_max: int
    occlusionRatio: float

    @property
    def empty(self) -> bool:
        """The recorder writes x_min > x_max for an instance that is not in view."""
        return self.x_min > self.x_max or self.y_min > self.y_max


def _square(rows: list[list[float]], size: int) -> list[list[float]]:
    if len(rows) != size or any(len(row) != size for row in rows):
        raise ValueError(f"must be a {size}x{size} matrix (a list of {size} rows of {size} numbers)")
    return rows


class FrameRecord(BaseModel):
    """One line of frames.jsonl; keys this viewer does not use are kept but not checked."""

    model_config = ConfigDict(extra="allow")

    frame: int
    time: float
    pose: list[list[float]]
    K: list[list[float]]
    width: int
    height: int
    files: dict[str, str]
    boxes_2d_tight: list[Box2D] = []

    @field_validator("pose")
    @classmethod
    def _pose_4x4(cls, value: list[list[float]]) -> list[list[float]]:
        return _square(value, 4)

    @field_validator("K")
    @classmethod
    def _k_3x3(cls, value: list[list[float]]) -> list[list[float]]:
        return _square(value, 3)

    @property
    def pose_matrix(self) -> np.ndarray:
        """World <- optical frame (ROS optical: z forward, x right, y down)."""
        return np.asarray(self.pose, dtype=np.float64)


@dataclass
class FrameLog:
    frames: list[FrameRecord]
    dropped_tail: bool  # an interrupted run's last, half-written line was skipped


def read_frames(path: Path, tolerate_truncated_tail: bool = False) -> FrameLog:
    """Parse frames.jsonl. A malformed line raises InputError naming the file and the line number.

    With `tolerate_truncated_tail` (an incomplete run), a last line that does not parse and has no
    newline is the write the interruption cut short: it is skipped, not an error.
    """
    if not path.is_file():
        raise InputError("file not found", path)
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    frames: list[FrameRecord] = []
    dropped = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if tolerate_truncated_tail and number == len(lines) and not text.endswith("\n"):
                dropped = True
                continue
            raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno})", path, f"line {number}") from exc
        try:
            frames.append(FrameRecord.model_validate(data))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(part) for part in err["loc"])
            raise InputError(err["msg"], path, f"line {number}: {where}" if where else f"line {number}") from exc
    return FrameLog(frames, dropped)


def select_frames(count: int, wanted: int) -> list[int]:
    """`wanted` indices spread evenly over 0..count-1, first and last included (all when count <= wanted)."""
    if count <= 0 or wanted <= 0:
        return []
    return sorted(set(np.round(np.linspace(0, count - 1, min(wanted, count))).astype(int).tolist()))


# ---------------------------------------------------------------- instances.json


@dataclass
class Instances:
    """What the ids in a camera's images stand for."""

    class_of_instance: dict[int, str | None]
    class_of_semantic: dict[int, str]
    kind_of_instance: dict[int, str] = field(default_factory=dict)  # environment | human | object

    def is_environment(self, box: Box2D) -> bool:
        return self.kind_of_instance.get(box.instance_id) == "environment"

    def box_label(self, box: Box2D) -> str:
        name = self.class_of_instance.get(box.instance_id) or self.class_of_semantic.get(box.semanticId)
        return name or f"class {box.semanticId}"


def read_instances(path: Path) -> Instances:
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", path)
    instances, classes = data.get("instances"), data.get("semantic_classes")
    if not isinstance(instances, dict):
        raise InputError("missing or not an object", path, "instances")
    if not isinstance(classes, dict):
        raise InputError("missing or not an object", path, "semantic_classes")
    try:
        by_instance = {int(key): value.get("semantic_class") for key, value in instances.items()}
        by_semantic = {int(value): str(name) for name, value in classes.items()}
        kinds = {int(key): str(value.get("kind")) for key, value in instances.items() if value.get("kind")}
    except (ValueError, TypeError, AttributeError) as exc:
        raise InputError(f"ids must be integers and entries objects ({exc})", path, "instances") from exc
    return Instances(by_instance, by_semantic, kinds)


# ---------------------------------------------------------------- images


@dataclass
class FrameImages:
    """One frame's images; None where the camera does not record that output."""

    rgb: np.ndarray | None  # (H, W, 3) uint8 RGB
    depth: np.ndarray | None  # (H, W) float32 metres, 0 = no return
    instance: np.ndarray | None  # (H, W) integer ids
    semantic: np.ndarray | None


def _read_image(path: Path, field_name: str, channels: int | None) -> np.ndarray:
    if not path.is_file():
        raise InputError("file not found", path, field_name)
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise InputError("not a readable image", path, field_name)
    if channels is None and image.ndim != 2:
        raise InputError(f"expected a single-channel image, got shape {image.shape}", path, field_name)
    if channels is not None and (image.ndim != 3 or image.shape[2] != channels):
        raise InputError(f"expected {channels} channels, got shape {image.shape}", path, field_name)
    return image


def _check_size(image: np.ndarray, record: FrameRecord, path: Path, field_name: str) -> np.ndarray:
    if image.shape[:2] != (record.height, record.width):
        raise InputError(f"image is {image.shape[1]}x{image.shape[0]}, frames.jsonl says "
                         f"{record.width}x{record.height}", path, field_name)
    return image


IMAGE_KINDS = ("rgb", "depth", "instance", "semantic")


def load_frame_images(camera_dir: Path, record: FrameRecord, kinds: tuple[str, ...] = IMAGE_KINDS) -> FrameImages:
    """Read the images frames.jsonl lists for `record` (paths relative to the camera folder), of `kinds` only."""
    wanted = set(kinds) | ({"depth_npy"} if "depth" in kinds else set())
    files = {kind: name for kind, name in record.files.items() if kind in wanted}

    def path_of(kind: str) -> Path:
        return camera_dir / files[kind]

    rgb = depth = instance = semantic = None
    if "rgb" in files:
        bgr = _read_image(path_of("rgb"), "rgb", channels=3)
        rgb = _check_size(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), record, path_of("rgb"), "rgb")
    if "depth" in files:
        millimetres = _check_size(_read_image(path_of("depth"), "depth", channels=None), record, path_of("depth"),
                                  "depth")
        depth = millimetres.astype(np.float32) / MM_PER_M
    elif "depth_npy" in files:
        depth = _check_size(_read_npy(path_of("depth_npy"), "depth_npy"), record, path_of("depth_npy"), "depth_npy")
    if "instance" in files:
        instance = _check_size(_read_image(path_of("instance"), "instance", channels=None), record,
                               path_of("instance"), "instance")
    if "semantic" in files:
        semantic = _check_size(_read_image(path_of("semantic"), "semantic", channels=None), record,
                               path_of("semantic"), "semantic")
    return FrameImages(rgb, depth, instance, semantic)


def _read_npy(path: Path, field_name: str) -> np.ndarray:
    if not path.is_file():
        raise InputError("file not found", path, field_name)
    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"not a readable .npy file ({exc})", path, field_name) from exc
    if array.ndim != 2:
        raise InputError(f"expected a 2D array, got shape {array.shape}", path, field_name)
    return array.astype(np.float32)


# ---------------------------------------------------------------- cameras


@dataclass
class CameraSequence:
    name: str
    folder: Path
    frames: list[FrameRecord]
    instances: Instances
    dropped_tail: bool = False


def list_cameras(run: Path) -> list[str]:
    """Cameras with ground truth: the folders gt/<camera>/ holding a frames.jsonl."""
    gt = run / "gt"
    if not gt.is_dir():
        return []
    return sorted(p.name for p in gt.iterdir() if (p / FRAMES_FILE).is_file())


def read_camera(run: Path, name: str, tolerate_truncated_tail: bool = False) -> CameraSequence:
    """A camera's frames and instance table; InputError when it has no frames."""
    folder = run / "gt" / name
    log = read_frames(folder / FRAMES_FILE, tolerate_truncated_tail)
    if not log.frames:
        raise InputError("the recording has no frames for this camera", folder / FRAMES_FILE)
    return CameraSequence(name, folder, log.frames, read_instances(folder / INSTANCES_FILE), log.dropped_tail)


# ---------------------------------------------------------------- states, IMU, map


@dataclass
class RobotPath:
    time: np.ndarray  # (N,) s
    position: np.ndarray  # (N, 3) world m
    quat_wxyz: np.ndarray | None  # (N, 4) world <- base_link


def read_robot_path(path: Path) -> RobotPath:
    arrays = load_npz_checked(path, ["time", "robot_position"])
    time, position = arrays["time"], arrays["robot_position"]
    if position.ndim != 2 or position.shape[1] != 3 or len(position) == 0:
        raise InputError(f"expected shape (N>0, 3), got {position.shape}", path, "robot_position")
    if time.shape != (len(position),):
        raise InputError(f"expected shape ({len(position)},), got {time.shape}", path, "time")
    quat = arrays.get("robot_quat_wxyz")
    if quat is not None and quat.shape != (len(position), 4):
        raise InputError(f"expected shape ({len(position)}, 4), got {quat.shape}", path, "robot_quat_wxyz")
    return RobotPath(time.astype(np.float64), position.astype(np.float64), quat)


@dataclass
class ImuSeries:
    name: str
    time: np.ndarray  # (M,) s
    linear_acceleration: np.ndarray  # (M, 3) m/s^2, sensor frame
    angular_velocity: np.ndarray  # (M, 3) rad/s, sensor frame


def read_imu(path: Path) -> list[ImuSeries]:
    """Every IMU in gt/imu.npz; an empty file (a robot without IMUs) gives an empty list."""
    arrays = load_npz_checked(path, [])
    names = sorted(key.removesuffix(".time") for key in arrays if key.endswith(".time"))
    if arrays and not names:
        raise InputError(f"no '<imu>.time' arrays; found {sorted(arrays)}", path)
    series = []
    for name in names:
        time = arrays[f"{name}.time"]
        values = {}
        for kind in ("linear_acceleration", "angular_velocity"):
            key = f"{name}.{kind}"
            if key not in arrays:
                raise InputError("missing array", path, key)
            if arrays[key].shape != (len(time), 3):
                raise InputError(f"expected shape ({len(time)}, 3), got {arrays[key].shape}", path, key)
            values[kind] = arrays[key]
        if time.ndim != 1:
            raise InputError(f"expected a 1D array, got shape {time.shape}", path, f"{name}.time")
        series.append(ImuSeries(name, time, values["linear_acceleration"], values["angular_velocity"]))
    return series


@dataclass
class OccupancyMap:
    grid: np.ndarray  # (nx, ny) uint8 indexed [ix, iy]: 0 free, 1 occupied, 2 outside the floor
    origin: np.ndarray  # (2,) world XY of the grid's lower-left corner, m
    resolution: float  # m per cell

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """(x_min, x_max, y_min, y_max) of the whole grid, m."""
        nx, ny = self.grid.shape
        x0, y0 = (float(v) for v in self.origin)
        return x0, x0 + nx * self.resolution, y0, y0 + ny * self.resolution


@dataclass
class SceneLayout:
    occupancy: OccupancyMap
    humans: np.ndarray  # (H, 3) start positions of the placed humans, world m
    human_ids: list[str]


def read_occupancy(path: Path) -> OccupancyMap:
    """The 2D map of an environment package's occupancy.npz (asset_converters/environment.py)."""
    arrays = load_npz_checked(path, ["map2d", "map2d_origin", "map2d_resolution"])
    grid, origin, resolution = arrays["map2d"], arrays["map2d_origin"], arrays["map2d_resolution"]
    if grid.ndim != 2:
        raise InputError(f"expected a 2D grid, got shape {grid.shape}", path, "map2d")
    if origin.shape != (2,):
        raise InputError(f"expected shape (2,), got {origin.shape}", path, "map2d_origin")
    if resolution.size != 1 or not float(resolution) > 0:
        raise InputError("expected one positive number", path, "map2d_resolution")
    return OccupancyMap(grid, origin.astype(np.float64), float(resolution))


def read_scene_layout(run: Path) -> SceneLayout:
    """The occupancy map and the humans' start positions, through RUN/scene/placement.json."""
    placement = load_placement(run / "scene" / "placement.json")  # paths come back absolute
    occupancy = read_occupancy(Path(placement.environment.path) / "occupancy.npz")
    humans = np.array([(h.x, h.y, h.z) for h in placement.humans], dtype=np.float64).reshape(-1, 3)
    return SceneLayout(occupancy, humans, [h.asset_id for h in placement.humans])


# ---------------------------------------------------------------- the view


@dataclass
class ViewResult:
    """What `view_run` wrote, in order, and what the user should be told about the recording."""

    written: list[Path] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _write_png(path: Path, rgb: np.ndarray) -> Path:
    ok, encoded = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    if not ok:
        raise GradeError("OpenCV could not encode the image as PNG", path)
    return atomic_write_bytes(path, encoded.tobytes())


def _cameras(run: Path, camera: str | None, tolerate_truncated_tail: bool) -> list[CameraSequence]:
    available = list_cameras(run)
    if camera is not None and camera not in available:
        listed = ", ".join(available) if available else "none"
        raise InputError(f"no camera {camera!r} in this recording; available: {listed}", run / "gt", "--camera")
    if not available:
        raise InputError("the recording has no frames: no gt/<camera>/frames.jsonl", run / "gt")
    return [read_camera(run, name, tolerate_truncated_tail) for name in ([camera] if camera else available)]


def view_run(run: Path, camera: str | None = None, frames: int = DEFAULT_FRAMES, out: Path | None = None,
             rerun: Path | None = None, all_boxes: bool = False) -> ViewResult:
    """Write the contact sheets, trajectory.png, imu.png (and a .rrd with `rerun`) for recording `run`.

    Contact sheets draw the boxes of humans and objects; `all_boxes` adds the environment's (walls,
    floor, furniture), which cover most of an indoor image."""
    from postprocess.contact_sheet import render_contact_sheet, sheet_rows
    from postprocess.plots import plot_imu, plot_trajectory

    run = Path(run)
    if frames < 1:
        raise InputError(f"must be at least 1, got {frames}", field="--frames")
    if rerun is not None:
        from postprocess.rerun_export import import_rerun

        import_rerun()  # fail before writing anything when the viz extra is missing
    info: RunInfo = read_run_info(run)
    result = ViewResult()
    incomplete = info.status != COMPLETE
    if incomplete:
        result.warnings.append(f"run {info.name!r} is incomplete (status {info.status!r}): showing what was recorded")
    sequences = _cameras(run, camera, tolerate_truncated_tail=incomplete)
    for sequence in sequences:
        if sequence.dropped_tail:
            result.warnings.append(f"{sequence.folder / FRAMES_FILE}: skipped the half-written last line")
    out = Path(out) if out is not None else run / VIEW_DIR

    for sequence in sequences:
        picked = [sequence.frames[i] for i in select_frames(len(sequence.frames), frames)]
        rows = sheet_rows(picked, [load_frame_images(sequence.folder, r) for r in picked])
        if not all_boxes:
            for row in rows:
                row.boxes = [b for b in row.boxes if not sequence.instances.is_environment(b)]
        sheet = render_contact_sheet(rows, sequence.instances, f"{info.name} / {sequence.name}")
        result.written.append(_write_png(out / f"contact_sheet_{sequence.name}.png", sheet))

    states = run / "states.npz"
    if not states.is_file() and not incomplete:
        raise InputError("file not found (the run says it is complete)", states)
    robot = read_robot_path(states) if states.is_file() else None
    layout = read_scene_layout(run) if robot is not None else None
    if robot is None:
        result.warnings.append(f"{states}: not written yet, so no trajectory.png")
    else:
        camera_xy = {s.name: np.array([r.pose_matrix[:2, 3] for r in s.frames]) for s in sequences}
        png = plot_trajectory(robot, layout, camera_xy, info.name)
        result.written.append(atomic_write_bytes(out / "trajectory.png", png))

    imu_file = run / "gt" / "imu.npz"
    imus = read_imu(imu_file) if imu_file.is_file() else []
    if imus:
        result.written.append(atomic_write_bytes(out / "imu.png", plot_imu(imus, f"{info.name}: IMUs")))
    else:
        result.warnings.append(f"{imu_file}: no IMU readings, so no imu.png")

    if rerun is not None:
        from postprocess.rerun_export import export_rerun

        result.written.append(export_rerun(Path(rerun), info, sequences, robot, layout))
    return result

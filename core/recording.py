"""The public reader of a recording folder (docs/guides/recording.md).

    rec = Recording.open("runs/demo")
    camera = rec.camera("camera")
    for frame in camera:
        depth = frame.depth()  # (H, W) float32 m, 0 = no return
        visible = [camera.instances.label(b.instance_id, b.semanticId) for b in frame.boxes_2d_tight if not b.empty]

Every file is parsed by its module in core.formats; images, LiDAR sweeps and human samples are read
only when asked for. Malformed files raise InputError naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.config import DEFAULT_ROBOT_NAME, SENSOR_KINDS, CameraConfig, ExperimentConfig, SensorKind
from core.errors import InputError
from core.formats.bags.layout import ROS1_SUFFIX, ROS2_METADATA
from core.formats.bags.topics import BagTopics
from core.formats.events import EventFile
from core.formats.frames import FRAMES_FILE, Box2D, Box3D, FrameRecord, read_frames
from core.formats.humans import (
    HUMANS_DIR,
    HUMANS_FILE,
    HumansDocument,
    HumansFrame,
    read_humans_document,
    read_humans_frame,
    sample_files,
)
from core.formats.images import frame_file, read_image
from core.formats.imu import IMU_FILE, ImuSeries, read_imu
from core.formats.instances import INSTANCES_FILE, Instances, read_instances
from core.formats.lidar import LidarSweep, read_sweep, sweep_files
from core.formats.manifest import MANIFEST, StageStatus, read_manifest, stage_status
from core.formats.postprocess import (
    BLUR_FILE,
    IMU_NOISY_FILE,
    POSTPROCESS_FILE,
    BlurFrame,
    PostprocessRecord,
    read_blur_log,
    read_postprocess_record,
)
from core.formats.run_info import COMPLETE, RUN_FILE, RunInfo, floor_coverage, read_run_info
from core.formats.run_layout import BAGS_DIR, GT_DIR
from core.formats.states import STATES_FILE, RobotPath, load_robot_path, load_states
from core.formats.tum import TUM_FILE, read_tum


@dataclass(frozen=True)
class Frame:
    """One camera frame: its frames.jsonl record, with the images read on demand."""

    record: FrameRecord
    folder: Path  # the camera folder the record's file paths are relative to

    @property
    def index(self) -> int:
        return self.record.frame

    @property
    def time(self) -> float:
        return self.record.time

    @property
    def pose(self) -> np.ndarray:
        """(4, 4) world <- optical frame (z forward, x right, y down)."""
        return self.record.pose_matrix

    @property
    def K(self) -> np.ndarray:
        return self.record.K_matrix

    @property
    def width(self) -> int:
        return self.record.width

    @property
    def height(self) -> int:
        return self.record.height

    @property
    def boxes_2d_tight(self) -> list[Box2D]:
        return self.record.boxes_2d_tight

    @property
    def boxes_2d_loose(self) -> list[Box2D]:
        return self.record.boxes_2d_loose

    @property
    def boxes_3d(self) -> list[Box3D]:
        return self.record.boxes_3d

    def path(self, kind: str) -> Path | None:
        """The file of output `kind` (core.formats.images), None when this frame has none."""
        name = self.record.files.get(kind)
        return self.folder / name if name is not None else None

    def image(self, kind: str) -> np.ndarray | None:
        """Output `kind` decoded (core.formats.images), None when the camera does not record it."""
        path = self.path(kind)
        return read_image(path, kind, self.width, self.height) if path is not None else None

    def rgb(self) -> np.ndarray | None:
        """(H, W, 3) uint8 RGB."""
        return self.image("rgb")

    def depth(self) -> np.ndarray | None:
        """(H, W) float32 metres to the image plane, 0 = no return: from the PNG, else from depth_npy."""
        return self.image("depth") if "depth" in self.record.files else self.image("depth_npy")

    def instance(self) -> np.ndarray | None:
        """(H, W) uint16 instance ids (Camera.instances)."""
        return self.image("instance")

    def semantic(self) -> np.ndarray | None:
        """(H, W) uint16 semantic ids."""
        return self.image("semantic")

    def normals(self) -> np.ndarray | None:
        """(H, W, 3) float32 unit normals, world frame."""
        return self.image("normals")

    def flow(self) -> np.ndarray | None:
        """(H, W, 2) float32 pixels since the previous frame, NaN undefined."""
        return self.image("flow")

    def processed(self, kind: str) -> np.ndarray | None:
        """A `grade postprocess` output (rgb_blur, instance_blur, semantic_blur, depth_noisy: core.formats.images),
        None when it was not made. depth_noisy is float32 metres with 0 = invalid."""
        path = self.processed_path(kind)
        return read_image(path, kind, self.width, self.height) if path.is_file() else None

    def processed_path(self, kind: str) -> Path:
        """Where the `grade postprocess` output `kind` of this frame is (it may not have been made)."""
        return self.folder / frame_file(kind, self.index)


@dataclass(frozen=True)
class Camera:
    """gt/<camera>/: the frames in order, the instance table and the TUM poses."""

    name: str
    folder: Path
    frames: list[Frame]
    instances: Instances
    dropped_tail: bool  # an interrupted run's half-written last frames.jsonl line was skipped
    _tolerate_truncated_tail: bool

    def __len__(self) -> int:
        return len(self.frames)

    def __iter__(self) -> Iterator[Frame]:
        return iter(self.frames)

    def __getitem__(self, index: int) -> Frame:
        return self.frames[index]

    def poses(self) -> tuple[np.ndarray, np.ndarray]:
        """poses.tum: times (N,) and (N, 4, 4) world <- optical frame."""
        return read_tum(self.folder / TUM_FILE, self._tolerate_truncated_tail)

    def blur_log(self) -> list[BlurFrame]:
        """blur.jsonl of `grade postprocess` (exposure, readout, sub-poses, boxes of the blurred frames)."""
        return read_blur_log(self.folder / BLUR_FILE)


@dataclass(frozen=True)
class Lidar:
    """gt/<lidar>/: the sweeps in time order, each read when indexed."""

    name: str
    files: list[Path]

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> LidarSweep:
        return read_sweep(self.files[index])

    def __iter__(self) -> Iterator[LidarSweep]:
        return (read_sweep(path) for path in self.files)


@dataclass(frozen=True)
class Humans:
    """humans/: who was placed (humans.json) and their joints per sample, read when indexed."""

    document: HumansDocument
    files: list[Path]

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, index: int) -> HumansFrame:
        return read_humans_frame(self.files[index], self.document)


@dataclass(frozen=True)
class Bags:
    ros1: list[Path]  # bags/<name>.bag files
    ros2: list[Path]  # bags/<name>/ folders (metadata.yaml + .mcap or .db3)


def incomplete_run_error(path: Path, info: RunInfo) -> InputError:
    """The error for a run that is not complete, as a user reads it: the run, what is unfinished or missing (run.json's
    status, MANIFEST.json, or the first file MANIFEST.json lists that is missing or has another size), and the
    command that finishes it."""
    what = f"run {info.name!r}"
    command = "`grade replay`" if info.replay_of is not None else "`grade generate` (or `grade batch run`)"
    resume = f"Run the same {command} command that wrote it again to resume it."
    if info.status == "failed":
        error = " ".join((info.error or "no error recorded").split())
        return InputError(f"{what} is not complete: its recording failed ({error}). Fix the cause, then run the same "
                          f"{command} command again to record it.", path / RUN_FILE, "status")
    if info.status != COMPLETE:
        how = ("was interrupted" if info.status == "interrupted" else
               "was stopped before it finished, or is still being written")
        return InputError(f"{what} is not complete: its recording {how} (run.json status {info.status!r}). {resume}",
                          path / RUN_FILE, "status")
    manifest_file = path / MANIFEST
    if not manifest_file.is_file():
        return InputError(f"{what} is not complete: it has no MANIFEST.json, the file a recording writes last, when "
                          f"all its files are written. {resume}", manifest_file)
    try:
        listed = read_manifest(path).files
    except InputError as exc:
        return InputError(f"{what} is not complete: its MANIFEST.json cannot be read: {exc.message}. {resume}",
                          manifest_file, exc.field)
    damaged = []
    for rel, entry in listed.items():
        file = path / rel
        if not file.is_file():
            damaged.append(f"{rel}, which MANIFEST.json lists, is missing")
        elif file.stat().st_size != entry.size:
            damaged.append(f"{rel} has {file.stat().st_size:,} bytes where MANIFEST.json lists {entry.size:,}")
    others = len(damaged) - 1
    more = (f" ({others:,} more listed file{'s are' if others > 1 else ' is'} missing or of another size too)"
            if others else "")
    problem = damaged[0] if damaged else "its files do not match MANIFEST.json"
    return InputError(f"{what} is not complete: {problem}{more}. {resume}", manifest_file, "files")


class Recording:
    """A run folder written by `grade generate`. Open it with `Recording.open`.

    A run has one robot or several (config `robots:`); `robots` names them, and the robot calls (cameras,
    LiDARs, IMUs, robot_path, topics, experiment_config) read the robot the recording is for: the first, or
    the one `robot(name)` chose. A multi-robot run keeps each robot's ground truth in gt/<robot>/."""

    def __init__(self, path: Path, info: RunInfo, robot: str | None = None):
        self.path, self.info = path, info
        self._robot = robot
        self._cameras: dict[str, Camera] = {}  # read once, on first use

    @property
    def robots(self) -> list[str]:
        """The run's robots, in config order (one name for a one-robot run), from run.json's config (a run writes
        every robot's name there)."""
        entries = self.info.config.get("robots") or [{"name": DEFAULT_ROBOT_NAME}]
        return [str(entry.get("name")) for entry in entries]

    @property
    def _multi_robot(self) -> bool:
        return len(self.robots) > 1

    @property
    def robot_name(self) -> str:
        """The robot this recording reads."""
        return self._robot or self.robots[0]

    def robot(self, name: str | None = None) -> Recording:
        """This recording as robot `name` sees it (default: the first robot); InputError naming the run's robots
        for a name it does not have."""
        if name is not None and name not in self.robots:
            raise InputError(f"no robot {name!r} in this recording; robots: {', '.join(self.robots)}",
                             self.path / RUN_FILE, "robots")
        return Recording(self.path, self.info, name)

    @property
    def _gt(self) -> Path:
        """The robot's ground truth: gt/, or gt/<robot>/ in a multi-robot run."""
        return self.path / GT_DIR / self.robot_name if self._multi_robot else self.path / GT_DIR

    @classmethod
    def open(cls, path: str | Path, allow_incomplete: bool = False) -> Recording:
        """Read run.json and check the run is complete (run.json status and MANIFEST.json); an incomplete,
        failed or interrupted run raises InputError (incomplete_run_error: what is missing and how to finish it)
        unless `allow_incomplete`, which reads what was written."""
        path = Path(path)
        info = read_run_info(path)
        if not allow_incomplete and (info.status != COMPLETE or stage_status(path) is not StageStatus.COMPLETE):
            raise incomplete_run_error(path, info)
        return cls(path, info)

    @property
    def complete(self) -> bool:
        """What run.json says; an incomplete run's last frames.jsonl line may be half-written."""
        return self.info.status == COMPLETE

    @property
    def config(self) -> dict[str, Any]:
        """The resolved config the run was made with (run.json)."""
        return self.info.config

    def floor_coverage(self) -> np.ndarray | None:
        """(N, 2) [sim time s, fraction]: the share of the floor this recording's robot could reach that its own map
        knew, at each of its map updates (run.json `mission.reachable_floor_coverage`); None where the robot did not
        explore (waypoints, none) or the run predates the measure."""
        return floor_coverage(self.path, self.info, self.robot_name if self._multi_robot else None)

    def experiment_config(self) -> ExperimentConfig:
        """The run's config as this recording's robot sees it (its `robot`, `exploration` and namespace)."""
        return ExperimentConfig.model_validate(self.info.config).for_robot(self.robot_name)

    def _gt_folders(self, marker: str) -> list[str]:
        gt = self._gt
        return sorted(p.name for p in gt.iterdir() if any(p.glob(marker))) if gt.is_dir() else []

    @property
    def cameras(self) -> list[str]:
        """Cameras with ground truth: the folders gt/<camera>/ holding a frames.jsonl."""
        return self._gt_folders(FRAMES_FILE)

    def camera(self, name: str) -> Camera:
        if name not in self.cameras:
            listed = ", ".join(self.cameras) or "none"
            raise InputError(f"no camera {name!r} in this recording; available: {listed}", self._gt)
        if name not in self._cameras:
            self._cameras[name] = self._read_camera(name)
        return self._cameras[name]

    def camera_config(self, name: str) -> CameraConfig:
        """The camera's settings in the run's config (rate, mount, outputs); InputError when it has none."""
        for config in self.experiment_config().robot.sensors.cameras:
            if config.name == name:
                return config
        raise InputError(f"camera {name!r} is not in the run's config", self.path / RUN_FILE)

    def _read_camera(self, name: str) -> Camera:
        folder, tolerate = self._gt / name, not self.complete
        log = read_frames(folder / FRAMES_FILE, tolerate)
        return Camera(name, folder, [Frame(r, folder) for r in log.frames], read_instances(folder / INSTANCES_FILE),
                      log.dropped_tail, tolerate)

    @property
    def lidars(self) -> list[str]:
        """LiDARs with ground truth: the folders gt/<lidar>/ holding NNNNNN.npz sweeps."""
        return self._gt_folders("[0-9]" * 6 + ".npz")

    def lidar(self, name: str) -> Lidar:
        if name not in self.lidars:
            raise InputError(f"no LiDAR {name!r} in this recording; available: {', '.join(self.lidars) or 'none'}",
                             self._gt)
        return Lidar(name, sweep_files(self._gt / name))

    def sensor_names(self, kind: str) -> list[str]:
        """The sensors of `kind` (a type of core.config.sensor_kinds.KINDS whose kind has a gt_file) with ground
        truth: the folders gt/<name>/ holding that file."""
        return self._gt_folders(_sensor_kind(kind).gt_file)

    def sensor(self, name: str, kind: str | None = None) -> Any:
        """The ground truth of the sensor of a kind with a gt_file, as its kind reads it (SensorKind.read: an
        event camera's EventFile); its kind is the one whose file gt/<name>/ holds, or `kind` where given."""
        kinds = [_sensor_kind(kind)] if kind else [k for k in SENSOR_KINDS.values() if k.gt_file]
        found = next((k for k in kinds if name in self.sensor_names(k.type)), None)
        if found is None:
            what = f"{kinds[0].noun} {name!r}" if kind else f"sensor {name!r} with a ground-truth file of its own"
            available = sorted(n for k in kinds for n in self.sensor_names(k.type))
            raise InputError(f"no {what} in this recording; available: {', '.join(available) or 'none'}", self._gt)
        return found.read(self._gt / name / found.gt_file)

    @property
    def event_cameras(self) -> list[str]:
        """Event cameras with ground truth: the folders gt/<name>/ holding an events.h5 (`sensor_names("event")`)."""
        return self.sensor_names("event")

    def events(self, name: str) -> EventFile:
        """The event camera's events (gt/<name>/events.h5): EVENT_DTYPE records, t in ns of simulation time
        (`sensor(name, "event")`)."""
        return self.sensor(name, "event")

    def imu(self, noisy: bool = False) -> dict[str, ImuSeries]:
        """gt/imu.npz by IMU name (with `noisy`, gt/imu_noisy.npz from `grade postprocess`); empty when absent."""
        path = self._gt / (IMU_NOISY_FILE if noisy else IMU_FILE)
        return read_imu(path) if path.is_file() else {}

    def postprocess_record(self) -> PostprocessRecord | None:
        """What `grade postprocess` applied (gt/postprocess.json), None when the run is not post-processed."""
        gt = self.path / GT_DIR
        return read_postprocess_record(gt) if (gt / POSTPROCESS_FILE).is_file() else None

    def states(self) -> dict[str, np.ndarray]:
        """Every array of states.npz (layout: core.formats.states), checkpoints included."""
        return load_states(self.path / STATES_FILE)

    def robot_path(self) -> RobotPath:
        """The robot's pose per physics step, without decompressing the rest of states.npz."""
        return load_robot_path(self.path / STATES_FILE, self.robot_name if self._multi_robot else None)

    def humans(self) -> Humans | None:
        """humans/, None when the run has no humans."""
        folder = self.path / HUMANS_DIR
        if not (folder / HUMANS_FILE).is_file():
            return None
        return Humans(read_humans_document(folder), sample_files(folder))

    @property
    def topics(self) -> BagTopics:
        """The names of this run's bag topics and TF frames (under its recording.namespace):
        `rec.topics.rgb("camera")` is "/camera/rgb/image_raw", or "/my_robot_0/camera/rgb/image_raw"."""
        return BagTopics(self.experiment_config().recording.namespace)  # the robot's own in a multi-robot run

    def bags(self) -> Bags:
        folder = self.path / BAGS_DIR
        if not folder.is_dir():
            return Bags([], [])
        return Bags(sorted(folder.glob(f"*{ROS1_SUFFIX}")),
                    sorted(p for p in folder.iterdir() if (p / ROS2_METADATA).is_file()))


def _sensor_kind(kind: str) -> SensorKind:
    """The kind of type `kind` if it writes a ground-truth file of its own (SensorKind.gt_file), else ValueError."""
    found = SENSOR_KINDS.get(kind)
    if found is None or not found.gt_file:
        listed = ", ".join(k.type for k in SENSOR_KINDS.values() if k.gt_file)
        raise ValueError(f"no sensor kind {kind!r} with a ground-truth file of its own; kinds: {listed}")
    return found

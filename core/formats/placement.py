"""`placement.json` (schema "grade.placement/1", architecture.md §2): where every human, flying object and the
robot start; its model, writer and reader, and how a placement plays back over time.

placement/ writes it; the pipeline and the simulation read it, and `animation_time` / `flying_pose` give
every stage the same clip time and object pose at a simulation time. Angles are radians (yaw about +Z,
right-handed); positions are world metres. Asset paths are stored relative to the folder of
`placement.json` and resolved back to absolute paths on loading, so a placement can be moved together
with its packages.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.spatial.transform import Rotation

from core.formats.json_model import JsonDocument, read_json_model, write_json_model
from core.geometry import wxyz_to_xyzw, xyzw_to_wxyz
from core.robot_catalogue import RobotKind

PLACEMENT_FILE = "placement.json"
HumanRejection = Literal["outside", "contacts", "penetrates", "inside", "human", "robot", "slope", "uneven"]
ObjectRejection = Literal["outside", "collision"]
Vec3 = tuple[float, float, float]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AnimationSchedule(_Model):
    """How a clip plays in simulation time t: phase = (start + t) mod period.

    With `reverse` the clip plays forward to its last frame, then backward to its first (period =
    2 * clip_end), so the loop has no jump; otherwise it wraps (period = frame_count / fps).
    """

    start: float = Field(description="phase at simulation time 0, s, in [0, period)")
    clip_end: float = Field(description="time of the clip's last frame, s")
    period: float
    reverse: bool


class PlacedHuman(_Model):
    asset_id: str
    asset_path: str
    x: float
    y: float
    z: float = Field(description="floor height + the animation's ground offset; on a terrain, the height at which "
                                 "the trace's support rests on the ground")
    yaw: float = Field(description="rad about +Z; the pose of the asset's local frame")
    animation: AnimationSchedule
    contacts: int = Field(description="trace-world contacts at the accepted pose (below the threshold)")
    tries: int


class RejectedHuman(_Model):
    asset_id: str
    asset_path: str
    reason: HumanRejection = Field(description="why the last try failed")
    contact_count: int = Field(description="contacts of the last try (0 unless the reason is contacts/human)")
    tries: int
    reasons: dict[str, int] = Field(description="how many tries failed for each reason")


class FlyingMotion(_Model):
    """Smooth motion as a sum of sinusoids per axis plus a constant spin.

    `position(t) = center + sum_k amplitude[a][k] * sin(2 pi frequency_hz[a][k] t + phase[a][k])` per axis a;
    `orientation(t) = exp(angular_velocity t) * orientation` (w, x, y, z), angular velocity in the world frame.
    The XY offset never exceeds `radius`, so the object stays in a disc that lies inside the floor
    polygon; its bounding sphere stays within `z_range`. `speed` is the root-mean-square speed.
    """

    center: Vec3
    amplitude: tuple[Vec3, Vec3, Vec3]
    frequency_hz: tuple[Vec3, Vec3, Vec3]
    phase: tuple[Vec3, Vec3, Vec3]
    orientation: tuple[float, float, float, float]
    angular_velocity_deg: Vec3
    speed: float
    radius: float
    z_range: tuple[float, float]


class FlyingObject(_Model):
    asset_id: str
    asset_path: str
    motion: FlyingMotion
    tries: int


class RejectedObject(_Model):
    asset_id: str
    asset_path: str
    reason: ObjectRejection
    tries: int


class RobotVolume(_Model):
    """The collision volume used for the start pose, centred on the robot body, Z up."""

    shape: Literal["box", "cylinder"]
    extents: Vec3 = Field(description="box size, or (2 r, 2 r, height) for a cylinder, m")


class RobotStart(_Model):
    name: str | None = Field(None, description="the robot's name in a multi-robot run (config `robots`)")
    kind: RobotKind
    x: float
    y: float
    z: float = Field(description="ground robots: the floor under the base; UAVs: the body centre")
    yaw: float = Field(description="rad about +Z, towards the most open direction")
    volume: RobotVolume
    heading_clearance: float = Field(description="smoothed free distance ahead, m")
    tries: int


class EnvironmentRef(_Model):
    id: str
    path: str


class PlacementParameters(_Model):
    human_count_range: tuple[int, int]
    human_candidates: int
    max_tries: int
    contact_threshold: int
    human_contact_threshold: int
    flying_count_range: tuple[int, int]
    flying_candidates: int
    flying_collision_check: bool


class Placement(JsonDocument):
    KIND, MAJOR = "placement", 1

    seed: int
    environment: EnvironmentRef
    parameters: PlacementParameters
    humans: list[PlacedHuman]
    rejected_humans: list[RejectedHuman]
    flying_objects: list[FlyingObject]
    rejected_flying_objects: list[RejectedObject]
    robot: RobotStart
    animals: list[PlacedHuman] = Field(default_factory=list, description="placed like humans, after them")
    rejected_animals: list[RejectedHuman] = Field(default_factory=list)
    animal_candidates: int = 0
    robots: list[RobotStart] = Field(default_factory=list, description="a multi-robot run's robots, each placed "
                                     "clear of the ones before it (`robot` is the first); empty for one robot")

    @property
    def robot_starts(self) -> list[RobotStart]:
        """Every robot's start, in config order."""
        return self.robots or [self.robot]


def animation_time(schedule: AnimationSchedule, t: float | np.ndarray) -> float | np.ndarray:
    """The clip time (s) shown at simulation time `t` (s)."""
    phase = np.mod(schedule.start + np.asarray(t, dtype=np.float64), schedule.period) if schedule.period > 0 else 0.0
    if schedule.reverse:
        clip = np.where(phase <= schedule.clip_end, phase, schedule.period - phase)
    else:
        clip = np.minimum(phase, schedule.clip_end)
    return float(clip) if np.ndim(clip) == 0 else clip


def flying_pose(motion: FlyingMotion, t: float | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions (T, 3) and orientations (T, 4, w x y z) at simulation times `t` (s)."""
    t = np.atleast_1d(np.asarray(t, dtype=np.float64))
    amplitude, frequency, phase = (np.asarray(a) for a in (motion.amplitude, motion.frequency_hz, motion.phase))
    waves = amplitude[None] * np.sin(2.0 * np.pi * frequency[None] * t[:, None, None] + phase[None])
    positions = np.asarray(motion.center)[None] + waves.sum(axis=2)
    spin = Rotation.from_rotvec(np.radians(motion.angular_velocity_deg)[None] * t[:, None])
    quats = xyzw_to_wxyz((spin * Rotation.from_quat(wxyz_to_xyzw(motion.orientation))).as_quat())
    quats *= np.where(quats[:, :1] < 0, -1.0, 1.0)
    return positions, quats


def _map_paths(placement: Placement, convert) -> Placement:
    data = placement.model_dump(by_alias=True)
    data["environment"]["path"] = convert(data["environment"]["path"])
    for key in ("humans", "rejected_humans", "flying_objects", "rejected_flying_objects", "animals",
                "rejected_animals"):
        for item in data[key]:
            item["asset_path"] = convert(item["asset_path"])
    return Placement.model_validate(data)


def write_placement(placement: Placement, out: str | Path) -> Path:
    """Write `placement.json` atomically, asset paths relative to its folder."""
    out = Path(out).absolute()
    relative = _map_paths(placement, lambda p: Path(os.path.relpath(Path(p).absolute(), out.parent)).as_posix())
    return write_json_model(out, relative)


def load_placement(path: str | Path) -> Placement:
    """Read and validate `placement.json`; asset paths come back absolute."""
    path = Path(path)
    placement = read_json_model(path, Placement, "placement.json")
    base = path.absolute().parent
    return _map_paths(placement, lambda p: os.path.normpath(base / p))

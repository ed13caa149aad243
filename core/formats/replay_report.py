"""`replay.json` (schema "grade.replay/1"): how far a replay (`grade replay`) strayed from its parent run.

    parent, mode, window     the run replayed, teleport or physics, [from, to] in simulation s
    pose                     per physics step both runs hold: the robot base's deviation (replay - parent)
                             as mean and std of x, y, z (m) and roll, pitch, yaw (rad, of parent^-1 replay),
                             the largest translation and rotation, and the steps compared
    cameras                  per camera both runs record unchanged: frames compared, frames byte-identical
                             (RGB and depth), RGB SSIM (as scikit-image's default, mean and min), depth MAE (mm, mean and
                             max, over pixels with a return in both)
    imus                     per IMU both runs record unchanged: samples compared, largest deviation of the
                             linear acceleration (m/s^2) and angular velocity (rad/s)
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from core.formats.json_model import JsonDocument, read_json_model, write_json_model

REPLAY_FILE = "replay.json"
AXES = ("x", "y", "z", "roll", "pitch", "yaw")


class PoseDeviation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: int
    mean: dict[str, float]  # AXES
    std: dict[str, float]
    max_translation: float  # m
    max_rotation: float  # rad


class CameraDeviation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    frames: int
    identical_frames: int
    ssim_mean: float | None
    ssim_min: float | None
    depth_mae_mm_mean: float | None
    depth_mae_mm_max: float | None


class ImuDeviation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    samples: int
    max_linear_acceleration: float
    max_angular_velocity: float


class ReplayReport(JsonDocument):
    KIND, MAJOR = "replay", 1

    parent: str
    mode: Literal["teleport", "physics"]
    window: tuple[float, float]
    pose: PoseDeviation
    cameras: dict[str, CameraDeviation] = {}
    imus: dict[str, ImuDeviation] = {}


def write_replay_report(folder: Path, report: ReplayReport) -> Path:
    return write_json_model(Path(folder) / REPLAY_FILE, report)


def read_replay_report(folder: Path) -> ReplayReport:
    return read_json_model(Path(folder) / REPLAY_FILE, ReplayReport)

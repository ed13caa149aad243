"""`metrics.json` (schema "grade.slam_metrics/1"): how well one SLAM estimate follows the ground truth
(`grade evaluate slam --out DIR`).

    gt, est                  where the two trajectories came from (file, recording and camera, bag and topic)
    alignment, scale         "se3" (rigid) or "sim3" (rigid + scale, for monocular methods) Umeyama alignment of
                             the estimate onto the ground truth; scale is 1 for "se3"
    max_difference, pairs    association tolerance (s) and the number of ground-truth/estimate pose pairs
    ate                      absolute trajectory error (m) of the aligned positions over the pairs: rmse, mean,
                             median, std (population), min, max
    rpe                      relative pose error over pairs delta_s apart: translation (m) and rotation (deg)
                             statistics; null when no two pairs are delta_s apart
    missing_time_s           seconds of the window without estimates (gaps longer than 1/fps + 1e-5 s)
    tracked_fraction         1 - missing_time_s / window length
    window, fps              the experiment window [start, end] (s) and the frame rate the gaps are measured by
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from core.formats.json_model import JsonDocument, read_json_model, write_json_model

SLAM_METRICS_FILE = "metrics.json"


class ErrorStats(BaseModel):
    """Summary of per-pair errors, as evo's metrics report them (std is the population std)."""

    model_config = ConfigDict(extra="forbid")

    rmse: float
    mean: float
    median: float
    std: float
    min: float
    max: float


class RpeMetrics(BaseModel):
    model_config = ConfigDict(extra="forbid")

    delta_s: float
    pairs: int
    translation: ErrorStats  # m
    rotation: ErrorStats  # deg


class SlamMetrics(JsonDocument):
    KIND, MAJOR = "slam_metrics", 1

    gt: str
    est: str
    alignment: Literal["se3", "sim3"]
    scale: float
    max_difference: float
    pairs: int
    ate: ErrorStats  # m
    rpe: RpeMetrics | None
    missing_time_s: float
    tracked_fraction: float
    window: tuple[float, float]
    fps: float


def write_slam_metrics(folder: Path, metrics: SlamMetrics) -> Path:
    return write_json_model(Path(folder) / SLAM_METRICS_FILE, metrics)


def read_slam_metrics(folder: Path) -> SlamMetrics:
    return read_json_model(Path(folder) / SLAM_METRICS_FILE, SlamMetrics)

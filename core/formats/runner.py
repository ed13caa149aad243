"""`runner.json` (schema "grade.runner/1"): what one SLAM run (`grade benchmark run`) did, beside its trajectory.

    method        orbslam3, kiss-icp or external
    source        the recording (or exported sequence) it ran on
    trajectory    the TUM file it wrote, relative to the runner folder
    frames        input frames (camera frames, LiDAR sweeps; for an external method the trajectory's poses)
    tracked       frames with a pose in the trajectory
    seconds, fps  wall-clock seconds spent in the method's tracking calls and frames / seconds (bookkeeping,
                  the only wall-clock figures)
    settings      how it was run (mode, camera, vocabulary, processed, lidar, command, ...)
    states        per input frame: simulation time and the method's tracking state (ORB-SLAM3's OK,
                  RECENTLY_LOST, LOST, NOT_INITIALIZED, ...; KISS-ICP's OK); empty for external methods
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from core.formats.json_model import JsonDocument, read_json_model, write_json_model

RUNNER_FILE = "runner.json"


class FrameState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    time: float  # simulation s
    state: str


class RunnerRecord(JsonDocument):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    KIND, MAJOR = "runner", 1

    method: str
    source: str
    trajectory: str
    frames: int
    tracked: int
    seconds: float
    fps: float
    settings: dict[str, Any] = {}
    states: list[FrameState] = []


def write_runner_record(folder: Path, record: RunnerRecord) -> Path:
    return write_json_model(Path(folder) / RUNNER_FILE, record)


def read_runner_record(folder: Path) -> RunnerRecord:
    return read_json_model(Path(folder) / RUNNER_FILE, RunnerRecord, "SLAM runner record")

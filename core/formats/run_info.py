"""`run.json` (schema "grade.run/1", architecture.md §2): what a run is and how it went.

Written by `grade generate` when the run starts ("running") and again when it ends ("complete",
"failed" or "interrupted"); read by `core.recording.Recording` and every consumer of a run folder.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from core.errors import InputError
from core.formats.asset_meta import Kind, Licence, load_meta
from core.formats.json_model import JsonDocument, read_json_model, write_json_model
from core.formats.manifest import MANIFEST
from core.rundir import content_hash, wall_clock_iso

RUN_FILE = "run.json"
COMPLETE = "complete"
FLOOR_COVERAGE = "reachable_floor_coverage"  # an explorer's mission key: [[sim time s, fraction], ...]


def package_versions(names: tuple[str, ...] = (
    "grade", "numpy", "pydantic", "usd-core", "trimesh", "python-fcl", "rosbags", "mujoco", "embreex",
)) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


class AssetRecord(BaseModel):
    """One asset package the run's scene shows, with the terms of the sources it derives from (its meta.json's),
    so that a dataset card can name them after the packages are gone."""

    model_config = ConfigDict(extra="forbid")

    package: str  # the package folder's name (run.json `asset_hashes` key)
    id: str
    kind: Kind
    dataset: str  # meta.json source.dataset
    hash: str  # the hash of the package's MANIFEST.json, as in `asset_hashes`
    licences: list[Licence] | None  # None: the package predates licence metadata


def asset_record(package: Path) -> AssetRecord:
    """The record of a complete asset package."""
    meta = load_meta(package)
    return AssetRecord(package=package.name, id=meta.id, kind=meta.kind, dataset=meta.source.dataset,
                       hash=content_hash((package / MANIFEST).read_text()), licences=meta.source.licences)


class RunInfo(JsonDocument):
    """Contents of `run.json`."""

    KIND, MAJOR = "run", 1

    name: str
    status: Literal["running", "complete", "failed", "interrupted"] = "running"
    backend: str
    master_seed: int
    derived_seeds: dict[str, int] = {}
    config: dict[str, Any]
    versions: dict[str, str] = Field(default_factory=package_versions)
    asset_hashes: dict[str, str] = {}
    # The packages the scene places (environment, humans, objects, animals); None in a run recorded before GRADE
    # kept them.
    assets: list[AssetRecord] | None = None
    replay_of: dict[str, Any] | None = None  # a replay's parent run, mode, window and overrides
    sim_time_start: float = 0.0
    sim_time_end: float | None = None
    frame_counts: dict[str, int] = {}
    # What the robot did (simulation.mission's summary); a multi-robot run's holds each robot's by name. An explorer's
    # holds `reachable_floor_coverage` ([[sim time s, fraction], ...] at every map update: the share of the floor it
    # can reach that its map knows), `reachable_floor_coverage_final`, `reachable_floor_m2` and
    # `map_region_known_fraction` (the known share of its map's whole region, walls and what lies behind them
    # included: what `exploration.stop_explored_fraction` compares).
    mission: dict[str, Any] = {}
    wall_seconds: dict[str, float] = Field({}, description="bookkeeping: wall-clock seconds per stage")
    live: dict[str, Any] | None = Field(None, description="a live run's pacing (config live): control periods and, "
                                                          "for realtime pacing, the jitter of /clock against the "
                                                          "wall clock (ms; bookkeeping)")
    error: str | None = None
    created: str = Field(default_factory=wall_clock_iso)
    updated: str = Field(default_factory=wall_clock_iso)


def floor_coverage(run_dir: str | Path, info: RunInfo, robot: str | None = None) -> np.ndarray | None:
    """(N, 2) [sim time s, fraction] of the reachable floor the robot's map knew (`mission.reachable_floor_coverage`;
    `robot`: a multi-robot run's robot by name); None where it did not explore or the run predates the measure.
    InputError naming the field when it is not such pairs."""
    mission = info.mission.get(robot, {}) if robot is not None else info.mission
    if not isinstance(mission, dict) or FLOOR_COVERAGE not in mission:
        return None
    where = f"mission.{robot}.{FLOOR_COVERAGE}" if robot is not None else f"mission.{FLOOR_COVERAGE}"
    try:
        values = np.array(mission[FLOOR_COVERAGE], dtype=np.float64)
    except (TypeError, ValueError):
        values = np.full(1, np.nan)
    if values.size == 0:
        return values.reshape(0, 2)
    if not (values.ndim == 2 and values.shape[1] == 2 and np.all(np.isfinite(values))
            and np.all((values[:, 1] >= 0) & (values[:, 1] <= 1)) and np.all(np.diff(values[:, 0]) > 0)):
        raise InputError("expected [[time, fraction], ...] with times increasing and fractions within 0..1",
                         Path(run_dir) / RUN_FILE, where)
    return values


def write_run_info(run_dir: str | Path, info: RunInfo) -> Path:
    """Write RUN/run.json atomically, stamping `updated` (wall clock: bookkeeping only)."""
    info.updated = wall_clock_iso()
    return write_json_model(Path(run_dir) / RUN_FILE, info)


def read_run_info(run_dir: str | Path) -> RunInfo:
    """RUN/run.json; InputError naming the file (and field) when it is missing, newer or invalid."""
    path = Path(run_dir) / RUN_FILE
    if not path.is_file():
        raise InputError("run.json not found; is this a recording folder?", path)
    return read_json_model(path, RunInfo, "run.json")

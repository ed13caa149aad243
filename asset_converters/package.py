"""Asset packages (DESIGN.md §2): `meta.json` schema, atomic writing and reading.

A package is one folder: `asset.usdc`, `meta.json`, `collision.stl` (environments, objects) or
`trace.stl` + `animation.npz` (animated assets), `occupancy.npz` (environments), `textures/`, and
`MANIFEST.json` written last. A folder without a valid manifest is incomplete and never used.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import InputError
from core.rundir import StageStatus, atomic_directory, atomic_write_json, stage_status, write_manifest

ASSET_SCHEMA = "grade.asset/1"
CONVERTER_VERSION = "1"
Kind = Literal["environment", "animated", "object", "robot"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SourceInfo(_Model):
    dataset: str  # procedural | 3d-front | amass | smpl | cloth3d | gso | mesh | gltf
    files: dict[str, str] = {}  # file name -> sha256
    options: dict[str, Any] = {}


class EnvironmentInfo(_Model):
    bounds: tuple[tuple[float, float, float], tuple[float, float, float]]  # min, max corners
    floor_height: float
    floor_polygon: dict[str, Any]  # GeoJSON (Multi)Polygon in the XY plane
    floor_area: float
    lights: int = 0
    occupancy_resolution: float = 0.05  # 2D map cell, m
    voxel_size: float = 0.1  # 3D grid cell, m


class AnimationInfo(_Model):
    fps: float
    frame_count: int
    duration: float
    joint_names: list[str]
    ground_offset: float  # add to z so the lowest point of the whole animation touches z = 0
    root_trajectory: list[tuple[float, float, float]]  # per frame, root joint position
    motions: dict[str, tuple[int, int]] = {}
    representation: Literal["skeleton", "points"] = "skeleton"
    trace_window: int = 1  # frames per swept hull in trace.stl


class ObjectInfo(_Model):
    extents: tuple[float, float, float]  # axis-aligned size, m
    center: tuple[float, float, float]


class AssetMeta(_Model):
    schema_: Literal["grade.asset/1"] = Field(ASSET_SCHEMA, alias="schema")
    id: str
    kind: Kind
    converter: str
    converter_version: str = CONVERTER_VERSION
    units: dict[str, Any] = Field(default_factory=lambda: {"meters_per_unit": 1.0, "up_axis": "Z"})
    source: SourceInfo
    semantic_labels: dict[str, str] = {}  # prim path -> class
    environment: EnvironmentInfo | None = None
    animation: AnimationInfo | None = None
    object: ObjectInfo | None = None


def write_package(out: str | Path, input_hash: str, build: Callable[[Path], AssetMeta]) -> Path:
    """Build a package in a temporary folder, then move it to `out` with meta.json and manifest.

    `build(folder)` writes the package files and returns the metadata. If it raises, `out` is left
    as it was (absent or the previous complete package).
    """
    out = Path(out)
    with atomic_directory(out) as tmp:
        meta = build(tmp)
        atomic_write_json(tmp / "meta.json", meta.model_dump(mode="json", by_alias=True))
        write_manifest(tmp, f"convert/{meta.kind}", input_hash)
    return out


def package_status(out: str | Path, input_hash: str | None = None) -> StageStatus:
    return stage_status(out, input_hash)


def load_meta(package: str | Path) -> AssetMeta:
    """Read and validate a complete package's meta.json."""
    package = Path(package)
    if stage_status(package) is not StageStatus.COMPLETE:
        raise InputError("not a complete asset package (missing or broken MANIFEST.json); convert it again", package)
    path = package / "meta.json"
    try:
        return AssetMeta.model_validate(json.loads(path.read_text()))
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg} at line {exc.lineno})", path) from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], path, ".".join(str(p) for p in err["loc"])) from exc

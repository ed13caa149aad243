"""An asset package's `meta.json` (schema "grade.asset/1", architecture.md §2): model, writer and reader.

A package is one folder (its file names are core.assets.layout): `asset.usdc`, `meta.json`,
`collision.stl` (environments, objects) or `trace.stl` + `animation.npz` (animated assets), `occupancy.npz`
(environments), `textures/`, and `MANIFEST.json` written last. The converters (asset_converters) write it; placement, the simulation and
the pipeline read it through `load_meta`, which also refuses a package without a valid manifest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.assets.layout import META_FILE
from core.errors import InputError
from core.formats.json_model import JsonDocument, read_json_model, write_json_model
from core.formats.manifest import StageStatus, stage_status

Kind = Literal["environment", "animated", "object", "robot"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Licence(_Model):
    """The terms a source dataset is used under, as its converter knows them: the dataset card of an export
    lists them with the obligations, so a published dataset honours the sources it derives from."""

    source: str  # the dataset or model the terms are of, e.g. "AMASS", "SMPL-H body model"
    name: str  # the licence's name; "unknown" where the converter cannot know it (a user's own file)
    url: str | None = None  # where the full terms are
    obligations: list[str] = []  # what the terms ask of a user of derived data, briefly


class SourceInfo(_Model):
    dataset: str  # procedural | 3d-front | amass | smpl | cloth3d | gso | mesh | gltf
    files: dict[str, str] = {}  # file name -> sha256
    options: dict[str, Any] = {}
    # None: converted before GRADE recorded licences (the package still reads; its licence shows as unknown).
    licences: list[Licence] | None = None


class TerrainInfo(_Model):
    """An outdoor environment whose ground is not flat: things stand on the ground under them, found by
    casting rays down onto the ground prims; `floor_height` is then the lowest ground and `floor_polygon`
    the ground's outline."""

    ground_prims: list[str]  # prim paths in asset.usdc of the ground surface
    ground_range: tuple[float, float]  # lowest and highest ground, m


class EnvironmentInfo(_Model):
    bounds: tuple[tuple[float, float, float], tuple[float, float, float]]  # min, max corners
    floor_height: float
    floor_polygon: dict[str, Any]  # GeoJSON (Multi)Polygon in the XY plane
    floor_area: float
    lights: int = 0
    occupancy_resolution: float = 0.05  # 2D map cell, m
    voxel_size: float = 0.1  # 3D grid cell, m
    terrain: TerrainInfo | None = None  # None: a flat floor at floor_height


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


class AssetMeta(JsonDocument):
    KIND, MAJOR = "asset", 1

    id: str
    kind: Kind
    converter: str
    converter_version: str
    units: dict[str, Any] = Field(default_factory=lambda: {"meters_per_unit": 1.0, "up_axis": "Z"})
    source: SourceInfo
    semantic_labels: dict[str, str] = {}  # prim path -> class
    environment: EnvironmentInfo | None = None
    animation: AnimationInfo | None = None
    object: ObjectInfo | None = None


def write_meta(folder: str | Path, meta: AssetMeta) -> Path:
    """Write `folder/meta.json` atomically."""
    return write_json_model(Path(folder) / META_FILE, meta)


def read_meta(path: str | Path) -> AssetMeta:
    """Read and validate one meta.json file (use `load_meta` for a package, which checks it is complete)."""
    return read_json_model(path, AssetMeta, META_FILE)


def load_meta(package: str | Path, kind: Kind | None = None) -> AssetMeta:
    """The metadata of a complete package, checked to be of `kind` when given."""
    package = Path(package)
    if stage_status(package) is not StageStatus.COMPLETE:
        raise InputError("not a complete asset package (missing or broken MANIFEST.json); convert it again", package)
    path = package / META_FILE
    meta = read_meta(path)
    if kind is not None and meta.kind != kind:
        article = "an" if kind[0] in "aeiou" else "a"
        raise InputError(f"expected {article} {kind} package, got kind {meta.kind!r}", path, "kind")
    return meta

"""Read `scene.usda` (placement/compose.py) into plain data: which package each placed prim references,
where it stands, and its `grade:*` playback attributes.

Every reference is checked before anything is built: a scene that names a missing or incomplete
package raises InputError naming the scene file and the prim, so no simulation starts half-loaded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pxr import Sdf, Usd, UsdGeom
from pydantic import ValidationError

from asset_converters.package import load_meta
from core.errors import InputError
from core.rundir import StageStatus, stage_status
from placement.compose import SCENE_ROOT
from placement.schema import AnimationSchedule, FlyingMotion
from simulation.physics import StartPose

ENVIRONMENT_PRIM = f"{SCENE_ROOT}/environment"
HUMANS_PRIM = f"{SCENE_ROOT}/humans"
OBJECTS_PRIM = f"{SCENE_ROOT}/flying_objects"
ROBOT_PRIM = f"{SCENE_ROOT}/robot_start"
PACKAGE_STAGE = "asset.usdc"
IDENTITY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class PlacedPrim:
    prim_path: str  # in scene.usda
    package: Path
    asset_id: str
    pose: np.ndarray  # world <- package frame, 4x4


@dataclass(frozen=True)
class PlacedHumanPrim(PlacedPrim):
    schedule: AnimationSchedule


@dataclass(frozen=True)
class FlyingObjectPrim(PlacedPrim):
    motion: FlyingMotion


@dataclass(frozen=True)
class SceneFile:
    path: Path
    environment: PlacedPrim
    humans: tuple[PlacedHumanPrim, ...]
    objects: tuple[FlyingObjectPrim, ...]
    robot_kind: str
    robot_start: StartPose


def _referenced_package(layer: Sdf.Layer, prim_path: str, scene: Path) -> Path:
    """The package folder a prim references, checked to be a complete package."""
    spec = layer.GetPrimAtPath(prim_path)
    references = spec.referenceList.GetAddedOrExplicitItems() if spec else []
    if not references:
        raise InputError("the prim references no asset package", scene, prim_path)
    asset_path = references[0].assetPath
    stage_file = Path(layer.ComputeAbsolutePath(asset_path))
    if not stage_file.is_file():
        raise InputError(f"references {asset_path!r}, which does not exist ({stage_file})", scene, prim_path)
    package = stage_file.parent
    if stage_file.name != PACKAGE_STAGE or stage_status(package) is not StageStatus.COMPLETE:
        raise InputError(f"references {asset_path!r}, which is not a complete asset package", scene, prim_path)
    return package


def _attribute(prim: Usd.Prim, name: str, scene: Path) -> object:
    attribute = prim.GetAttribute(name)
    value = attribute.Get() if attribute else None
    if value is None:
        raise InputError(f"missing attribute {name!r}", scene, str(prim.GetPath()))
    return value


def _pose(cache: UsdGeom.XformCache, prim: Usd.Prim) -> np.ndarray:
    return np.asarray(cache.GetLocalToWorldTransform(prim), dtype=np.float64).T  # USD rows -> column vectors


def _children(layer: Sdf.Layer, group: str) -> list[str]:
    spec = layer.GetPrimAtPath(group)
    return [str(child.path) for child in spec.nameChildren] if spec else []


def _placed(layer: Sdf.Layer, stage: Usd.Stage, cache: UsdGeom.XformCache, prim_path: str, scene: Path,
            kind: str) -> tuple[Usd.Prim, dict]:
    package = _referenced_package(layer, prim_path, scene)
    meta = load_meta(package)
    if meta.kind != kind:
        raise InputError(f"references a {meta.kind!r} package ({package}); expected {kind!r}", scene, prim_path)
    prim = stage.GetPrimAtPath(prim_path)
    return prim, {"prim_path": prim_path, "package": package, "asset_id": meta.id, "pose": _pose(cache, prim)}


def read_scene_file(path: str | Path) -> SceneFile:
    """The placed environment, humans, flying objects and robot start of a scene.usda."""
    path = Path(path)
    if not path.is_file():
        raise InputError("scene file not found", path)
    layer = Sdf.Layer.FindOrOpen(str(path.absolute()))
    if layer is None:
        raise InputError("cannot parse as a USD layer", path)
    # Check every reference before composing, so a missing package is reported by prim, not as a
    # composition warning.
    human_paths, object_paths = _children(layer, HUMANS_PRIM), _children(layer, OBJECTS_PRIM)
    for prim_path in [ENVIRONMENT_PRIM, *human_paths, *object_paths]:
        _referenced_package(layer, prim_path, path)
    stage = Usd.Stage.Open(layer)
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())

    env = _placed(layer, stage, cache, ENVIRONMENT_PRIM, path, "environment")[1]
    if not np.allclose(env["pose"], np.eye(4), atol=IDENTITY_TOLERANCE):
        # The collision pieces and floor plane are built in the package frame.
        raise InputError("the embedded backend needs the environment untransformed", path, ENVIRONMENT_PRIM)
    humans = []
    for prim_path in human_paths:
        prim, fields = _placed(layer, stage, cache, prim_path, path, "animated")
        schedule = {key: _attribute(prim, f"grade:animation:{attr}", path)
                    for key, attr in (("start", "start"), ("period", "period"), ("clip_end", "clipEnd"),
                                      ("reverse", "reverse"))}
        humans.append(PlacedHumanPrim(**fields, schedule=AnimationSchedule(**schedule)))
    objects = []
    for prim_path in object_paths:
        prim, fields = _placed(layer, stage, cache, prim_path, path, "object")
        try:
            motion = FlyingMotion.model_validate(json.loads(str(_attribute(prim, "grade:motion", path))))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise InputError(f"grade:motion is not a valid flying motion ({exc})", path, prim_path) from exc
        objects.append(FlyingObjectPrim(**fields, motion=motion))

    robot = stage.GetPrimAtPath(ROBOT_PRIM)
    if not robot:
        raise InputError("the scene has no robot start", path, ROBOT_PRIM)
    start = _pose(cache, robot)
    yaw = float(np.arctan2(start[1, 0], start[0, 0]))
    return SceneFile(
        path=path, environment=PlacedPrim(**env), humans=tuple(humans), objects=tuple(objects),
        robot_kind=str(_attribute(robot, "grade:robot:kind", path)),
        robot_start=StartPose(float(start[0, 3]), float(start[1, 3]), float(start[2, 3]), yaw),
    )

"""The prim layout of `scene.usda` (architecture.md §2 "Scene"): where placed things live and which `grade:*`
attributes carry what plain USD composition cannot express.

placement/compose.py writes a scene with these helpers and simulation/embedded/scene.py reads it
with `read_scene_layout`, so the two cannot drift apart. The layout:

    /World                      default prim; grade:seed
      environment               references <environment package>/asset.usdc, untransformed
      humans/human_NN_<id>      reference, translate + rotateZ, grade:animation:{start,period,clipEnd,reverse}
      animals/animal_NN_<id>    the same, for animals
      flying_objects/object_NN_<id>   reference, translate (centre) + orient, grade:motion (FlyingMotion JSON)
      robot_start               translate + rotateZ; grade:robot:kind (one robot)
      robots/<name>             the same, per robot of a multi-robot run (instead of robot_start)

Every package's default prim is `/asset`; seen through the scene, `/asset/x` is `<referencing prim>/x`.
Animation schedules (a clip that plays forward then backward) and flying motions (sums of sinusoids)
are stored as attributes; placement.json stays the source of truth for both.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom
from pydantic import ValidationError

from core.assets.layout import PACKAGE_ROOT, PACKAGE_STAGE
from core.errors import InputError
from core.formats.asset_meta import Kind, load_meta
from core.formats.manifest import StageStatus, stage_status
from core.formats.placement import AnimationSchedule, FlyingMotion

SCENE_FILE = "scene.usda"
SCENE_ROOT = "/World"
ENVIRONMENT_PRIM = f"{SCENE_ROOT}/environment"
HUMANS_PRIM = f"{SCENE_ROOT}/humans"
ANIMALS_PRIM = f"{SCENE_ROOT}/animals"
OBJECTS_PRIM = f"{SCENE_ROOT}/flying_objects"
ROBOT_PRIM = f"{SCENE_ROOT}/robot_start"
ROBOTS_PRIM = f"{SCENE_ROOT}/robots"
# Scene time codes per second: the camera/odometry rate, so a time code is one 60 Hz tick.
TIME_CODES_PER_SECOND = 60.0

SEED_ATTR = "grade:seed"
ROBOT_KIND_ATTR = "grade:robot:kind"
MOTION_ATTR = "grade:motion"
# AnimationSchedule field -> attribute
SCHEDULE_ATTRS = {"start": "grade:animation:start", "period": "grade:animation:period",
                  "clip_end": "grade:animation:clipEnd", "reverse": "grade:animation:reverse"}
_SCHEDULE_TYPES = {"start": Sdf.ValueTypeNames.Double, "period": Sdf.ValueTypeNames.Double,
                   "clip_end": Sdf.ValueTypeNames.Double, "reverse": Sdf.ValueTypeNames.Bool}


# ---------------------------------------------------------------- names and paths


def prim_name(text: str) -> str:
    """A valid USD prim name from any string."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text) or "_"
    return f"_{name}" if name[0].isdigit() else name


def human_prim_path(index: int, asset_id: str) -> str:
    return f"{HUMANS_PRIM}/{prim_name(f'human_{index:02d}_{asset_id}')}"


def animal_prim_path(index: int, asset_id: str) -> str:
    return f"{ANIMALS_PRIM}/{prim_name(f'animal_{index:02d}_{asset_id}')}"


def object_prim_path(index: int, asset_id: str) -> str:
    return f"{OBJECTS_PRIM}/{prim_name(f'object_{index:02d}_{asset_id}')}"


def scene_prim_path(referencing_prim: str, package_prim: str) -> str:
    """A package prim's path (under `/asset`) as seen through the prim that references the package."""
    if package_prim == PACKAGE_ROOT or package_prim.startswith(f"{PACKAGE_ROOT}/"):
        return referencing_prim + package_prim[len(PACKAGE_ROOT):]
    return package_prim


# ---------------------------------------------------------------- writing


def add_package_reference(stage: Usd.Stage, prim_path: str, package: str | Path, scene_dir: Path) -> Usd.Prim:
    """An Xform at `prim_path` referencing the package's stage by a path relative to `scene_dir`."""
    prim = UsdGeom.Xform.Define(stage, prim_path).GetPrim()
    asset = Path(os.path.relpath(Path(package) / PACKAGE_STAGE, scene_dir)).as_posix()
    prim.GetReferences().AddReference(f"./{asset}" if not asset.startswith(".") else asset)
    return prim


def copy_scene(source: str | Path, target: str | Path) -> Path:
    """scene.usda copied to `target` (atomically) with every package reference rewritten relative to its new
    folder, so the copy loads the same packages (a replay's scene/ beside its recording)."""
    source, target = Path(source).absolute(), Path(target).absolute()
    layer = Sdf.Layer.FindOrOpen(str(source))
    if layer is None:
        raise InputError("cannot open the scene", source)
    copy = Sdf.Layer.CreateAnonymous(".usda")
    copy.TransferContent(layer)

    def rebase(reference: Sdf.Reference) -> Sdf.Reference:
        if not reference.assetPath:
            return reference
        absolute = (source.parent / reference.assetPath).resolve()
        asset = Path(os.path.relpath(absolute, target.parent)).as_posix()
        return Sdf.Reference(asset if asset.startswith(".") else f"./{asset}", reference.primPath,
                             reference.layerOffset, reference.customData)

    def visit(path: Sdf.Path) -> None:
        spec = copy.GetPrimAtPath(path)
        if spec is not None and path.IsPrimPath():
            references = spec.referenceList
            for items in (references.explicitItems, references.prependedItems, references.appendedItems):
                if len(items):
                    rebased = [rebase(r) for r in items]
                    items.clear()
                    for r in rebased:
                        items.append(r)

    copy.Traverse(Sdf.Path.absoluteRootPath, visit)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp.usda")
    if not copy.Export(str(temporary)):
        raise InputError("cannot write the scene copy", temporary)
    os.replace(temporary, target)
    return target


def append_object(scene: str | Path, package: str | Path, asset_id: str, motion: FlyingMotion) -> str:
    """Add an object package to a written scene.usda after its flying objects (their prim names and order,
    and so everyone's instance ids, stay as they were), moving by `motion`; returns the new prim's path."""
    scene = Path(scene)
    stage = Usd.Stage.Open(str(scene))
    group = stage.GetPrimAtPath(OBJECTS_PRIM)
    if not group.IsValid():
        group = UsdGeom.Xform.Define(stage, OBJECTS_PRIM).GetPrim()
    path = object_prim_path(len(group.GetChildren()), asset_id)
    set_motion(add_package_reference(stage, path, package, scene.parent), motion)
    stage.GetRootLayer().Save()
    return path


def set_xyz_yaw(prim: Usd.Prim, x: float, y: float, z: float, yaw: float) -> None:
    """Pose a prim as translate (x, y, z), then rotateZ by `yaw` (rad; USD stores degrees)."""
    xform = UsdGeom.Xformable(prim)
    xform.ClearXformOpOrder()
    xform.AddTranslateOp().Set(Gf.Vec3d(x, y, z))
    xform.AddRotateZOp().Set(float(yaw) * 180.0 / 3.141592653589793)


def set_seed(prim: Usd.Prim, seed: int) -> None:
    prim.CreateAttribute(SEED_ATTR, Sdf.ValueTypeNames.Int).Set(seed)


def set_schedule(prim: Usd.Prim, schedule: AnimationSchedule) -> None:
    for field, name in SCHEDULE_ATTRS.items():
        prim.CreateAttribute(name, _SCHEDULE_TYPES[field]).Set(getattr(schedule, field))


def set_motion(prim: Usd.Prim, motion: FlyingMotion) -> None:
    """The motion as JSON; the prim stands at the motion's centre with its orientation at t = 0 (translate +
    orient), so viewers that ignore grade:* show the object where it moves about."""
    xform = UsdGeom.Xformable(prim)
    xform.AddTranslateOp().Set(Gf.Vec3d(*motion.center))
    xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(*motion.orientation))
    prim.CreateAttribute(MOTION_ATTR, Sdf.ValueTypeNames.String).Set(
        json.dumps(motion.model_dump(mode="json"), sort_keys=True))


def set_robot_kind(prim: Usd.Prim, kind: str) -> None:
    prim.CreateAttribute(ROBOT_KIND_ATTR, Sdf.ValueTypeNames.String).Set(kind)


# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class ScenePrim:
    prim_path: str
    package: Path  # a complete asset package of the kind its group holds
    asset_id: str  # the package's meta.json id
    pose: np.ndarray  # world <- package frame, 4x4


@dataclass(frozen=True)
class SceneHuman(ScenePrim):
    schedule: AnimationSchedule


@dataclass(frozen=True)
class SceneObject(ScenePrim):
    motion: FlyingMotion


@dataclass(frozen=True)
class SceneRobot:
    name: str | None  # a multi-robot run's robot name; None for the one robot of robot_start
    kind: str
    pose: np.ndarray  # world <- robot start, 4x4


@dataclass(frozen=True)
class SceneLayout:
    path: Path
    seed: int
    environment: ScenePrim
    humans: tuple[SceneHuman, ...]
    objects: tuple[SceneObject, ...]
    animals: tuple[SceneHuman, ...]  # played like humans
    robots: tuple[SceneRobot, ...]

    @property
    def robot_kind(self) -> str:
        """The (first) robot's kind."""
        return self.robots[0].kind

    @property
    def robot_pose(self) -> np.ndarray:
        """World <- the (first) robot's start, 4x4."""
        return self.robots[0].pose


def robot_start_path(name: str | None) -> str:
    """The start prim of robot `name` (None: the one robot)."""
    return ROBOT_PRIM if name is None else f"{ROBOTS_PRIM}/{prim_name(name)}"


def attribute(prim: Usd.Prim, name: str, scene: Path) -> object:
    """A prim attribute's value; InputError naming the scene file and the prim when it is missing."""
    attr = prim.GetAttribute(name)
    value = attr.Get() if attr else None
    if value is None:
        raise InputError(f"missing attribute {name!r}", scene, str(prim.GetPath()))
    return value


def read_schedule(prim: Usd.Prim, scene: Path) -> AnimationSchedule:
    values = {field: attribute(prim, name, scene) for field, name in SCHEDULE_ATTRS.items()}
    try:
        return AnimationSchedule.model_validate(values)
    except ValidationError as exc:
        raise InputError(f"not a valid animation schedule ({exc})", scene, str(prim.GetPath())) from exc


def read_motion(prim: Usd.Prim, scene: Path) -> FlyingMotion:
    try:
        return FlyingMotion.model_validate(json.loads(str(attribute(prim, MOTION_ATTR, scene))))
    except (json.JSONDecodeError, ValidationError) as exc:
        raise InputError(f"{MOTION_ATTR} is not a valid flying motion ({exc})", scene, str(prim.GetPath())) from exc


def referenced_package(layer: Sdf.Layer, prim_path: str, scene: Path, kind: Kind) -> tuple[Path, str]:
    """The package folder a prim references, checked to be a complete package of `kind`, and its asset id."""
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
    meta = load_meta(package)
    if meta.kind != kind:
        raise InputError(f"references a {meta.kind!r} package ({package}); expected {kind!r}", scene, prim_path)
    return package, meta.id


def _children(layer: Sdf.Layer, group: str) -> list[str]:
    spec = layer.GetPrimAtPath(group)
    return [str(child.path) for child in spec.nameChildren] if spec else []


def _pose(cache: UsdGeom.XformCache, prim: Usd.Prim) -> np.ndarray:
    return np.asarray(cache.GetLocalToWorldTransform(prim), dtype=np.float64).T  # USD rows -> column vectors


def read_scene_layout(path: str | Path) -> SceneLayout:
    """The placed prims of a scene.usda: referenced packages (each checked complete), poses, attributes."""
    path = Path(path)
    if not path.is_file():
        raise InputError("scene file not found", path)
    layer = Sdf.Layer.FindOrOpen(str(path.absolute()))
    if layer is None:
        raise InputError("cannot parse as a USD layer", path)
    # Check every reference before composing, so a missing package is reported by prim, not as a
    # composition warning.
    human_paths, object_paths = _children(layer, HUMANS_PRIM), _children(layer, OBJECTS_PRIM)
    animal_paths = _children(layer, ANIMALS_PRIM)
    kinds: dict[str, Kind] = {ENVIRONMENT_PRIM: "environment", **dict.fromkeys(human_paths, "animated"),
                              **dict.fromkeys(animal_paths, "animated"), **dict.fromkeys(object_paths, "object")}
    packages = {prim_path: referenced_package(layer, prim_path, path, kind) for prim_path, kind in kinds.items()}
    stage = Usd.Stage.Open(layer)
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())

    def placed(prim_path: str) -> tuple[Usd.Prim, dict]:
        prim = stage.GetPrimAtPath(prim_path)
        package, asset_id = packages[prim_path]
        return prim, {"prim_path": prim_path, "package": package, "asset_id": asset_id, "pose": _pose(cache, prim)}

    def animated(prim_path: str) -> SceneHuman:
        prim, fields = placed(prim_path)
        return SceneHuman(**fields, schedule=read_schedule(prim, path))

    humans = [animated(prim_path) for prim_path in human_paths]
    objects = []
    for prim_path in object_paths:
        prim, fields = placed(prim_path)
        objects.append(SceneObject(**fields, motion=read_motion(prim, path)))
    robot = stage.GetPrimAtPath(ROBOT_PRIM)
    starts = [(None, robot)] if robot else [(prim.GetName(), prim) for prim in
                                             (stage.GetPrimAtPath(ROBOTS_PRIM).GetChildren()
                                              if stage.GetPrimAtPath(ROBOTS_PRIM) else [])]
    if not starts:
        raise InputError("the scene has no robot start", path, ROBOT_PRIM)
    world = stage.GetPrimAtPath(SCENE_ROOT)
    if not world:
        raise InputError("the scene has no root prim", path, SCENE_ROOT)
    robots = tuple(SceneRobot(name, str(attribute(prim, ROBOT_KIND_ATTR, path)), _pose(cache, prim))
                   for name, prim in starts)
    return SceneLayout(
        path=path, seed=int(attribute(world, SEED_ATTR, path)), environment=ScenePrim(**placed(ENVIRONMENT_PRIM)[1]),
        humans=tuple(humans), objects=tuple(objects), animals=tuple(animated(p) for p in animal_paths), robots=robots,
    )

"""The scene of a run: scene.usda and the asset packages it references, loaded once into the one `Scene` that the
embedded world's physics (MuJoCo), the ray caster (`RenderScene`, its acceleration structure) and Cycles (a
Blender scene made from the ray caster's meshes) are built from.

- Static meshes: the environment's meshes (materials, textures, semantic labels, one instance id per mesh prim).
- Dynamic meshes: each human as one deforming mesh and each flying object as one rigid mesh (their parts merged,
  see merge.py), and in a multi-robot run each robot's body as the others see it (robot_meshes.py).
- Lights: the environment's sphere lights as point lights and its distant lights (the sun) as directional lights.
  An environment without lights is loaded with a warning: only the ambient term lights it.
- Physics inputs: the environment's convex collision pieces, a capsule per human (and animal: animals are
  animated actors like humans, after them, of kind "animal") and a convex hull per flying object as kinematic
  bodies; on a terrain each capsule stands on the ground under its actor; each robot's start.
- Instances (instances.json) and semantic classes: instance ids number environment meshes, then humans, then
  flying objects, then (in a multi-robot run) the robots, from 1; semantic ids come from the global class map
  (core.formats.class_map), which resolves each asset label to a class, so every run speaks the same ids.
- Randomization (randomization.py): each environment mesh's roughness, and each environment material's colour
  factor (materials are told apart by base colour and texture file, numbered in mesh order).

Every reference is checked before anything is built (core.formats.scene_layout): a scene that names a missing or
incomplete package, or a package of the wrong kind, raises InputError naming the scene file and the prim, so no
simulation starts half-loaded. The scene's invariants are checked once, when a `Scene` is made: mesh names and
instance ids unique, each instance entry naming its mesh and its semantic class's id, robot names unique, every
pose and start finite; a violation is an InputError naming the scene file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pxr import Usd, UsdGeom, UsdLux

from core.assets.layout import PACKAGE_STAGE
from core.assets.parts import DistantLight, Light
from core.assets.usd_read import read_meshes
from core.errors import InputError
from core.formats.asset_meta import load_meta
from core.formats.class_map import DEFAULT_CLASS_MAP, UNLABELLED_ID, ClassMap, Kind
from core.formats.scene_layout import ANIMALS_PRIM, ENVIRONMENT_PRIM, ScenePrim, read_scene_layout, scene_prim_path
from core.geometry import yaw_of
from core.progress import get_logger
from simulation.backend import InstanceInfo
from simulation.embedded.actors import HumanModel, HumanTrack, ObjectTrack, object_parts
from simulation.embedded.merge import merge_parts
from simulation.embedded.randomization import Randomizer, tint_texture
from simulation.embedded.robot_meshes import RobotTrack
from simulation.physics import EnvironmentCollision, KinematicBody, StartPose, load_environment_collision
from simulation.render import (
    EnvironmentMap,
    MeshState,
    RenderLight,
    RenderMaterial,
    RenderMesh,
    RenderScene,
    light_from_part,
    load_texture,
)
from simulation.render.scene import DEFAULT_BACKGROUND

log = get_logger("simulation")
MAX_INSTANCE_ID = 65535  # instance images are uint16
IDENTITY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class RobotPlacement:
    """A robot's start in the scene: its name in a multi-robot run (None for the one robot), kind and pose."""

    name: str | None
    kind: str
    start: StartPose


@dataclass
class Scene:
    """A run's world as loaded from its scene folder (module notes); its invariants hold once it is made."""

    path: Path  # scene.usda
    environment: ScenePrim
    static_meshes: tuple[RenderMesh, ...]  # the environment's, in instance id order
    dynamic_meshes: tuple[RenderMesh, ...]  # humans, flying objects, robots, at rest
    humans: tuple[HumanTrack, ...]  # the humans, then the animals (the shown ones)
    objects: tuple[ObjectTrack, ...]
    robots: tuple[RobotPlacement, ...]  # every robot's start, in scene order
    lights: tuple[RenderLight, ...]  # as authored, before any randomization
    instances: dict[int, InstanceInfo]
    semantic_classes: dict[str, int]
    collision: EnvironmentCollision

    def __post_init__(self) -> None:
        meshes = [*self.static_meshes, *self.dynamic_meshes]
        for key in ("name", "instance_id"):
            repeated = sorted((v for v, n in Counter(getattr(m, key) for m in meshes).items() if n > 1), key=str)
            if repeated:
                raise InputError(f"mesh {key}s must be unique, repeated: {repeated}", self.path)
        by_id = {m.instance_id: m for m in meshes}
        if set(self.instances) != set(by_id):
            raise InputError(f"instance ids {sorted(set(self.instances) ^ set(by_id))} have no mesh or no instance "
                             "entry", self.path)
        for instance_id, info in self.instances.items():
            mesh = by_id[instance_id]
            wanted = UNLABELLED_ID if info.semantic_class is None else self.semantic_classes.get(info.semantic_class)
            if info.prim_path != mesh.name or info.semantic_id != mesh.semantic_id or wanted != info.semantic_id:
                raise InputError(f"instance {instance_id} ({info.prim_path}) does not match its mesh {mesh.name!r} "
                                 f"or its semantic class {info.semantic_class!r}", self.path)
        names = [robot.name for robot in self.robots]
        if not names or len(set(names)) != len(names):
            raise InputError(f"robot names must be unique and there must be one robot at least, got {names}",
                             self.path)
        for robot in self.robots:
            start = robot.start
            if not np.all(np.isfinite([start.x, start.y, start.z, start.yaw])):
                raise InputError(f"the start of robot {robot.name or robot.kind!r} is not finite: {start}", self.path)
        for actor in [*self.humans, *self.objects]:
            if not np.all(np.isfinite(actor.prim.pose)):
                raise InputError("the prim's transform is not finite", self.path, actor.name)

    def states(self, t: float, next_t: float | None = None) -> dict[str, MeshState]:
        """Every human and flying object at simulation time `t` (and `next_t`, for optical flow)."""
        return {actor.name: actor.state(t, next_t) for actor in [*self.humans, *self.objects]}

    def kinematic_bodies(self) -> list[KinematicBody]:
        return [actor.body for actor in [*self.humans, *self.objects]]

    def kinematic_poses(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions (T, B, 3) and orientations (T, B, 4 w x y z) of the kinematic bodies, in
        `kinematic_bodies` order, at simulation times (T,)."""
        actors = [*self.humans, *self.objects]
        if not actors:
            return np.zeros((len(times), 0, 3)), np.zeros((len(times), 0, 4))
        poses = [actor.body_poses(times) for actor in actors]
        return np.stack([p for p, _ in poses], axis=1), np.stack([q for _, q in poses], axis=1)

    def render_scene(self, background: Sequence[float] = DEFAULT_BACKGROUND,
                     environment: EnvironmentMap | None = None) -> RenderScene:
        """The ray caster's scene of these meshes and lights, rays that leave it seeing `environment` (else the
        `background` colour)."""
        return RenderScene(self.static_meshes, self.dynamic_meshes, self.lights,
                           background=np.asarray(background, dtype=np.float32), environment=environment)


def read_lights(usd: Path) -> list[Light | DistantLight]:
    """The sphere and distant lights of a package stage, in its frame (a distant light shines along its -Z)."""
    stage = Usd.Stage.Open(str(usd))
    cache = UsdGeom.XformCache(Usd.TimeCode.Default())
    lights: list[Light | DistantLight] = []
    for prim in stage.Traverse():
        if not prim.IsA(UsdLux.SphereLight) and not prim.IsA(UsdLux.DistantLight):
            continue
        matrix = np.asarray(cache.GetLocalToWorldTransform(prim), dtype=np.float64)  # row-vector matrix
        color = tuple(float(c) for c in prim.GetAttribute("inputs:color").Get())
        intensity = float(prim.GetAttribute("inputs:intensity").Get())
        if prim.IsA(UsdLux.DistantLight):
            towards = matrix[2, :3] / np.linalg.norm(matrix[2, :3])  # the light's +Z axis in the world
            angle = float(UsdLux.DistantLight(prim).GetAngleAttr().Get())
            lights.append(DistantLight(str(prim.GetPath()), tuple(towards.tolist()), intensity, color, angle))
            continue
        lights.append(Light(str(prim.GetPath()), tuple(matrix[3, :3].tolist()), intensity, color,
                            float(UsdLux.SphereLight(prim).GetRadiusAttr().Get())))
    return lights


class _Textures:
    """Each texture file read once per scene (humans of one package, walls sharing an image)."""

    def __init__(self) -> None:
        self._images: dict[Path, np.ndarray] = {}

    def __call__(self, path: Path) -> np.ndarray:
        path = Path(path)
        if path not in self._images:
            self._images[path] = load_texture(path)
        return self._images[path]


MaterialKey = tuple[tuple[float, ...], Path | None]


def _environment_materials(meshes: Sequence, randomizer: Randomizer | None,
                           textures: _Textures) -> list[tuple[tuple[float, float, float], np.ndarray | None]]:
    """Base colour and texture image of each environment mesh (as `read_meshes` gives them), with the
    randomizer's colour factor of its material (one per distinct base colour and texture file, numbered in
    mesh order)."""
    keys: dict[MaterialKey, int] = {}
    for mesh in meshes:
        keys.setdefault((tuple(mesh.base_color), mesh.texture), len(keys))
    factors = randomizer.material_colors(len(keys)) if randomizer is not None else None
    made: dict[MaterialKey, tuple[tuple[float, float, float], np.ndarray | None]] = {}
    for key, index in keys.items():
        color, texture = key
        image = textures(texture) if texture else None
        if factors is not None:
            color = tuple(np.minimum(np.asarray(color) * factors[index], 1.0).tolist())
            image = tint_texture(image, factors[index]) if image is not None else None
        made[key] = (color, image)
    return [made[(tuple(m.base_color), m.texture)] for m in meshes]


def load_scene(path: str | Path, randomizer: Randomizer | None = None, class_map: ClassMap = DEFAULT_CLASS_MAP,
               hidden: frozenset[str] = frozenset(), robots: Sequence[RobotTrack] = ()) -> Scene:
    """The scene of scene.usda `path` with its packages loaded, labelled with `class_map` and the environment's
    materials randomized by `randomizer` (None: as authored), without the humans and flying objects whose prim
    paths are `hidden` (a replay's choice: the others keep the instance ids they have with everything shown);
    `robots` are a multi-robot run's robot bodies, seen by the others' sensors."""
    layout = read_scene_layout(path)
    env = layout.environment
    if not np.allclose(env.pose, np.eye(4), atol=IDENTITY_TOLERANCE):
        # The collision pieces and floor plane are built in the package frame.
        raise InputError("the embedded backend needs the environment untransformed", layout.path, ENVIRONMENT_PRIM)
    textures = _Textures()
    env_info = load_meta(env.package).environment
    floor = env_info.floor_height
    env_meshes = [m for m in read_meshes(env.package / PACKAGE_STAGE) if len(m.faces)]
    if not env_meshes:
        raise InputError("the environment has no meshes", env.package / PACKAGE_STAGE)
    models: dict[Path, HumanModel] = {}
    humans = []
    for prim in layout.humans + layout.animals:  # animals play like humans: one animated actor list
        if prim.package not in models:
            models[prim.package] = HumanModel(prim.package, textures)
        # On a terrain each actor stands on its own ground: where placement rested it, its ground offset below.
        ground = floor if env_info.terrain is None else float(prim.pose[2, 3]) - load_meta(
            prim.package).animation.ground_offset
        humans.append(HumanTrack(prim, models[prim.package], ground))
    objects = []
    for prim in layout.objects:
        parts, label = object_parts(prim.package, textures)
        if not parts:
            raise InputError("the object package has no meshes", layout.path, prim.prim_path)
        objects.append(ObjectTrack(prim, merge_parts(parts), np.concatenate([p.vertices for p in parts]), label))

    labelled: list[tuple[str | None, Kind]] = [(m.semantic_label, "environment") for m in env_meshes]
    labelled += [(h.model.animation.semantic_label, "animal" if h.name.startswith(f"{ANIMALS_PRIM}/") else "human")
                 for h in humans]
    labelled += [(o.label, "object") for o in objects]
    labelled += [(r.label, "object") for r in robots]  # a multi-robot run's robots: their kind, or "robot"
    resolved = [class_map.resolve(label, kind) for label, kind in labelled]
    classes = {name: class_map.classes[name] for name in sorted(set(resolved) - {None}, key=class_map.classes.get)}
    count = len(env_meshes) + len(humans) + len(objects) + len(robots)
    if count > MAX_INSTANCE_ID:
        raise InputError(f"{count} instances exceed the {MAX_INSTANCE_ID} ids of uint16 instance images", layout.path)

    rough = randomizer.roughness(len(env_meshes)) if randomizer is not None else [m.roughness for m in env_meshes]
    surfaces = _environment_materials(env_meshes, randomizer, textures)
    instances: dict[int, InstanceInfo] = {}
    static = []
    for instance_id, (mesh, r, (color, image)) in enumerate(zip(env_meshes, rough, surfaces), start=1):
        name = scene_prim_path(ENVIRONMENT_PRIM, mesh.prim_path)
        semantic = classes.get(resolved[instance_id - 1], UNLABELLED_ID)
        material = RenderMaterial(color, image, float(r))
        static.append(RenderMesh(name, mesh.vertices, mesh.faces, instance_id, semantic, material,
                                 mesh.uvs if mesh.texture else None))
        instances[instance_id] = InstanceInfo(name, resolved[instance_id - 1], semantic, env.asset_id, "environment",
                                              mesh.semantic_label)
    dynamic = []
    for instance_id, actor in enumerate([*humans, *objects], start=len(static) + 1):
        if actor.name in hidden:
            continue
        label, kind = labelled[instance_id - 1]
        name = resolved[instance_id - 1]
        semantic = classes.get(name, UNLABELLED_ID)
        dynamic.append(actor.render_mesh(instance_id, semantic))
        instances[instance_id] = InstanceInfo(actor.name, name, semantic, actor.prim.asset_id, kind, label)
    for instance_id, robot in enumerate(robots, start=len(static) + len(humans) + len(objects) + 1):
        name = resolved[instance_id - 1]
        semantic = classes.get(name, UNLABELLED_ID)
        dynamic.append(robot.render_mesh(instance_id, semantic))
        instances[instance_id] = InstanceInfo(robot.name, name, semantic, robot.kind, "object", robot.label)

    lights = tuple(light_from_part(light) for light in read_lights(env.package / PACKAGE_STAGE))
    if not lights:
        log.warning("environment %s has no lights: it renders with the ambient term only and light "
                    "randomization has nothing to change", env.package)
    starts = tuple(RobotPlacement(robot.name, robot.kind, _start(robot.pose)) for robot in layout.robots)
    return Scene(layout.path, env, tuple(static), tuple(dynamic), tuple(h for h in humans if h.name not in hidden),
                 tuple(o for o in objects if o.name not in hidden), starts, lights, instances, classes,
                 load_environment_collision(env.package))


def _start(pose: np.ndarray) -> StartPose:
    return StartPose(float(pose[0, 3]), float(pose[1, 3]), float(pose[2, 3]), yaw_of(pose))

"""The moving things of a scene: animated humans and flying objects, posed at any simulation time.

Humans: the clip time comes from the placement's schedule (`core.formats.placement.animation_time`),
and the animation is shown at its nearest sampled frame (as `core.assets.skinning.posed_meshes` poses it),
in the package frame, placed by the human prim's transform. Their collision capsule stands on the floor
under the animation's root joint. Flying objects follow `core.formats.placement.flying_pose` as rigid
bodies.
Posed frames are cached per animation package, so copies of one human share the skinning work; a clip
short enough for the cache is posed whole when the package loads.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import numpy as np

from core.assets.animation import load_animation
from core.assets.layout import PACKAGE_STAGE
from core.assets.skinning import joint_world_transforms, posed_meshes
from core.assets.usd_read import read_meshes
from core.formats.placement import AnimationSchedule, animation_time, flying_pose
from core.formats.scene_layout import SceneHuman, SceneObject
from core.geometry import matrix_to_quat_wxyz, quat_wxyz_to_matrix
from simulation.embedded.merge import MergedMesh, Part, merge_parts
from simulation.physics import KinematicBody, human_body, object_body
from simulation.render import MeshState, RenderMesh

POSED_FRAME_CACHE = 256  # posed frames kept per animation package
TextureLoader = Callable[[Path], np.ndarray]


def _leaf(prim_path: str) -> str:
    return prim_path.rsplit("/", 1)[-1]


class HumanModel:
    """An animated package, loaded once and shared by every placed copy of it."""

    def __init__(self, package: Path, texture: TextureLoader):
        self.animation = anim = load_animation(package)
        self._world = joint_world_transforms(anim)
        self.roots = self._world[:, 0, :3, 3].copy()  # (N, 3) root joint per frame, package frame
        parts = [Part(m.name, m.rest_vertices, m.faces, tuple(m.material.base_color),
                      texture(m.material.texture) if m.material.texture else None, m.uvs) for m in anim.skinned]
        parts += [Part(c.name, c.points[0], c.faces, tuple(c.material.base_color),
                       texture(c.material.texture) if c.material.texture else None, c.uvs) for c in anim.point_caches]
        self.mesh: MergedMesh = merge_parts(parts)
        self._cache: OrderedDict[int, np.ndarray] = OrderedDict()
        if anim.frame_count <= POSED_FRAME_CACHE:
            # A clip that fits the cache would be posed whole within its first loop anyway; posing it at
            # load keeps that skinning out of the first frames' render time.
            for frame in range(anim.frame_count):
                self.posed(frame)

    def frame(self, schedule: AnimationSchedule, t: float | np.ndarray) -> np.ndarray:
        """Nearest animation frame shown at simulation time(s) `t`."""
        clip = np.asarray(animation_time(schedule, t), dtype=np.float64)
        return np.clip(np.rint(clip * self.animation.fps), 0, self.animation.frame_count - 1).astype(np.int64)

    def posed(self, frame: int) -> np.ndarray:
        """(V, 3) vertices of all meshes at `frame`, in the package frame (read-only, cached)."""
        if frame in self._cache:
            self._cache.move_to_end(frame)
            return self._cache[frame]
        vertices = np.concatenate([v for v, _ in posed_meshes(self.animation, frame, self._world)])
        vertices.setflags(write=False)
        self._cache[frame] = vertices
        if len(self._cache) > POSED_FRAME_CACHE:
            self._cache.popitem(last=False)
        return vertices


class HumanTrack:
    """One placed human."""

    def __init__(self, prim: SceneHuman, model: HumanModel, floor_height: float):
        self.prim, self.model, self.floor_height = prim, model, floor_height
        self.name = prim.prim_path
        self.body = human_body(_leaf(prim.prim_path))

    def vertices(self, t: float) -> np.ndarray:
        """Posed vertices at simulation time `t`, package frame."""
        return self.model.posed(int(self.model.frame(self.prim.schedule, t)))

    def render_mesh(self, instance_id: int, semantic_id: int) -> RenderMesh:
        mesh = self.model.mesh
        return RenderMesh(self.name, self.vertices(0.0), mesh.faces, instance_id, semantic_id, mesh.material, mesh.uvs,
                          self.prim.pose, smooth=True)

    def state(self, t: float, next_t: float | None = None) -> MeshState:
        return MeshState(vertices=self.vertices(t), next_vertices=None if next_t is None else self.vertices(next_t))

    def body_poses(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Capsule positions (T, 3) on the floor under the root joint, and orientations (T, 4 w x y z)."""
        roots = self.model.roots[self.model.frame(self.prim.schedule, times)]
        pose = self.prim.pose
        positions = roots @ pose[:3, :3].T + pose[:3, 3]
        positions[:, 2] = self.floor_height
        quat = matrix_to_quat_wxyz(pose[:3, :3])
        return positions, np.broadcast_to(quat, (len(positions), 4))


def object_parts(package: Path, texture: TextureLoader) -> tuple[list[Part], str | None]:
    """An object package's meshes in its own frame, and its semantic label (that of its first labelled mesh)."""
    meshes = [m for m in read_meshes(package / PACKAGE_STAGE) if len(m.faces)]
    parts = [Part(m.prim_path, m.vertices, m.faces, m.base_color, texture(m.texture) if m.texture else None, m.uvs,
                  m.roughness) for m in meshes]
    return parts, next((m.semantic_label for m in meshes if m.semantic_label), None)


class ObjectTrack:
    """One flying object: a rigid mesh on its placement motion."""

    def __init__(self, prim: SceneObject, mesh: MergedMesh, vertices: np.ndarray, label: str | None):
        self.prim, self.mesh, self.vertices, self.label = prim, mesh, vertices, label
        self.name = prim.prim_path
        self.body: KinematicBody = object_body(_leaf(prim.prim_path), prim.package)

    def body_poses(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions (T, 3) and orientations (T, 4 w x y z) of the package frame."""
        return flying_pose(self.prim.motion, times)

    def pose(self, t: float) -> np.ndarray:
        """World <- package frame at simulation time `t`."""
        positions, quats = flying_pose(self.prim.motion, t)
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = quat_wxyz_to_matrix(quats[0]), positions[0]
        return pose

    def render_mesh(self, instance_id: int, semantic_id: int) -> RenderMesh:
        return RenderMesh(self.name, self.vertices, self.mesh.faces, instance_id, semantic_id, self.mesh.material,
                          self.mesh.uvs, self.pose(0.0))

    def state(self, t: float, next_t: float | None = None) -> MeshState:
        return MeshState(pose=self.pose(t), next_pose=None if next_t is None else self.pose(next_t))

"""Posing an animation without USD: joint world transforms and linear blend skinning."""

from __future__ import annotations

import numpy as np

from core.assets.parts import Animation, SkinnedMesh
from core.geometry import forward_kinematics


def joint_world_transforms(anim: Animation) -> np.ndarray:
    """(N, J, 4, 4) world transforms of every joint in every frame."""
    return forward_kinematics(anim.parents, anim.local_rotations, anim.local_translations)


def skin_vertices(mesh: SkinnedMesh, joint_world: np.ndarray, bind_world: np.ndarray) -> np.ndarray:
    """Linear blend skinning of one frame: v' = sum_k w_k G_jk inv(B_jk) v."""
    skinning = joint_world @ np.linalg.inv(bind_world)  # (J, 4, 4)
    per_vertex = np.einsum("vk,vkij->vij", mesh.joint_weights, skinning[mesh.joint_indices])
    return np.einsum("vij,vj->vi", per_vertex[:, :3, :3], mesh.rest_vertices) + per_vertex[:, :3, 3]


def posed_meshes(anim: Animation, frame: int, world: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(vertices, faces) of every mesh of the animation at `frame`."""
    world = joint_world_transforms(anim) if world is None else world
    out = [(skin_vertices(m, world[frame], anim.bind_world), m.faces) for m in anim.skinned]
    out += [(c.points[frame], c.faces) for c in anim.point_caches]
    return out

"""In-memory pieces every converter produces and every package writer consumes.

Arrays use the world convention of architecture.md §3 (Z up, metres). Transforms are 4x4 matrices acting
on column vectors (p' = M @ p); the USD writer transposes them to USD's row-vector convention.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Material:
    """A UsdPreviewSurface-style material: a base colour or a texture, plus roughness."""

    name: str
    base_color: tuple[float, float, float] = (0.7, 0.7, 0.7)
    texture: Path | None = None  # image file; copied into the package's textures/
    roughness: float = 0.6
    metallic: float = 0.0


@dataclass
class SceneMesh:
    """One static triangle mesh with its semantic label (environment piece or object)."""

    name: str
    vertices: np.ndarray  # (V, 3) float
    faces: np.ndarray  # (F, 3) int
    semantic_label: str
    category: str = "furniture"  # architecture | furniture | object | human
    material: Material = field(default_factory=lambda: Material("default"))
    uvs: np.ndarray | None = None  # (V, 2), per vertex
    is_floor: bool = False

    def __post_init__(self) -> None:
        self.vertices = np.asarray(self.vertices, dtype=np.float64).reshape(-1, 3)
        self.faces = np.asarray(self.faces, dtype=np.int64).reshape(-1, 3)
        if self.uvs is not None:
            self.uvs = np.asarray(self.uvs, dtype=np.float64).reshape(-1, 2)


@dataclass
class Light:
    """A point-like (sphere) light; intensity in USD's nits-like units, colour linear RGB."""

    name: str
    position: tuple[float, float, float]
    intensity: float = 30000.0
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)
    radius: float = 0.05


@dataclass
class DistantLight:
    """A light at infinity (the sun): `direction` is the unit vector from the scene towards it, `intensity`
    the illuminance on a surface facing it (USD DistantLight units, the scale of a sphere light's
    luminance times its disc's solid angle), colour linear RGB, `angle` its apparent diameter (deg)."""

    name: str
    direction: tuple[float, float, float]
    intensity: float = 50.0
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)
    angle: float = 0.53


@dataclass
class SkinnedMesh:
    """A mesh deformed by linear blend skinning of a skeleton."""

    name: str
    rest_vertices: np.ndarray  # (V, 3) in the skeleton's bind pose
    faces: np.ndarray  # (F, 3)
    joint_indices: np.ndarray  # (V, K) int
    joint_weights: np.ndarray  # (V, K) float, rows sum to 1
    material: Material = field(default_factory=lambda: Material("skin"))
    uvs: np.ndarray | None = None


@dataclass
class PointCacheMesh:
    """A mesh whose vertices are given per frame (clothes, or a skinned body baked to points)."""

    name: str
    points: np.ndarray  # (N_frames, V, 3)
    faces: np.ndarray  # (F, 3)
    material: Material = field(default_factory=lambda: Material("cloth"))
    uvs: np.ndarray | None = None


@dataclass
class Animation:
    """A skeleton animation with the meshes it drives, sampled at `fps`.

    `bind_world` are the joints' world transforms in the bind pose; `local_rotations` (w, x, y, z)
    and `local_translations` are each joint's transform relative to its parent, per frame.
    """

    name: str
    fps: float
    joint_names: list[str]
    parents: np.ndarray  # (J,) int, -1 for the root; parents come before children
    bind_world: np.ndarray  # (J, 4, 4)
    local_rotations: np.ndarray  # (N, J, 4) w, x, y, z
    local_translations: np.ndarray  # (N, J, 3)
    skinned: list[SkinnedMesh] = field(default_factory=list)
    point_caches: list[PointCacheMesh] = field(default_factory=list)
    semantic_label: str = "human"
    motions: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> [first, last] frame

    @property
    def frame_count(self) -> int:
        return int(self.local_rotations.shape[0])

"""The render scene: materials, meshes with instance/semantic ids, point and directional lights, per-frame
geometry.

One Embree scene holds every mesh: the static meshes as one geometry (id 0) whose BVH is built once, and
each dynamic mesh (rigidly moving or deforming) as its own geometry, updated in place every frame from
its `MeshState`; Embree then rebuilds only the dynamic geometries' BVHs, so the static acceleration
structure is never rebuilt and one ray query sees both kinds.
Colours are linear RGB in [0, 1]; textures are sRGB-encoded 8-bit images.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from embreex.rtcore_scene import EmbreeScene

from core.assets import parts
from core.config import DEFAULT_SKY
from core.errors import InputError
from simulation.render import kernels
from simulation.render.background import EnvironmentMap
from simulation.render.camera import linear_map
from simulation.render.embree import BUILD_QUALITY_HIGH, BUILD_QUALITY_MEDIUM, SharedScene
from simulation.render.irradiance import ProbeCache, StaticScene, mean_albedo
from simulation.render.raycast import drain
from simulation.render.shading import (
    TEXTURE_FILTERS,
    MipMaps,
    TexturePool,
    ggx_alpha,
    load_texture,
    specular_lobe,
    srgb_to_linear,
)

MAX_ID = np.iinfo(np.uint16).max  # instance and semantic images are uint16 (architecture.md §2)
DEFAULT_AMBIENT = (0.08, 0.08, 0.08)
DEFAULT_BACKGROUND = DEFAULT_SKY  # what rays that leave the scene see (linear RGB)
# parts.Light intensities are USD sphere-light luminances; the render light's intensity is the
# irradiance (display units) at 1 m, so a 30000-nit, 5 cm light gives ~0.8 at 3 m on white.
DEFAULT_EXPOSURE = 0.03


@dataclass
class RenderMaterial:
    """Base colour or texture (with per-vertex UVs on the mesh), Blinn-Phong roughness, metallic."""

    base_color: tuple[float, float, float] = (0.7, 0.7, 0.7)
    texture: np.ndarray | None = None  # (H, W, 3 or 4) uint8, sRGB
    roughness: float = 0.6
    metallic: float = 0.0
    texture_filter: str = "bilinear"  # or "nearest"; wrap mode is repeat

    def __post_init__(self) -> None:
        color = np.asarray(self.base_color, dtype=np.float64)
        if color.shape != (3,) or not np.all(np.isfinite(color)) or color.min() < 0:
            raise InputError(f"must be 3 non-negative numbers, got {self.base_color!r}", "material", "base_color")
        if not 0 <= self.roughness <= 1 or not 0 <= self.metallic <= 1:
            raise InputError("roughness and metallic must be in [0, 1]", "material", "roughness/metallic")
        if self.texture_filter not in TEXTURE_FILTERS:
            raise InputError(f"must be one of {TEXTURE_FILTERS}, got {self.texture_filter!r}", "material",
                             "texture_filter")
        if self.texture is not None:
            tex = np.asarray(self.texture)
            if tex.dtype != np.uint8 or tex.ndim != 3 or tex.shape[2] not in (3, 4) or min(tex.shape[:2]) < 1:
                raise InputError(f"must be an (H, W, 3|4) uint8 image, got {tex.dtype} {tex.shape}", "material",
                                 "texture")
            self.texture = tex[..., :3]

    @cached_property
    def texture_linear(self) -> np.ndarray | None:
        """The texture in linear RGB as channel rows (3, H, W)."""
        return None if self.texture is None else np.ascontiguousarray(srgb_to_linear(self.texture).transpose(2, 0, 1))


def material_from_part(material: parts.Material) -> RenderMaterial:
    texture = load_texture(material.texture) if material.texture is not None else None
    return RenderMaterial(tuple(material.base_color), texture, material.roughness, material.metallic)


@dataclass(frozen=True)
class PointLight:
    """A light at `position`; `intensity` is the irradiance (display units) at 1 m. A light of `radius` 0
    is a point, falling off with 1 / d^2; a light of radius r is a small sphere seen as one point whose
    falloff 1 / (d^2 + r^2) stays finite next to it (a surface touching a 5 cm bulb gets 400 x its
    irradiance at 1 m, not an unbounded hotspot)."""

    position: tuple[float, float, float]
    intensity: float = 1.0
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)
    radius: float = field(default=0.0, kw_only=True)

    def __post_init__(self) -> None:
        if np.asarray(self.position, dtype=np.float64).shape != (3,) or not np.all(np.isfinite(self.position)):
            raise InputError(f"must be 3 finite numbers, got {self.position!r}", "light", "position")
        if not self.intensity >= 0:
            raise InputError(f"must be >= 0, got {self.intensity}", "light", "intensity")
        if np.asarray(self.color).shape != (3,) or min(self.color) < 0:
            raise InputError(f"must be 3 non-negative numbers, got {self.color!r}", "light", "color")
        if not self.radius >= 0:
            raise InputError(f"must be >= 0, got {self.radius}", "light", "radius")


@dataclass(frozen=True)
class DirectionalLight:
    """A light at infinity (the sun): parallel rays arriving from `direction`, the unit vector from the scene
    towards the light (normalised here); `intensity` is the irradiance (display units) on a surface facing
    it, at any distance (no falloff). Its shadow rays run towards it, unbounded."""

    direction: tuple[float, float, float]
    intensity: float = 1.0
    color: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def __post_init__(self) -> None:
        direction = np.asarray(self.direction, dtype=np.float64)
        if direction.shape != (3,) or not np.all(np.isfinite(direction)) or not np.linalg.norm(direction) > 0:
            raise InputError(f"must be 3 finite numbers, not all 0, got {self.direction!r}", "light", "direction")
        object.__setattr__(self, "direction", tuple((direction / np.linalg.norm(direction)).tolist()))
        if not self.intensity >= 0:
            raise InputError(f"must be >= 0, got {self.intensity}", "light", "intensity")
        if np.asarray(self.color).shape != (3,) or min(self.color) < 0:
            raise InputError(f"must be 3 non-negative numbers, got {self.color!r}", "light", "color")


RenderLight = PointLight | DirectionalLight


def light_from_part(light: parts.Light | parts.DistantLight, exposure: float = DEFAULT_EXPOSURE) -> RenderLight:
    """A USD-style sphere light (luminance, radius) as a light of the same radiant intensity and radius; a
    distant light (illuminance) as a directional light of that irradiance, on the same scale."""
    if isinstance(light, parts.DistantLight):
        return DirectionalLight(tuple(light.direction), light.intensity * exposure, tuple(light.color))
    return PointLight(tuple(light.position), light.intensity * np.pi * light.radius**2 * exposure, tuple(light.color),
                      radius=light.radius)


@dataclass
class RenderMesh:
    """A triangle mesh in its local frame, placed by `pose` (local->world), with ids and material.

    Static meshes keep their pose; a dynamic mesh's `pose` and `vertices` are its rest state, replaced
    per frame by a `MeshState`. Faces are counter-clockwise seen from outside (outward normals).
    """

    name: str
    vertices: np.ndarray  # (V, 3)
    faces: np.ndarray  # (F, 3)
    instance_id: int
    semantic_id: int = 0
    material: RenderMaterial = field(default_factory=RenderMaterial)
    uvs: np.ndarray | None = None  # (V, 2)
    pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    smooth: bool = False  # shade and report normals interpolated from vertex normals

    def __post_init__(self) -> None:
        where = f"mesh {self.name!r}"
        self.vertices = check_vertices(self.vertices, where, "vertices")
        faces = np.asarray(self.faces)
        if faces.ndim != 2 or faces.shape[1] != 3 or len(faces) == 0 or not np.issubdtype(faces.dtype, np.integer):
            raise InputError(f"must be a non-empty (F, 3) integer array, got {faces.dtype} {faces.shape}", where,
                             "faces")
        if faces.min() < 0 or faces.max() >= len(self.vertices):
            raise InputError(f"indices must be in [0, {len(self.vertices)}), got [{faces.min()}, {faces.max()}]",
                             where, "faces")
        self.faces = faces.astype(np.int64)
        corners = self.vertices[self.faces]
        if not np.any(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])):
            raise InputError("degenerate mesh: every triangle has zero area", where, "faces")
        if not 1 <= self.instance_id <= MAX_ID:
            raise InputError(f"must be in [1, {MAX_ID}] (0 is background), got {self.instance_id}", where,
                             "instance_id")
        if not 0 <= self.semantic_id <= MAX_ID:
            raise InputError(f"must be in [0, {MAX_ID}], got {self.semantic_id}", where, "semantic_id")
        if self.uvs is not None:
            uvs = np.asarray(self.uvs, dtype=np.float64)
            if uvs.shape != (len(self.vertices), 2) or not np.all(np.isfinite(uvs)):
                raise InputError(f"must be finite with shape ({len(self.vertices)}, 2), got {uvs.shape}", where, "uvs")
            self.uvs = uvs
        elif self.material.texture is not None:
            raise InputError("a textured material needs per-vertex uvs", where, "uvs")
        self.pose = check_transform(self.pose, where, "pose")


def mesh_from_part(mesh: parts.SceneMesh, instance_id: int, semantic_id: int = 0,
                   pose: np.ndarray | None = None) -> RenderMesh:
    return RenderMesh(mesh.name, mesh.vertices, mesh.faces, instance_id, semantic_id,
                      material_from_part(mesh.material), mesh.uvs, np.eye(4) if pose is None else pose)


@dataclass
class MeshState:
    """One frame of a dynamic mesh: local vertices and/or pose; None keeps the rest value.

    `next_*` describe the following frame, used only for optical flow (None: same as this frame).
    """

    vertices: np.ndarray | None = None
    pose: np.ndarray | None = None
    next_vertices: np.ndarray | None = None
    next_pose: np.ndarray | None = None


def check_vertices(vertices: np.ndarray, where: str, name: str, count: int | None = None) -> np.ndarray:
    vertices = np.asarray(vertices, dtype=np.float64)
    if vertices.ndim != 2 or vertices.shape[1] != 3 or len(vertices) == 0 or not np.all(np.isfinite(vertices)):
        raise InputError(f"must be a finite, non-empty (V, 3) array, got shape {vertices.shape}", where, name)
    if count is not None and len(vertices) != count:
        raise InputError(f"must have {count} vertices like the mesh, got {len(vertices)}", where, name)
    return vertices


def closed_edges(faces: np.ndarray) -> np.ndarray | None:
    """The edges of a closed, consistently wound surface as rows (u, v, f, g): face f runs along the edge
    from vertex u to v and face g from v to u. None unless every edge joins exactly two faces that way."""
    faces = np.asarray(faces, dtype=np.int64)
    if np.any((faces[:, 0] == faces[:, 1]) | (faces[:, 1] == faces[:, 2]) | (faces[:, 2] == faces[:, 0])):
        return None
    directed = faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    scale = int(directed.max()) + 1
    key = directed[:, 0] * scale + directed[:, 1]
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    reverse = directed[:, 1] * scale + directed[:, 0]
    found = np.minimum(np.searchsorted(sorted_key, reverse), len(key) - 1)
    if np.any(sorted_key[1:] == sorted_key[:-1]) or not np.array_equal(sorted_key[found], reverse):
        return None
    first = directed[:, 0] < directed[:, 1]
    face = np.repeat(np.arange(len(faces)), 3)
    return np.stack([directed[first, 0], directed[first, 1], face[first], face[order[found[first]]]], axis=1)


def check_transform(pose: np.ndarray, where: str, name: str) -> np.ndarray:
    pose = np.asarray(pose, dtype=np.float64)
    if pose.shape != (4, 4) or not np.all(np.isfinite(pose)):
        raise InputError(f"must be a finite 4x4 matrix, got shape {pose.shape}", where, name)
    return pose


@dataclass(frozen=True)
class MeshTextures:
    """The textures of a mesh table in one pool, and which one each mesh samples how."""

    pool: TexturePool
    index: np.ndarray  # (M,) intp: each mesh's texture in the pool, -1 for none
    nearest: np.ndarray  # (M,) bool: the mesh's texture filter is "nearest" (else bilinear)


class MeshTable:
    """Several meshes flattened into one vertex/face numbering, with per-mesh attributes as arrays.

    Per-element attributes are stored as rows (components, count) so gathers and arithmetic over
    many pixels run along contiguous rows.
    """

    def __init__(self, meshes: Sequence[RenderMesh]):
        self.meshes = list(meshes)
        vertex_counts = [len(m.vertices) for m in self.meshes]
        face_counts = [len(m.faces) for m in self.meshes]
        self.vertex_offsets = np.concatenate([[0], np.cumsum(vertex_counts)]).astype(np.int64)
        self.face_offsets = np.concatenate([[0], np.cumsum(face_counts)]).astype(np.int64)
        self.faces = np.concatenate([m.faces + off for m, off in zip(self.meshes, self.vertex_offsets)])
        self.corners = np.ascontiguousarray(self.faces.T, dtype=np.intp)  # (3, F)
        self.face_mesh = np.repeat(np.arange(len(self.meshes), dtype=np.intp), face_counts)
        self.uvs = np.concatenate([m.uvs if m.uvs is not None else np.zeros((len(m.vertices), 2))
                                   for m in self.meshes]).T.astype(np.float32)  # (2, V)
        self.instance_ids = np.array([m.instance_id for m in self.meshes], dtype=np.uint16)
        self.semantic_ids = np.array([m.semantic_id for m in self.meshes], dtype=np.uint16)
        self.base_color = np.array([m.material.base_color for m in self.meshes], dtype=np.float32).T  # (3, M)
        self.base_color = np.ascontiguousarray(self.base_color)
        self.exponent, self.lobe_scale = specular_lobe([m.material.roughness for m in self.meshes])
        self.metallic = np.array([m.material.metallic for m in self.meshes], dtype=np.float32)
        self.alpha = ggx_alpha([m.material.roughness for m in self.meshes])
        self.smooth = np.array([m.smooth for m in self.meshes])

    def __len__(self) -> int:
        return len(self.meshes)

    @cached_property
    def edges(self) -> list[np.ndarray | None]:
        """Per mesh, its edges from `closed_edges` (mesh-local numbering), None for meshes that are not closed."""
        return [closed_edges(m.faces) for m in self.meshes]

    @cached_property
    def corner_uvs(self) -> np.ndarray:
        """(3 corners, 2, F) float32 texture coordinates of each face's corners."""
        return np.stack([np.take(self.uvs, self.corners[k], axis=1) for k in range(3)])

    @cached_property
    def _texture_images(self) -> tuple[list[np.ndarray], np.ndarray]:
        """Each texture image once as linear (3, H, W) (meshes may share one), and each mesh's index among them
        (-1: none)."""
        images, index, seen = [], np.full(len(self.meshes), -1, dtype=np.intp), {}
        for mesh, material in enumerate(m.material for m in self.meshes):
            if material.texture is None:
                continue
            image = material.texture  # materials sharing an image hold views of it, not the array itself
            key = (image.__array_interface__["data"][0], image.shape, image.strides)
            if key not in seen:
                seen[key] = len(images)
                images.append(material.texture_linear)
            index[mesh] = seen[key]
        return images, index

    @cached_property
    def textures(self) -> MeshTextures:
        """The meshes' textures in one pool."""
        images, index = self._texture_images
        nearest = np.array([m.material.texture_filter == "nearest" for m in self.meshes])
        return MeshTextures(TexturePool.of(images), index, nearest)

    @cached_property
    def mip_maps(self) -> MipMaps:
        """The textures' mip-maps, for shading qualities that filter textures by distance (made on first use)."""
        vertices = np.concatenate([m.vertices for m in self.meshes])
        return MipMaps.of(self._texture_images[0], vertices, self.corners, self.uvs)

    def face_slice(self, mesh: int) -> slice:
        return slice(int(self.face_offsets[mesh]), int(self.face_offsets[mesh + 1]))


class Layer:
    """World-space geometry of a mesh table for one frame. Normals and extents are computed on first use,
    so a renderer can hand the vertices to Embree first and derive the rest while rays trace."""

    def __init__(self, table: MeshTable, locals_: Sequence[np.ndarray], poses: np.ndarray,
                 next_world: np.ndarray | None = None):
        """`next_world` (3, V): next-frame vertex positions; for a static layer, its own vertices."""
        self.table = table
        self._locals = locals_
        self._world = _world_rows(locals_, poses)  # (3, V) float64
        self.world_vertices = np.ascontiguousarray(self._world.T, dtype=np.float32)  # (V, 3), as given to Embree
        self.next_world_vertices = next_world  # (3, V) float64 next-frame positions, when flow is wanted
        self.poses = np.asarray(poses, dtype=np.float64)  # (M, 4, 4) local->world

    @cached_property
    def vertex_normals(self) -> np.ndarray | None:
        """(3, V) float32 area-weighted vertex normals, when any mesh is smooth."""
        if not self.table.smooth.any():
            return None
        return kernels.vertex_normals(self._world, self.table.corners)

    @cached_property
    def mesh_corners(self) -> np.ndarray:
        """(M, 8, 3) float64 corners of each mesh's world bounding box (of its float32 vertices, as traced)."""
        starts = self.table.vertex_offsets[:-1]
        vertices = self.world_vertices.astype(np.float64)
        lo, hi = np.minimum.reduceat(vertices, starts), np.maximum.reduceat(vertices, starts)
        pick = np.array([[i >> 2 & 1, i >> 1 & 1, i & 1] for i in range(8)], bool)  # corner i takes hi where set
        return np.where(pick[None], hi[:, None], lo[:, None])

    @cached_property
    def local_min(self) -> np.ndarray:
        """(M, 3) local-frame extents."""
        return np.array([v.min(axis=0) for v in self._locals])

    @cached_property
    def local_max(self) -> np.ndarray:
        return np.array([v.max(axis=0) for v in self._locals])


@dataclass(frozen=True)
class FrameGeometry:
    """One frame's per-vertex arrays over static and dynamic meshes (RenderScene.table order)."""

    vertex_normals: np.ndarray | None  # (3, V) float32 when any mesh is smooth
    next_world_vertices: np.ndarray | None  # (3, V) float64 when flow was asked for


def _world_rows(locals_: Sequence[np.ndarray], poses: Sequence[np.ndarray]) -> np.ndarray:
    """Local (V_i, 3) vertex arrays placed by their poses, concatenated as rows (3, V) float64."""
    return np.concatenate([linear_map(local.T, pose[:3, :3], pose[:3, 3]) for local, pose in zip(locals_, poses)],
                          axis=1)


class RenderScene:
    """Static meshes (BVH built once), dynamic meshes (updated per frame), lights, ambient, background.

    Rays that hit nothing see the `environment` image where one is set (background.py), else the
    `background` colour. `lights`, `ambient`, `background` and `environment` are plain attributes:
    change them between frames at will.
    Each Embree scene (a `buffer`) holds one frame's dynamic geometry at a time: frames rendered from several
    threads at once each need a buffer of their own.
    """

    def __init__(self, static_meshes: Sequence[RenderMesh], dynamic_meshes: Sequence[RenderMesh] = (),
                 lights: Sequence[RenderLight] = (), ambient: tuple[float, float, float] = DEFAULT_AMBIENT,
                 background: tuple[float, float, float] = DEFAULT_BACKGROUND,
                 environment: EnvironmentMap | None = None):
        meshes = [*static_meshes, *dynamic_meshes]
        if not meshes:
            raise InputError("a render scene needs at least one mesh", "scene", "meshes")
        for key in ("name", "instance_id"):
            duplicates = sorted((v for v, n in Counter(getattr(m, key) for m in meshes).items() if n > 1), key=str)
            if duplicates:
                raise InputError(f"must be unique across meshes, repeated: {duplicates}", "scene", key)
        self.lights = list(lights)
        self.ambient = np.asarray(ambient, dtype=np.float32)
        self.background = np.asarray(background, dtype=np.float32)
        self.environment = environment
        self.probe_cache = ProbeCache()  # indirect light of the shading qualities that use probes
        self.static_table = MeshTable(static_meshes) if static_meshes else None
        self.dynamic_table = MeshTable(dynamic_meshes) if dynamic_meshes else None
        # Static then dynamic meshes under one numbering: a frame's hits index faces, vertices and meshes here.
        self.table = MeshTable(meshes)
        # Made once here, before tile workers shade in parallel.
        self.textures, self.corner_uvs = self.table.textures, self.table.corner_uvs
        self.first_dynamic_face = 0 if self.static_table is None else len(self.static_table.faces)
        self.static = None
        if self.static_table is not None:
            locals_, poses = [m.vertices for m in static_meshes], np.stack([m.pose for m in static_meshes])
            self.static = Layer(self.static_table, locals_, poses, _world_rows(locals_, poses))
        self._rest = None if self.dynamic_table is None else Layer(
            self.dynamic_table, [m.vertices for m in dynamic_meshes], np.stack([m.pose for m in dynamic_meshes]))
        self._buffers: list[SharedScene] = []
        self._buffer_lock = threading.Lock()
        self._last_buffer = 0
        first_faces = self._add_buffer()
        # Table face of a hit = geometry_faces[geomID] + primID.
        self.geometry_faces = np.array([first_faces[g] for g in range(len(first_faces))], dtype=np.intp)
        # instance id -> (is dynamic, mesh index in its table)
        self.instance_lookup = {m.instance_id: (False, i) for i, m in enumerate(static_meshes)}
        self.instance_lookup.update({m.instance_id: (True, i) for i, m in enumerate(dynamic_meshes)})

    def _add_buffer(self) -> dict[int, int]:
        """One more Embree scene holding every mesh (the dynamic ones at rest); geometry id -> its first face in
        `table` (the same ids in every buffer)."""
        shared = SharedScene(dynamic=self.dynamic_table is not None)
        first_faces = {}
        if self.static is not None:
            first_faces[shared.add(self.static.world_vertices, self.static_table.faces, BUILD_QUALITY_HIGH)] = 0
        self._dynamic_geometry = []  # geometry id of each dynamic mesh, the same in every buffer
        for mesh in range(len(self.dynamic_table) if self.dynamic_table is not None else 0):
            vertices, faces = self._dynamic_slices(self._rest, mesh)
            # Rebuilt every frame: a medium-quality BVH costs ~0.2 ms more per 3k-triangle human than a
            # low-quality one, and saves more than that in camera rays when people fill the view.
            geometry = shared.add(vertices, faces, BUILD_QUALITY_MEDIUM)
            self._dynamic_geometry.append(geometry)
            first_faces[geometry] = self.first_dynamic_face + int(self.dynamic_table.face_offsets[mesh])
        shared.commit()
        self._buffers.append(shared)
        return first_faces

    def static_scene(self) -> StaticScene | None:
        """The static meshes as the irradiance probes see them (None without static meshes)."""
        if self.static is None:
            return None
        table, textures = self.static_table, self.static_table.textures
        albedo = mean_albedo(table.base_color, textures.index, textures.pool.texels, textures.pool.first,
                             textures.pool.width, textures.pool.height)
        background = self.background if self.environment is None else self.environment.texels.mean(axis=(1, 2))
        return StaticScene(self.static.world_vertices, table.faces, albedo[table.face_mesh],
                           np.asarray(background, np.float32))

    def embree_of(self, buffer: int) -> EmbreeScene:
        """The Embree scene of `buffer` (see set_frame), made on first use."""
        with self._buffer_lock:
            while len(self._buffers) <= buffer:
                self._add_buffer()
            return self._buffers[buffer].embree

    @property
    def embree(self) -> EmbreeScene:
        """The Embree scene of the last frame set (set_frame), which rays are traced against."""
        return self.embree_of(self._last_buffer)

    def _dynamic_slices(self, layer: Layer, mesh: int) -> tuple[np.ndarray, np.ndarray]:
        """World vertices and mesh-local faces of dynamic mesh `mesh` in `layer`."""
        table = self.dynamic_table
        first, last = table.vertex_offsets[mesh], table.vertex_offsets[mesh + 1]
        return layer.world_vertices[first:last], table.faces[table.face_slice(mesh)] - first

    def instances(self) -> dict[int, dict]:
        """instance id -> name, semantic id, and whether the mesh is dynamic (instances.json)."""
        out = {}
        for table, dynamic in ((self.static_table, False), (self.dynamic_table, True)):
            for mesh in table.meshes if table is not None else ():
                out[mesh.instance_id] = {"name": mesh.name, "semantic_id": mesh.semantic_id, "dynamic": dynamic}
        return dict(sorted(out.items()))

    def set_frame(self, states: Mapping[str, MeshState] | None, with_next: bool = False,
                  buffer: int = 0) -> Layer | None:
        """Pose the dynamic meshes for one frame (meshes without a state keep their rest vertices and pose):
        updates their Embree geometry in `buffer` (embree_of(buffer) traces this frame; with two buffers a
        frame can be posed while the one before still traces in the other) and returns their layer."""
        self._last_buffer = buffer
        table = self.dynamic_table
        if table is None:
            return None
        states = states or {}
        unknown = sorted(set(states) - {m.name for m in table.meshes})
        if unknown:
            raise InputError(f"no dynamic mesh named {unknown}", "frame state", "states")
        locals_, poses, next_locals, next_poses = [], [], [], []
        for mesh in table.meshes:
            state = states.get(mesh.name, MeshState())
            where = f"state of {mesh.name!r}"
            local = mesh.vertices if state.vertices is None else check_vertices(state.vertices, where, "vertices",
                                                                              len(mesh.vertices))
            pose = mesh.pose if state.pose is None else check_transform(state.pose, where, "pose")
            locals_.append(local)
            poses.append(pose)
            if with_next:
                next_locals.append(local if state.next_vertices is None else check_vertices(
                    state.next_vertices, where, "next_vertices", len(mesh.vertices)))
                next_poses.append(pose if state.next_pose is None else check_transform(state.next_pose, where,
                                                                                       "next_pose"))
        next_world = _world_rows(next_locals, next_poses) if with_next else None
        layer = Layer(table, locals_, np.stack(poses), next_world)
        drain()
        self.embree_of(buffer)
        shared = self._buffers[buffer]
        for mesh, geometry in enumerate(self._dynamic_geometry):
            shared.set_vertices(geometry, self._dynamic_slices(layer, mesh)[0])
        shared.commit()
        return layer

    def frame_geometry(self, dynamic: Layer | None, with_next: bool = False) -> FrameGeometry:
        """Per-frame arrays of both layers in `table`'s numbering (static first)."""
        layers = [layer for layer in (self.static, dynamic) if layer is not None]

        def join(arrays: list[np.ndarray]) -> np.ndarray:
            return arrays[0] if len(arrays) == 1 else np.concatenate(arrays, axis=1)

        vertex_normals = None
        if self.table.smooth.any():
            vertex_normals = join([layer.vertex_normals if layer.vertex_normals is not None
                                   else np.zeros((3, len(layer.world_vertices)), np.float32) for layer in layers])
        return FrameGeometry(
            vertex_normals=vertex_normals,
            next_world_vertices=join([layer.next_world_vertices for layer in layers]) if with_next else None,
        )

"""Indirect light from a grid of irradiance probes over the static scene, baked once per scene.

The ray caster's flat ambient term leaves every surface that no light reaches the same grey; a path tracer lights
it with what the lit surfaces around it reflect. The probes bring that back at almost no cost per frame: each
probe, at a cell centre of a regular grid over the static meshes' bounds, sends `rays` directions of a Fibonacci
sphere (turned by the golden angle from probe to probe, so neighbours sample between each other's directions)
into the static meshes; each hit reflects its mesh's mean albedo times the direct irradiance it receives from each
light (with a shadow ray), and rays that leave the scene see the background. The radiance seen is projected onto
an ambient cube (irradiance towards +x, -x, +y, -y, +z, -z: E(n) = sum over axes of n_axis^2 E(+-axis)). Further
`bounces` let the hits reflect the probes' own indirect light too. Everything is kept per light (at unit
intensity and white colour) plus one term for the background, so that a frame with other light intensities or
colours (domain randomization) only re-weights the cubes.

At a shading point the eight probes around it are blended trilinearly, leaving out probes behind the surface (they
may stand on the far side of a wall) and probes that see mostly back faces (they stand inside furniture or walls).
Moving meshes (people, flying objects) neither block nor reflect the probes' light: it is the static scene's.

Units follow the shading loop: a surface of albedo a under irradiance E shows a E, so the ambient cube holds
(1 / pi) of the cosine-weighted integral of the radiance (a white surface under a uniform sky of radiance L
shows L).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from core.jit_cache import flush_stale_caches
from simulation.render.embree import BUILD_QUALITY_HIGH, SharedScene
from simulation.render.raycast import intersect, trace_occlusion

AXES = 6  # +x, -x, +y, -y, +z, -z
# A probe whose rays meet back faces more often than this stands inside something closed: it is not used.
MAX_BACK_FACE_SHARE = 0.25
_GOLDEN_ANGLE = math.pi * (3.0 - math.sqrt(5.0))
_BIAS = np.float32(1e-3)  # m: shadow rays from a hit start this far off its surface
_SUN_REACH = np.float32(1e9)
_POINT, _DIRECTIONAL = 0, 1
# Blending: a probe more than this share of the spacing behind the surface's tangent plane is left out, and a probe
# kept weighs at least _MIN_WEIGHT (of the trilinear weights' sum of 1).
_BEHIND = 0.1
_MIN_WEIGHT = 1e-4


@dataclass(frozen=True)
class ProbeSettings:
    """How the probe grid is baked."""

    spacing: float = 0.25  # m between probes (coarser where the grid would exceed max_probes)
    rays: int = 128  # per probe
    bounces: int = 3  # 1: light reflected once; each more lets the probes' own indirect light bounce again
    max_probes: int = 40_000


@dataclass(frozen=True)
class ProbeGrid:
    """Ambient cubes of irradiance on a regular grid, per light at unit intensity and white colour, the background's
    last; `valid` marks the probes that may be blended."""

    origin: np.ndarray  # (3,) float64: the first probe's position
    spacing: float
    cubes: np.ndarray  # (L + 1, nx, ny, nz, AXES, 3) float32
    valid: np.ndarray  # (nx, ny, nz) bool

    def combined(self, intensities: np.ndarray, colors: np.ndarray) -> np.ndarray:
        """The frame's cubes (nx, ny, nz, AXES, 3) float32: each light's times its intensity and colour (L, 3),
        plus the background's."""
        weights = np.concatenate([np.asarray(intensities, np.float32)[:, None] * np.asarray(colors, np.float32),
                                  np.ones((1, 3), np.float32)])
        return np.ascontiguousarray(np.einsum("lxyzac,lc->xyzac", self.cubes, weights), np.float32)


class StaticScene(NamedTuple):
    """What the probes see: the static meshes and the radiance of rays that leave them."""

    vertices: np.ndarray  # (V, 3) float32, world
    faces: np.ndarray  # (F, 3)
    face_albedo: np.ndarray  # (F, 3) float32: the mean albedo of each face's mesh (mean_albedo)
    background: np.ndarray  # (3,) linear radiance


@dataclass(frozen=True)
class FrameProbes:
    """What the shading loop reads of a frame's probes (irradiance_at)."""

    cubes: np.ndarray  # (nx, ny, nz, AXES, 3) float32: the frame's lights combined
    valid: np.ndarray  # (nx, ny, nz) bool
    origin: np.ndarray  # (3,) float32
    spacing: np.float32


class ProbeCache:
    """A render scene's probe grid, baked on first use and again only when the lights move or the settings change,
    and its cubes for the last light intensities and colours; safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._baked: tuple[bytes, ProbeGrid] | None = None
        self._frame: tuple[bytes, FrameProbes] | None = None

    def frame(self, static: Callable[[], StaticScene], sky: bytes, kinds: np.ndarray, vectors: np.ndarray,
              radii_squared: np.ndarray, intensities: np.ndarray, colors: np.ndarray,
              settings: ProbeSettings) -> FrameProbes:
        """The frame's probes for the static scene that `static` makes (called only to bake: the static meshes
        never change in a render scene), whose sky is identified by `sky`, and for these lights."""
        where = repr(settings).encode() + sky + b"".join(np.ascontiguousarray(a).tobytes() for a in (
            kinds, vectors, radii_squared))
        weights = where + np.ascontiguousarray(intensities).tobytes() + np.ascontiguousarray(colors).tobytes()
        with self._lock:
            if self._frame is not None and self._frame[0] == weights:
                return self._frame[1]
            if self._baked is None or self._baked[0] != where:
                grid = bake(static(), kinds, vectors, radii_squared, settings)
                self._baked = (where, grid)
            grid = self._baked[1]
            frame = FrameProbes(grid.combined(intensities, colors), grid.valid, grid.origin.astype(np.float32),
                                np.float32(grid.spacing))
            self._frame = (weights, frame)
            return frame


def mean_albedo(base_color: np.ndarray, texture_index: np.ndarray, texels: np.ndarray, first: np.ndarray,
                width: np.ndarray, height: np.ndarray) -> np.ndarray:
    """Each mesh's mean albedo (M, 3): its texture's mean linear colour (shading.TexturePool), or its base colour."""
    out = np.ascontiguousarray(base_color.T, np.float32).copy()
    for mesh, texture in enumerate(texture_index):
        if texture >= 0:
            size = int((width[texture] + 1) * (height[texture] + 1))
            out[mesh] = texels[:, first[texture]:first[texture] + size].mean(axis=1)
    return out


def sphere_directions(count: int) -> np.ndarray:
    """`count` unit vectors (count, 3) of a Fibonacci sphere: equal areas, low discrepancy."""
    k = np.arange(count) + 0.5
    z = 1.0 - 2.0 * k / count
    ring = np.sqrt(np.maximum(1.0 - z * z, 0.0))
    phi = _GOLDEN_ANGLE * k
    return np.stack([ring * np.cos(phi), ring * np.sin(phi), z], axis=1)


def probe_directions(count: int, rays: int) -> np.ndarray:
    """The rays' directions (count * rays, 3) float32 of `count` probes: sphere_directions turned by the golden
    angle from probe to probe."""
    base = sphere_directions(rays)
    turn = _GOLDEN_ANGLE * np.arange(count)[:, None]
    cos, sin = np.cos(turn), np.sin(turn)
    x, y = base[:, 0] * cos - base[:, 1] * sin, base[:, 0] * sin + base[:, 1] * cos
    z = np.broadcast_to(base[:, 2], x.shape)
    return np.stack([x, y, z], axis=-1).reshape(-1, 3).astype(np.float32)


def grid_shape(low: np.ndarray, high: np.ndarray, settings: ProbeSettings) -> tuple[np.ndarray, float, tuple]:
    """First probe, spacing and (nx, ny, nz) of the grid over the box low..high: cell centres `spacing` apart,
    the spacing grown until at most max_probes fit."""
    extent = np.maximum(np.asarray(high, float) - np.asarray(low, float), 1e-6)
    spacing = max(settings.spacing, float(np.cbrt(np.prod(extent) / settings.max_probes)))
    while True:
        shape = tuple(int(n) for n in np.maximum(np.ceil(extent / spacing), 1))
        if np.prod(shape) <= settings.max_probes:
            break
        spacing *= 1.05
    centre = (np.asarray(low, float) + np.asarray(high, float)) / 2
    origin = centre - (np.array(shape) - 1) / 2 * spacing
    return origin, spacing, shape


def bake(static: StaticScene, kinds: np.ndarray, vectors: np.ndarray, radii_squared: np.ndarray,
         settings: ProbeSettings = ProbeSettings()) -> ProbeGrid:
    """The probe grid of the `static` scene lit by lights as rgb.LightArrays gives them (kinds, vectors,
    radii_squared) and by its background."""
    world_vertices, faces, face_albedo, background = static
    low, high = world_vertices.min(axis=0), world_vertices.max(axis=0)
    origin, spacing, shape = grid_shape(low, high, settings)
    scene = SharedScene(dynamic=False)
    scene.add(np.ascontiguousarray(world_vertices, np.float32), np.ascontiguousarray(faces, np.uint32),
              BUILD_QUALITY_HIGH)
    scene.commit()
    probes = _probe_positions(origin, spacing, shape)
    count, rays = len(probes), settings.rays
    directions = probe_directions(count, rays)
    origins = np.repeat(probes.astype(np.float32), rays, axis=0)
    hits = intersect(scene.embree, origins, directions, np.full(len(directions), np.inf, np.float32))
    hit = np.isfinite(hits.t)
    normal = hits.normal / np.maximum(np.linalg.norm(hits.normal, axis=1, keepdims=True), 1e-30)
    facing = np.einsum("ij,ij->i", normal, directions)
    back = hit & (facing > 0)
    valid = (back.reshape(count, rays).mean(axis=1) <= MAX_BACK_FACE_SHARE)
    normal[facing > 0] *= -1  # the side the probe sees
    t = hits.t[hit]
    points = (origins[hit] + directions[hit] * t[:, None]).astype(np.float32)
    normal, albedo = normal[hit], face_albedo[hits.prim[hit]].astype(np.float32)
    del hits, origins
    # Light by light (then the background), so that memory holds one light's radiance at a time: the direct
    # irradiance on the hits a light reaches (few, in a house of many rooms), the cubes of each bounce.
    lit = [_direct(scene, points, normal, kind, vector, radius_squared)
           for kind, vector, radius_squared in zip(kinds, vectors, radii_squared, strict=True)]
    sky = np.zeros((len(directions), 3), np.float32)
    sky[~hit] = np.asarray(background, np.float32)
    grid_valid = valid.reshape(shape)
    cubes = np.empty((len(kinds) + 1, count, AXES, 3), np.float32)
    for source in range(len(kinds) + 1):
        emitted = sky if source == len(kinds) else None
        reflected = np.zeros((len(points), 3), np.float32)
        if emitted is None:
            which, irradiance = lit[source]
            reflected[which] = irradiance[:, None] * albedo[which]
        cubes[source] = _project(_radiance(emitted, hit, reflected), directions, count, rays)
        for _ in range(settings.bounces - 1):
            indirect = _lookup_many(cubes[source].reshape(*shape, AXES, 3), grid_valid, origin, np.float32(spacing),
                                    points, normal)
            cubes[source] = _project(_radiance(emitted, hit, reflected + indirect * albedo), directions, count, rays)
    return ProbeGrid(origin, spacing, cubes.reshape(len(kinds) + 1, *shape, AXES, 3), grid_valid)


def _radiance(emitted: np.ndarray | None, hit: np.ndarray, reflected: np.ndarray) -> np.ndarray:
    """The radiance (rays, 3) each probe ray brings back: `reflected` (hits, 3) where it hits, `emitted` (rays, 3)
    or nothing where it does not."""
    out = np.zeros((len(hit), 3), np.float32) if emitted is None else emitted.copy()
    out[hit] = reflected
    return out


def _probe_positions(origin: np.ndarray, spacing: float, shape: tuple) -> np.ndarray:
    index = np.stack(np.meshgrid(*(np.arange(n) for n in shape), indexing="ij"), axis=-1).reshape(-1, 3)
    return origin + index * spacing


def _direct(scene: SharedScene, points: np.ndarray, normals: np.ndarray, kind: int, vector: np.ndarray,
            radius_squared: float) -> tuple[np.ndarray, np.ndarray]:
    """The points a light at unit intensity reaches on their seen side, unshadowed by the scene, and its
    irradiance there in the shading loop's terms (n.l / (d^2 + r^2) for a point light, n.l for a directional
    one)."""
    lifted = points + normals * _BIAS
    if kind == _DIRECTIONAL:
        to_light = np.broadcast_to(np.asarray(vector, np.float32), points.shape)
        irradiance = np.maximum(normals @ np.asarray(vector, np.float32), 0)
        reach = np.full(len(points), _SUN_REACH, np.float32)
    else:
        to_light = (np.asarray(vector, np.float32) - lifted).astype(np.float32)
        squared = np.einsum("ij,ij->i", to_light, to_light)
        distance = np.sqrt(np.maximum(squared, 1e-12))
        irradiance = np.maximum(np.einsum("ij,ij->i", normals, to_light) / distance, 0) / (squared + radius_squared)
        reach = (1 - 2 * _BIAS / distance).astype(np.float32)
    facing = np.flatnonzero(irradiance > 0)
    blocked = trace_occlusion(scene.embree, np.ascontiguousarray(lifted[facing], np.float32),
                              np.ascontiguousarray(to_light[facing], np.float32), reach[facing])
    which = facing[~blocked]
    return which, irradiance[which].astype(np.float32)


@njit(cache=True, nogil=True)
def _project(radiance, directions, count, rays):
    """Ambient cubes (probes, AXES, 3): (1 / pi) of the cosine-weighted integral of each probe's radiance
    (probes * rays, 3) towards each axis, as the Monte Carlo sum (4 / rays) sum L max(0, w.axis)."""
    out = np.zeros((count, AXES, 3), np.float32)
    scale = np.float32(4.0 / rays)
    for probe in range(count):
        for ray in range(probe * rays, (probe + 1) * rays):
            for axis in range(3):
                w = directions[ray, axis]
                side = 2 * axis if w > 0 else 2 * axis + 1
                for c in range(3):
                    out[probe, side, c] += radiance[ray, c] * abs(w) * scale
    return out


@njit(cache=True, nogil=True, inline="always")
def irradiance_at(cubes, valid, origin, spacing, p0, p1, p2, n0, n1, n2):
    """Indirect irradiance (r, g, b) at point p with unit normal n (on its lit side) from the frame's cubes
    (nx, ny, nz, AXES, 3): the eight probes around p blended trilinearly, those behind the surface or not valid
    left out (0 where none is left)."""
    nx, ny, nz = valid.shape
    gx, gy, gz = (p0 - origin[0]) / spacing, (p1 - origin[1]) / spacing, (p2 - origin[2]) / spacing
    ix, iy, iz = int(np.floor(gx)), int(np.floor(gy)), int(np.floor(gz))
    fx, fy, fz = gx - ix, gy - iy, gz - iz
    # The ambient cube's weights for n: n_axis^2 on the +axis or -axis side.
    wx, wy, wz = n0 * n0, n1 * n1, n2 * n2
    ax = 0 if n0 >= 0 else 1
    ay = 2 if n1 >= 0 else 3
    az = 4 if n2 >= 0 else 5
    r = g = b = 0.0
    total = 0.0
    for corner in range(8):
        cx, cy, cz = ix + (corner & 1), iy + ((corner >> 1) & 1), iz + ((corner >> 2) & 1)
        if cx < 0 or cy < 0 or cz < 0 or cx >= nx or cy >= ny or cz >= nz or not valid[cx, cy, cz]:
            continue
        # Behind the surface: the probe may be on the far side of a wall or floor.
        qx, qy, qz = origin[0] + cx * spacing - p0, origin[1] + cy * spacing - p1, origin[2] + cz * spacing - p2
        if qx * n0 + qy * n1 + qz * n2 < -_BEHIND * spacing:
            continue
        w = (fx if corner & 1 else 1.0 - fx) * (fy if corner & 2 else 1.0 - fy) * (fz if corner & 4 else 1.0 - fz)
        w = max(w, _MIN_WEIGHT)  # a probe on the right side counts even where its trilinear weight vanishes
        total += w
        for c in range(3):
            value = wx * cubes[cx, cy, cz, ax, c] + wy * cubes[cx, cy, cz, ay, c] + wz * cubes[cx, cy, cz, az, c]
            if c == 0:
                r += w * value
            elif c == 1:
                g += w * value
            else:
                b += w * value
    if total <= 0.0:
        return np.float32(0.0), np.float32(0.0), np.float32(0.0)
    return np.float32(r / total), np.float32(g / total), np.float32(b / total)


@njit(cache=True, nogil=True)
def _lookup_many(cubes, valid, origin, spacing, points, normals):
    """irradiance_at for each of the points (N, 3) with unit normals (N, 3): (N, 3) float32."""
    out = np.empty((len(points), 3), np.float32)
    for i in range(len(points)):
        out[i, 0], out[i, 1], out[i, 2] = irradiance_at(cubes, valid, origin, spacing, points[i, 0], points[i, 1],
                                                        points[i, 2], normals[i, 0], normals[i, 1], normals[i, 2])
    return out


flush_stale_caches(__name__)  # see core.jit_cache

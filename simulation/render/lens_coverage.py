"""Which pixels a mesh covers when drawn alone, through a lens other than pinhole: its pixels' own rays traced
against that mesh only.

A lens bends straight edges into curves, which coverage.py's scanline rasteriser cannot draw, so here the
pixels' rays themselves are cast (the same rays, origins on the near plane or sphere and reaches as the frame's
camera rays, camera.ray_table) against an Embree scene holding the one mesh: a pixel is covered when its ray
would hit the mesh with nothing else in the scene. Only the rays that can tell are traced: a pixel that shows
the instance is covered, one whose ray hits nothing in the whole scene cannot hit the mesh alone, and a pixel
whose ray misses every triangle's cone of directions is not covered. The last test runs per block of
BLOCK x BLOCK pixels (after the same tests on coarse blocks of COARSE x COARSE blocks, whose cones hold theirs),
on a cone round the block's rays made once per camera: a block is traced when its cone comes
within reach of the mesh's bounding sphere, then of the bounding sphere of a chunk of CHUNK faces, then of a face's
spherical triangle (the directions from the camera centre that cross the face), each test conservative. Rays and
triangle test are the camera's own (Embree's robust mode), so the result is exact per pixel-centre ray like the
pinhole's rasteriser.

Static meshes' scenes are built once per render scene layer and kept; dynamic meshes' are built per frame, for
the meshes whose instance shows.
"""

from __future__ import annotations

import math
import threading
import weakref
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numba import njit

from core.jit_cache import flush_stale_caches
from simulation.render.camera import Camera, linear_map, ray_table
from simulation.render.embree import BUILD_QUALITY_HIGH, BUILD_QUALITY_MEDIUM, SharedScene
from simulation.render.raycast import trace_occlusion
from simulation.render.scene import Layer

BLOCK = 8  # pixels per block side: the cone tests run per block
COARSE = 4  # blocks per coarse block side: coarse blocks are tested first, then the blocks of those reached
CHUNK = 16  # consecutive faces sharing a bounding sphere, tested before their faces
# Radians added to every cone test: far above the float32 rays' rounding (~1e-7), far below a pixel's angle.
_CONE_MARGIN = 1e-5
_BLOCK_CACHE_SIZE = 8
_static_scenes: weakref.WeakKeyDictionary[Layer, dict[int, SharedScene]] = weakref.WeakKeyDictionary()
_static_lock = threading.Lock()


@dataclass(frozen=True)
class _Blocks:
    """The camera's pixels in square blocks: each block's flat pixel indices (-1 past the image's edge), and the
    axis (unit, optical frame) and half-angle of a cone holding every pixel ray of the block."""

    pixels: np.ndarray  # (B, side * side) int64
    axis: np.ndarray  # (3, B) float64
    half_angle: np.ndarray  # (B,) radians, _CONE_MARGIN included


@lru_cache(maxsize=_BLOCK_CACHE_SIZE)
def _blocks(camera: Camera, side: int) -> _Blocks:
    """Blocks of side x side pixels, row-major over the image's block rows and columns."""
    rows, cols = -(-camera.height // side), -(-camera.width // side)
    v, u = np.mgrid[0:rows * side, 0:cols * side]
    inside = (v < camera.height) & (u < camera.width)
    flat = np.where(inside, v * camera.width + u, -1)
    pixels = flat.reshape(rows, side, cols, side).transpose(0, 2, 1, 3).reshape(rows * cols, side * side)
    local = ray_table(camera, np.eye(4)).local.astype(np.float64)
    directions = np.where(pixels >= 0, 0, np.nan)[None] + local[:, np.maximum(pixels, 0)]  # (3, B, side^2)
    axis = np.nansum(directions, axis=2)
    axis /= np.linalg.norm(axis, axis=0)
    cosine = np.nanmin(np.einsum("kb,kbp->bp", axis, directions), axis=1)
    return _Blocks(pixels, np.ascontiguousarray(axis), np.arccos(np.clip(cosine, -1.0, 1.0)) + _CONE_MARGIN)


@lru_cache(maxsize=_BLOCK_CACHE_SIZE)
def _children(camera: Camera) -> np.ndarray:
    """(coarse blocks, COARSE * COARSE) the blocks in each coarse block, -1 past the image's edge."""
    rows, cols = -(-camera.height // BLOCK), -(-camera.width // BLOCK)
    coarse_rows, coarse_cols = -(-rows // COARSE), -(-cols // COARSE)
    r, c = np.mgrid[0:coarse_rows * COARSE, 0:coarse_cols * COARSE]
    index = np.where((r < rows) & (c < cols), r * cols + c, -1)
    return index.reshape(coarse_rows, COARSE, coarse_cols, COARSE).transpose(0, 2, 1, 3).reshape(
        coarse_rows * coarse_cols, COARSE * COARSE)


def _mesh_scene(layer: Layer, mesh: int, quality: int) -> SharedScene:
    """An Embree scene holding mesh `mesh` of `layer` alone, with the world vertices the frame's scene has."""
    table = layer.table
    first, last = table.vertex_offsets[mesh], table.vertex_offsets[mesh + 1]
    shared = SharedScene(dynamic=False)
    shared.add(layer.world_vertices[first:last], table.faces[table.face_slice(mesh)] - first, quality)
    shared.commit()
    return shared


def _static_scene(layer: Layer, mesh: int) -> SharedScene:
    with _static_lock:
        scenes = _static_scenes.setdefault(layer, {})
        if mesh not in scenes:
            scenes[mesh] = _mesh_scene(layer, mesh, BUILD_QUALITY_HIGH)
        return scenes[mesh]


def _sphere(points: np.ndarray) -> tuple[np.ndarray, float]:
    """A sphere (centre (3,), radius) holding `points` (3, n)."""
    centre = (points.min(axis=1) + points.max(axis=1)) / 2
    return centre, float(np.sqrt(((points - centre[:, None]) ** 2).sum(axis=0)).max())


def _reaches(blocks: _Blocks, centre: np.ndarray, radius: float) -> np.ndarray:
    """Per block, whether its cone may reach the sphere: the angle between the block's axis and the sphere's centre
    is within the block's half-angle plus the sphere's."""
    distance = float(np.linalg.norm(centre))
    if distance <= radius:
        return np.ones(len(blocks.half_angle), dtype=bool)
    cosine = np.clip(centre @ blocks.axis / distance, -1.0, 1.0)
    return np.arccos(cosine) <= math.asin(radius / distance) + blocks.half_angle


@njit(cache=True, nogil=True, inline="always")
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True, nogil=True)
def _within_arc(x0, x1, x2, u0, u1, u2, w0, w1, w2, sin_reach, cos_reach):
    """Whether unit x lies within the reach of the minor great-circle arc between units u and w."""
    if x0 * u0 + x1 * u1 + x2 * u2 >= cos_reach or x0 * w0 + x1 * w1 + x2 * w2 >= cos_reach:
        return True
    n0, n1, n2 = _cross(u0, u1, u2, w0, w1, w2)
    length = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    if length < 1e-12:
        return False
    n0, n1, n2 = n0 / length, n1 / length, n2 / length
    s = x0 * n0 + x1 * n1 + x2 * n2
    if abs(s) > sin_reach:
        return False
    f0, f1, f2 = x0 - s * n0, x1 - s * n1, x2 - s * n2  # x's nearest point on the great circle: on the arc?
    c0, c1, c2 = _cross(u0, u1, u2, f0, f1, f2)
    d0, d1, d2 = _cross(f0, f1, f2, w0, w1, w2)
    return c0 * n0 + c1 * n1 + c2 * n2 >= 0 and d0 * n0 + d1 * n1 + d2 * n2 >= 0


@njit(cache=True, nogil=True)
def _face_within(x0, x1, x2, points, i, j, k, sin_reach, cos_reach):
    """Whether unit x lies within the reach of the spherical triangle of the directions of points[:, i], [:, j],
    [:, k] (the directions that cross that face, seen from the origin): inside it (x a positive combination of
    them), or near an edge."""
    a0, a1, a2 = points[0, i], points[1, i], points[2, i]
    b0, b1, b2 = points[0, j], points[1, j], points[2, j]
    c0, c1, c2 = points[0, k], points[1, k], points[2, k]
    la, lb = math.sqrt(a0 * a0 + a1 * a1 + a2 * a2), math.sqrt(b0 * b0 + b1 * b1 + b2 * b2)
    lc = math.sqrt(c0 * c0 + c1 * c1 + c2 * c2)
    if min(la, lb, lc) < 1e-12:  # a corner at the camera centre: leave the block in
        return True
    a0, a1, a2, b0, b1, b2, c0, c1, c2 = a0 / la, a1 / la, a2 / la, b0 / lb, b1 / lb, b2 / lb, c0 / lc, c1 / lc, c2 / lc
    ab0, ab1, ab2 = _cross(a0, a1, a2, b0, b1, b2)
    bc0, bc1, bc2 = _cross(b0, b1, b2, c0, c1, c2)
    ca0, ca1, ca2 = _cross(c0, c1, c2, a0, a1, a2)
    volume = a0 * bc0 + a1 * bc1 + a2 * bc2
    if volume != 0 and ((x0 * ab0 + x1 * ab1 + x2 * ab2) * volume >= 0 and (x0 * bc0 + x1 * bc1 + x2 * bc2) * volume >= 0
                        and (x0 * ca0 + x1 * ca1 + x2 * ca2) * volume >= 0):
        return True
    return (_within_arc(x0, x1, x2, a0, a1, a2, b0, b1, b2, sin_reach, cos_reach)
            or _within_arc(x0, x1, x2, b0, b1, b2, c0, c1, c2, sin_reach, cos_reach)
            or _within_arc(x0, x1, x2, c0, c1, c2, a0, a1, a2, sin_reach, cos_reach))


@njit(cache=True, nogil=True)
def _blocks_reaching_faces(axis, half_angle, chosen, points, faces, centres, radii, chunk):
    """Per block in `chosen`, whether its cone (axis (3, B), half_angle (B,)) reaches some face (T, 3) of
    `points` (3, V): chunks of `chunk` faces are tested by their spheres (centres (3, C), radii (C,)) first."""
    reached = np.zeros(len(chosen), np.bool_)
    # Per chunk, the cosine and sine of the half-angle its sphere subtends (-2: the camera centre is inside).
    spread_cos, spread_sin, distances = np.full(len(radii), -2.0), np.zeros(len(radii)), np.zeros(len(radii))
    for group in range(len(radii)):
        distances[group] = math.sqrt(centres[0, group] ** 2 + centres[1, group] ** 2 + centres[2, group] ** 2)
        if distances[group] > radii[group]:
            spread_sin[group] = radii[group] / distances[group]
            spread_cos[group] = math.sqrt(1.0 - spread_sin[group] ** 2)
    for k in range(len(chosen)):
        block = chosen[k]
        x0, x1, x2 = axis[0, block], axis[1, block], axis[2, block]
        reach = half_angle[block]
        sin_reach, cos_reach = math.sin(reach), math.cos(reach)
        for group in range(len(radii)):
            if spread_cos[group] > -2.0:
                # angle(x, centre) > spread + reach <=> cos(angle) < cos(spread + reach): both angles are below
                # a quarter turn, so their sum is below a half turn
                limit = spread_cos[group] * cos_reach - spread_sin[group] * sin_reach
                cosine = (x0 * centres[0, group] + x1 * centres[1, group] + x2 * centres[2, group]) / distances[group]
                if cosine < limit:
                    continue
            for face in range(group * chunk, min((group + 1) * chunk, len(faces))):
                if _face_within(x0, x1, x2, points, faces[face, 0], faces[face, 1], faces[face, 2], sin_reach,
                                cos_reach):
                    reached[k] = True
                    break
            if reached[k]:
                break
    return reached


@njit(cache=True, nogil=True)
def _showing_other(pixels, instance, instance_id):
    """The pixels (-1: none) whose ray hits something other than instance `instance_id` (in `instance`, flat)."""
    out = np.empty(pixels.size, np.int64)
    count = 0
    for pixel in pixels.reshape(-1):
        if pixel >= 0 and instance[pixel] != 0 and instance[pixel] != instance_id:
            out[count] = pixel
            count += 1
    return out[:count]


class LensAloneCoverage:
    """AloneCoverage (annotations.py) for a camera with a lens other than pinhole: the pixels each mesh covers
    drawn alone, found by tracing rays when an instance's boxes ask for them."""

    def __init__(self, camera: Camera, pose: np.ndarray, static: Layer | None, dynamic: Layer | None,
                 static_points: np.ndarray | None, dynamic_points: np.ndarray | None):
        """`static_points` / `dynamic_points`: the layers' vertices in the optical frame (3, V) (LayerView)."""
        self._camera, self._pose = camera, pose
        self._layers = {False: (static, static_points), True: (dynamic, dynamic_points)}

    def _candidates(self, points: np.ndarray, faces: np.ndarray) -> np.ndarray:
        """(K, BLOCK * BLOCK) flat indices of the pixels in blocks (-1 past the image's edge) whose cone may reach a face (`faces` (T, 3) into `points` (3, n),
        optical frame)."""
        centre, radius = _sphere(points)
        corners = points[:, faces.reshape(-1)]  # (3, 3T): each chunk's corners are consecutive
        starts = np.arange(0, corners.shape[1], 3 * CHUNK)
        low, high = np.minimum.reduceat(corners, starts, axis=1), np.maximum.reduceat(corners, starts, axis=1)
        centres = (low + high) / 2
        radii = np.sqrt(np.maximum.reduceat(((corners - np.repeat(centres, 3 * CHUNK, axis=1)[:, :corners.shape[1]])
                                             ** 2).sum(axis=0), starts))
        chosen = None
        for blocks in (_blocks(self._camera, BLOCK * COARSE), _blocks(self._camera, BLOCK)):
            if chosen is not None:  # the blocks of the coarse blocks reached
                chosen = _children(self._camera)[chosen].reshape(-1)
                chosen = chosen[chosen >= 0]
                chosen = chosen[_reaches(blocks, centre, radius)[chosen]]
            else:
                chosen = np.flatnonzero(_reaches(blocks, centre, radius))
            chosen = chosen[_blocks_reaching_faces(blocks.axis, blocks.half_angle, chosen, points, faces, centres,
                                                   radii, CHUNK)]
        return blocks.pixels[chosen]

    def hidden(self, is_dynamic: bool, mesh: int, instance: np.ndarray, instance_id: int) -> int:
        """Pixels the mesh covers drawn alone that do not show it in `instance` (H, W)."""
        layer, points = self._layers[is_dynamic]
        table = layer.table
        first, last = table.vertex_offsets[mesh], table.vertex_offsets[mesh + 1]
        pixels = _showing_other(self._candidates(points[:, first:last], table.faces[table.face_slice(mesh)] - first),
                                instance.reshape(-1), instance_id)
        if not len(pixels):
            return 0
        rays = ray_table(self._camera, self._pose)
        directions = linear_map(rays.local[:, pixels], rays.rotation)  # as packets.camera_hits makes them
        origins = directions * rays.offset[pixels] + rays.eye[:, None]
        scene = _mesh_scene(layer, mesh, BUILD_QUALITY_MEDIUM) if is_dynamic else _static_scene(layer, mesh)
        return int(np.count_nonzero(trace_occlusion(scene.embree, origins.T, directions.T, rays.tfar[pixels])))


flush_stale_caches(__name__)  # see core.jit_cache

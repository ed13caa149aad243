"""2D boxes (tight, loose) with occlusion ratios and 3D boxes, in omni.replicator.core's layouts.

Pixel bounds are inclusive and refer to pixel centres (camera.py): a pixel belongs to an instance when
its centre ray hits it.
- tight: the visible pixels of the instance.
- loose: the pixel centres inside the projection of the instance's whole mesh (clipped to the near
  plane and the image), regardless of occluders; it always contains the tight box.
- occlusionRatio = 1 - visible pixels / pixels the instance covers when rendered alone; the alone
  render casts only the rays of the loose box that did not already see the instance, against an
  Embree scene of the static mesh alone (built once, cached) or, for dynamic meshes, through the
  frame's dynamic scene skipping the other meshes. Truncation by the image border does not count as
  occlusion. With occlusion turned off the ratio is 0.
3D boxes hold the local-frame extents of the mesh and its 4x4 local->world transform; unlike
replicator (USD row vectors), the transform acts on column vectors like every matrix in this project.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from simulation.render.camera import Camera, Rays, world_to_camera
from simulation.render.raycast import RAY_THREADS, PendingOcclusion, intersect
from simulation.render.scene import Layer, RenderScene

BOX_2D_DTYPE = np.dtype([("semanticId", "<u4"), ("x_min", "<i4"), ("y_min", "<i4"), ("x_max", "<i4"),
                         ("y_max", "<i4"), ("occlusionRatio", "<f4")])
BOX_3D_DTYPE = np.dtype([("semanticId", "<u4"), ("x_min", "<f4"), ("y_min", "<f4"), ("z_min", "<f4"),
                         ("x_max", "<f4"), ("y_max", "<f4"), ("z_max", "<f4"), ("transform", "<f4", (4, 4)),
                         ("occlusionRatio", "<f4")])
EMPTY_BOX = (0, 0, -1, -1)  # x_min > x_max: nothing in view
# Peeling past other dynamic meshes: each step restarts the ray just beyond the surface it hit.
MAX_PEEL_LAYERS = 32
_PEEL_RELATIVE_STEP = 1e-5
_PEEL_ABSOLUTE_STEP = 1e-5  # metres


@dataclass(frozen=True)
class Boxes:
    """One row per visible instance (at least one pixel), sorted by instance id, in all three arrays."""

    instance_ids: np.ndarray  # (N,) uint32, like replicator's info["bboxIds"] mapped to our ids
    tight: np.ndarray  # (N,) BOX_2D_DTYPE
    loose: np.ndarray  # (N,) BOX_2D_DTYPE
    boxes_3d: np.ndarray  # (N,) BOX_3D_DTYPE


def projected_boxes(camera: Camera, pose: np.ndarray, layer: Layer) -> np.ndarray:
    """(M, 4) inclusive pixel boxes (x_min, y_min, x_max, y_max) of each mesh's projection; EMPTY_BOX if none."""
    table = layer.table
    points = world_to_camera(pose, layer.world_vertices.T)
    front = points[2] >= camera.near
    z = np.where(front, points[2], 1.0)
    px = camera.fx * points[0] / z + camera.cx
    py = camera.fy * points[1] / z + camera.cy
    starts = table.vertex_offsets[:-1]
    lo = np.stack([np.minimum.reduceat(np.where(front, px, np.inf), starts),
                   np.minimum.reduceat(np.where(front, py, np.inf), starts)], axis=1)
    hi = np.stack([np.maximum.reduceat(np.where(front, px, -np.inf), starts),
                   np.maximum.reduceat(np.where(front, py, -np.inf), starts)], axis=1)
    clipped = np.flatnonzero(np.logical_and.reduceat(front, starts) == 0)
    for mesh in clipped:
        extra = _near_plane_crossings(camera, points, table.faces[table.face_slice(mesh)])
        if len(extra):
            lo[mesh] = np.fmin(lo[mesh], extra.min(axis=0))
            hi[mesh] = np.fmax(hi[mesh], extra.max(axis=0))
    valid = np.all(np.isfinite(lo) & np.isfinite(hi), axis=1)
    first = np.ceil(np.where(valid[:, None], lo, 0)).astype(np.int64)
    last = np.floor(np.where(valid[:, None], hi, -1)).astype(np.int64)
    size = np.array([camera.width - 1, camera.height - 1])
    empty = ~valid | np.any(last < first, axis=1) | np.any(first > size, axis=1) | np.any(last < 0, axis=1)
    boxes = np.concatenate([np.clip(first, 0, size), np.clip(last, 0, size)], axis=1)
    boxes[empty] = EMPTY_BOX
    return boxes


def _near_plane_crossings(camera: Camera, points: np.ndarray, faces: np.ndarray) -> np.ndarray:
    """Pixel coordinates (K, 2) where the mesh's edges cross the near plane; `points` are (3, V) optical."""
    edges = faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    a, b = points[:, edges[:, 0]], points[:, edges[:, 1]]
    crossing = (a[2] < camera.near) != (b[2] < camera.near)
    a, b = a[:, crossing], b[:, crossing]
    hit = a + (b - a) * ((camera.near - a[2]) / (b[2] - a[2]))
    return np.stack([camera.fx * hit[0] / camera.near + camera.cx, camera.fy * hit[1] / camera.near + camera.cy],
                    axis=1)


def tight_boxes(instance: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """(N, 4) inclusive boxes of the pixels of each id in `ids` (all present in `instance`)."""
    slices = ndimage.find_objects(instance)
    rows = [slices[i - 1] for i in ids]
    return np.array([(c.start, r.start, c.stop - 1, r.stop - 1) for r, c in rows], dtype=np.int64).reshape(-1, 4)


def _box_pixels(instance: np.ndarray, box: np.ndarray, instance_id: int) -> np.ndarray:
    """Flat indices of the pixels in `box` that do not show `instance_id`."""
    x0, y0, x1, y1 = (int(b) for b in box)
    rows, cols = np.nonzero(instance[y0:y1 + 1, x0:x1 + 1] != instance_id)
    return (rows + y0) * instance.shape[1] + (cols + x0)


def _ray_subset(rays: Rays, pixels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return (np.take(rays.origins, pixels, axis=0), np.take(rays.directions, pixels, axis=0),
            np.take(rays.tfar, pixels))


def _peeled_hits(layer: Layer, targets: list[tuple[int, np.ndarray]], rays: Rays, threads: int) -> np.ndarray:
    """For each (mesh, pixels) of a dynamic layer: how many of those pixels' rays hit the mesh when the
    layer's other meshes are ignored. All targets are peeled together, one batch per layer of depth."""
    pixels = np.concatenate([p for _, p in targets])
    owner = np.repeat(np.arange(len(targets)), [len(p) for _, p in targets])
    wanted = np.array([mesh for mesh, _ in targets])[owner]
    origins, directions, tfar = _ray_subset(rays, pixels)
    counts = np.zeros(len(targets), dtype=np.int64)
    for _ in range(MAX_PEEL_LAYERS):
        if len(origins) == 0:
            break
        hits = intersect(layer.embree, origins, directions, tfar, threads)
        hit_mesh = np.where(hits.prim >= 0, layer.table.face_mesh[np.maximum(hits.prim, 0)], -1)
        found = hit_mesh == wanted
        counts += np.bincount(owner[found], minlength=len(targets))
        again = (hit_mesh >= 0) & ~found
        step = hits.t[again] * np.float32(1 + _PEEL_RELATIVE_STEP) + np.float32(_PEEL_ABSOLUTE_STEP)
        directions, owner, wanted = directions[again], owner[again], wanted[again]
        origins = origins[again] + directions * step[:, None]
        tfar = tfar[again] - step
        keep = tfar > 0
        origins, directions, tfar, owner, wanted = (origins[keep], directions[keep], tfar[keep], owner[keep],
                                                    wanted[keep])
    return counts


class PendingBoxes:
    """Boxes of every instance visible in `instance` (H, W); `*_boxes` come from `projected_boxes`.

    The alone-render rays of static instances start on the ray threads at construction, so the caller
    can shade meanwhile; `result()` finishes the dynamic ones and assembles the arrays.
    """

    def __init__(self, instance: np.ndarray, scene: RenderScene, dynamic: Layer | None, rays: Rays,
                 static_boxes: np.ndarray | None, dynamic_boxes: np.ndarray | None, occlusion: bool = True,
                 threads: int = RAY_THREADS):
        self._scene, self._dynamic, self._rays, self._threads = scene, dynamic, rays, threads
        self._counts = np.bincount(instance.ravel())
        ids = np.flatnonzero(self._counts)
        self._ids = ids[ids > 0]
        self._tight = tight_boxes(instance, self._ids)
        self._loose = np.empty_like(self._tight)
        self._pending: dict[int, PendingOcclusion] = {}
        self._peel: dict[int, tuple[int, np.ndarray]] = {}  # row -> (dynamic mesh, pixels to peel)
        for row, instance_id in enumerate(self._ids.tolist()):
            is_dynamic, mesh = scene.instance_lookup[instance_id]
            projected = (dynamic_boxes if is_dynamic else static_boxes)[mesh]
            tight = self._tight[row]
            self._loose[row] = tight if projected[0] > projected[2] else np.concatenate(
                [np.minimum(projected[:2], tight[:2]), np.maximum(projected[2:], tight[2:])])
            if not occlusion:
                continue
            pixels = _box_pixels(instance, self._loose[row], instance_id)
            if is_dynamic:
                self._peel[row] = (mesh, pixels)
            elif len(pixels):
                self._pending[row] = PendingOcclusion(scene.instance_scene(mesh), *_ray_subset(rays, pixels), threads)

    def result(self) -> Boxes:
        n = len(self._ids)
        semantic = np.empty(n, dtype=np.uint32)
        local_min, local_max, transforms = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 4, 4))
        extra = np.zeros(n, dtype=np.int64)
        if self._peel:
            extra[list(self._peel)] = _peeled_hits(self._dynamic, list(self._peel.values()), self._rays, self._threads)
        for row, pending in self._pending.items():
            extra[row] = np.count_nonzero(pending.result())
        visible = self._counts[self._ids]
        ratios = (1.0 - visible / (visible + extra)).astype(np.float32)  # 0 when occlusion is off
        for row, instance_id in enumerate(self._ids.tolist()):
            is_dynamic, mesh = self._scene.instance_lookup[instance_id]
            layer = self._dynamic if is_dynamic else self._scene.static
            semantic[row] = layer.table.semantic_ids[mesh]
            local_min[row], local_max[row] = layer.local_min[mesh], layer.local_max[mesh]
            transforms[row] = layer.poses[mesh]
        boxes_3d = np.zeros(n, dtype=BOX_3D_DTYPE)
        boxes_3d["semanticId"], boxes_3d["occlusionRatio"], boxes_3d["transform"] = semantic, ratios, transforms
        boxes_3d["x_min"], boxes_3d["y_min"], boxes_3d["z_min"] = local_min.T
        boxes_3d["x_max"], boxes_3d["y_max"], boxes_3d["z_max"] = local_max.T
        return Boxes(self._ids.astype(np.uint32), _boxes_2d(semantic, self._tight, ratios),
                     _boxes_2d(semantic, self._loose, ratios), boxes_3d)


def _boxes_2d(semantic: np.ndarray, boxes: np.ndarray, ratios: np.ndarray) -> np.ndarray:
    out = np.zeros(len(boxes), dtype=BOX_2D_DTYPE)
    out["semanticId"], out["occlusionRatio"] = semantic, ratios
    out["x_min"], out["y_min"], out["x_max"], out["y_max"] = boxes.T
    return out

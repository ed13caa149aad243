"""2D boxes (tight, loose) with occlusion ratios and 3D boxes, in omni.replicator.core's layouts.

Pixel bounds are inclusive and refer to pixel centres (camera.py): a pixel belongs to an instance when
its centre ray hits it.
- tight: the visible pixels of the instance.
- loose: the pixel centres inside the projection of the instance's whole mesh (clipped to the near
  plane and the image), regardless of occluders; it always contains the tight box. Through a lens other
  than a pinhole, straight edges project to curves: the box bounds the mesh's vertices (and, radtan, its
  near-plane crossings) as the lens projects them, which may miss an edge bulging between two vertices.
- occlusionRatio = 1 - visible pixels / pixels the instance covers when rendered alone. The alone render
  rasterises the mesh exactly over its projected box (coverage.py: the pixels its rays would hit with
  nothing else in the scene); pixels that show the instance count as covered whatever the rasteriser says,
  so the ratio is 0 for an unoccluded instance. Truncation by the image border does not count as
  occlusion. With occlusion turned off the ratio is 0. Through a lens other than pinhole the mesh's edges
  project to curves, which the scanline rasteriser does not draw: there the pixels' own rays are traced against
  the mesh alone (lens_coverage.py), exact per pixel-centre ray as well.
3D boxes hold the local-frame extents of the mesh and its 4x4 local->world transform; unlike
replicator (USD row vectors), the transform acts on column vectors like every matrix in this project.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.config.lens import radtan_reach
from simulation.render import kernels
from simulation.render.camera import Camera, depth_of, project, world_to_camera
from simulation.render.coverage import coverage
from simulation.render.lens_coverage import LensAloneCoverage
from simulation.render.scene import Layer, MeshTable, RenderScene

BOX_2D_DTYPE = np.dtype([("semanticId", "<u4"), ("x_min", "<i4"), ("y_min", "<i4"), ("x_max", "<i4"),
                         ("y_max", "<i4"), ("occlusionRatio", "<f4")])
BOX_3D_DTYPE = np.dtype([("semanticId", "<u4"), ("x_min", "<f4"), ("y_min", "<f4"), ("z_min", "<f4"),
                         ("x_max", "<f4"), ("y_max", "<f4"), ("z_max", "<f4"), ("transform", "<f4", (4, 4)),
                         ("occlusionRatio", "<f4")])
EMPTY_BOX = (0, 0, -1, -1)  # x_min > x_max: nothing in view
_FAR = np.iinfo(np.int64).max  # a box corner beyond any pixel
_FOLDED = 1e9  # pixels from the principal point: a vertex the radtan model cannot place, well outside the image
VIEW_MARGIN = 1e-6  # pixel metres: how clearly a mesh's bounding box must lie outside the view to be skipped


@dataclass(frozen=True)
class Boxes:
    """One row per visible instance (at least one pixel), sorted by instance id, in all three arrays."""

    instance_ids: np.ndarray  # (N,) uint32, like replicator's info["bboxIds"] mapped to our ids
    tight: np.ndarray  # (N,) BOX_2D_DTYPE
    loose: np.ndarray  # (N,) BOX_2D_DTYPE
    boxes_3d: np.ndarray  # (N,) BOX_3D_DTYPE


@dataclass(frozen=True)
class LayerView:
    """A layer seen from this frame's camera: its vertices in the optical frame and each mesh's loose box."""

    layer: Layer
    points: np.ndarray  # (3, V) float64
    boxes: np.ndarray  # (M, 4), see projected_boxes


def layer_view(camera: Camera, pose: np.ndarray, layer: Layer | None) -> LayerView | None:
    """`layer` seen from a camera at `pose` (world<-camera); None for no layer. Only the meshes whose bounding box
    may show in the image are projected: the others get EMPTY_BOX and their columns of `points` stay 0 (nothing
    reads them)."""
    if layer is None:
        return None
    rotation, translation = pose[:3, :3], pose[:3, 3]
    keep = _may_show(camera, pose, layer.mesh_corners) if camera.lens.pinhole else np.ones(
        len(layer.table.vertex_offsets) - 1, dtype=bool)
    points, lo, hi, clipped = kernels.project_meshes(
        layer.world_vertices, layer.table.vertex_offsets, keep, rotation.T, -rotation.T @ translation, camera.fx,
        camera.fy, camera.cx, camera.cy, camera.near)
    if not camera.lens.pinhole:
        lo, hi, clipped = _lens_bounds(camera, points, layer.table.vertex_offsets)
    return LayerView(layer, points, projected_boxes(camera, points, layer.table, lo, hi, clipped))


def _may_show(camera: Camera, pose: np.ndarray, corners: np.ndarray) -> np.ndarray:
    """Per mesh, False where its world bounding box (corners (M, 8, 3)) lies wholly behind the near plane or beyond
    one side of the image (left of pixel centre 0, right of W - 1, above 0, below H - 1), so that no point of it
    projects into the image and its box is EMPTY_BOX. The tests are linear in the point (px < 0 <=> fx x + cx z < 0
    for z > 0), so they hold for everything inside the box when they hold for its corners; VIEW_MARGIN keeps them
    clear of rounding."""
    local = world_to_camera(pose, corners.reshape(-1, 3).T).reshape(3, -1, 8)
    x, y, z = local
    right, bottom = camera.cx - (camera.width - 1), camera.cy - (camera.height - 1)
    outside = [z < camera.near - VIEW_MARGIN, camera.fx * x + camera.cx * z < -VIEW_MARGIN,
               camera.fx * x + right * z > VIEW_MARGIN, camera.fy * y + camera.cy * z < -VIEW_MARGIN,
               camera.fy * y + bottom * z > VIEW_MARGIN]
    return ~np.any([side.all(axis=1) for side in outside], axis=0)


def _lens_pixels(camera: Camera, points: np.ndarray) -> np.ndarray:
    """project() for points (3, N) in front of the camera, through a lens other than pinhole. Beyond its radial
    part's reach the radtan model folds back into the image: such a point lies outside the image, in its own
    direction from the principal point, and goes _FOLDED pixels that way."""
    pixels = project(camera, points)
    if camera.lens.model == "radtan":
        normal = points[:2] / points[2]
        radius = np.hypot(*normal)
        far_away = np.array([[camera.cx], [camera.cy]]) + normal / np.where(radius > 0, radius, 1.0) * _FOLDED
        pixels = np.where(radius >= radtan_reach(camera.lens.coefficients), far_away, pixels)
    # The polynomial grows as r^7 far off the axis: kept within int64 for the boxes' pixel arithmetic.
    return np.clip(pixels, -_FOLDED, _FOLDED)


def _lens_bounds(camera: Camera, points: np.ndarray, vertex_offsets: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """kernels.project_meshes' lo, hi and clipped through the camera's lens (not pinhole), from the vertices
    (3, V) in the optical frame. An equidistant lens sees behind itself, so only vertices within its near sphere
    are left out and no mesh counts as clipped (the sphere's crossings are not followed)."""
    front = depth_of(camera, points) >= camera.near
    pixels = _lens_pixels(camera, np.where(front, points, np.array([[0.0], [0.0], [1.0]])))
    mesh_count = len(vertex_offsets) - 1
    owner = np.repeat(np.arange(mesh_count), np.diff(vertex_offsets))
    lo, hi = np.full((mesh_count, 2), np.inf), np.full((mesh_count, 2), -np.inf)
    for axis in range(2):
        np.fmin.at(lo[:, axis], owner[front], pixels[axis, front])
        np.fmax.at(hi[:, axis], owner[front], pixels[axis, front])
    behind = np.zeros(mesh_count, dtype=bool)
    if camera.lens.model == "radtan":
        behind[owner[~front]] = True
    return lo, hi, behind


def projected_boxes(camera: Camera, points: np.ndarray, table: MeshTable, lo: np.ndarray, hi: np.ndarray,
                    clipped: np.ndarray) -> np.ndarray:
    """(M, 4) inclusive pixel boxes (x_min, y_min, x_max, y_max) of each mesh's projection, EMPTY_BOX if none,
    from the table's vertices in the optical frame (3, V) and kernels.project_meshes' bounds of the vertices in
    front of the near plane (`lo`, `hi`) and flags of meshes with vertices behind it (`clipped`)."""
    lo, hi = lo.copy(), hi.copy()
    if clipped.any():  # their outlines also run along the near plane
        faces = np.take(clipped, table.face_mesh)
        mesh, crossings = _near_plane_crossings(camera, points, table.faces[faces], table.face_mesh[faces])
        for axis in range(2):
            np.fmin.at(lo[:, axis], mesh, crossings[axis])
            np.fmax.at(hi[:, axis], mesh, crossings[axis])
    valid = np.all(np.isfinite(lo) & np.isfinite(hi), axis=1)
    first = np.ceil(np.where(valid[:, None], lo, 0)).astype(np.int64)
    last = np.floor(np.where(valid[:, None], hi, -1)).astype(np.int64)
    size = np.array([camera.width - 1, camera.height - 1])
    empty = ~valid | np.any(last < first, axis=1) | np.any(first > size, axis=1) | np.any(last < 0, axis=1)
    boxes = np.concatenate([np.clip(first, 0, size), np.clip(last, 0, size)], axis=1)
    boxes[empty] = EMPTY_BOX
    return boxes


def _near_plane_crossings(camera: Camera, points: np.ndarray, faces: np.ndarray, face_mesh: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Where the edges of `faces` cross the near plane: the mesh of each crossing (K,) and its pixel
    coordinates (2, K); `points` are (3, V) optical."""
    edges = faces[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    a, b = points[:, edges[:, 0]], points[:, edges[:, 1]]
    crossing = (a[2] < camera.near) != (b[2] < camera.near)
    a, b = a[:, crossing], b[:, crossing]
    hit = a + (b - a) * ((camera.near - a[2]) / (b[2] - a[2]))
    if not camera.lens.pinhole:
        hit[2] = camera.near
        return np.repeat(face_mesh, 3)[crossing], _lens_pixels(camera, hit)
    return (np.repeat(face_mesh, 3)[crossing],
            np.stack([camera.fx * hit[0] / camera.near + camera.cx, camera.fy * hit[1] / camera.near + camera.cy]))


@dataclass(frozen=True)
class PixelStats:
    """Pixels of each instance id in (some rows of) an instance image: their count and inclusive bounding box.

    Made per tile while the tiles render, then merged, so the frame's boxes need no pass over the image.
    """

    counts: np.ndarray  # (K,) int64, indexed by instance id
    low: np.ndarray  # (K, 2) int64 (x_min, y_min); _FAR where the id has no pixel
    high: np.ndarray  # (K, 2) int64 (x_max, y_max); -1 where the id has no pixel

    @classmethod
    def of_rows(cls, instance: np.ndarray, first_row: int) -> PixelStats:
        """Stats of `instance` (rows, W), whose first row is image row `first_row`."""
        return cls(*kernels.pixel_stats(instance, first_row, _FAR))

    @classmethod
    def merge(cls, parts: Sequence[PixelStats]) -> PixelStats:
        size = max(len(part.counts) for part in parts)
        counts = np.zeros(size, np.int64)
        low, high = np.full((size, 2), _FAR, np.int64), np.full((size, 2), -1, np.int64)
        for part in parts:
            k = len(part.counts)
            counts[:k] += part.counts
            np.minimum(low[:k], part.low, out=low[:k])
            np.maximum(high[:k], part.high, out=high[:k])
        return cls(counts, low, high)


class AloneCoverage:
    """The pixels every mesh in view covers when drawn alone, over its projected box: all meshes rasterised
    in one batch. Needs no hits, so it can be made while the camera rays trace."""

    def __init__(self, camera: Camera, static: LayerView | None, dynamic: LayerView | None):
        views = [view for view in (static, dynamic) if view is not None]
        first_vertex = np.cumsum([0] + [view.points.shape[1] for view in views])
        self._row = {}  # (is dynamic, mesh) -> row in the batch
        faces, windows, edges = [], [], []
        first_face = 0
        for view, first in zip(views, first_vertex.tolist()):
            table = view.layer.table
            for mesh in np.flatnonzero(view.boxes[:, 0] <= view.boxes[:, 2]).tolist():
                self._row[(view is dynamic, mesh)] = len(faces)
                faces.append(table.faces[table.face_slice(mesh)] + first)
                windows.append(view.boxes[mesh])
                mesh_edges = table.edges[mesh]
                if mesh_edges is not None:  # mesh-local vertices and faces -> batch numbering
                    offset = first + table.vertex_offsets[mesh]
                    edges.append(mesh_edges + [offset, offset, first_face, first_face])
                else:
                    edges.append(np.zeros((0, 4), np.int64))
                first_face += len(faces[-1])
        self._drawn = None
        if faces:
            points = views[0].points if len(views) == 1 else np.concatenate([v.points for v in views], axis=1)
            face_owner = np.repeat(np.arange(len(faces)), [len(f) for f in faces])
            edge_owner = np.repeat(np.arange(len(edges)), [len(e) for e in edges])
            self._drawn = coverage(camera, points, np.concatenate(faces), face_owner, np.array(windows),
                                   np.concatenate(edges), edge_owner)

    def hidden(self, is_dynamic: bool, mesh: int, instance: np.ndarray, instance_id: int) -> int:
        """Pixels the mesh covers drawn alone that do not show it in `instance` (H, W)."""
        row = self._row.get((is_dynamic, mesh))
        if row is None:
            return 0
        x0, y0, x1, y1 = self._drawn.windows[row].tolist()
        return int(np.count_nonzero(self._drawn.mask(row) & (instance[y0:y1 + 1, x0:x1 + 1] != instance_id)))


def alone_coverage(camera: Camera, pose: np.ndarray, static: LayerView | None, dynamic: LayerView | None
                   ) -> AloneCoverage | LensAloneCoverage:
    """What each mesh in view covers drawn alone, for the occlusion ratios: rasterised for a pinhole (made now,
    while the camera rays trace), ray traced through another lens (when frame_boxes asks, as that needs the
    frame's instance image)."""
    if camera.lens.pinhole:
        return AloneCoverage(camera, static, dynamic)
    return LensAloneCoverage(camera, pose, *(None if view is None else view.layer for view in (static, dynamic)),
                             *(None if view is None else view.points for view in (static, dynamic)))


def frame_boxes(instance: np.ndarray, stats: PixelStats, scene: RenderScene, static: LayerView | None,
                dynamic: LayerView | None, alone: AloneCoverage | LensAloneCoverage | None) -> Boxes:
    """Boxes of every instance visible in `instance` (H, W), whose `stats` are given; occlusion ratios from
    `alone` (None: all 0)."""
    counts = stats.counts
    ids = np.flatnonzero(counts)
    ids = ids[ids > 0]
    n = len(ids)
    tight = np.concatenate([stats.low[ids], stats.high[ids]], axis=1)
    loose = np.empty_like(tight)
    semantic = np.empty(n, dtype=np.uint32)
    local_min, local_max, transforms = np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 4, 4))
    hidden = np.zeros(n, dtype=np.int64)
    for row, instance_id in enumerate(ids.tolist()):
        is_dynamic, mesh = scene.instance_lookup[instance_id]
        view = dynamic if is_dynamic else static
        projected = view.boxes[mesh]
        loose[row] = tight[row] if projected[0] > projected[2] else np.concatenate(
            [np.minimum(projected[:2], tight[row, :2]), np.maximum(projected[2:], tight[row, 2:])])
        if alone is not None:
            # Pixels of the loose box outside the projected box are never covered by the mesh drawn alone.
            hidden[row] = alone.hidden(is_dynamic, mesh, instance, instance_id)
        layer = view.layer
        semantic[row] = layer.table.semantic_ids[mesh]
        local_min[row], local_max[row] = layer.local_min[mesh], layer.local_max[mesh]
        transforms[row] = layer.poses[mesh]
    visible = counts[ids]
    ratios = (1.0 - visible / (visible + hidden)).astype(np.float32)  # 0 when occlusion is off
    boxes_3d = np.zeros(n, dtype=BOX_3D_DTYPE)
    boxes_3d["semanticId"], boxes_3d["occlusionRatio"], boxes_3d["transform"] = semantic, ratios, transforms
    boxes_3d["x_min"], boxes_3d["y_min"], boxes_3d["z_min"] = local_min.T
    boxes_3d["x_max"], boxes_3d["y_max"], boxes_3d["z_max"] = local_max.T
    return Boxes(ids.astype(np.uint32), _boxes_2d(semantic, tight, ratios), _boxes_2d(semantic, loose, ratios),
                 boxes_3d)


def _boxes_2d(semantic: np.ndarray, boxes: np.ndarray, ratios: np.ndarray) -> np.ndarray:
    out = np.zeros(len(boxes), dtype=BOX_2D_DTYPE)
    out["semanticId"], out["occlusionRatio"] = semantic, ratios
    out["x_min"], out["y_min"], out["x_max"], out["y_max"] = boxes.T
    return out

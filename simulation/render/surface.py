"""The surface seen by a batch of camera rays: hit faces, barycentrics, distances, normals.

Hits come renumbered from Embree's (geometry, primitive) to faces of RenderScene.table and compacted to
the rays that hit something (raycast.trace_camera). Per-point vectors are rows (C, N), see columns.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.render import kernels
from simulation.render.columns import put_columns
from simulation.render.raycast import CameraHits
from simulation.render.scene import FrameGeometry, RenderScene

_NO_VERTEX_NORMALS = np.zeros((3, 0), np.float32)  # no smooth mesh in the scene


@dataclass(frozen=True)
class Surface:
    """Nearest hits of a ray batch, compacted to the rays that hit something, in RenderScene.table numbering."""

    rays: np.ndarray  # (N,) indices into the batch
    prim: np.ndarray  # (N,) face
    u: np.ndarray
    v: np.ndarray
    t: np.ndarray
    mesh: np.ndarray  # (N,) mesh
    geometric_normal: np.ndarray  # (N, 3) the hit triangle's unnormalised outward normal
    complete: bool  # every ray hit: `rays` is 0..N-1

    def scatter(self, target: np.ndarray, values: np.ndarray) -> np.ndarray:
        """target with target[..., rays] = values; `values` itself when every ray hit."""
        if self.complete:
            return values.astype(target.dtype, copy=False)
        if target.ndim == 1:
            np.put(target, self.rays, values)
        else:
            put_columns(target, self.rays, values)
        return target


def surface_of(hits: CameraHits) -> Surface:
    """The surface of traced camera rays."""
    return Surface(hits.rays, hits.face, hits.u, hits.v, hits.t, hits.mesh, hits.normal,
                   len(hits.rays) == hits.components.shape[1])


def barycentric(values: np.ndarray, corners: np.ndarray, prim: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per-vertex `values` (C, V) interpolated at Embree barycentrics on triangles `prim`, as (C, N)."""
    index = np.take(corners, prim, axis=1)
    return (np.take(values, index[0], axis=1) * (1 - u - v) + np.take(values, index[1], axis=1) * u
            + np.take(values, index[2], axis=1) * v)


def surface_normals(scene: RenderScene, geometry: FrameGeometry, surface: Surface) -> np.ndarray:
    """Unit world normals (3, N) as authored: flat, or interpolated for smooth meshes."""
    vertex_normals = _NO_VERTEX_NORMALS if geometry.vertex_normals is None else geometry.vertex_normals
    return kernels.surface_normals(surface.geometric_normal, surface.mesh, surface.prim, surface.u, surface.v,
                                   scene.table.smooth, vertex_normals, scene.table.corners)

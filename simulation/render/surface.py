"""The surface seen by a batch of camera rays: hit faces, barycentrics, distances, normals.

Hits are renumbered from Embree's (geometry, primitive) to faces of RenderScene.table and compacted to
the rays that hit something. Per-point vectors are rows (C, N), see columns.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.render.columns import put_columns
from simulation.render.raycast import Hits
from simulation.render.scene import FrameGeometry, RenderScene
from simulation.render.shading import dot


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

    def gather(self, values: np.ndarray) -> np.ndarray:
        """values[..., rays]; the array itself when every ray hit (indoors, the usual case)."""
        return values if self.complete else np.take(values, self.rays, axis=-1)

    def scatter(self, target: np.ndarray, values: np.ndarray) -> np.ndarray:
        """target with target[..., rays] = values; `values` itself when every ray hit."""
        if self.complete:
            return values.astype(target.dtype, copy=False)
        if target.ndim == 1:
            np.put(target, self.rays, values)
        else:
            put_columns(target, self.rays, values)
        return target


def surface_from_hits(scene: RenderScene, hits: Hits) -> Surface:
    n = len(hits.t)
    hit = np.flatnonzero(hits.prim >= 0)
    geometry, prim, u, v, t, normal = hits.geometry, hits.prim, hits.u, hits.v, hits.t, hits.normal
    if len(hit) < n:
        geometry, prim, u, v, t = (np.take(a, hit) for a in (geometry, prim, u, v, t))
        normal = np.take(normal, hit, axis=0)
    face = np.take(scene.geometry_faces, geometry) + prim
    return Surface(hit, face, u, v, t, np.take(scene.table.face_mesh, face), normal, len(hit) == n)


def barycentric(values: np.ndarray, corners: np.ndarray, prim: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Per-vertex `values` (C, V) interpolated at Embree barycentrics on triangles `prim`, as (C, N)."""
    index = np.take(corners, prim, axis=1)
    return (np.take(values, index[0], axis=1) * (1 - u - v) + np.take(values, index[1], axis=1) * u
            + np.take(values, index[2], axis=1) * v)


def face_barycentric(corner_values: np.ndarray, prim: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """`barycentric` for values stored per face corner (3 corners, C, F): one gather less per corner."""
    out = np.take(corner_values[0], prim, axis=1)
    out *= 1 - u - v
    term = np.take(corner_values[1], prim, axis=1)
    term *= u
    out += term
    np.take(corner_values[2], prim, axis=1, out=term)
    term *= v
    out += term
    return out


def surface_normals(scene: RenderScene, geometry: FrameGeometry, surface: Surface) -> np.ndarray:
    """Unit world normals (3, N) as authored: flat, or interpolated for smooth meshes."""
    normals = np.ascontiguousarray(surface.geometric_normal.T)  # rows: far faster to work on than a view
    normals /= np.sqrt(dot(normals, normals))
    if geometry.vertex_normals is not None:
        smooth = np.flatnonzero(np.take(scene.table.smooth, surface.mesh))
        if len(smooth):
            blended = barycentric(geometry.vertex_normals, scene.table.corners, surface.prim[smooth],
                                  surface.u[smooth], surface.v[smooth])
            norm = np.sqrt(dot(blended, blended))
            put_columns(normals, smooth, np.divide(blended, norm, out=np.take(normals, smooth, axis=1),
                                                   where=norm > 0))
    return normals

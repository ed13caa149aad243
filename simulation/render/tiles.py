"""Tiles of whole pixel rows: the unit in which a frame's rays are traced and turned into ground truth.

A tile's rays are one batch on the ray threads, and its per-pixel arrays stay small enough for the
caches; several tiles per frame let tracing and the work on traced tiles overlap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.render.camera import Camera, camera_rays
from simulation.render.flow import UNDEFINED_FLOW, pixel_flow
from simulation.render.raycast import PendingHits
from simulation.render.scene import FrameGeometry, RenderScene
from simulation.render.surface import Surface, barycentric, surface_from_hits, surface_normals

NO_HIT_DEPTH = 0.0  # depth and distance where no surface is hit (as in the depth PNGs: 0 = no return)
# Pixels per tile: enough rays per batch to amortise the Python work on it, few enough that a tile's
# per-pixel arrays stay in cache, and several tiles so that tracing and the rest overlap.
TILE_PIXELS = 32768


def tile_ranges(camera: Camera) -> list[tuple[int, int]]:
    """Flat pixel ranges [first, last) of whole image rows."""
    rows = max(1, TILE_PIXELS // camera.width)
    return [(top * camera.width, min(top + rows, camera.height) * camera.width)
            for top in range(0, camera.height, rows)]


class TracedTile:
    """Rays of a pixel range, traced on the ray threads from construction on."""

    def __init__(self, scene: RenderScene, camera: Camera, pose: np.ndarray, pixels: tuple[int, int], samples: int,
                 threads: int):
        self.pixels = slice(*pixels)
        self.rays = camera_rays(camera, pose, samples, pixels)
        self._hits = PendingHits(scene.embree, self.rays.origins, self.rays.directions, self.rays.tfar, threads,
                                 split=False)

    def surface(self, scene: RenderScene, geometry: FrameGeometry) -> tuple[Surface, np.ndarray]:
        """What the tile's rays hit, and the unit normals there (waits for the rays)."""
        surface = surface_from_hits(scene, self._hits.result())
        return surface, surface_normals(scene, geometry, surface)


@dataclass
class GroundTruth:
    """Per-pixel ground-truth images as flat arrays (pixels first), filled tile by tile."""

    instance: np.ndarray
    semantic: np.ndarray
    depth: np.ndarray
    distance: np.ndarray
    normals: np.ndarray
    flow: np.ndarray | None

    @classmethod
    def empty(cls, size: int, with_flow: bool) -> GroundTruth:
        return cls(np.empty(size, np.uint16), np.empty(size, np.uint16), np.empty(size, np.float32),
                   np.empty(size, np.float32), np.empty((size, 3), np.float32),
                   np.empty((size, 2), np.float32) if with_flow else None)

    def fill(self, scene: RenderScene, camera: Camera, tile: TracedTile, surface: Surface, normals: np.ndarray,
             geometry: FrameGeometry, next_pose: np.ndarray | None) -> None:
        rows, table, rays, n = tile.pixels, scene.table, tile.rays, tile.pixels.stop - tile.pixels.start
        self.instance[rows] = surface.scatter(np.zeros(n, np.uint16), np.take(table.instance_ids, surface.mesh))
        self.semantic[rows] = surface.scatter(np.zeros(n, np.uint16), np.take(table.semantic_ids, surface.mesh))
        from_eye = surface.gather(rays.offset) + surface.t
        self.distance[rows] = surface.scatter(np.full(n, NO_HIT_DEPTH, np.float32), from_eye)
        self.depth[rows] = surface.scatter(np.full(n, NO_HIT_DEPTH, np.float32), from_eye * surface.gather(rays.dz))
        self.normals[rows] = surface.scatter(np.zeros((3, n), np.float32), normals).T
        if next_pose is not None:
            moved = barycentric(geometry.next_world_vertices, table.corners, surface.prim, surface.u, surface.v)
            flow = pixel_flow(camera, next_pose, surface.rays + rows.start, moved)
            self.flow[rows] = surface.scatter(np.full((2, n), UNDEFINED_FLOW, np.float32), flow).T

"""Tiles of whole pixel rows: the unit in which a frame's rays are traced and turned into ground truth.

One worker thread traces a tile's rays and turns them into ground truth and colour while its data is
still in that core's caches; several tiles per frame keep every core busy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from embreex.rtcore_scene import EmbreeScene

from simulation.render import kernels
from simulation.render.camera import Camera, ray_table
from simulation.render.flow import UNDEFINED_FLOW, pixel_flow
from simulation.render.raycast import trace_camera
from simulation.render.scene import FrameGeometry, RenderScene
from simulation.render.surface import barycentric, surface_normals, surface_of

NO_HIT_DEPTH = 0.0  # depth and distance where no surface is hit (as in the depth PNGs: 0 = no return)
# Pixels per tile: enough rays per batch to amortise the Python work on it, few enough that a tile's
# per-pixel arrays stay small. A frame's last tiles need not end together on every worker: the next frame's
# tiles queue behind them (two frames render at once), so a 640x480 frame is 5 tiles (~7% less CPU than 10).
TILE_PIXELS = 65536
_NO_HIT = np.float32(NO_HIT_DEPTH)


def tile_ranges(camera: Camera) -> list[tuple[int, int]]:
    """Flat pixel ranges [first, last) of whole image rows."""
    rows = max(1, TILE_PIXELS // camera.width)
    return [(top * camera.width, min(top + rows, camera.height) * camera.width)
            for top in range(0, camera.height, rows)]


class Tile:
    """The rays of a pixel range, traced against `embree` (the frame's buffer of `scene`) in the calling thread:
    `rays` and the `surface` they hit."""

    def __init__(self, scene: RenderScene, embree: EmbreeScene, camera: Camera, pose: np.ndarray,
                 pixels: tuple[int, int], samples: int):
        self.pixels = slice(*pixels)
        table = ray_table(camera, pose, samples, pixels)
        hits = trace_camera(embree, table, scene.geometry_faces, scene.table.face_mesh)
        self.rays = table.rays(hits.components)
        self.surface = surface_of(hits)

    def normals(self, scene: RenderScene, geometry: FrameGeometry) -> np.ndarray:
        """Unit normals (3, hits) of the surface hit."""
        return surface_normals(scene, geometry, self.surface)


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

    def fill(self, scene: RenderScene, camera: Camera, tile: Tile, normals: np.ndarray, geometry: FrameGeometry,
             next_pose: np.ndarray | None) -> None:
        rows, table, rays, surface = tile.pixels, scene.table, tile.rays, tile.surface
        kernels.fill_truth(self.instance[rows], self.semantic[rows], self.distance[rows], self.depth[rows],
                           self.normals[rows], surface.rays, surface.complete, surface.mesh, surface.t, rays.offset,
                           rays.dz, normals, table.instance_ids, table.semantic_ids, _NO_HIT)
        if next_pose is not None:
            moved = barycentric(geometry.next_world_vertices, table.corners, surface.prim, surface.u, surface.v)
            flow = pixel_flow(camera, next_pose, surface.rays + rows.start, moved)
            self.flow[rows] = surface.scatter(np.full((2, rows.stop - rows.start), UNDEFINED_FLOW, np.float32), flow).T

"""Render one camera frame of a RenderScene into numpy arrays: RGB, depth, ids, normals, flow, boxes.

One ray per pixel centre gives every ground-truth image (exact to the triangle); RGB optionally
averages samples x samples rays per pixel. The image is cut into tiles (tiles.py) that flow through a
pipeline, so that the ray threads and this thread work at the same time: the camera rays of every tile
are queued at once; while they trace, this thread projects the meshes and rasterises each one alone (for
occlusion ratios); then it turns each traced tile into ground truth and queues its shadow rays; it makes
the boxes while those trace, and shades the tiles last. Per-pixel vectors are handled as rows (3, N),
see columns.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.errors import InputError
from simulation.render.annotations import BOX_2D_DTYPE, BOX_3D_DTYPE, AloneCoverage, frame_boxes, layer_view
from simulation.render.camera import Camera, CameraParams, check_pose
from simulation.render.raycast import RAY_THREADS
from simulation.render.rgb import Lighting
from simulation.render.scene import MeshState, RenderScene
from simulation.render.tiles import GroundTruth, TracedTile, tile_ranges


@dataclass(frozen=True)
class RenderOptions:
    rgb: bool = True
    shadows: bool = True
    boxes: bool = True
    occlusion: bool = True  # occlusion ratios (costs rasterising every mesh in view alone)
    supersample: int = 1  # RGB rays per pixel = supersample^2
    threads: int = RAY_THREADS

    def __post_init__(self) -> None:
        if self.supersample < 1:
            raise InputError(f"must be >= 1, got {self.supersample}", "render options", "supersample")
        if self.threads < 1:
            raise InputError(f"must be >= 1, got {self.threads}", "render options", "threads")


@dataclass
class Frame:
    """One camera frame. Images are (H, W[, C]); box arrays follow replicator's annotator dtypes."""

    rgb: np.ndarray | None  # uint8 (H, W, 3) sRGB
    depth: np.ndarray  # float32, z in the optical frame (distance to the image plane), NO_HIT_DEPTH if none
    distance: np.ndarray  # float32, distance to the camera centre, NO_HIT_DEPTH if none
    instance: np.ndarray  # uint16, 0 = background
    semantic: np.ndarray  # uint16, 0 = background or unlabelled
    normals: np.ndarray  # float32 (H, W, 3), world frame, unit, as authored (outward); 0 if no hit
    flow: np.ndarray | None  # float32 (H, W, 2) pixels (dx, dy) to the next frame; NaN where undefined
    instance_ids: np.ndarray  # uint32 (N,): the instance of each box row
    boxes_2d_tight: np.ndarray  # (N,) BOX_2D_DTYPE
    boxes_2d_loose: np.ndarray  # (N,) BOX_2D_DTYPE
    boxes_3d: np.ndarray  # (N,) BOX_3D_DTYPE
    camera: CameraParams


def render_frame(scene: RenderScene, camera: Camera, pose: np.ndarray,
                 states: Mapping[str, MeshState] | None = None, options: RenderOptions = RenderOptions(),
                 next_pose: np.ndarray | None = None) -> Frame:
    """Render `scene` seen from `pose` (world<-camera, optical frame).

    `states` gives this frame's dynamic meshes (by name); flow is computed when `next_pose` (the next
    frame's camera pose) is given, following each state's next_pose / next_vertices.
    """
    pose = check_pose(pose)
    if next_pose is not None:
        next_pose = check_pose(next_pose, "next_pose")
    with_next, samples, threads = next_pose is not None, options.supersample, options.threads
    height, width = camera.height, camera.width
    dynamic = scene.set_frame(states, with_next)
    tiles = [TracedTile(scene, camera, pose, pixels, 1, threads) for pixels in tile_ranges(camera)]
    color_tiles = [] if samples == 1 or not options.rgb else [
        TracedTile(scene, camera, pose, pixels, samples, threads) for pixels in tile_ranges(camera)]
    # While the camera rays trace:
    geometry = scene.frame_geometry(dynamic, with_next)
    views = (layer_view(camera, pose, scene.static), layer_view(camera, pose, dynamic)) if options.boxes else None
    alone = AloneCoverage(camera, *views) if options.boxes and options.occlusion else None
    truth = GroundTruth.empty(height * width, with_next)
    shading = []  # (tile, its lighting with shadow rays running)
    for tile in tiles:
        surface, normals = tile.surface(scene, geometry)
        if options.rgb and samples == 1:
            shading.append((tile, Lighting(scene, tile.rays, surface, normals, options.shadows, threads)))
        truth.fill(scene, camera, tile, surface, normals, geometry, next_pose)
    for tile in color_tiles:
        shading.append((tile, Lighting(scene, tile.rays, *tile.surface(scene, geometry), options.shadows, threads)))
    instance = truth.instance.reshape(height, width)
    if views is not None:  # while the shadow rays trace
        boxes = frame_boxes(instance, scene, *views, alone)
        ids, tight, loose, boxes_3d = boxes.instance_ids, boxes.tight, boxes.loose, boxes.boxes_3d
    else:
        ids = np.zeros(0, np.uint32)
        tight, loose, boxes_3d = np.zeros(0, BOX_2D_DTYPE), np.zeros(0, BOX_2D_DTYPE), np.zeros(0, BOX_3D_DTYPE)
    rgb = None
    if options.rgb:
        rgb = np.empty((height * width, 3), np.uint8)
        for tile, lighting in shading:
            rgb[tile.pixels] = lighting.srgb(samples)
        rgb = rgb.reshape(height, width, 3)
    return Frame(
        rgb=rgb, depth=truth.depth.reshape(height, width), distance=truth.distance.reshape(height, width),
        instance=instance, semantic=truth.semantic.reshape(height, width),
        normals=truth.normals.reshape(height, width, 3),
        flow=None if truth.flow is None else truth.flow.reshape(height, width, 2), instance_ids=ids,
        boxes_2d_tight=tight, boxes_2d_loose=loose, boxes_3d=boxes_3d,
        camera=CameraParams(camera.K, width, height, pose, camera.near, camera.far),
    )

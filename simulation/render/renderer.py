"""Render one camera frame of a RenderScene into numpy arrays: RGB, depth, ids, normals, flow, boxes.

One ray per pixel centre gives every ground-truth image (exact to the triangle); RGB optionally
averages samples x samples rays per pixel. The image is cut into tiles (tiles.py), and the tile workers
(workers.py) take whole tiles: trace the camera rays and fill the ground-truth images, then trace the shadow
rays and shade (one job per tile, or two for a frame whose depth someone waits for: `depth_first`); the
compiled loops and Embree release the GIL, so the workers run in parallel. Meanwhile this thread projects the
meshes and rasterises each one alone (for occlusion ratios); it makes the boxes once every tile's ground truth
is done. Per-pixel vectors are handled as rows (3, N), see columns.py.
Every tile's pixels are computed the same way whichever worker takes it, so frames do not depend on
the thread count or on scheduling. Colour is shaded in linear RGB and encoded through the camera's
exposure (exposure.py): a fixed exposure encodes in the tile workers; an auto exposure meters each tile's
pixels there, sums the tiles in order once all are done and then encodes in the calling thread. With
`RenderOptions.linear` the frame also keeps the shaded colour itself (`Frame.linear`, scene-linear, before
exposure): what a sensor that measures light rather than display values (an event camera) reads.
Several frames may render at once from different threads, each in a render scene buffer of its own
(`buffer`): their tiles queue for the same workers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, field

import numpy as np
from embreex.rtcore_scene import EmbreeScene

from core.errors import InputError
from simulation.render import kernels
from simulation.render.annotations import (
    BOX_2D_DTYPE,
    BOX_3D_DTYPE,
    PixelStats,
    alone_coverage,
    frame_boxes,
    layer_view,
)
from simulation.render.camera import Camera, CameraParams, check_pose
from simulation.render.exposure import LOG_FLOOR, Exposure
from simulation.render.irradiance import FrameProbes
from simulation.render.quality import PRESETS, ShadingQuality
from simulation.render.raycast import RAY_THREADS
from simulation.render.rgb import LightArrays, frame_probes, linear_colour
from simulation.render.scene import MeshState, RenderLight, RenderScene
from simulation.render.shading import ENCODE_LUT
from simulation.render.tiles import GroundTruth, Tile, tile_ranges
from simulation.render.workers import COLOUR, GROUND_TRUTH, tile_workers


@dataclass(frozen=True)
class RenderOptions:
    rgb: bool = True
    shadows: bool = True
    boxes: bool = True
    occlusion: bool = True  # occlusion ratios (costs rasterising every mesh in view alone)
    supersample: int = 1  # RGB rays per pixel = supersample^2
    threads: int = RAY_THREADS  # tile workers, each tracing and shading whole tiles
    exposure: Exposure = field(default_factory=Exposure)  # linear colour -> display values (default: as shaded)
    quality: ShadingQuality = PRESETS["fast"]  # which lighting terms the RGB gets (quality.py)
    # Frame.linear: the scene-linear colour before exposure and tone mapping (with rgb=False, without encoding)
    linear: bool = False

    @property
    def shaded(self) -> bool:
        """The frame's colour is shaded (for its rgb, its linear colour or both)."""
        return self.rgb or self.linear

    def __post_init__(self) -> None:
        if self.supersample < 1:
            raise InputError(f"must be >= 1, got {self.supersample}", "render options", "supersample")
        if self.threads < 1:
            raise InputError(f"must be >= 1, got {self.threads}", "render options", "threads")


@dataclass
class Frame:
    """One camera frame. Images are (H, W[, C]); box arrays follow replicator's annotator dtypes."""

    rgb: np.ndarray | None  # uint8 (H, W, 3) sRGB
    depth: np.ndarray  # float32, z in the optical frame (distance to the image plane), NO_HIT_DEPTH if none; the
    # range along the ray (= distance) through an equidistant lens (camera.py)
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
    # float32 (H, W, 3) scene-linear RGB before exposure (RenderOptions.linear), in the lights' display units: a
    # white diffuse surface under irradiance 1 (a light of intensity 1 at 1 m, scene.PointLight) reads 1, which a
    # fixed exposure at ev 0 shows as white; brighter surfaces read more (not clipped)
    linear: np.ndarray | None = None


@dataclass(frozen=True)
class _TileTruth:
    tile: Tile  # its pixel-centre rays and their surface
    normals: np.ndarray  # (3, hits) unit normals of the surface
    stats: PixelStats | None  # of the tile's instance ids, when boxes are wanted


@dataclass(frozen=True)
class _TileColour:
    linear: np.ndarray | None  # (3, pixels) colour left to encode once the frame is metered
    log_sum: float  # the metering sum of `linear` (kernels.log_luminance_sum)


def _truth_job(scene: RenderScene, embree: EmbreeScene, camera: Camera, pose: np.ndarray, pixels: tuple[int, int],
               geometry: Future, truth: GroundTruth, next_pose: np.ndarray | None, options: RenderOptions
               ) -> _TileTruth:
    """Ground truth of a tile's pixels and the stats of their instance ids if `options.boxes`. `geometry` is the
    frame's FrameGeometry, still being made when the job starts; `embree` the frame's buffer."""
    tile = Tile(scene, embree, camera, pose, pixels, 1)
    normals = tile.normals(scene, geometry.result())
    truth.fill(scene, camera, tile, normals, geometry.result(), next_pose)
    stats = PixelStats.of_rows(truth.instance[tile.pixels].reshape(-1, camera.width),
                               pixels[0] // camera.width) if options.boxes else None
    return _TileTruth(tile, normals, stats)


def _colour_job(scene: RenderScene, embree: EmbreeScene, lights: LightArrays, probes: FrameProbes | None,
                camera: Camera, pose: np.ndarray, pixels: tuple[int, int], geometry: Future,
                traced: _TileTruth | Future, rgb: np.ndarray | None, linear_out: np.ndarray | None,
                options: RenderOptions) -> _TileColour:
    """A tile's colour encoded into `rgb` (fixed exposure) or kept linear and metered (auto exposure), and as
    shaded into `linear_out`, each if given; shaded at the surface its ground truth found (`traced`, or its job's
    Future; or at its own supersampled rays')."""
    samples, exposure = options.supersample, options.exposure
    if isinstance(traced, Future):
        traced = traced.result()
    tile, normals = traced.tile, traced.normals
    if samples > 1:
        tile = Tile(scene, embree, camera, pose, pixels, samples)
        normals = tile.normals(scene, geometry.result())
    linear = linear_colour(scene, embree, lights, tile.rays, tile.surface, normals, options.shadows, samples,
                           options.quality, probes, 1.0 / (camera.K[0, 0] * samples))
    if linear_out is not None:
        linear_out[tile.pixels] = linear.T
    if rgb is None:
        return _TileColour(None, 0.0)
    if exposure.metered:
        return _TileColour(linear, kernels.log_luminance_sum(linear, LOG_FLOOR))
    rgb[tile.pixels] = kernels.tone_encode(linear, exposure.fixed_scale(), exposure.filmic, ENCODE_LUT)
    return _TileColour(None, 0.0)


def _tile_job(scene: RenderScene, embree: EmbreeScene, lights: LightArrays, probes: FrameProbes | None,
              camera: Camera, pose: np.ndarray, pixels: tuple[int, int], geometry: Future, truth: GroundTruth,
              next_pose: np.ndarray | None, rgb: np.ndarray | None, linear_out: np.ndarray | None,
              options: RenderOptions) -> tuple[_TileTruth, _TileColour | None]:
    """A tile's ground truth and then its colour in one job, while the tile's arrays are still in the core's
    caches (`_truth_job`, `_colour_job`)."""
    traced = _truth_job(scene, embree, camera, pose, pixels, geometry, truth, next_pose, options)
    colour = None if not options.shaded else _colour_job(scene, embree, lights, probes, camera, pose, pixels,
                                                         geometry, traced, rgb, linear_out, options)
    return traced, colour


@dataclass(frozen=True)
class DepthImage:
    """A frame's depth (float32 (H, W), z in the optical frame, NO_HIT_DEPTH where nothing is hit) and camera,
    ready before the frame's colour."""

    depth: np.ndarray
    camera: CameraParams


def render_frame(scene: RenderScene, camera: Camera, pose: np.ndarray,
                 states: Mapping[str, MeshState] | None = None, options: RenderOptions = RenderOptions(),
                 next_pose: np.ndarray | None = None, lights: Sequence[RenderLight] | None = None,
                 buffer: int = 0, depth_ready: Future | None = None, depth_first: bool = False) -> Frame:
    """Render `scene` seen from `pose` (world<-camera, optical frame).

    `states` gives this frame's dynamic meshes (by name); flow is computed when `next_pose` (the next
    frame's camera pose) is given, following each state's next_pose / next_vertices. `lights` replace the
    scene's for this frame (a caller that changes `scene.lights` while the frame renders on another thread
    passes the frame's own). Frames rendered at the same time from several threads each need a `buffer` of
    their own (RenderScene.set_frame); their tiles share the tile workers. A tile is one job (its ground truth,
    then its colour) unless `depth_first`: then its ground truth is a job that runs before every colour job queued
    (workers.py), its colour a job of its own, so the frame's depth is ready after its own rays alone. That is
    for a frame someone waits for the depth of; the single jobs keep a tile's arrays in the core's caches.
    `depth_ready`, if given, gets the frame's DepthImage as soon as every tile's ground truth is done.
    """
    pose = check_pose(pose)
    if next_pose is not None:
        next_pose = check_pose(next_pose, "next_pose")
    height, width = camera.height, camera.width
    params = CameraParams(camera.K, width, height, pose, camera.near, camera.far, camera.lens)
    dynamic = scene.set_frame(states, next_pose is not None, buffer)
    embree = scene.embree_of(buffer)
    truth = GroundTruth.empty(height * width, next_pose is not None)
    rgb = np.empty((height * width, 3), np.uint8) if options.rgb else None
    linear = np.empty((height * width, 3), np.float32) if options.linear else None
    geometry = Future()
    workers = tile_workers(options.threads)
    ranges = tile_ranges(camera)
    lights = LightArrays.of(scene.lights if lights is None else lights)
    probes = frame_probes(scene, lights, options.quality) if options.shaded else None
    if options.shaded and options.quality.mipmaps:
        scene.table.mip_maps  # noqa: B018  (made here, once, rather than by the first tile workers at the same time)
    if depth_first:
        traced = [workers.submit(GROUND_TRUTH, _truth_job, scene, embree, camera, pose, pixels, geometry, truth,
                                 next_pose, options) for pixels in ranges]
        coloured = [] if not options.shaded else [
            workers.submit(COLOUR, _colour_job, scene, embree, lights, probes, camera, pose, pixels, geometry, job,
                           rgb, linear, options) for pixels, job in zip(ranges, traced, strict=True)]
    else:
        traced = [workers.submit(COLOUR, _tile_job, scene, embree, lights, probes, camera, pose, pixels, geometry,
                                 truth, next_pose, rgb, linear, options) for pixels in ranges]
        coloured = []
    try:  # while the tiles trace
        geometry.set_result(scene.frame_geometry(dynamic, next_pose is not None))
        views = (layer_view(camera, pose, scene.static), layer_view(camera, pose, dynamic)) if options.boxes else None
        alone = alone_coverage(camera, pose, *views) if options.boxes and options.occlusion else None
        tiles = [job.result() for job in traced]
        if not depth_first:
            tiles, colours = [t for t, _ in tiles], [c for _, c in tiles]
        if depth_ready is not None:
            depth_ready.set_result(DepthImage(truth.depth.reshape(height, width), params))
        instance = truth.instance.reshape(height, width)
        if views is not None:
            boxes = frame_boxes(instance, PixelStats.merge([t.stats for t in tiles]), scene, *views, alone)
            ids, tight, loose, boxes_3d = boxes.instance_ids, boxes.tight, boxes.loose, boxes.boxes_3d
        else:
            ids = np.zeros(0, np.uint32)
            tight, loose, boxes_3d = np.zeros(0, BOX_2D_DTYPE), np.zeros(0, BOX_2D_DTYPE), np.zeros(0, BOX_3D_DTYPE)
        if depth_first:
            colours = [job.result() for job in coloured]
    except BaseException as error:
        for future in (geometry, depth_ready):
            if future is not None and not future.done():
                future.set_exception(error)
        raise
    finally:
        wait([*traced, *coloured])  # no tile job outlives the frame, failed or not
    if rgb is not None:
        if options.exposure.metered:
            _encode_metered(rgb, ranges, colours, options.exposure)
        rgb = rgb.reshape(height, width, 3)
    return Frame(
        rgb=rgb, depth=truth.depth.reshape(height, width), distance=truth.distance.reshape(height, width),
        instance=instance, semantic=truth.semantic.reshape(height, width),
        normals=truth.normals.reshape(height, width, 3),
        flow=None if truth.flow is None else truth.flow.reshape(height, width, 2), instance_ids=ids,
        boxes_2d_tight=tight, boxes_2d_loose=loose, boxes_3d=boxes_3d, camera=params,
        linear=None if linear is None else linear.reshape(height, width, 3),
    )


def _encode_metered(rgb: np.ndarray, ranges: list[tuple[int, int]], results: list[_TileColour],
                    exposure: Exposure) -> None:
    """Encodes the tiles' linear colour into `rgb` at the exposure metered over the whole frame (the tiles' sums
    added in image order, so the scale does not depend on which worker took which tile). In the calling thread:
    on the tile workers it would wait behind the tiles of a frame that started meanwhile."""
    scale = exposure.auto_scale(sum(r.log_sum for r in results), len(rgb))
    for (first, last), result in zip(ranges, results, strict=True):
        rgb[first:last] = kernels.tone_encode(result.linear, scale, exposure.filmic, ENCODE_LUT)

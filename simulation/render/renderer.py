"""Render one camera frame of a RenderScene into numpy arrays: RGB, depth, ids, normals, flow, boxes.

One ray per pixel centre gives every ground-truth image (exact to the triangle); RGB optionally
averages samples x samples rays per pixel. Static geometry is traced on worker threads while the
frame's dynamic Embree scene is built; dynamic meshes are traced only inside their projected boxes.
Per-pixel vectors are handled as rows (3, N), see columns.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from pipeline.errors import InputError
from simulation.render.annotations import BOX_2D_DTYPE, BOX_3D_DTYPE, PendingBoxes, projected_boxes
from simulation.render.camera import Camera, CameraParams, Rays, camera_rays, check_pose
from simulation.render.columns import put_columns, rows_to_points
from simulation.render.flow import UNDEFINED_FLOW, pixel_flow
from simulation.render.raycast import RAY_THREADS, Hits, PendingHits, PendingOcclusion, intersect
from simulation.render.scene import FrameGeometry, Layer, MeshState, RenderScene
from simulation.render.shading import blinn_phong, dot, linear_to_srgb8, sample_texture

NO_HIT_DEPTH = 0.0  # depth and distance where no surface is hit (as in the depth PNGs: 0 = no return)
# Shadow rays start this far off the surface (plus a share of the camera distance) so they do not
# re-hit the triangle they leave because of float32 rounding.
SHADOW_BIAS = 1e-4  # metres
SHADOW_BIAS_PER_METRE = 1e-5
_DYNAMIC_BOX_MARGIN = 1  # pixels around a dynamic mesh's projected box that are traced against it
_TINY = np.float32(1e-12)


@dataclass(frozen=True)
class RenderOptions:
    rgb: bool = True
    shadows: bool = True
    boxes: bool = True
    occlusion: bool = True  # occlusion ratios (costs the alone-render rays of each visible instance)
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


@dataclass(frozen=True)
class _Surface:
    """Nearest hits of a ray batch, compacted to the rays that hit something, in RenderScene.table numbering."""

    rays: np.ndarray  # (N,) indices into the batch
    prim: np.ndarray  # (N,) face
    u: np.ndarray
    v: np.ndarray
    t: np.ndarray
    mesh: np.ndarray  # (N,) mesh
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


def _dynamic_pixels(camera: Camera, boxes: np.ndarray | None) -> np.ndarray:
    """Boolean (H*W,): pixels whose rays may hit a dynamic mesh."""
    mask = np.zeros((camera.height, camera.width), dtype=bool)
    for x0, y0, x1, y1 in boxes if boxes is not None else ():
        if x1 >= x0:
            m = _DYNAMIC_BOX_MARGIN
            mask[max(y0 - m, 0):y1 + m + 1, max(x0 - m, 0):x1 + m + 1] = True
    return mask.ravel()


def _trace_static(scene: RenderScene, rays: Rays, threads: int) -> PendingHits | None:
    if scene.static is None:
        return None
    return PendingHits(scene.static.embree, rays.origins, rays.directions, rays.tfar, threads)


def _trace(scene: RenderScene, dynamic: Layer | None, rays: Rays, dynamic_pixels: np.ndarray, threads: int,
           pending: PendingHits | None) -> _Surface:
    """Nearest hits of `rays` over both layers, given the static trace started by `_trace_static`."""
    n = len(rays.origins)
    hits = pending.result() if pending is not None else Hits.empty(n)
    t, prim, u, v = hits.t, hits.prim, hits.u, hits.v
    samples = n // len(dynamic_pixels)
    candidates = np.flatnonzero(np.repeat(dynamic_pixels, samples) if samples > 1 else dynamic_pixels)
    if dynamic is not None and len(candidates):
        near = intersect(dynamic.embree, np.take(rays.origins, candidates, axis=0),
                         np.take(rays.directions, candidates, axis=0), np.take(rays.tfar, candidates), threads)
        closer = near.t < np.take(t, candidates)  # ties go to the static surface
        chosen = candidates[closer]
        t[chosen], u[chosen], v[chosen] = near.t[closer], near.u[closer], near.v[closer]
        prim[chosen] = near.prim[closer] + scene.first_dynamic_face
    hit = np.flatnonzero(prim >= 0)
    if len(hit) < n:
        prim, u, v, t = np.take(prim, hit), np.take(u, hit), np.take(v, hit), np.take(t, hit)
    return _Surface(hit, prim, u, v, t, np.take(scene.table.face_mesh, prim), len(hit) == n)


def _barycentric(values: np.ndarray, corners: np.ndarray, prim: np.ndarray, u: np.ndarray,
                 v: np.ndarray) -> np.ndarray:
    """Per-vertex `values` (C, V) interpolated at Embree barycentrics on triangles `prim`, as (C, N)."""
    index = np.take(corners, prim, axis=1)
    return (np.take(values, index[0], axis=1) * (1 - u - v) + np.take(values, index[1], axis=1) * u
            + np.take(values, index[2], axis=1) * v)


def _normals(scene: RenderScene, geometry: FrameGeometry, surface: _Surface) -> np.ndarray:
    """Unit world normals (3, N) as authored: flat, or interpolated for smooth meshes."""
    normals = np.take(geometry.face_normals, surface.prim, axis=1)
    if geometry.vertex_normals is not None:
        smooth = np.flatnonzero(np.take(scene.table.smooth, surface.mesh))
        if len(smooth):
            blended = _barycentric(geometry.vertex_normals, scene.table.corners, surface.prim[smooth],
                                   surface.u[smooth], surface.v[smooth])
            norm = np.sqrt(dot(blended, blended))
            put_columns(normals, smooth, np.divide(blended, norm, out=np.take(normals, smooth, axis=1),
                                                   where=norm > 0))
    return normals


def _albedo(scene: RenderScene, surface: _Surface) -> np.ndarray:
    """Albedo (3, N) of the surface hits from base colours and textures."""
    table = scene.table
    albedo = np.take(table.base_color, surface.mesh, axis=1)
    textured = np.flatnonzero(np.take(table.textured, surface.mesh))
    if len(textured):
        mesh = surface.mesh[textured]
        uv = _barycentric(table.uvs, table.corners, surface.prim[textured], surface.u[textured],
                          surface.v[textured])
        order = np.argsort(mesh, kind="stable")
        sorted_mesh = mesh[order]
        starts = np.flatnonzero(np.diff(sorted_mesh, prepend=-1))
        for start, stop in zip(starts, [*starts[1:], len(order)]):
            material = table.meshes[sorted_mesh[start]].material
            rows = order[start:stop]
            put_columns(albedo, textured[rows], sample_texture(material.texture_linear, np.take(uv, rows, axis=1),
                                                               material.texture_filter))
    return albedo


def _shade(scene: RenderScene, dynamic: Layer | None, rays: Rays, surface: _Surface, normals: np.ndarray,
           options: RenderOptions) -> np.ndarray:
    """Linear RGB (3, N) of the surface hits: ambient + Lambert/Blinn-Phong per light, hard shadows."""
    table = scene.table
    albedo = _albedo(scene, surface)
    exponent, scale = np.take(table.exponent, surface.mesh), np.take(table.lobe_scale, surface.mesh)
    metallic = np.take(table.metallic, surface.mesh) if table.metallic.any() else None
    directions = surface.gather(rays.components)
    from_eye = surface.gather(rays.offset) + surface.t
    points = directions * from_eye
    points += rays.eye[:, None]
    # Shade the side the camera sees: flip normals of back faces.
    shading_normals = normals * (np.float32(1) - np.float32(2) * (dot(normals, directions) > 0))
    to_viewer = -directions
    color = albedo * scene.ambient[:, None]
    bias = np.float32(SHADOW_BIAS) + np.float32(SHADOW_BIAS_PER_METRE) * from_eye
    for light in scene.lights:
        to_light = np.asarray(light.position, np.float32)[:, None] - points
        squared = dot(to_light, to_light)
        distance = np.sqrt(squared)
        to_light /= np.maximum(distance, _TINY)
        n_dot_l = np.maximum(dot(shading_normals, to_light), np.float32(0))
        shadows = []
        if options.shadows:
            # Every point gets a shadow ray (a zero-length one where the light is behind the surface):
            # selecting the lit ones would cost more than tracing the few extra rays.
            origins = rows_to_points(points + shading_normals * bias)
            towards = rows_to_points(to_light)
            reach = (distance - 2 * bias) * (n_dot_l > 0)
            shadows = [PendingOcclusion(layer.embree, origins, towards, reach, options.threads)
                       for layer in (scene.static, dynamic) if layer is not None]
        # Shading runs while the shadow rays are traced; blocked points lose the light afterwards.
        irradiance = n_dot_l / np.maximum(squared, _TINY)
        if light.color != (1.0, 1.0, 1.0):
            irradiance = np.asarray(light.color, np.float32)[:, None] * irradiance
        reflected = blinn_phong(albedo, shading_normals, to_viewer, to_light, irradiance * np.float32(light.intensity),
                                exponent, scale, metallic)
        if shadows:
            reflected *= ~np.logical_or.reduce([pending.result() for pending in shadows])
        color += reflected
    return color


def _rgb(scene: RenderScene, dynamic: Layer | None, geometry: FrameGeometry, camera: Camera, pose: np.ndarray,
         rays: Rays, surface: _Surface, normals: np.ndarray, dynamic_pixels: np.ndarray,
         options: RenderOptions) -> np.ndarray:
    samples = options.supersample
    if samples > 1:
        rays = camera_rays(camera, pose, samples)
        surface = _trace(scene, dynamic, rays, dynamic_pixels, options.threads,
                         _trace_static(scene, rays, options.threads))
        normals = _normals(scene, geometry, surface)
    linear = np.empty((3, len(rays.origins)), np.float32)
    linear[:] = scene.background[:, None]
    linear = surface.scatter(linear, _shade(scene, dynamic, rays, surface, normals, options))
    if samples > 1:
        linear = linear.reshape(3, -1, samples * samples).mean(axis=2)
    return rows_to_points(linear_to_srgb8(linear)).reshape(camera.height, camera.width, 3)


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
    height, width = camera.height, camera.width
    rays = camera_rays(camera, pose)
    pending = _trace_static(scene, rays, options.threads)
    dynamic = scene.dynamic_layer(states, with_next=next_pose is not None)  # built while Embree traces
    dynamic_boxes = projected_boxes(camera, pose, dynamic) if dynamic is not None else None
    dynamic_pixels = _dynamic_pixels(camera, dynamic_boxes)
    surface = _trace(scene, dynamic, rays, dynamic_pixels, options.threads, pending)
    geometry = scene.frame_geometry(dynamic, with_next=next_pose is not None)

    pixels, table = surface.rays, scene.table
    size = height * width
    instance = surface.scatter(np.zeros(size, np.uint16), np.take(table.instance_ids, surface.mesh))
    instance = instance.reshape(height, width)
    semantic = surface.scatter(np.zeros(size, np.uint16), np.take(table.semantic_ids, surface.mesh))
    from_eye = surface.gather(rays.offset) + surface.t
    distance = surface.scatter(np.full(size, NO_HIT_DEPTH, np.float32), from_eye)
    depth = surface.scatter(np.full(size, NO_HIT_DEPTH, np.float32), from_eye * surface.gather(rays.dz))
    normals = _normals(scene, geometry, surface)
    normal_rows = surface.scatter(np.zeros((3, size), np.float32), normals)
    flow = None
    if next_pose is not None:
        moved = _barycentric(geometry.next_world_vertices, table.corners, surface.prim, surface.u, surface.v)
        flow_rows = surface.scatter(np.full((2, size), UNDEFINED_FLOW, np.float32),
                                    pixel_flow(camera, next_pose, pixels, moved))
        flow = rows_to_points(flow_rows).reshape(height, width, 2)

    pending_boxes = None
    if options.boxes:  # its alone-render rays trace while the RGB is shaded
        static_boxes = projected_boxes(camera, pose, scene.static) if scene.static is not None else None
        pending_boxes = PendingBoxes(instance, scene, dynamic, rays, static_boxes, dynamic_boxes, options.occlusion,
                                     options.threads)
    rgb = None
    if options.rgb:
        rgb = _rgb(scene, dynamic, geometry, camera, pose, rays, surface, normals, dynamic_pixels, options)
    if pending_boxes is not None:
        boxes = pending_boxes.result()
        ids, tight, loose, boxes_3d = boxes.instance_ids, boxes.tight, boxes.loose, boxes.boxes_3d
    else:
        ids = np.zeros(0, np.uint32)
        tight, loose, boxes_3d = np.zeros(0, BOX_2D_DTYPE), np.zeros(0, BOX_2D_DTYPE), np.zeros(0, BOX_3D_DTYPE)
    return Frame(
        rgb=rgb, depth=depth.reshape(height, width), distance=distance.reshape(height, width), instance=instance,
        semantic=semantic.reshape(height, width), normals=rows_to_points(normal_rows).reshape(height, width, 3),
        flow=flow, instance_ids=ids, boxes_2d_tight=tight, boxes_2d_loose=loose, boxes_3d=boxes_3d,
        camera=CameraParams(camera.K, width, height, pose, camera.near, camera.far),
    )

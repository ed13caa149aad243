"""RGB: albedo (base colours, textures), ambient (or the irradiance probes' indirect light) plus Lambert and
Blinn-Phong or GGX per light (point or directional), hard or soft shadows from shadow rays (quality.py), the
background of rays that hit nothing, supersample averaging; linear colour, which the renderer exposes, tone maps and
sRGB-encodes (exposure.py).

The per-point work, shadow rays included, is one compiled loop per tile (shade_kernels.shade), run in the calling
thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from embreex.rtcore_scene import EmbreeScene

from simulation.render import shade_kernels
from simulation.render.camera import Rays
from simulation.render.irradiance import FrameProbes
from simulation.render.quality import PRESETS, ShadingQuality
from simulation.render.raycast import occlusion_query
from simulation.render.scene import DirectionalLight, RenderLight, RenderScene
from simulation.render.shading import MipMaps, TexturePool
from simulation.render.surface import Surface

# Shadow rays start this far off the surface (plus a share of the camera distance) so they do not
# re-hit the triangle they leave because of float32 rounding.
SHADOW_BIAS = 1e-4  # metres
SHADOW_BIAS_PER_METRE = 1e-5
_BIAS, _BIAS_PER_METRE = np.float32(SHADOW_BIAS), np.float32(SHADOW_BIAS_PER_METRE)
# How far a directional light's shadow rays look for a blocker: unbounded in effect (float32 keeps it exact).
_SUN_REACH = np.float32(1e9)
_NONE = np.zeros(0, np.float32)  # no metallic mesh
_NO_INDIRECT = np.zeros((3, 0), np.float32)
_NO_AMBIENT = np.zeros(3, np.float32)  # the probes' indirect light stands for it
_NO_MIPS = MipMaps(TexturePool.of([]), np.zeros(0, np.intp), np.zeros(0, np.int64), np.zeros(0, np.float32),
                   np.zeros(0, np.float32))


@dataclass(frozen=True)
class LightArrays:
    """A frame's lights as the shading loop reads them (shade_kernels.shade): kind, position or direction,
    squared radius, intensity and colour, in float32 like the loop's arithmetic."""

    kinds: np.ndarray  # (L,) int64: shade_kernels.POINT_LIGHT or DIRECTIONAL_LIGHT
    vectors: np.ndarray  # (L, 3) float32
    radii_squared: np.ndarray  # (L,) float32
    intensities: np.ndarray  # (L,) float32
    colors: np.ndarray  # (L, 3) float32

    @classmethod
    def of(cls, lights: Sequence[RenderLight]) -> LightArrays:
        directional = [isinstance(light, DirectionalLight) for light in lights]
        return cls(
            np.array([shade_kernels.DIRECTIONAL_LIGHT if d else shade_kernels.POINT_LIGHT for d in directional],
                     np.int64),
            np.array([light.direction if d else light.position for light, d in zip(lights, directional)],
                     np.float32).reshape(-1, 3),
            np.array([0.0 if d else np.float32(light.radius**2) for light, d in zip(lights, directional)], np.float32),
            np.array([np.float32(light.intensity) for light in lights], np.float32),
            np.array([light.color for light in lights], np.float32).reshape(-1, 3))


def frame_probes(scene: RenderScene, lights: LightArrays, quality: ShadingQuality) -> FrameProbes | None:
    """The frame's irradiance probes where `quality` uses them and the scene has static meshes (baked on first use,
    see irradiance.ProbeCache), else None."""
    if quality.probes is None or scene.static is None:
        return None
    sky = scene.background.tobytes() + str(id(scene.environment)).encode()
    return scene.probe_cache.frame(scene.static_scene, sky, lights.kinds, lights.vectors, lights.radii_squared,
                                   lights.intensities, lights.colors, quality.probes)


def linear_colour(scene: RenderScene, embree: EmbreeScene, lights: LightArrays, rays: Rays, surface: Surface,
                  normals: np.ndarray, shadows: bool, samples: int, quality: ShadingQuality = PRESETS["fast"],
                  probes: FrameProbes | None = None, spread: float = 0.0) -> np.ndarray:
    """Linear colour (3, pixels) of the rays' pixels, `samples` x `samples` consecutive rays per pixel:
    albedo (ambient + Lambert/Blinn-Phong or GGX per light, unblocked lights only with `shadows`, traced against
    the frame's `embree` scene) where a ray hits, the background elsewhere; with `probes` (frame_probes), the
    probes' indirect light replaces the ambient term. Where `quality` filters textures by distance, `spread` is
    the angle (radians) between neighbouring rays (1 / (fx samples))."""
    table, textures, pool = scene.table, scene.textures, scene.textures.pool
    metallic = table.metallic if table.metallic.any() else _NONE
    query = occlusion_query(embree)
    linear = np.empty((3, len(rays.tfar)), np.float32)
    ambient, indirect = scene.ambient, _NO_INDIRECT
    mips = table.mip_maps if quality.mipmaps else _NO_MIPS
    if probes is not None:
        ambient = _NO_AMBIENT
        indirect = shade_kernels.indirect_of_hits(probes.cubes, probes.valid, probes.origin, probes.spacing,
                                                  rays.components, rays.offset, rays.eye, surface.rays,
                                                  surface.complete, surface.t, normals)
    shade_kernels.shade(
        linear, rays.components, rays.offset, rays.eye, surface.rays, surface.complete, surface.t, normals,
        surface.mesh, surface.prim, surface.u, surface.v, table.base_color, textures.index, textures.nearest,
        scene.corner_uvs, pool.texels, pool.first, pool.width, pool.height, table.exponent, table.lobe_scale,
        metallic, ambient, lights.kinds, lights.vectors, lights.radii_squared, lights.intensities,
        lights.colors, shadows, query.function, query.handle, query.lanes, query.valid, query.arguments, _BIAS,
        _BIAS_PER_METRE, _SUN_REACH, quality.shadow_samples, quality.ggx, table.alpha, indirect, quality.mipmaps,
        np.float32(spread), mips.pool.texels, mips.pool.first, mips.pool.width, mips.pool.height, mips.base,
        mips.count, mips.size_bias, mips.face_bias)
    if not surface.complete:
        if scene.environment is None:
            shade_kernels.fill_misses(linear, surface.rays, scene.background)
        else:
            shade_kernels.fill_misses_environment(linear, surface.rays, rays.components, scene.environment.texels)
    if samples == 1:
        return linear
    return linear.reshape(3, -1, samples * samples).mean(axis=2)

"""RGB: albedo (base colours, textures), ambient plus Lambert/Blinn-Phong per light (point or directional),
hard shadows from shadow rays, the background of rays that hit nothing, supersample averaging; linear colour, which
the renderer exposes, tone maps and sRGB-encodes (exposure.py).

`Lighting` traces its shadow rays (one batch per light, for a tile of the image) in the calling thread
when asked for the colours.
"""

from __future__ import annotations

import numpy as np

from simulation.render import kernels
from simulation.render.camera import Rays
from simulation.render.raycast import trace_occlusion
from simulation.render.scene import DirectionalLight, RenderScene
from simulation.render.surface import Surface

# Shadow rays start this far off the surface (plus a share of the camera distance) so they do not
# re-hit the triangle they leave because of float32 rounding.
SHADOW_BIAS = 1e-4  # metres
SHADOW_BIAS_PER_METRE = 1e-5
_BIAS, _BIAS_PER_METRE = np.float32(SHADOW_BIAS), np.float32(SHADOW_BIAS_PER_METRE)
# How far a directional light's shadow rays look for a blocker: unbounded in effect (float32 keeps it exact).
_SUN_REACH = np.float32(1e9)
_NONE = np.zeros(0, np.float32)  # no metallic mesh
_ALL_LIT = np.zeros(0, bool)  # no shadow test


def albedo(scene: RenderScene, surface: Surface) -> np.ndarray:
    """Albedo (3, N) of the surface hits from base colours and textures."""
    table, textures, pool = scene.table, scene.textures, scene.textures.pool
    return kernels.albedo(surface.mesh, surface.prim, surface.u, surface.v, table.base_color, textures.index,
                          textures.nearest, scene.corner_uvs, pool.texels, pool.first, pool.width, pool.height)


class Lighting:
    """Per-light cosines, irradiance and shadow rays at the surface points; `linear` traces the shadow rays.

    Shading uses the side of each face that the camera sees (normals of back faces flipped).
    """

    def __init__(self, scene: RenderScene, rays: Rays, surface: Surface, normals: np.ndarray, shadows: bool):
        self.scene, self.surface, self.rays = scene, surface, rays
        camera = (rays.components, rays.offset, surface.rays, surface.complete, surface.t, normals)
        points, side, self.cos_nv, origins = kernels.surface_points(
            rays.components, rays.offset, rays.eye, surface.rays, surface.complete, surface.t, normals, _BIAS,
            _BIAS_PER_METRE)
        self.lights = []
        for light in scene.lights:
            if isinstance(light, DirectionalLight):
                cos_nl, cos_lv, irradiance, to_light, reach = kernels.directional_terms(
                    rays.components, surface.rays, surface.complete, normals, side,
                    np.asarray(light.direction, np.float32), _SUN_REACH)
                self.lights.append((light, cos_nl, cos_lv, irradiance, (origins, to_light, reach) if shadows else None))
                continue
            cos_nl, cos_lv, irradiance, to_light, reach = kernels.light_terms(
                points, *camera, side, np.asarray(light.position, np.float32), np.float32(light.radius**2), _BIAS,
                _BIAS_PER_METRE)
            # Rays along the unnormalised to_light, so reach is a fraction of the way to the light. Points
            # facing away from the light get a zero-length ray (found unblocked at once): selecting the lit
            # ones would cost more than tracing the few extra rays.
            self.lights.append((light, cos_nl, cos_lv, irradiance, (origins, to_light, reach) if shadows else None))

    def _light_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Diffuse and specular weights (3, N) summed over the lights; blocked points lose the light."""
        table, mesh, count = self.scene.table, self.surface.mesh, len(self.surface.t)
        metallic = table.metallic if table.metallic.any() else _NONE
        diffuse, specular = np.zeros((3, count), np.float32), np.zeros((3, count), np.float32)
        for light, cos_nl, cos_lv, irradiance, shadow_rays in self.lights:
            lit = _ALL_LIT if shadow_rays is None else ~trace_occlusion(self.scene.embree, *shadow_rays)
            kernels.add_light(diffuse, specular, cos_nl, self.cos_nv, cos_lv, irradiance, np.float32(light.intensity),
                              np.asarray(light.color, np.float32), lit, mesh, table.exponent, table.lobe_scale,
                              metallic)
        return diffuse, specular

    def linear(self, samples: int) -> np.ndarray:
        """Linear colour (3, pixels) of the rays' pixels, `samples` x `samples` consecutive rays per pixel:
        albedo (ambient + Lambert/Blinn-Phong per light) where a ray hits, the background elsewhere."""
        scene, surface = self.scene, self.surface
        diffuse, specular = self._light_sums()
        linear = np.empty((3, len(self.rays.tfar)), np.float32)
        kernels.compose(linear, albedo(scene, surface), scene.ambient, diffuse, specular, surface.rays,
                        surface.complete)
        if not surface.complete:
            if scene.environment is None:
                kernels.fill_misses(linear, surface.rays, scene.background)
            else:
                kernels.fill_misses_environment(linear, surface.rays, self.rays.components,
                                                scene.environment.texels)
        if samples == 1:
            return linear
        return linear.reshape(3, -1, samples * samples).mean(axis=2)

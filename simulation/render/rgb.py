"""RGB: albedo (base colours, textures), ambient plus Lambert/Blinn-Phong per point light, hard shadows
from shadow rays, supersample averaging, sRGB encoding.

`Lighting` traces its shadow rays (one batch per light, for a tile of the image) in the calling thread
when asked for the colours.
"""

from __future__ import annotations

import numpy as np

from simulation.render import kernels
from simulation.render.camera import Rays
from simulation.render.raycast import trace_occlusion
from simulation.render.scene import RenderScene
from simulation.render.shading import ENCODE_LUT
from simulation.render.surface import Surface

# Shadow rays start this far off the surface (plus a share of the camera distance) so they do not
# re-hit the triangle they leave because of float32 rounding.
SHADOW_BIAS = 1e-4  # metres
SHADOW_BIAS_PER_METRE = 1e-5
_BIAS, _BIAS_PER_METRE = np.float32(SHADOW_BIAS), np.float32(SHADOW_BIAS_PER_METRE)
_NONE = np.zeros(0, np.float32)  # no metallic mesh
_ALL_LIT = np.zeros(0, bool)  # no shadow test


def albedo(scene: RenderScene, surface: Surface) -> np.ndarray:
    """Albedo (3, N) of the surface hits from base colours and textures."""
    table, textures, pool = scene.table, scene.textures, scene.textures.pool
    return kernels.albedo(surface.mesh, surface.prim, surface.u, surface.v, table.base_color, textures.index,
                          textures.nearest, scene.corner_uvs, pool.texels, pool.first, pool.width, pool.height)


class Lighting:
    """Per-light cosines, irradiance and shadow rays at the surface points; `srgb` traces the shadow rays.

    Shading uses the side of each face that the camera sees (normals of back faces flipped).
    """

    def __init__(self, scene: RenderScene, rays: Rays, surface: Surface, normals: np.ndarray, shadows: bool):
        self.scene, self.surface, self.ray_count = scene, surface, len(rays.tfar)
        camera = (rays.components, rays.offset, surface.rays, surface.complete, surface.t, normals)
        points, side, self.cos_nv, origins = kernels.surface_points(
            rays.components, rays.offset, rays.eye, surface.rays, surface.complete, surface.t, normals, _BIAS,
            _BIAS_PER_METRE)
        self.lights = []
        for light in scene.lights:
            cos_nl, cos_lv, irradiance, to_light, reach = kernels.light_terms(
                points, *camera, side, np.asarray(light.position, np.float32), _BIAS, _BIAS_PER_METRE)
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

    def srgb(self, samples: int) -> np.ndarray:
        """uint8 sRGB (pixels, 3) of the rays' pixels, `samples` x `samples` consecutive rays per pixel:
        albedo (ambient + Lambert/Blinn-Phong per light)."""
        scene, surface = self.scene, self.surface
        diffuse, specular = self._light_sums()
        color = albedo(scene, surface)
        if samples == 1:
            return kernels.compose_srgb8(color, scene.ambient, diffuse, specular, surface.rays, surface.complete,
                                         self.ray_count, scene.background, ENCODE_LUT)
        linear = kernels.compose(color, scene.ambient, diffuse, specular)
        if not surface.complete:
            linear = surface.scatter(np.repeat(scene.background[:, None], self.ray_count, axis=1), linear)
        return kernels.srgb8(linear.reshape(3, -1, samples * samples).mean(axis=2), ENCODE_LUT)

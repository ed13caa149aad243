"""RGB: albedo (base colours, textures), ambient plus Lambert/Blinn-Phong per point light, hard shadows
from shadow rays, supersample averaging, sRGB encoding.

`Lighting` traces its shadow rays (one batch per light, for a tile of the image) in the calling thread
when asked for the colours.
"""

from __future__ import annotations

import numpy as np

from simulation.render.camera import Rays
from simulation.render.columns import put_columns
from simulation.render.raycast import trace_occlusion
from simulation.render.scene import RenderScene
from simulation.render.shading import blinn_phong, dot, linear_to_srgb8
from simulation.render.surface import Surface, face_barycentric

# Shadow rays start this far off the surface (plus a share of the camera distance) so they do not
# re-hit the triangle they leave because of float32 rounding.
SHADOW_BIAS = 1e-4  # metres
SHADOW_BIAS_PER_METRE = 1e-5
_TINY = np.float32(1e-12)
_WHITE = (1.0, 1.0, 1.0)


def albedo(scene: RenderScene, surface: Surface) -> np.ndarray:
    """Albedo (3, N) of the surface hits from base colours and textures."""
    table, textures = scene.table, scene.textures
    texture = np.take(textures.index, surface.mesh)
    every = texture.min(initial=0) >= 0  # indoors, often every hit is textured
    textured = None if every else np.flatnonzero(texture >= 0)
    if textured is not None and not len(textured):
        return np.take(table.base_color, surface.mesh, axis=1)
    mesh, prim, u, v = (surface.mesh, surface.prim, surface.u, surface.v) if every else (
        surface.mesh[textured], surface.prim[textured], surface.u[textured], surface.v[textured])
    if not every:
        texture = texture[textured]
    uv = face_barycentric(scene.corner_uvs, prim, u, v)
    nearest = np.take(textures.nearest, mesh) if textures.nearest.any() else None
    if nearest is None or not nearest.any():
        sampled = textures.pool.sample(texture, uv, "bilinear")
    elif nearest.all():
        sampled = textures.pool.sample(texture, uv, "nearest")
    else:
        sampled = np.empty_like(uv, shape=(3, len(texture)))
        for mode, rows in (("nearest", np.flatnonzero(nearest)), ("bilinear", np.flatnonzero(~nearest))):
            put_columns(sampled, rows, textures.pool.sample(texture[rows], np.take(uv, rows, axis=1), mode))
    if every:
        return sampled
    colors = np.take(table.base_color, surface.mesh, axis=1)
    put_columns(colors, textured, sampled)
    return colors


class Lighting:
    """Per-light cosines, irradiance and shadow rays at the surface points; `color` traces the shadow rays.

    Shading uses the side of each face that the camera sees (normals of back faces flipped).
    """

    def __init__(self, scene: RenderScene, rays: Rays, surface: Surface, normals: np.ndarray, shadows: bool):
        self.scene, self.surface, self.ray_count = scene, surface, len(rays.tfar)
        directions = surface.gather(rays.components)
        from_eye = surface.gather(rays.offset) + surface.t
        points = directions * from_eye
        points += rays.eye[:, None]
        normal_dot_ray = dot(normals, directions)
        side = np.where(normal_dot_ray > 0, np.float32(-1), np.float32(1))
        self.cos_nv = np.abs(normal_dot_ray)
        bias = np.float32(SHADOW_BIAS) + np.float32(SHADOW_BIAS_PER_METRE) * from_eye
        origins = points + normals * (side * bias) if shadows and scene.lights else None
        self.lights = []
        for light in scene.lights:
            to_light = np.asarray(light.position, np.float32)[:, None] - points
            squared = dot(to_light, to_light)
            inverse = np.float32(1) / np.maximum(np.sqrt(squared), _TINY)
            cos_nl = dot(normals, to_light)
            cos_nl *= side * inverse
            cos_lv = dot(directions, to_light)
            cos_lv *= -inverse
            n_dot_l = np.maximum(cos_nl, np.float32(0))
            shadow_rays = None
            if shadows:
                # Rays along the unnormalised to_light, so tfar is a fraction of the way to the light.
                # Points facing away from the light get a zero-length ray (found unblocked at once):
                # selecting the lit ones would cost more than tracing the few extra rays.
                reach = (np.float32(1) - np.float32(2) * bias * inverse) * (n_dot_l > 0)
                shadow_rays = (origins.T, to_light.T, reach)
            self.lights.append((light, cos_nl, cos_lv, n_dot_l / np.maximum(squared, _TINY), shadow_rays))

    def color(self) -> np.ndarray:
        """Linear RGB (3, N): ambient + Lambert/Blinn-Phong per light; blocked points lose the light."""
        table, mesh = self.scene.table, self.surface.mesh
        exponent, scale = np.take(table.exponent, mesh), np.take(table.lobe_scale, mesh)
        metallic = np.take(table.metallic, mesh) if table.metallic.any() else None
        diffuse = specular = None  # (N,), or (3, N) once a coloured light adds in
        for light, cos_nl, cos_lv, irradiance, shadow_rays in self.lights:
            weights = blinn_phong(cos_nl, self.cos_nv, cos_lv, irradiance * np.float32(light.intensity), exponent,
                                  scale, metallic)
            if shadow_rays is not None:
                lit = ~trace_occlusion(self.scene.embree, *shadow_rays)
                for weight in weights:
                    weight *= lit
            if light.color != _WHITE:
                tint = np.asarray(light.color, np.float32)[:, None]
                weights = (tint * weights[0], tint * weights[1])
            diffuse = weights[0] if diffuse is None else diffuse + weights[0]
            specular = weights[1] if specular is None else specular + weights[1]
        color = albedo(self.scene, self.surface)
        color *= self.scene.ambient[:, None] if diffuse is None else self.scene.ambient[:, None] + diffuse
        if specular is not None:
            color += specular
        return color

    def srgb(self, samples: int) -> np.ndarray:
        """uint8 sRGB (pixels, 3) of the rays' pixels, `samples` x `samples` consecutive rays per pixel."""
        linear = self.color()
        if not self.surface.complete:
            linear = self.surface.scatter(np.repeat(self.scene.background[:, None], self.ray_count, axis=1), linear)
        if samples > 1:
            linear = linear.reshape(3, -1, samples * samples).mean(axis=2)
        return linear_to_srgb8(linear).T

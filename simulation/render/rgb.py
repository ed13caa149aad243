"""RGB: albedo (base colours, textures), ambient plus Lambert/Blinn-Phong per point light, hard shadows
from shadow rays, supersample averaging, sRGB encoding.

`Lighting` queues its shadow rays (one batch per light, for a tile of the image) on the ray threads as
soon as it is created, so the caller can do other work before asking for the colours.
"""

from __future__ import annotations

import numpy as np

from simulation.render.camera import Rays
from simulation.render.columns import put_columns
from simulation.render.raycast import PendingOcclusion
from simulation.render.scene import RenderScene
from simulation.render.shading import blinn_phong, dot, linear_to_srgb8, sample_texture
from simulation.render.surface import Surface, barycentric

# Shadow rays start this far off the surface (plus a share of the camera distance) so they do not
# re-hit the triangle they leave because of float32 rounding.
SHADOW_BIAS = 1e-4  # metres
SHADOW_BIAS_PER_METRE = 1e-5
_TINY = np.float32(1e-12)
_WHITE = (1.0, 1.0, 1.0)


def albedo(scene: RenderScene, surface: Surface) -> np.ndarray:
    """Albedo (3, N) of the surface hits from base colours and textures."""
    table = scene.table
    colors = np.take(table.base_color, surface.mesh, axis=1)
    textured = np.flatnonzero(np.take(table.textured, surface.mesh))
    if len(textured):
        mesh = surface.mesh[textured]
        uv = barycentric(table.uvs, table.corners, surface.prim[textured], surface.u[textured], surface.v[textured])
        order = np.argsort(mesh, kind="stable")
        sorted_mesh = mesh[order]
        starts = np.flatnonzero(np.diff(sorted_mesh, prepend=-1))
        for start, stop in zip(starts, [*starts[1:], len(order)]):
            material = table.meshes[sorted_mesh[start]].material
            rows = order[start:stop]
            put_columns(colors, textured[rows], sample_texture(material.texture_linear, np.take(uv, rows, axis=1),
                                                               material.texture_filter))
    return colors


class Lighting:
    """Per-light cosines and irradiance at the surface points, with their shadow rays already running.

    Shading uses the side of each face that the camera sees (normals of back faces flipped).
    """

    def __init__(self, scene: RenderScene, rays: Rays, surface: Surface, normals: np.ndarray, shadows: bool,
                 threads: int):
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
            blocked = None
            if shadows:
                # Rays along the unnormalised to_light, so tfar is a fraction of the way to the light.
                # Points facing away from the light get a zero-length ray (found unblocked at once):
                # selecting the lit ones would cost more than tracing the few extra rays.
                reach = (np.float32(1) - np.float32(2) * bias * inverse) * (n_dot_l > 0)
                blocked = PendingOcclusion(scene.embree, origins.T, to_light.T, reach, threads, split=False)
            self.lights.append((light, cos_nl, cos_lv, n_dot_l / np.maximum(squared, _TINY), blocked))

    def color(self) -> np.ndarray:
        """Linear RGB (3, N): ambient + Lambert/Blinn-Phong per light; blocked points lose the light."""
        table, mesh = self.scene.table, self.surface.mesh
        exponent, scale = np.take(table.exponent, mesh), np.take(table.lobe_scale, mesh)
        metallic = np.take(table.metallic, mesh) if table.metallic.any() else None
        diffuse = specular = np.float32(0)  # (N,), or (3, N) once a coloured light adds in
        for light, cos_nl, cos_lv, irradiance, blocked in self.lights:
            weights = blinn_phong(cos_nl, self.cos_nv, cos_lv, irradiance * np.float32(light.intensity), exponent,
                                  scale, metallic)
            if blocked is not None:
                lit = ~blocked.result()
                for weight in weights:
                    weight *= lit
            if light.color != _WHITE:
                weights = tuple(np.asarray(light.color, np.float32)[:, None] * weight for weight in weights)
            diffuse = diffuse + weights[0]
            specular = specular + weights[1]
        color = albedo(self.scene, self.surface)
        color *= self.scene.ambient[:, None] + diffuse
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

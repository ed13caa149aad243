"""Box and cylinder building blocks with per-vertex UVs, for furniture, architecture and objects."""

from __future__ import annotations

import numpy as np
import trimesh

from core.assets.parts import Material, SceneMesh

CYLINDER_SECTIONS = 16  # facets around a cylinder: round enough at demo resolutions, few triangles


def box(extents: tuple[float, float, float], center: tuple[float, float, float]) -> trimesh.Trimesh:
    """An axis-aligned closed box."""
    return trimesh.creation.box(extents=extents, transform=trimesh.transformations.translation_matrix(center))


def cylinder(radius: float, height: float, base: tuple[float, float, float],
             sections: int = CYLINDER_SECTIONS) -> trimesh.Trimesh:
    """A closed vertical cylinder standing on `base` (the centre of its bottom disc)."""
    x, y, z = base
    return trimesh.creation.cylinder(radius=radius, height=height, sections=sections,
                                     transform=trimesh.transformations.translation_matrix((x, y, z + height / 2)))


def cone(radius: float, height: float, base: tuple[float, float, float],
         sections: int = CYLINDER_SECTIONS) -> trimesh.Trimesh:
    """A closed vertical cone standing on `base`."""
    return trimesh.creation.cone(radius=radius, height=height, sections=sections,
                                 transform=trimesh.transformations.translation_matrix(base))


def sphere(radius: float, center: tuple[float, float, float], subdivisions: int = 1) -> trimesh.Trimesh:
    mesh = trimesh.creation.icosphere(subdivisions=subdivisions, radius=radius)
    mesh.apply_translation(center)
    return mesh


def triplanar(mesh: trimesh.Trimesh, tile: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unshared vertices, faces and UVs: each triangle is projected on the plane its normal faces most,
    so boxes get undistorted texture on every side. `tile` is the size in metres of one texture tile."""
    triangles = mesh.triangles.reshape(-1, 3)
    faces = np.arange(len(triangles)).reshape(-1, 3)
    dominant = np.repeat(np.abs(mesh.face_normals).argmax(axis=1), 3)
    planes = np.array([[1, 2], [0, 2], [0, 1]])  # normal along x -> (y, z), y -> (x, z), z -> (x, y)
    uvs = np.take_along_axis(triangles, planes[dominant], axis=1) / tile
    return triangles, faces, uvs


def scene_mesh(name: str, parts: list[trimesh.Trimesh], label: str, category: str, material: Material,
               tile: float) -> SceneMesh:
    """One labelled, textured mesh from several closed parts."""
    vertices, faces, uvs = triplanar(trimesh.util.concatenate(parts), tile)
    return SceneMesh(name, vertices, faces, label, category, material, uvs)

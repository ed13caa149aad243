"""Household objects (5-30 cm) for flying-object distractors, centred on their own origin."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import trimesh

from asset_converters.procedural.shapes import box, cone, cylinder, sphere, triplanar
from asset_converters.procedural.textures import make_texture, save_png
from core.assets.parts import Material, SceneMesh

OBJECT_TILE = 0.1  # m per texture tile: a few pattern repeats across a small object


def mug(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    r, h = rng.uniform(0.038, 0.05), rng.uniform(0.09, 0.115)
    handle = trimesh.creation.torus(major_radius=0.032, minor_radius=0.007, major_sections=16, minor_sections=8)
    handle.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, (1, 0, 0)))
    handle.apply_translation((r + 0.012, 0, h / 2))
    return [cylinder(r, h, (0, 0, 0)), handle]


def bottle(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    r, h = rng.uniform(0.032, 0.045), rng.uniform(0.15, 0.2)
    neck = rng.uniform(0.035, 0.05)
    return [cylinder(r, h, (0, 0, 0)), cone(r, 0.06, (0, 0, h)), cylinder(0.013, neck, (0, 0, h + 0.03)),
            cylinder(0.016, 0.02, (0, 0, h + 0.03 + neck))]


def book(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    w, d, t = rng.uniform(0.14, 0.24), rng.uniform(0.1, 0.17), rng.uniform(0.02, 0.05)
    return [box((w, d, t), (0, 0, t / 2))]


def ball(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    r = rng.uniform(0.06, 0.12)
    return [sphere(r, (0, 0, r), subdivisions=2)]


def carton(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    extents = rng.uniform(0.08, 0.28, 3)
    return [box(tuple(extents), (0, 0, extents[2] / 2))]


def can(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    r, h = rng.uniform(0.03, 0.035), rng.uniform(0.1, 0.125)
    return [cylinder(r, h, (0, 0, 0))]


# label -> (builder, texture patterns, colour range)
OBJECTS: dict[str, tuple[Callable[[np.random.Generator], list[trimesh.Trimesh]], tuple[str, ...],
                         tuple[tuple[float, float, float], tuple[float, float, float]]]] = {
    "mug": (mug, ("stripes", "checker", "noise"), ((0.2, 0.2, 0.2), (0.95, 0.95, 0.95))),
    "bottle": (bottle, ("stripes", "noise"), ((0.05, 0.2, 0.05), (0.6, 0.9, 0.7))),
    "book": (book, ("fabric", "noise", "stripes"), ((0.2, 0.05, 0.05), (0.8, 0.6, 0.4))),
    "ball": (ball, ("checker", "stripes"), ((0.3, 0.1, 0.1), (1.0, 0.9, 0.3))),
    "box": (carton, ("noise", "wood"), ((0.45, 0.32, 0.18), (0.75, 0.6, 0.4))),
    "can": (can, ("stripes", "checker"), ((0.3, 0.05, 0.05), (0.95, 0.8, 0.2))),
}


def object_kinds(rng: np.random.Generator) -> list[str]:
    """The kinds in a random order, so the first few objects are all different."""
    names = sorted(OBJECTS)
    return [names[i] for i in rng.permutation(len(names))]


def build_object(rng: np.random.Generator, kind: str, name: str, texture_dir: Path) -> list[SceneMesh]:
    """One textured, labelled mesh of the kind, centred on its bounding-box centre."""
    builder, patterns, (low, high) = OBJECTS[kind]
    mesh = trimesh.util.concatenate(builder(rng))
    mesh.apply_translation(-mesh.bounds.mean(axis=0))
    vertices, faces, uvs = triplanar(mesh, OBJECT_TILE)
    color = tuple(float(c) for c in rng.uniform(low, high))
    pattern = patterns[int(rng.integers(len(patterns)))]
    texture = save_png(make_texture(rng, pattern, color), texture_dir / f"{name}.png")
    material = Material(name, color, texture, roughness=float(rng.uniform(0.3, 0.8)))
    return [SceneMesh(name, vertices, faces, kind, "object", material, uvs)]

"""An outdoor environment: rolling textured ground with rocks and trees under a sun, deterministic from a seed.

The ground is a heightfield over a square centred on the origin, GROUND_CELL apart, each cell cut into two
triangles along the same diagonal; its height is a sum of a few long cosine waves in random directions,
shifted and scaled so that it spans [0, relief] m. Rocks (squashed, jittered spheres sunk a little into the
ground) and trees (a trunk and a round canopy) stand on it, apart from each other and from the edge. The
sun is a distant light at a random azimuth and an elevation in SUN_ELEVATION_DEG.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh

from asset_converters.procedural.environment import textured_material
from asset_converters.procedural.shapes import cylinder, scene_mesh, sphere
from asset_converters.procedural.textures import ramp_color
from core.assets.ground import Ground
from core.assets.parts import DistantLight, SceneMesh
from core.errors import InputError
from core.seeding import generator

GROUND_CELL = 0.5  # m between heightfield samples
GROUND_TILE = 2.0  # m of ground per texture tile
PROP_TILE = 0.6
WAVES = 4
WAVELENGTH = (12.0, 35.0)  # m
EDGE_MARGIN = 2.0  # m of open ground between the props and the edge
ROCK_RADIUS = (0.3, 0.9)  # m
ROCK_FLATTEN = (0.45, 0.8)  # height / width
ROCK_SINK = 0.25  # fraction of a rock's height below the ground under its centre
ROCK_JITTER = 0.15  # vertex displacement, fraction of the radius
TRUNK_RADIUS = (0.1, 0.2)  # m
TRUNK_HEIGHT = (1.6, 2.6)  # m above the ground
TRUNK_ROOT = 0.3  # m of trunk below the ground, so a trunk on a slope has no gap at its foot
CANOPY_RADIUS = (1.0, 1.7)  # m
PROP_GAP = 0.5  # m between the footprints of two props
MAX_PROP_TRIES = 200  # draws per prop before the ground counts as full
SUN_ELEVATION_DEG = (35.0, 65.0)
SUN_ILLUMINANCE = 50.0  # USD distant-light units: render irradiance 1.5, bright against the ambient term
SUN_COLOR = (1.0, 0.96, 0.9)
GRASS = ((0.18, 0.3, 0.08), (0.45, 0.5, 0.2))  # colour ramps (low, high)
ROCK = ((0.35, 0.33, 0.3), (0.6, 0.58, 0.55))
BARK = ((0.25, 0.17, 0.1), (0.4, 0.3, 0.2))
LEAVES = ((0.1, 0.3, 0.08), (0.3, 0.5, 0.15))
COLOR_JITTER = 0.05
GROUND_LABEL, ROCK_LABEL, TREE_LABEL = "ground", "rock", "tree"


@dataclass(frozen=True)
class TerrainOptions:
    """What `build_terrain` makes (config environment.terrain)."""

    size: float = 40.0  # m, side of the square ground
    relief: float = 1.5  # m between the lowest and the highest ground
    rocks: int = 12
    trees: int = 10


class Heightfield:
    """The ground's height function: long cosine waves, scaled to span [0, relief] over the grid."""

    def __init__(self, rng: np.random.Generator, options: TerrainOptions):
        angles = rng.uniform(0.0, 2.0 * np.pi, WAVES)
        wavelengths = rng.uniform(*WAVELENGTH, WAVES)
        self.k = np.stack([np.cos(angles), np.sin(angles)], axis=1) * (2.0 * np.pi / wavelengths)[:, None]
        self.phase = rng.uniform(0.0, 2.0 * np.pi, WAVES)
        self.amplitude = rng.uniform(0.5, 1.0, WAVES)
        self.offset, self.scale = 0.0, 1.0
        raw = self(grid_points(options.size))
        span = float(raw.max() - raw.min())
        self.offset, self.scale = float(raw.min()), options.relief / span if span > 0 else 0.0

    def __call__(self, xy: np.ndarray) -> np.ndarray:
        raw = (self.amplitude * np.cos(np.asarray(xy) @ self.k.T + self.phase)).sum(axis=-1)
        return (raw - self.offset) * self.scale


def grid_points(size: float) -> np.ndarray:
    """(n, n, 2) heightfield sample positions over the square of side `size` centred on the origin."""
    axis = np.linspace(-size / 2, size / 2, round(size / GROUND_CELL) + 1)
    return np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1)


def ground_mesh(height: Heightfield, size: float) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (n*n, 3) and upward-facing faces of the heightfield grid."""
    xy = grid_points(size)
    n = xy.shape[0]
    vertices = np.column_stack([xy.reshape(-1, 2), height(xy).reshape(-1)])
    index = np.arange(n * n).reshape(n, n)
    a, b, c, d = index[:-1, :-1], index[1:, :-1], index[1:, 1:], index[:-1, 1:]  # counter-clockwise from above
    faces = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return vertices, faces


def _spots(rng: np.random.Generator, radii: np.ndarray, size: float, taken: list[tuple[float, float, float]]
           ) -> list[tuple[float, float]]:
    """A centre for each footprint radius, inside the margin and PROP_GAP clear of `taken` (x, y, r), which
    grows; a prop that finds no room after MAX_PROP_TRIES draws is left out."""
    half = size / 2 - EDGE_MARGIN
    spots = []
    for radius in radii:
        for _ in range(MAX_PROP_TRIES):
            x, y = rng.uniform(-half + radius, half - radius, 2)
            if all(np.hypot(x - tx, y - ty) > radius + tr + PROP_GAP for tx, ty, tr in taken):
                taken.append((float(x), float(y), float(radius)))
                spots.append((float(x), float(y)))
                break
    return spots


def rock_mesh(rng: np.random.Generator, radius: float, center: tuple[float, float, float]) -> trimesh.Trimesh:
    rock = sphere(radius, (0.0, 0.0, 0.0), subdivisions=2)
    rock.vertices *= 1.0 + rng.uniform(-ROCK_JITTER, ROCK_JITTER, (len(rock.vertices), 1))
    rock.vertices[:, 2] *= rng.uniform(*ROCK_FLATTEN)
    rock.apply_transform(trimesh.transformations.rotation_matrix(rng.uniform(0, 2 * np.pi), (0, 0, 1)))
    rock.apply_translation(center)
    return rock


def build_terrain(seed: int, options: TerrainOptions, texture_dir: Path) -> tuple[list[SceneMesh], list[DistantLight]]:
    """All meshes (the ground marked as floor) and the sun of a procedural terrain; textures go to `texture_dir`."""
    if not options.size > 2 * EDGE_MARGIN or options.relief < 0 or options.rocks < 0 or options.trees < 0:
        raise InputError(f"needs size > {2 * EDGE_MARGIN} m, relief >= 0 and counts >= 0, got {options}",
                         field="environment.terrain")
    height = Heightfield(generator(seed, "procedural/terrain/ground"), options)
    rng = generator(seed, "procedural/terrain/materials")
    vertices, faces = ground_mesh(height, options.size)
    grass = textured_material(rng, "ground", "noise", ramp_color(rng, *GRASS, COLOR_JITTER), texture_dir, 0.9)
    meshes = [SceneMesh("ground", vertices, faces, GROUND_LABEL, "architecture", grass, vertices[:, :2] / GROUND_TILE,
                        is_floor=True)]
    ground = Ground(vertices, faces)
    props = generator(seed, "procedural/terrain/props")
    taken: list[tuple[float, float, float]] = []
    canopies = props.uniform(*CANOPY_RADIUS, options.trees)
    for i, (x, y) in enumerate(_spots(props, canopies, options.size, taken)):
        radius, top = canopies[i], float(props.uniform(*TRUNK_HEIGHT))
        z = float(ground.heights([(x, y)])[0])
        trunk = cylinder(float(props.uniform(*TRUNK_RADIUS)), top + TRUNK_ROOT, (x, y, z - TRUNK_ROOT))
        bark = textured_material(rng, f"bark_{i:02d}", "wood", ramp_color(rng, *BARK, COLOR_JITTER), texture_dir)
        leaves = textured_material(rng, f"leaves_{i:02d}", "noise", ramp_color(rng, *LEAVES, COLOR_JITTER),
                                   texture_dir, 0.8)
        meshes.append(scene_mesh(f"tree_{i:02d}_trunk", [trunk], TREE_LABEL, "furniture", bark, PROP_TILE))
        canopy = sphere(float(radius), (x, y, z + top + 0.6 * radius), subdivisions=2)
        meshes.append(scene_mesh(f"tree_{i:02d}_canopy", [canopy], TREE_LABEL, "furniture", leaves, PROP_TILE))
    rock_radii = props.uniform(*ROCK_RADIUS, options.rocks)
    for i, (x, y) in enumerate(_spots(props, rock_radii, options.size, taken)):
        z = float(ground.heights([(x, y)])[0])
        rock = rock_mesh(props, float(rock_radii[i]), (x, y, z))
        bottom, top = rock.vertices[:, 2].min(), rock.vertices[:, 2].max()
        rock.apply_translation((0.0, 0.0, z - bottom - ROCK_SINK * (top - bottom)))
        stone = textured_material(rng, f"rock_{i:02d}", "noise", ramp_color(rng, *ROCK, COLOR_JITTER), texture_dir)
        meshes.append(scene_mesh(f"rock_{i:02d}", [rock], ROCK_LABEL, "furniture", stone, PROP_TILE))
    sun = generator(seed, "procedural/terrain/sun")
    azimuth, elevation = sun.uniform(0.0, 2.0 * np.pi), np.radians(sun.uniform(*SUN_ELEVATION_DEG))
    direction = (float(np.cos(elevation) * np.cos(azimuth)), float(np.cos(elevation) * np.sin(azimuth)),
                 float(np.sin(elevation)))
    return meshes, [DistantLight("sun", direction, SUN_ILLUMINANCE, SUN_COLOR)]

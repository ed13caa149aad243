"""A furnished indoor environment: floors, walls, ceilings, doorways, furniture and ceiling lights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import shapely
import trimesh

from asset_converters.procedural.furniture import KINDS, Placed, place_furniture
from asset_converters.procedural.layout import DOOR_HEIGHT, WALL_THICKNESS, Plan, make_plan
from asset_converters.procedural.shapes import box, scene_mesh
from asset_converters.procedural.textures import make_texture, save_png
from core.assets.parts import Light, Material, SceneMesh
from core.seeding import generator

FLOOR_TILE = 1.0  # m of floor per texture tile
WALL_TILE = 1.2
FURNITURE_TILE = 0.5
# Ceiling lights are pendant globes: hung this far below the ceiling and this large, the ceiling right above
# one gets ~5x, not ~45x, the light's irradiance at 1 m (render lights fall off as 1 / (d^2 + r^2)), so it
# shows a bright pool rather than a blown-out hotspot.
LIGHT_BELOW_CEILING = 0.45  # m, globe centre
LIGHT_RADIUS = 0.1  # m
# USD sphere-light luminance: the power of a default parts.Light (30000 nits, 5 cm) spread over the globe.
LIGHT_LUMINANCE = 30000.0 * (0.05 / LIGHT_RADIUS) ** 2
FLOOR_PATTERNS = ("wood", "checker", "noise")
WALL_PATTERNS = ("noise", "stripes")
COLOR_JITTER = 0.08  # per-channel deviation from a colour ramp


def textured_material(rng: np.random.Generator, name: str, pattern: str, color: tuple[float, float, float],
                      texture_dir: Path, roughness: float = 0.6) -> Material:
    """A material whose texture is generated now and saved as `texture_dir/name.png`."""
    path = save_png(make_texture(rng, pattern, color), texture_dir / f"{name}.png")
    return Material(name, tuple(float(c) for c in color), path, roughness)


def _color(rng: np.random.Generator, low: tuple[float, ...], high: tuple[float, ...]) -> tuple[float, float, float]:
    """A colour on the ramp from `low` to `high`, slightly tinted, so a wood stays a wood."""
    t = rng.uniform() + rng.uniform(-COLOR_JITTER, COLOR_JITTER, 3)
    return tuple(float(c) for c in np.clip(np.asarray(low) + (np.asarray(high) - np.asarray(low)) * t, 0.0, 1.0))


def _quad(x0: float, y0: float, x1: float, y1: float, z: float, up: bool) -> tuple[np.ndarray, np.ndarray]:
    vertices = np.array([[x0, y0, z], [x1, y0, z], [x1, y1, z], [x0, y1, z]])
    faces = np.array([[0, 1, 2], [0, 2, 3]]) if up else np.array([[0, 2, 1], [0, 3, 2]])
    return vertices, faces


def _end_extensions(segments: list[tuple[np.ndarray, np.ndarray]], t: float) -> list[tuple[float, float]]:
    """How far each wall box reaches past its segment's (start, end), so junctions are filled exactly once.

    Where segments meet (corners, T-junctions), the first one reaches t/2 past the point and covers the
    t x t square there, the others stop t/2 short and abut it; a free end reaches t/2 too, to the clear
    edge of its doorway (`Doorway.gap` removes the clear width plus t), where the lintel starts. Boxes then
    only touch, never overlap: overlapping boxes would have coplanar faces, which the renderer's instance
    images show as speckles of alternating walls.
    """
    ends: dict[tuple[float, float], list[tuple[int, int]]] = {}
    for i, segment in enumerate(segments):
        for side, point in enumerate(segment):
            ends.setdefault((round(float(point[0]), 6), round(float(point[1]), 6)), []).append((i, side))
    reach = [[t / 2, t / 2] for _ in segments]
    for members in ends.values():
        for i, side in members[1:]:
            reach[i][side] = -t / 2
    return [(start, end) for start, end in reach]


def wall_boxes(plan: Plan) -> list[trimesh.Trimesh]:
    """Closed boxes along each wall line, meeting without overlap at junctions, plus lintels over the doors."""
    height, t = plan.ceiling, WALL_THICKNESS
    boxes = []
    segments = plan.wall_segments()
    for (a, b), (reach_a, reach_b) in zip(segments, _end_extensions(segments, t)):
        direction = (b - a) / np.linalg.norm(b - a)
        a, b = a - reach_a * direction, b + reach_b * direction
        length, mid = float(np.linalg.norm(b - a)), (a + b) / 2
        along_x = abs(b[0] - a[0]) > abs(b[1] - a[1])
        extents = (length, t, height) if along_x else (t, length, height)
        boxes.append(box(extents, (mid[0], mid[1], height / 2)))
    for door in plan.doors:
        if door.open_wall:
            continue
        lintel = height - DOOR_HEIGHT
        extents = (door.width, t, lintel) if door.along_x else (t, door.width, lintel)
        boxes.append(box(extents, (*door.center, DOOR_HEIGHT + lintel / 2)))
    return boxes


def architecture(rng: np.random.Generator, plan: Plan, walls: list[trimesh.Trimesh],
                 texture_dir: Path) -> list[SceneMesh]:
    """Floor and ceiling quads per room (each floor its own material) and the wall boxes."""
    meshes = []
    for i, (x0, y0, x1, y1) in enumerate(plan.rooms):
        pattern = FLOOR_PATTERNS[int(rng.integers(len(FLOOR_PATTERNS)))]
        material = textured_material(rng, f"floor_{i}", pattern, _color(rng, (0.35, 0.25, 0.2), (0.8, 0.7, 0.6)),
                                     texture_dir, roughness=0.5)
        vertices, faces = _quad(x0, y0, x1, y1, 0.0, up=True)
        meshes.append(SceneMesh(f"floor_{i}", vertices, faces, "floor", "architecture", material,
                                vertices[:, :2] / FLOOR_TILE, is_floor=True))
    ceiling = textured_material(rng, "ceiling", "noise", _color(rng, (0.85, 0.85, 0.82), (0.95, 0.95, 0.93)),
                                texture_dir, roughness=0.9)
    for i, (x0, y0, x1, y1) in enumerate(plan.rooms):
        vertices, faces = _quad(x0, y0, x1, y1, plan.ceiling, up=False)
        meshes.append(SceneMesh(f"ceiling_{i}", vertices, faces, "ceiling", "architecture", ceiling,
                                vertices[:, :2] / FLOOR_TILE))
    wall_pattern = WALL_PATTERNS[int(rng.integers(len(WALL_PATTERNS)))]
    wall = textured_material(rng, "wall", wall_pattern, _color(rng, (0.6, 0.6, 0.55), (0.95, 0.92, 0.88)),
                             texture_dir, roughness=0.8)
    meshes += [scene_mesh(f"wall_{i:02d}", [w], "wall", "architecture", wall, WALL_TILE) for i, w in enumerate(walls)]
    return meshes


def furniture_meshes(rng: np.random.Generator, placed: list[Placed], texture_dir: Path) -> list[SceneMesh]:
    meshes = []
    for i, piece in enumerate(placed):
        kind = KINDS[piece.kind]
        name = f"{piece.kind}_{i:02d}"
        pattern = kind.patterns[int(rng.integers(len(kind.patterns)))]
        material = textured_material(rng, name, pattern, _color(rng, *kind.colors), texture_dir)
        meshes.append(scene_mesh(name, piece.parts, piece.kind, "furniture", material, FURNITURE_TILE))
    return meshes


def ceiling_lights(rng: np.random.Generator, plan: Plan) -> list[Light]:
    """One warm-white pendant light under the ceiling at the centre of every room (not in alcoves)."""
    lights = []
    for i, (x0, y0, x1, y1) in enumerate(plan.rooms):
        if i in plan.alcoves:
            continue
        color = (1.0, float(rng.uniform(0.88, 0.97)), float(rng.uniform(0.75, 0.9)))
        lights.append(Light(f"ceiling_light_{i}", ((x0 + x1) / 2, (y0 + y1) / 2, plan.ceiling - LIGHT_BELOW_CEILING),
                            intensity=LIGHT_LUMINANCE, color=color, radius=LIGHT_RADIUS))
    return lights


def build_environment(seed: int, rooms: int, furniture: int,
                      texture_dir: Path) -> tuple[list[SceneMesh], list[Light], Plan]:
    """All meshes and lights of a procedural house; textures are written into `texture_dir`."""
    plan = make_plan(generator(seed, "procedural/environment/plan"), rooms)
    walls = wall_boxes(plan)
    # Lintels hang above the doorways, so only boxes standing on the floor block the floor.
    wall_area = shapely.union_all([shapely.box(*w.bounds[0][:2], *w.bounds[1][:2]) for w in walls
                                   if w.bounds[0][2] <= 0.0])
    placed = place_furniture(generator(seed, "procedural/environment/furniture"), plan, furniture, wall_area)
    rng = generator(seed, "procedural/environment/materials")
    meshes = architecture(rng, plan, walls, texture_dir) + furniture_meshes(rng, placed, texture_dir)
    return meshes, ceiling_lights(rng, plan), plan

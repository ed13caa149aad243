"""Furniture pieces built from boxes and cylinders, and their collision-free placement in a plan.

Each builder makes a piece in its own frame: origin at the centre of its footprint on the floor,
width along x, depth along y, its back towards -y (the side that goes against a wall).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import shapely
import trimesh

from asset_converters.procedural.layout import Plan
from asset_converters.procedural.shapes import box, cone, cylinder, sphere
from core.errors import InputError
from core.geometry import pose_from_xyz_yaw

Builder = Callable[[np.random.Generator], list[trimesh.Trimesh]]

WALL_GAP = 0.02  # m between a piece and the wall face
PIECE_GAP = 0.15  # m kept between two pieces
ROBOT_RADIUS = 0.3  # m: the free floor shrunk by this must stay one connected region
MIN_FREE_FRACTION = 0.55  # of the floor area, left free for humans and the robot
POCKET_AREA = 0.5  # m^2: smaller free regions cut off by furniture are tolerated (corners)
PLACEMENT_TRIES = 300  # candidate poses per piece before giving up
TRIES_PER_SHAPE = 20  # candidate poses per sampled set of dimensions
RESTARTS = 6  # fresh greedy passes before giving up
SIZE_ORDER = ["bed", "sofa", "table", "shelf", "cabinet", "chair", "plant", "lamp"]  # largest footprint first


def _legs(width: float, depth: float, height: float, size: float, inset: float) -> list[trimesh.Trimesh]:
    xs, ys = width / 2 - inset - size / 2, depth / 2 - inset - size / 2
    return [box((size, size, height), (sx * xs, sy * ys, height / 2)) for sx in (-1, 1) for sy in (-1, 1)]


def table(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    w, d, h = rng.uniform(0.8, 1.6), rng.uniform(0.6, 0.9), rng.uniform(0.72, 0.78)
    return [box((w, d, 0.04), (0, 0, h - 0.02)), *_legs(w, d, h - 0.04, 0.05, 0.04)]


def chair(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    w, seat = rng.uniform(0.42, 0.5), rng.uniform(0.43, 0.48)
    back = rng.uniform(0.4, 0.5)
    return [box((w, w, 0.05), (0, 0, seat - 0.025)), *_legs(w, w, seat - 0.05, 0.04, 0.02),
            box((w, 0.05, back), (0, -w / 2 + 0.025, seat + back / 2))]


def sofa(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    w, d = rng.uniform(1.6, 2.2), rng.uniform(0.8, 0.95)
    arm = 0.16
    return [box((w, d, 0.35), (0, 0, 0.1 + 0.175)), *_legs(w, d, 0.1, 0.06, 0.05),
            box((w, 0.2, 0.4), (0, -d / 2 + 0.1, 0.45 + 0.2)),
            box((arm, d, 0.22), (-w / 2 + arm / 2, 0, 0.45 + 0.11)),
            box((arm, d, 0.22), (w / 2 - arm / 2, 0, 0.45 + 0.11))]


def shelf(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    w, d, h = rng.uniform(0.8, 1.2), rng.uniform(0.3, 0.4), rng.uniform(1.6, 2.0)
    boards = int(rng.integers(4, 6))
    parts = [box((0.03, d, h), (sx * (w / 2 - 0.015), 0, h / 2)) for sx in (-1, 1)]
    parts.append(box((w, 0.02, h), (0, -d / 2 + 0.01, h / 2)))
    parts += [box((w - 0.06, d - 0.02, 0.03), (0, 0.01, 0.05 + i * (h - 0.08) / (boards - 1)))
              for i in range(boards)]
    return parts


def bed(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    w, d = rng.choice([rng.uniform(0.9, 1.0), rng.uniform(1.4, 1.8)]), rng.uniform(2.0, 2.1)
    return [box((w, d, 0.25), (0, 0, 0.1 + 0.125)), *_legs(w, d, 0.1, 0.07, 0.03),
            box((w - 0.06, d - 0.1, 0.2), (0, 0.03, 0.35 + 0.1)),
            box((w, 0.06, 1.0), (0, -d / 2 + 0.03, 0.5)),
            box((w * 0.7, 0.35, 0.12), (0, -d / 2 + 0.3, 0.55 + 0.06))]


def cabinet(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    w, d, h = rng.uniform(0.6, 1.0), rng.uniform(0.4, 0.5), rng.uniform(0.8, 1.2)
    handles = [box((0.02, 0.03, 0.15), (sx * 0.06, d / 2 - 0.015, h * 0.6)) for sx in (-1, 1)]
    return [box((w, d - 0.03, h - 0.08), (0, -0.015, 0.08 + (h - 0.08) / 2)),
            box((w - 0.04, d - 0.06, 0.08), (0, -0.03, 0.04)), *handles]


def plant(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    pot_r, pot_h = rng.uniform(0.14, 0.2), rng.uniform(0.28, 0.4)
    stem = rng.uniform(0.3, 0.6)
    crown = rng.uniform(0.25, 0.38)
    return [cylinder(pot_r, pot_h, (0, 0, 0)), cylinder(0.025, stem, (0, 0, pot_h)),
            sphere(crown, (0, 0, pot_h + stem + crown * 0.8))]


def lamp(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    height, shade = rng.uniform(1.4, 1.7), rng.uniform(0.16, 0.24)
    return [cylinder(0.15, 0.03, (0, 0, 0)), cylinder(0.015, height, (0, 0, 0.03)),
            cone(shade, 0.3, (0, 0, height - 0.1))]


@dataclass(frozen=True)
class Kind:
    build: Builder
    against_wall: bool  # the back goes against a wall; otherwise anywhere at any yaw
    patterns: tuple[str, ...]  # texture patterns it can have
    colors: tuple[tuple[float, float, float], tuple[float, float, float]]  # base colour range (low, high)


WOOD = ((0.45, 0.28, 0.14), (0.8, 0.6, 0.4))
KINDS: dict[str, Kind] = {
    "table": Kind(table, False, ("wood",), WOOD),
    "chair": Kind(chair, False, ("wood", "fabric"), WOOD),
    "sofa": Kind(sofa, True, ("fabric", "stripes"), ((0.15, 0.15, 0.2), (0.75, 0.6, 0.6))),
    "shelf": Kind(shelf, True, ("wood",), WOOD),
    "bed": Kind(bed, True, ("fabric", "checker"), ((0.4, 0.4, 0.45), (0.9, 0.9, 0.95))),
    "cabinet": Kind(cabinet, True, ("wood", "checker"), WOOD),
    "plant": Kind(plant, False, ("noise",), ((0.1, 0.3, 0.08), (0.3, 0.6, 0.2))),
    "lamp": Kind(lamp, False, ("stripes", "noise"), ((0.6, 0.55, 0.4), (0.95, 0.9, 0.8))),
}


@dataclass(frozen=True)
class Placed:
    kind: str
    parts: list[trimesh.Trimesh]  # in world coordinates
    footprint: shapely.Polygon  # convex hull of the parts on the floor


def _local_outline(parts: list[trimesh.Trimesh]) -> np.ndarray:
    """Corners of the convex hull of the parts seen from above, in the piece's frame."""
    return np.asarray(shapely.MultiPoint(np.concatenate([p.vertices[:, :2] for p in parts])).convex_hull.exterior.coords)


def _candidate(rng: np.random.Generator, kind: Kind, outline: np.ndarray,
               interior: shapely.Polygon) -> tuple[float, tuple[float, float]]:
    """A yaw and position in the room: against a random wall, or anywhere for free-standing kinds."""
    x0, y0, x1, y1 = interior.bounds
    lo, hi = outline.min(axis=0), outline.max(axis=0)
    if not kind.against_wall:
        return float(rng.uniform(0, 2 * np.pi)), (float(rng.uniform(x0, x1)), float(rng.uniform(y0, y1)))
    wall = int(rng.integers(4))  # the piece's back (-y) faces: 0 south, 1 east, 2 north, 3 west
    yaw = wall * np.pi / 2
    back = -lo[1]  # distance from the origin to the back face
    half = max(-lo[0], hi[0])  # half width along the wall
    if wall in (0, 2):
        y = y0 + back if wall == 0 else y1 - back
        return yaw, (float(rng.uniform(x0 + half, max(x1 - half, x0 + half))), float(y))
    x = x1 - back if wall == 1 else x0 + back
    return yaw, (float(x), float(rng.uniform(y0 + half, max(y1 - half, y0 + half))))


def _free_space_ok(free: shapely.Geometry, floor_area: float) -> bool:
    """Enough free floor, and a robot-sized disc can reach all of it (small corner pockets aside)."""
    if free.area < MIN_FREE_FRACTION * floor_area:
        return False
    eroded = free.buffer(-ROBOT_RADIUS)
    regions = [g for g in getattr(eroded, "geoms", [eroded]) if g.area > POCKET_AREA]
    return len(regions) == 1


def _place_all(rng: np.random.Generator, plan: Plan, kinds: list[str], walls: shapely.Geometry,
               keep_clear: shapely.Geometry) -> list[Placed]:
    """One greedy pass: each piece at the first candidate pose that keeps every rule; stops at the
    first piece that finds none (the caller starts over)."""
    floor = plan.floor()
    placed: list[Placed] = []
    occupied = walls
    for name in kinds:
        kind = KINDS[name]
        for attempt in range(PLACEMENT_TRIES):
            if attempt % TRIES_PER_SHAPE == 0:  # new dimensions now and then; building meshes is the slow part
                parts = kind.build(rng)
                outline = _local_outline(parts)
            room = int(rng.integers(len(plan.rooms)))
            interior = plan.interior(room, WALL_GAP)
            yaw, xy = _candidate(rng, kind, outline, interior)
            transform = pose_from_xyz_yaw(xy[0], xy[1], 0.0, yaw)
            shape = shapely.Polygon(outline @ transform[:2, :2].T + transform[:2, 3])
            if not shape.within(interior) or shape.intersects(keep_clear):
                continue
            if any(shape.distance(p.footprint) < PIECE_GAP for p in placed):
                continue
            taken = shapely.union_all([occupied, shape])
            if not _free_space_ok(floor.difference(taken), floor.area):
                continue
            placed.append(Placed(name, [p.copy().apply_transform(transform) for p in parts], shape))
            occupied = taken
            break
        else:
            return placed
    return placed


def place_furniture(rng: np.random.Generator, plan: Plan, count: int,
                    walls: shapely.Geometry) -> list[Placed]:
    """`count` pieces of varied kinds, inside rooms, clear of walls, doorways and each other."""
    if count < 0:
        raise InputError(f"must be >= 0, got {count}", field="furniture")
    keep_clear = shapely.union_all([d.keep_clear() for d in plan.doors]) if plan.doors else shapely.Polygon()
    names = sorted(KINDS)
    order = [names[i] for i in rng.permutation(len(names))]
    # Big pieces first: they are the hardest to fit once the floor fills up.
    kinds = sorted((order[i % len(order)] for i in range(count)), key=SIZE_ORDER.index)
    best = 0
    for _ in range(RESTARTS):
        placed = _place_all(rng, plan, kinds, walls, keep_clear)
        if len(placed) == count:
            return placed
        best = max(best, len(placed))
    rooms = len(plan.rooms) - len(plan.alcoves)
    raise InputError(f"could not fit {count} furniture pieces in {rooms} room(s) (at most {best} fitted); "
                     "use fewer pieces or more rooms", field="furniture")

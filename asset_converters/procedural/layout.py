"""Floor plans: rectangular rooms joined by doorways, their walls and the space to keep clear.

Rooms are axis-aligned rectangles; each new room is attached to a side of an earlier one and
shares at least `MIN_SHARED` metres of wall with it, where a doorway is cut. A single room gets an
open alcove instead, so every plan has a non-convex floor outline. Walls are centred on the room
outlines, so a wall's half thickness lies on each side of the line.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import shapely

from core.errors import InputError

ROOM_SIZE = (4.0, 6.0)  # m, side length range of a room
ALCOVE_WIDTH = (1.8, 2.6)  # m, along the room wall
ALCOVE_DEPTH = (1.4, 2.0)  # m, out of the room
CEILING_HEIGHT = (2.6, 3.0)  # m
WALL_THICKNESS = 0.12  # m
DOOR_WIDTH = (1.1, 1.35)  # m, clear opening: a robot and a person pass through
DOOR_HEIGHT = 2.1  # m, under the lintel
DOOR_CORNER_MARGIN = 0.35  # m of wall kept between a door and a room corner
MIN_SHARED = DOOR_WIDTH[1] + 2 * DOOR_CORNER_MARGIN + WALL_THICKNESS  # m of wall two joined rooms share
DOOR_CLEARANCE = 1.0  # m kept free of furniture on each side of a doorway
MIN_ROOM_GAP = 1.0  # m: rooms that do not touch keep at least this much outside space between them
NON_CONVEX_RATIO = 0.97  # the floor area must be below this fraction of its convex hull's
ATTEMPTS = 200  # tries to attach a room (or redo a plan) before giving up


@dataclass(frozen=True)
class Doorway:
    """An opening in the wall line between two rooms."""

    rooms: tuple[int, int]
    center: tuple[float, float]
    along_x: bool  # the wall (and the opening) runs along x; otherwise along y
    width: float  # clear width
    open_wall: bool = False  # an alcove: the whole shared wall is open, no lintel

    def gap(self) -> shapely.Polygon:
        """The piece of wall line removed: the clear width plus the wall ends' overlap."""
        half_along, half_across = (self.width + WALL_THICKNESS) / 2, WALL_THICKNESS
        x, y = self.center
        if self.along_x:
            return shapely.box(x - half_along, y - half_across, x + half_along, y + half_across)
        return shapely.box(x - half_across, y - half_along, x + half_across, y + half_along)

    def keep_clear(self) -> shapely.Polygon:
        """Floor in front of and behind the doorway that furniture must leave free."""
        half_along, x, y = self.width / 2, *self.center
        if self.along_x:
            return shapely.box(x - half_along, y - DOOR_CLEARANCE, x + half_along, y + DOOR_CLEARANCE)
        return shapely.box(x - DOOR_CLEARANCE, y - half_along, x + DOOR_CLEARANCE, y + half_along)


@dataclass(frozen=True)
class Plan:
    rooms: list[tuple[float, float, float, float]]  # x0, y0, x1, y1 of each rectangle (alcoves included)
    alcoves: frozenset[int]  # indices of rooms that are open alcoves (no light, no door)
    doors: list[Doorway]
    ceiling: float

    def floor(self) -> shapely.Polygon:
        return shapely.union_all([shapely.box(*r) for r in self.rooms], grid_size=1e-9)

    def interior(self, room: int, gap: float) -> shapely.Polygon:
        """The room's floor inside its walls, shrunk by another `gap`."""
        x0, y0, x1, y1 = self.rooms[room]
        inset = WALL_THICKNESS / 2 + gap
        return shapely.box(x0 + inset, y0 + inset, x1 - inset, y1 - inset)

    def wall_segments(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Straight wall centre lines (start, end) with the doorways cut out."""
        lines = shapely.union_all([shapely.box(*r).exterior for r in self.rooms], grid_size=1e-9)
        if self.doors:
            lines = lines.difference(shapely.union_all([d.gap() for d in self.doors]), grid_size=1e-9)
        merged = shapely.line_merge(lines)
        segments = []
        for line in getattr(merged, "geoms", [merged]):
            coords = np.asarray(line.simplify(1e-9).coords)
            segments += [(a, b) for a, b in itertools.pairwise(coords) if np.linalg.norm(b - a) > 1e-6]
        return segments


def _attach(rng: np.random.Generator, parent: tuple[float, float, float, float], along: float, out: float,
            min_shared: float) -> tuple[tuple[float, float, float, float], bool, float, tuple[float, float]]:
    """A rectangle `along` x `out` metres on a random side of `parent`, sharing >= `min_shared` of it.

    Returns the rectangle, whether the shared wall runs along x, the wall line coordinate, and the
    shared interval along the wall.
    """
    x0, y0, x1, y1 = parent
    side = int(rng.integers(4))  # 0: +x, 1: -x, 2: +y, 3: -y
    lo, hi = (y0, y1) if side < 2 else (x0, x1)
    start = float(rng.uniform(lo - along + min_shared, hi - min_shared))
    shared = (max(lo, start), min(hi, start + along))
    if side < 2:
        line = x1 if side == 0 else x0
        rect = (line, start, line + out, start + along) if side == 0 else (line - out, start, line, start + along)
        return rect, False, line, shared
    line = y1 if side == 2 else y0
    rect = (start, line, start + along, line + out) if side == 2 else (start, line - out, start + along, line)
    return rect, True, line, shared


def _door(rng: np.random.Generator, rooms: tuple[int, int], along_x: bool, line: float,
          shared: tuple[float, float]) -> Doorway:
    width = float(rng.uniform(*DOOR_WIDTH))
    half = width / 2 + WALL_THICKNESS / 2 + DOOR_CORNER_MARGIN
    at = float(rng.uniform(shared[0] + half, shared[1] - half))
    return Doorway(rooms, (at, line) if along_x else (line, at), along_x, width)


def _plan_once(rng: np.random.Generator, rooms: int) -> Plan | None:
    first = rng.uniform(*ROOM_SIZE, 2)
    rects = [(0.0, 0.0, float(first[0]), float(first[1]))]
    doors: list[Doorway] = []
    alcoves: set[int] = set()
    targets = rooms if rooms > 1 else 2  # a lone room gets an alcove
    while len(rects) < targets:
        for _ in range(ATTEMPTS):
            parent = int(rng.integers(len(rects)))
            alcove = rooms == 1
            along, out = (rng.uniform(*ALCOVE_WIDTH), rng.uniform(*ALCOVE_DEPTH)) if alcove else rng.uniform(*ROOM_SIZE, 2)
            # An alcove is open over its whole side, so that side must lie entirely along the room.
            shared_min = float(along) if alcove else MIN_SHARED
            rect, along_x, line, shared = _attach(rng, rects[parent], float(along), float(out), shared_min)
            candidate = shapely.box(*rect)
            if any(candidate.intersection(shapely.box(*r)).area > 1e-9 for r in rects):
                continue
            if any(0 < candidate.distance(shapely.box(*r)) < MIN_ROOM_GAP for r in rects):
                continue  # a sliver of void between two rooms' walls looks like a mistake
            index = len(rects)
            rects.append(rect)
            if alcove:
                alcoves.add(index)
                center = ((shared[0] + shared[1]) / 2, line) if along_x else (line, (shared[0] + shared[1]) / 2)
                doors.append(Doorway((parent, index), center, along_x, shared[1] - shared[0] - WALL_THICKNESS, True))
            else:
                doors.append(_door(rng, (parent, index), along_x, line, shared))
            break
        else:
            return None
    plan = Plan(rects, frozenset(alcoves), doors, float(rng.uniform(*CEILING_HEIGHT)))
    floor = plan.floor()
    return plan if floor.area < NON_CONVEX_RATIO * floor.convex_hull.area else None


def make_plan(rng: np.random.Generator, rooms: int) -> Plan:
    """A connected, non-convex floor plan of `rooms` rooms (or one room with an alcove)."""
    if rooms < 1:
        raise InputError(f"needs at least one room, got {rooms}", field="rooms")
    for _ in range(ATTEMPTS):
        plan = _plan_once(rng, rooms)
        if plan is not None:
            return plan
    raise InputError(f"could not lay out {rooms} rooms without overlaps; use fewer", field="rooms")

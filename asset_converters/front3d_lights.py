"""Lights of a 3D-Front house, after BlenderProc's 3D-Front loader: the ceiling of every room and every lamp.

BlenderProc makes ceilings and lamp shades emissive; the embedded renderer has point lights only, so a room
gets point lights spread under its ceiling instead: its ceiling outline (else its floor outline) is cut
into a grid of cells of about AREA_PER_LIGHT, one light hangs LIGHT_BELOW_CEILING under the lowest point of
the ceiling at the centre of each cell that lies inside the room, clear of the walls and of furniture that
reaches up there; a room where no cell fits gets one light over a point of its outline. Every lamp (a
furniture piece whose label the class map calls a lamp: "pendant lamp", "ceiling light", "chandelier", ...)
gets a light at its centre in plan, just outside its body, so its own box does not shadow it: under a lamp
that hangs from the ceiling, over a standing one (never higher than the ceiling lights).

Intensities are USD sphere-light luminances (the `intensity` of a UsdLux.SphereLight, what GRADE's light
randomisation draws from 600-4500); with CEILING_LIGHT_RADIUS a light of DEFAULT_LIGHT_INTENSITY gives the
embedded renderer about the irradiance of the procedural flat's ceiling lights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import shapely

from core.assets.parts import Light, SceneMesh
from core.config import FRONT3D_LIGHT_INTENSITY
from core.formats.class_map import DEFAULT_CLASS_MAP

DEFAULT_LIGHT_INTENSITY = FRONT3D_LIGHT_INTENSITY
CEILING_LIGHT_RADIUS = 0.15  # m: a ceiling fitting
LAMP_LIGHT_RADIUS = 0.1  # m: a bulb in a shade
CEILING_COLOR = (1.0, 0.96, 0.9)  # warm white
LAMP_COLOR = (1.0, 0.86, 0.68)  # incandescent
AREA_PER_LIGHT = 12.0  # m^2 of ceiling per light
LIGHT_BELOW_CEILING = 0.2  # m
WALL_CLEARANCE = 0.3  # m between a ceiling light and the room outline
LAMP_CLEARANCE = 0.05  # m between a lamp's light and its body
HANGING_GAP = 0.3  # m: a lamp whose top is this close to the ceiling hangs from it
MIN_TRIANGLE_AREA = 1e-9  # m^2: degenerate triangles do not shape an outline


@dataclass
class RoomPieces:
    """The placed meshes of one room, with which of them are architecture classes and lamps."""

    name: str
    ceilings: list[SceneMesh]
    floors: list[SceneMesh]
    furniture: list[SceneMesh]
    lamps: list[SceneMesh]
    others: list[SceneMesh]  # walls, doors, ...: they bound the room's height when it has no ceiling


def is_lamp(raw_category: str) -> bool:
    """Whether a furniture category names a light source (the class map's lamp keywords)."""
    return DEFAULT_CLASS_MAP.resolve(raw_category, "environment") == "lamp"


def _outline(meshes: list[SceneMesh]) -> shapely.Geometry | None:
    triangles = [shapely.Polygon(t) for m in meshes for t in m.vertices[m.faces][:, :, :2]]
    triangles = [t for t in triangles if t.is_valid and t.area > MIN_TRIANGLE_AREA]
    return shapely.union_all(triangles, grid_size=1e-6).buffer(0) if triangles else None


def _ceiling_height(room: RoomPieces) -> float | None:
    """The lowest point of the room's ceiling, else the top of its walls and furniture (not of its lamps:
    a chandelier may hang from a ceiling the room lacks)."""
    if room.ceilings:
        return float(min(m.vertices[:, 2].min() for m in room.ceilings))
    tops = [m.vertices[:, 2].max() for m in [*room.others, *room.furniture]]
    return float(max(tops)) if tops else None


def _blocked(point: np.ndarray, boxes: list[tuple[np.ndarray, np.ndarray]]) -> bool:
    return any((lo <= point).all() and (point <= hi).all() for lo, hi in boxes)


def _grid_points(outline: shapely.Geometry) -> list[tuple[float, float]]:
    """Cell centres of a grid of about AREA_PER_LIGHT cells over the outline's bounds, inside the outline
    and WALL_CLEARANCE from it (the whole outline where the room is too narrow for that)."""
    x0, y0, x1, y1 = outline.bounds
    spacing = math.sqrt(AREA_PER_LIGHT)
    cols, rows = max(1, round((x1 - x0) / spacing)), max(1, round((y1 - y0) / spacing))
    xs = x0 + (np.arange(cols) + 0.5) * (x1 - x0) / cols
    ys = y0 + (np.arange(rows) + 0.5) * (y1 - y0) / rows
    gx, gy = (a.ravel() for a in np.meshgrid(xs, ys, indexing="ij"))
    inner = outline.buffer(-WALL_CLEARANCE)
    area = inner if not inner.is_empty else outline
    inside = shapely.contains_xy(area, gx, gy)
    return list(zip(gx[inside].tolist(), gy[inside].tolist()))


def ceiling_lights(room: RoomPieces, intensity: float) -> list[Light]:
    """Lights spread under the ceiling of `room` (module docstring); none for a room without a ceiling or
    floor outline or any height."""
    outline = _outline(room.ceilings) or _outline(room.floors)
    top = _ceiling_height(room)
    if outline is None or top is None:
        return []
    z = top - LIGHT_BELOW_CEILING
    boxes = [(m.vertices.min(axis=0), m.vertices.max(axis=0)) for m in [*room.furniture, *room.lamps]]
    points = [(x, y, z) for x, y in _grid_points(outline) if not _blocked(np.array([x, y, z]), boxes)]
    if not points:
        anchor = outline.point_on_surface()
        points = [(anchor.x, anchor.y, z)]
    return [Light(f"{room.name}_ceiling_{i}", (float(x), float(y), float(z)), intensity, CEILING_COLOR,
                  CEILING_LIGHT_RADIUS) for i, (x, y, z) in enumerate(points)]


def lamp_lights(room: RoomPieces, intensity: float) -> list[Light]:
    """One light per lamp of `room`, just outside the lamp's body (module docstring)."""
    top = _ceiling_height(room)
    lights = []
    for i, lamp in enumerate(room.lamps):
        lo, hi = lamp.vertices.min(axis=0), lamp.vertices.max(axis=0)
        if top is not None and hi[2] >= top - HANGING_GAP:
            z = lo[2] - LAMP_CLEARANCE
        else:
            z = hi[2] + LAMP_CLEARANCE
            if top is not None:
                z = min(z, top - LIGHT_BELOW_CEILING)
        x, y = (lo[:2] + hi[:2]) / 2
        lights.append(Light(f"{room.name}_lamp_{i}", (float(x), float(y), float(z)), intensity, LAMP_COLOR,
                            LAMP_LIGHT_RADIUS))
    return lights


def room_lights(room: RoomPieces, intensity: float) -> list[Light]:
    """Ceiling lights and lamp lights of one room, at `intensity` (USD sphere-light luminance)."""
    return ceiling_lights(room, intensity) + lamp_lights(room, intensity)

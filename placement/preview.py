"""A top-down PNG of a placement for a quick look (OpenCV, no matplotlib).

Light grey: the floor polygon; dark grey: occupied cells of the environment's 2D occupancy map;
coloured: the footprints of the placed humans' traces; blue circles: the discs the flying objects
move in; red: the robot's start with an arrow along its heading. North (+y) is up.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import shapely

from core.assets.layout import OCCUPANCY_FILE
from core.errors import InputError
from core.formats.occupancy import read_occupancy
from core.formats.placement import Placement
from core.rundir import atomic_write_bytes
from placement.world import PlacementWorld

MAX_SIZE_PX = 1000
MAX_PX_PER_M = 100.0
MARGIN_PX = 20
FLOOR_BGR = (225, 225, 225)
OUTLINE_BGR = (0, 0, 0)
OCCUPIED_BGR = (90, 90, 90)
FLYING_BGR = (200, 120, 0)
ROBOT_BGR = (0, 0, 220)
TRACE_ALPHA = 0.55
ARROW_LENGTH_M = 0.8
# Distinct colours for the humans' footprints (BGR), reused in order.
PALETTE = [(180, 119, 31), (14, 127, 255), (44, 160, 44), (189, 103, 148), (75, 86, 140), (194, 119, 227),
           (34, 189, 188), (207, 190, 23)]


class Canvas:
    """World XY -> pixel mapping over the environment's bounds."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray):
        extent = max(float(np.max(hi - lo)), 1e-3)
        self.scale = min(MAX_PX_PER_M, (MAX_SIZE_PX - 2 * MARGIN_PX) / extent)
        self.lo, self.hi = lo, hi
        width, height = (np.ceil((hi - lo) * self.scale).astype(int) + 2 * MARGIN_PX)
        self.image = np.full((height, width, 3), 255, dtype=np.uint8)

    def px(self, xy: np.ndarray) -> np.ndarray:
        xy = np.asarray(xy, dtype=np.float64)
        u = (xy[..., 0] - self.lo[0]) * self.scale + MARGIN_PX
        v = (self.hi[1] - xy[..., 1]) * self.scale + MARGIN_PX
        return np.round(np.stack([u, v], axis=-1)).astype(np.int32)

    def world_of_pixels(self) -> np.ndarray:
        height, width = self.image.shape[:2]
        u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
        return np.stack([(u - MARGIN_PX) / self.scale + self.lo[0], self.hi[1] - (v - MARGIN_PX) / self.scale], -1)


def _polygons(geometry: shapely.Geometry) -> list[shapely.Polygon]:
    return list(getattr(geometry, "geoms", [geometry]))


def draw_occupancy(canvas: Canvas, occupancy: Path) -> None:
    occupancy_map = read_occupancy(occupancy)
    grid, origin, resolution = occupancy_map.grid, occupancy_map.origin, occupancy_map.resolution
    cells = np.floor((canvas.world_of_pixels() - origin) / resolution).astype(np.int64)
    valid = np.all((cells >= 0) & (cells < grid.shape), axis=-1)
    occupied = np.zeros(valid.shape, dtype=bool)
    occupied[valid] = grid[cells[valid][:, 0], cells[valid][:, 1]] == 1
    canvas.image[occupied] = OCCUPIED_BGR


def render_preview(world: PlacementWorld, placement: Placement, trace_triangles: list[np.ndarray]) -> np.ndarray:
    """The preview image (H, W, 3, BGR). `trace_triangles` holds each placed human's world triangles (F, 3, 3)."""
    canvas = Canvas(world.bounds[0, :2], world.bounds[1, :2])
    for polygon in _polygons(world.polygon):
        rings = [polygon.exterior, *polygon.interiors]
        cv2.fillPoly(canvas.image, [canvas.px(np.asarray(polygon.exterior.coords)[:, :2])], FLOOR_BGR)
        for hole in polygon.interiors:
            cv2.fillPoly(canvas.image, [canvas.px(np.asarray(hole.coords)[:, :2])], (255, 255, 255))
        cv2.polylines(canvas.image, [canvas.px(np.asarray(r.coords)[:, :2]) for r in rings], True, OUTLINE_BGR, 1)
    draw_occupancy(canvas, world.package / OCCUPANCY_FILE)
    overlay = canvas.image.copy()
    for index, triangles in enumerate(trace_triangles):
        color = PALETTE[index % len(PALETTE)]
        # One by one: drawn together, OpenCV's even-odd rule would cancel overlapping triangles.
        for triangle in canvas.px(triangles[:, :, :2]):
            cv2.fillConvexPoly(overlay, triangle, color)
    canvas.image = cv2.addWeighted(overlay, TRACE_ALPHA, canvas.image, 1.0 - TRACE_ALPHA, 0.0)
    for obj in placement.flying_objects:
        center = canvas.px(obj.motion.center[:2])
        cv2.circle(canvas.image, tuple(int(c) for c in center), max(int(obj.motion.radius * canvas.scale), 1),
                   FLYING_BGR, 2)
    robot = placement.robot
    center = canvas.px((robot.x, robot.y))
    tip = canvas.px((robot.x + ARROW_LENGTH_M * np.cos(robot.yaw), robot.y + ARROW_LENGTH_M * np.sin(robot.yaw)))
    radius = max(int(robot.volume.extents[0] / 2.0 * canvas.scale), 2)
    cv2.circle(canvas.image, tuple(int(c) for c in center), radius, ROBOT_BGR, -1)
    cv2.arrowedLine(canvas.image, tuple(int(c) for c in center), tuple(int(c) for c in tip), ROBOT_BGR, 2,
                    tipLength=0.25)
    return canvas.image


def write_preview(path: str | Path, image: np.ndarray) -> Path:
    ok, encoded = cv2.imencode(".png", image)
    if not ok:
        raise InputError("could not encode the preview as PNG", path)
    return atomic_write_bytes(path, encoded.tobytes())

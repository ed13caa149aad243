"""A ground base's last check before a twist is sent: the chassis footprint, swept over the motion the twist starts
and the braking after it, against the occupied cells of the robot's own map.

The planner keeps the robot's disc (the circle through its chassis corners) clear of the map's occupied cells, with
no margin to spare in a doorway, and the base follows its path only within a few centimetres: it starts off a cell
centre, goes straight for a carrot up to a lookahead along the path, and turns as it goes. So its chassis may reach
into an occupied cell beside the path. `FootprintGuard.admissible` answers whether a twist (vx, vy, wz in the base
frame), held for one control period and then braked at the acceleration limits, keeps the footprint (a box) off
every occupied cell (a square: the obstacle may lie anywhere in it) by at least `MARGIN`, or, where it is closer
than that already (a push left it there, a cell turned occupied next to it), brings it no closer. Rotation counts:
a box turning sweeps its corners out to the disc.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np

from simulation.exploration.occupancy import OCCUPIED, Grid2D

MARGIN = 0.02  # m kept between the footprint and an occupied cell
BACK_OFF = 0.1  # m/s away from the nearest occupied cell: a fallback where turning on the spot would sweep into it
STILL = 0.02  # m/s: a fallback slower than this would hold the base where it is (backing off comes first)
SCALES = (0.5, 0.25)  # of a vetoed twist's speed: the last fallbacks
SAMPLES = 12  # poses checked along a twist's motion and braking
REACH = 0.3  # m beyond the footprint's corners and the braking distance within which cells are checked
SLACK = 1e-4  # m: rounding within which a footprint already too close counts as coming no closer


class FootprintGuard:
    """Checks twists of a base with a box footprint (`half_extents`, m) against the map it was given last
    (`know`), braking at `acceleration` (m/s^2) and `yaw_acceleration` (rad/s^2)."""

    def __init__(self, half_extents: tuple[float, float], acceleration: float, yaw_acceleration: float):
        self.half = np.asarray(half_extents, dtype=np.float64)
        self.acceleration, self.yaw_acceleration = acceleration, yaw_acceleration
        self._cells = np.zeros((0, 2))  # occupied cell centres, world
        self._half_cell = 0.0

    def know(self, grid: Grid2D) -> None:
        """The robot's map as it is now."""
        self._cells = grid.center_of(np.argwhere(grid.state == OCCUPIED))
        self._half_cell = grid.resolution / 2

    def at(self, pose: tuple[float, float, float], period: float) -> PoseGuard:
        """The guard of the base at `pose` (x, y, yaw) for twists held `period` s (simulation.control.TwistGuard)."""
        return PoseGuard(self, pose, period)

    def admissible(self, pose: tuple[float, float, float], twist: np.ndarray, period: float) -> bool:
        """Whether `twist` (vx, vy, wz, base frame), held for `period` s from `pose` (x, y, yaw) and then braked to
        rest, keeps the footprint `MARGIN` off every occupied cell, or no closer than it is now."""
        twist = np.asarray(twist, dtype=np.float64)
        speed, rate = float(np.hypot(twist[0], twist[1])), abs(float(twist[2]))
        if speed == 0 and rate == 0:
            return True
        cells = self._near(pose, speed * (period + speed / (2 * self.acceleration)))
        if not len(cells):
            return True
        now = self._distance(np.array([pose]), cells)[0]
        poses = self._sweep(pose, twist, period, speed, rate)
        return bool(self._distance(poses, cells).min() >= min(MARGIN, now) - SLACK)

    def away(self, pose: tuple[float, float, float]) -> np.ndarray | None:
        """The unit vector (base frame) from the occupied cell nearest the footprint to the base's centre; None
        where none is within `REACH` of it."""
        cells = self._near(pose, 0.0)
        if not len(cells):
            return None
        distances = self._distance(np.array([pose]), cells, each=True)[0]
        offset = np.array(pose[:2]) - cells[int(np.argmin(distances))]
        c, s = math.cos(pose[2]), math.sin(pose[2])
        local = np.array([c * offset[0] + s * offset[1], -s * offset[0] + c * offset[1]])
        return local / max(float(np.linalg.norm(local)), 1e-9)

    def _near(self, pose: tuple[float, float, float], travel: float) -> np.ndarray:
        """Occupied cell centres (K, 2) within the footprint's corners, `travel` and `REACH` of `pose`."""
        reach = float(np.hypot(*self.half)) + travel + REACH
        return self._cells[np.hypot(self._cells[:, 0] - pose[0], self._cells[:, 1] - pose[1]) <= reach]

    def _sweep(self, pose: tuple[float, float, float], twist: np.ndarray, period: float, speed: float,
               rate: float) -> np.ndarray:
        """Poses (SAMPLES, 3) along the motion: the twist for `period`, then each of its parts braked to rest at
        its own limit (the same direction in the base frame)."""
        stop = max(speed / self.acceleration, rate / self.yaw_acceleration)
        times = np.linspace(0.0, period + stop, SAMPLES + 1)
        step = times[1] - times[0]
        scale_v = np.clip(1.0 - np.maximum(times - period, 0.0) * self.acceleration / max(speed, 1e-12), 0.0, 1.0)
        scale_w = np.clip(1.0 - np.maximum(times - period, 0.0) * self.yaw_acceleration / max(rate, 1e-12), 0.0, 1.0)
        x, y, yaw = pose
        out = np.empty((SAMPLES, 3))
        for k in range(SAMPLES):  # midpoint integration of the base-frame twist
            f_v, f_w = (scale_v[k] + scale_v[k + 1]) / 2, (scale_w[k] + scale_w[k + 1]) / 2
            mid = yaw + twist[2] * f_w * step / 2
            c, s = math.cos(mid), math.sin(mid)
            x += (c * twist[0] - s * twist[1]) * f_v * step
            y += (s * twist[0] + c * twist[1]) * f_v * step
            yaw += twist[2] * f_w * step
            out[k] = x, y, yaw
        return out

    def _distance(self, poses: np.ndarray, cells: np.ndarray, each: bool = False) -> np.ndarray:
        """(P,) the least signed distance (negative: overlap) between the footprint at each pose (P, 3) and the
        cell squares centred on `cells` (K, 2) (`each`: (P, K), to each cell): two convex polygons are nearest at a
        vertex of one of them, and a cell, smaller than the footprint, cannot cross it without a corner inside."""
        h = self._half_cell
        corners = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=np.float64)
        c, s = np.cos(poses[:, 2]), np.sin(poses[:, 2])
        # The cells' corners in each footprint's frame (P, 4K, 2), against the box.
        points = (cells[None, :, None, :] + h * corners[None, None, :, :]).reshape(1, -1, 2) - poses[:, None, :2]
        local = np.stack([c[:, None] * points[..., 0] + s[:, None] * points[..., 1],
                          -s[:, None] * points[..., 0] + c[:, None] * points[..., 1]], axis=-1)
        to_box = _box_distance(local, self.half).reshape(len(poses), len(cells), 4).min(axis=2)
        # The footprint's corners in the world (P, 4, 2), against each cell square.
        box = self.half * corners
        world = poses[:, None, :2] + np.stack([c[:, None] * box[:, 0] - s[:, None] * box[:, 1],
                                               s[:, None] * box[:, 0] + c[:, None] * box[:, 1]], axis=-1)
        offsets = world[:, :, None, :] - cells[None, None, :, :]
        to_cells = _box_distance(offsets, np.array([h, h])).min(axis=1)
        distances = np.minimum(to_box, to_cells)
        return distances if each else distances.min(axis=1)


def _box_distance(points: np.ndarray, half: np.ndarray) -> np.ndarray:
    """Signed distance of points (..., 2) from the origin-centred box of `half` extents (negative inside)."""
    excess = np.abs(points) - half
    outside = np.linalg.norm(np.maximum(excess, 0.0), axis=-1)
    return outside + np.minimum(excess.max(axis=-1), 0.0)


class PoseGuard:
    """A `FootprintGuard` for the base at one pose (simulation.control.TwistGuard). Fallbacks for a vetoed twist,
    each with its turn, then without: sliding (its part towards the occupied cell nearest the footprint dropped);
    backing off from that cell at `BACK_OFF` (a turn on the spot that would sweep a corner into it can be made a
    little further off; stopping instead would hold the base there for good); as it is; slower (`SCALES`)."""

    def __init__(self, guard: FootprintGuard, pose: tuple[float, float, float], period: float):
        self.guard, self.pose, self.period = guard, pose, period

    def admissible(self, twist: np.ndarray) -> bool:
        return self.guard.admissible(self.pose, twist, self.period)

    def fallbacks(self, wanted: np.ndarray) -> Iterator[np.ndarray]:
        v, w = np.asarray(wanted[:2], dtype=np.float64), float(wanted[2])
        moving = bool(np.linalg.norm(v) > STILL)
        away = self.guard.away(self.pose)
        ways = []
        if away is not None:
            slide = v + max(0.0, -float(v @ away)) * away
            ways = ([slide] if np.linalg.norm(slide) > STILL else []) + [BACK_OFF * away]
        ways += [scale * v for scale in (1.0, *SCALES)] if moving else []
        for u in ways:
            yield np.array([u[0], u[1], w])
            yield np.array([u[0], u[1], 0.0])

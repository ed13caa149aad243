"""Pure pursuit along a polyline: a carrot point `lookahead` metres ahead of the robot's progress.

Progress is the arc length of the robot's closest point on the path and never goes back, so a path that
doubles back near itself is still followed in order.
"""

from __future__ import annotations

import numpy as np


class PathFollower:
    def __init__(self, points: np.ndarray, lookahead: float):
        points = np.asarray(points, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 2 or len(points) < 1:
            raise ValueError(f"a path is an (M, 2) array of points with M >= 1, got shape {points.shape}")
        if not lookahead > 0:
            raise ValueError(f"lookahead must be > 0, got {lookahead}")
        self.points = points if len(points) > 1 else np.vstack([points, points])
        segments = np.diff(self.points, axis=0)
        self._lengths = np.linalg.norm(segments, axis=1)
        self._starts = np.concatenate([[0.0], np.cumsum(self._lengths)])
        self.lookahead = lookahead
        self.progress = 0.0

    @property
    def length(self) -> float:
        return float(self._starts[-1])

    @property
    def goal(self) -> np.ndarray:
        return self.points[-1].copy()

    @property
    def remaining(self) -> float:
        return self.length - self.progress

    def point_at(self, s: float) -> np.ndarray:
        """The path point at arc length `s` (clamped to the path)."""
        s = min(max(s, 0.0), self.length)
        k = int(np.clip(np.searchsorted(self._starts, s, side="right") - 1, 0, len(self._lengths) - 1))
        if self._lengths[k] == 0:
            return self.points[k].copy()
        t = (s - self._starts[k]) / self._lengths[k]
        return self.points[k] + t * (self.points[k + 1] - self.points[k])

    def update(self, position: np.ndarray) -> np.ndarray:
        """Advance the progress to the robot's closest path point ahead (within one lookahead of it) and
        return the carrot."""
        position = np.asarray(position, dtype=np.float64)[:2]
        a, b = self.points[:-1], self.points[1:]
        segments = b - a
        denom = np.maximum(np.einsum("ij,ij->i", segments, segments), 1e-18)
        t = np.clip(np.einsum("ij,ij->i", position - a, segments) / denom, 0.0, 1.0)
        arc = self._starts[:-1] + t * self._lengths
        distance = np.linalg.norm(a + t[:, None] * segments - position, axis=1)
        window = (arc >= self.progress) & (arc <= self.progress + self.lookahead)
        if window.any():
            candidates = np.flatnonzero(window)
            self.progress = float(arc[candidates[np.argmin(distance[candidates])]])
        return self.point_at(self.progress + self.lookahead)

    def ahead(self) -> np.ndarray:
        """The path points (M', 2) after the robot's progress, the path's first point (where the robot
        stood when it was planned) excluded."""
        k = int(np.searchsorted(self._starts, self.progress, side="right"))
        return self.points[max(k, 1):]

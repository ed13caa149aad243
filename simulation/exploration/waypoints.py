"""Fly or drive through a fixed list of waypoints (`exploration.planner: waypoints`).

The robot goes for each waypoint in turn by pure pursuit on the straight polyline through them, facing
the way it goes; the UAV flies at each waypoint's z (the TIAGo ignores z). No map and no obstacle
avoidance: the user vouches for the path, as with the original GRADE's pre-recorded trajectories.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from core.config import RobotConfig
from core.errors import ConfigError
from core.geometry import yaw_of
from simulation.backend import Backend
from simulation.exploration.drivers import make_driver
from simulation.exploration.follower import PathFollower

CONTROL_HZ = 60.0
LOOKAHEAD = 0.5  # m
GOAL_TOLERANCE = 0.1  # m from the last waypoint counts as arrived


@dataclass
class WaypointResult:
    reached: bool  # the last waypoint was reached within the budget
    time: float  # s of simulated time used
    waypoints_passed: int


class WaypointFollower:
    """Drives a backend's robot through `waypoints` (x, y, z) starting from where it stands."""

    def __init__(self, backend: Backend, robot: RobotConfig, waypoints: Sequence[Sequence[float]], budget: float):
        points = np.asarray(waypoints, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 3 or not len(points):
            raise ConfigError(f"waypoints are a list of (x, y, z), got shape {points.shape}",
                              field="exploration.waypoints")
        self.backend, self.budget = backend, budget
        self.uav = robot.kind == "uav"
        self._control_every = max(round(1.0 / (CONTROL_HZ * backend.timestep)), 1)
        self.driver = make_driver(backend, robot, self._control_every * backend.timestep)
        start = backend.robot_pose()[:3, 3]
        self.points = np.vstack([start, points])
        self.follower = PathFollower(self.points[:, :2], LOOKAHEAD)
        # Arc length at which each waypoint is passed, to know the height to fly at.
        self._arcs = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(self.points[:, :2], axis=0), axis=1))])

    def run(self, on_step: Callable[[Backend], None] | None = None) -> WaypointResult:
        backend = self.backend
        start, step = backend.time, 0
        reached = False
        while backend.time < start + self.budget - 1e-9:
            if step % self._control_every == 0:
                reached = self._control()
                if reached:
                    break
            else:
                self.driver.update()
            backend.step()
            if on_step is not None:
                on_step(backend)
            step += 1
        self.driver.stop()
        passed = int(np.count_nonzero(self._arcs[1:] <= self.follower.progress + GOAL_TOLERANCE))
        return WaypointResult(reached, backend.time - start, len(self.points) - 1 if reached else passed)

    def _control(self) -> bool:
        pose = self.backend.robot_pose()
        position = pose[:3, 3]
        carrot = self.follower.update(position[:2])
        goal = self.points[-1]
        height_error = abs(goal[2] - position[2]) if self.uav else 0.0
        if np.linalg.norm(goal[:2] - position[:2]) <= GOAL_TOLERANCE and height_error <= GOAL_TOLERANCE:
            return True
        k = int(np.clip(np.searchsorted(self._arcs, self.follower.progress, side="right"), 1, len(self.points) - 1))
        away = carrot - position[:2]
        heading = math.atan2(away[1], away[0]) if np.linalg.norm(away) > GOAL_TOLERANCE else None
        if heading is None:
            heading = yaw_of(pose)
        self.driver.go(carrot, heading, float(self.points[k, 2]))
        return False

"""Fly or drive through a fixed list of waypoints (`exploration.planner: waypoints`).

The robot goes for each waypoint in turn by pure pursuit on the straight polyline through them, facing
the way it goes; the UAV flies at each waypoint's z (the TIAGo ignores z). No map and no path planning:
the user vouches for the path, as with the original GRADE's pre-recorded trajectories. With
`exploration.stop_distance` the robot stops and waits (UAV: hovers; TIAGo: brakes) while its first camera's
depth shows something in its way: a depth return within its radius to either side, within its height band,
and at most `stop_distance` beyond its disc ahead (another robot crossing, a person); it looks again at the
camera's rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from core.config import RobotConfig
from core.errors import ConfigError
from core.geometry import yaw_of
from core.robot_catalogue import robot_body
from simulation.backend import Robot, World
from simulation.exploration.drivers import make_driver
from simulation.exploration.follower import PathFollower
from simulation.exploration.occupancy import depth_rays

CONTROL_HZ = 60.0
LOOKAHEAD = 0.5  # m
GOAL_TOLERANCE = 0.1  # m from the last waypoint counts as arrived
STOP_STRIDE = 4  # pixels between the depth rays looked at for something in the way
STOP_FLOOR_MARGIN = 0.05  # m: depth returns lower above the floor are the floor, not in the way
STOP_VERTICAL_MARGIN = 0.1  # m above and below the UAV's frame


@dataclass
class WaypointResult:
    reached: bool  # the last waypoint was reached within the budget
    time: float  # s of simulated time used
    waypoints_passed: int


class WaypointFollower:
    """Drives a robot through `waypoints` (x, y, z) starting from where it stands."""

    def __init__(self, robot: Robot, config: RobotConfig, waypoints: Sequence[Sequence[float]], budget: float,
                 stop_distance: float | None = None):
        points = np.asarray(waypoints, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 3 or not len(points):
            raise ConfigError(f"waypoints are a list of (x, y, z), got shape {points.shape}",
                              field="exploration.waypoints")
        self.robot, self.budget = robot, budget
        body = robot_body(config)
        self.flies = body.flies
        self._control_every = max(round(1.0 / (CONTROL_HZ * robot.world.timestep)), 1)
        self.driver = make_driver(robot, config, self._control_every * robot.world.timestep)
        start = robot.pose()[:3, 3]
        self.points = np.vstack([start, points])
        self.follower = PathFollower(self.points[:, :2], LOOKAHEAD)
        # Arc length at which each waypoint is passed, to know the height to fly at.
        self._arcs = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(self.points[:, :2], axis=0), axis=1))])
        self.reached = False
        self._start: float | None = None  # when the first tick came
        self._step, self._done, self._stopped = 0, False, False
        self.stop_distance, self.waiting, self.waited = stop_distance, False, 0.0
        if stop_distance is not None:
            cameras = config.sensors.cameras
            if not cameras:
                raise ConfigError("exploration.stop_distance looks with the robot's first camera; it has none",
                                  field="exploration.stop_distance")
            self.camera = cameras[0].name
            look = max(round(1.0 / (cameras[0].rate_hz * robot.world.timestep)), 1)
            self._look_every = max(look // self._control_every, 1) * self._control_every
            if self.flies:
                self._band = (-body.height - STOP_VERTICAL_MARGIN, body.height + STOP_VERTICAL_MARGIN)
            else:  # from just above the floor (base_link stands base_height above it) to its top
                self._band = (STOP_FLOOR_MARGIN - body.base_height, body.height - body.base_height)

    def run(self, on_step: Callable[[World], None] | None = None) -> WaypointResult:
        world = self.robot.world
        while self.tick():
            world.step()
            if on_step is not None:
                on_step(world)
        return self.result()

    def tick(self) -> bool:
        """This physics step's command, before the step; False once the last waypoint is reached or the time
        is up (the robot then stopped), so that a loop over several robots steps them together."""
        if self._start is None:
            self._start = self.robot.world.time
        self._done = self._done or self.robot.world.time >= self._start + self.budget - 1e-9
        if not self._done and self._step % self._control_every == 0:
            if self.stop_distance is not None and self._step % self._look_every == 0:
                self.waiting = self._blocked()
            if self.waiting:
                self.driver.hold()
                self.waited += self._control_every * self.robot.world.timestep
            else:
                self.reached = self._done = self._control()
        if self._done:
            if not self._stopped:
                self.driver.stop()
                self._stopped = True
            return False
        if self._step % self._control_every != 0:
            self.driver.update()
        self._step += 1
        if self.stop_distance is not None and self._step % self._control_every == 0 and (
                self._step % self._look_every == 0):  # the next step looks ahead: its frame's depth first
            self.robot.expect_depth(self.camera)
        return True

    def result(self) -> WaypointResult:
        passed = int(np.count_nonzero(self._arcs[1:] <= self.follower.progress + GOAL_TOLERANCE))
        return WaypointResult(self.reached, self.robot.world.time - self._start,
                              len(self.points) - 1 if self.reached else passed)

    def _blocked(self) -> bool:
        """Whether the camera's depth shows something in the robot's way (module notes)."""
        robot = self.robot
        frame = robot.depth(self.camera)
        pose = robot.pose()
        reach = self.driver.radius + self.stop_distance
        camera_offset = float(np.linalg.norm(frame.camera.pose[:3, 3] - pose[:3, 3]))
        _, ends, returned = depth_rays(frame.depth, frame.camera.K, frame.camera.pose, reach + camera_offset,
                                       STOP_STRIDE)
        local = (ends[returned] - pose[:3, 3]) @ pose[:3, :3]  # in the base frame
        low, high = self._band
        ahead = ((local[:, 0] > 0) & (local[:, 0] <= reach) & (np.abs(local[:, 1]) <= self.driver.radius)
                 & (local[:, 2] >= low) & (local[:, 2] <= high))
        return bool(ahead.any())

    def _control(self) -> bool:
        pose = self.robot.pose()
        position = pose[:3, 3]
        carrot = self.follower.update(position[:2])
        goal = self.points[-1]
        height_error = abs(goal[2] - position[2]) if self.flies else 0.0
        if np.linalg.norm(goal[:2] - position[:2]) <= GOAL_TOLERANCE and height_error <= GOAL_TOLERANCE:
            return True
        k = int(np.clip(np.searchsorted(self._arcs, self.follower.progress, side="right"), 1, len(self.points) - 1))
        away = carrot - position[:2]
        heading = math.atan2(away[1], away[0]) if np.linalg.norm(away) > GOAL_TOLERANCE else None
        if heading is None:
            heading = yaw_of(pose)
        self.driver.go(carrot, heading, float(self.points[k, 2]))
        return False

"""What the robot does during a run: hold still through the bootstrap, then explore (frontier planner),
follow waypoints or stay put, and hold until the experiment's time is up.

`run_mission` steps the backend for exactly bootstrap + duration seconds and calls `on_step(backend)`
after every physics step, so a recorder sees each state once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import shapely

from core.config import ExperimentConfig
from simulation.backend import Backend
from simulation.exploration import ExplorationArea, ExplorationResult, Explorer, ExplorerParams, make_driver
from simulation.exploration.waypoints import WaypointFollower, WaypointResult

HOLD_CONTROL_HZ = 60.0

OnStep = Callable[[Backend], None]


@dataclass
class MissionResult:
    planner: str
    exploration: ExplorationResult | None = None
    waypoints: WaypointResult | None = None

    def summary(self) -> dict:
        """A JSON-able account for run.json."""
        if self.exploration is not None:
            e = self.exploration
            return {"planner": self.planner, "reason": e.reason, "time": e.time, "explored_fraction": e.explored_fraction,
                    "goals_reached": e.goals_reached, "goals_abandoned": e.goals_abandoned, "replans": e.replans}
        if self.waypoints is not None:
            w = self.waypoints
            return {"planner": self.planner, "reached": w.reached, "time": w.time, "waypoints_passed": w.waypoints_passed}
        return {"planner": self.planner}


def _hold(backend: Backend, config: ExperimentConfig, until: float, on_step: OnStep) -> None:
    """Keep the robot where it is (UAV: position hold; TIAGo: brake) until simulation time `until`."""
    every = max(round(1.0 / (HOLD_CONTROL_HZ * backend.timestep)), 1)
    driver = make_driver(backend, config.robot, every * backend.timestep)
    step = 0
    while backend.time < until - 1e-9:
        if step % every == 0:
            driver.hold()
        else:
            driver.update()
        backend.step()
        on_step(backend)
        step += 1
    driver.stop()


def run_mission(backend: Backend, config: ExperimentConfig, environment: Path, on_step: OnStep) -> MissionResult:
    """Bootstrap, the configured planner for `simulation.duration` s, then hold to the end."""
    simulation = config.simulation
    end = backend.time + simulation.bootstrap + simulation.duration
    _hold(backend, config, backend.time + simulation.bootstrap, on_step)
    planner = config.exploration.planner
    result = MissionResult(planner)
    if planner == "frontier":
        params = ExplorerParams.from_config(config)
        # The explorer's region: the configured one (environment.region), else the whole map box.
        region = shapely.Polygon(config.environment.region) if config.environment.region else None
        explorer = Explorer(backend, config.robot, params, ExplorationArea.from_package(environment, region))
        result.exploration = explorer.run(on_step=on_step)
    elif planner == "waypoints":
        follower = WaypointFollower(backend, config.robot, config.exploration.waypoints, simulation.duration)
        result.waypoints = follower.run(on_step=on_step)
    _hold(backend, config, end, on_step)
    return result

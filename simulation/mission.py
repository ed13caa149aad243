"""What the robots do during a run: hold still through the bootstrap, then explore (frontier or tour planner),
follow waypoints or stay put (each robot its own planner), and hold until the experiment's time is up.

`run_mission` steps the world for exactly bootstrap + duration seconds and calls `on_step(world)`
after every physics step, so a recorder sees each state once.

An explorer's account (run.json `mission`) holds the reachable-floor coverage over time: at every map update, the
share of the floor the robot can reach from where it starts exploring (ground truth from the environment package,
which the robot never reads) that its own map knows (simulation.exploration.metrics.FloorCoverage; the exploration
benchmark reports the same). `map_region_known_fraction` is what the explorer itself stops on
(`exploration.stop_explored_fraction`): the known share of its map's region, walls, furniture and the space behind
them included, so it stays well below the coverage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import shapely

from core.config import ExperimentConfig, RobotConfig
from simulation.backend import Robot, World
from simulation.exploration import ExplorationArea, ExplorationResult, Explorer, ExplorerParams, make_driver
from simulation.exploration.metrics import FloorCoverage
from simulation.exploration.tour_explorer import TourExplorer
from simulation.exploration.waypoints import WaypointFollower, WaypointResult
from simulation.live.external import ExternalControl, ExternalResult
from simulation.live.session import LiveSession

HOLD_CONTROL_HZ = 60.0

OnStep = Callable[[World], None]


@dataclass
class MissionResult:
    planner: str
    exploration: ExplorationResult | None = None
    floor: FloorCoverage | None = None  # an explorer's reachable-floor coverage (module notes)
    waypoints: WaypointResult | None = None
    external: ExternalResult | None = None

    def summary(self) -> dict:
        """A JSON-able account for run.json."""
        if self.exploration is not None:
            e, floor = self.exploration, self.floor
            return {"planner": self.planner, "reason": e.reason, "time": e.time,
                    "reachable_floor_m2": floor.area, "reachable_floor_coverage_final": floor.final,
                    "reachable_floor_coverage": [[t, fraction] for t, fraction in floor.history],
                    "map_region_known_fraction": e.map_region_known_fraction,
                    "goals_reached": e.goals_reached, "goals_abandoned": e.goals_abandoned, "replans": e.replans}
        if self.waypoints is not None:
            w = self.waypoints
            return {"planner": self.planner, "reached": w.reached, "time": w.time, "waypoints_passed": w.waypoints_passed}
        if self.external is not None:
            return {"planner": self.planner, **self.external.summary()}
        return {"planner": self.planner}


class _Hold:
    """Keep the robot where it is (UAV: position hold; TIAGo: brake) until simulation time `until`."""

    def __init__(self, robot: Robot, config: RobotConfig, until: float):
        self.robot, self.until = robot, until
        self._every = max(round(1.0 / (HOLD_CONTROL_HZ * robot.world.timestep)), 1)
        self.driver = make_driver(robot, config, self._every * robot.world.timestep)
        self._step = 0

    def tick(self) -> bool:
        """This step's command; False (the robot stopped) once `until` is reached."""
        if self.robot.world.time >= self.until - 1e-9:
            self.driver.stop()
            return False
        if self._step % self._every == 0:
            self.driver.hold()
        else:
            self.driver.update()
        self._step += 1
        return True


class RobotMission:
    """One robot's mission, a physics step at a time: hold through the bootstrap, its planner (its own
    `exploration`), then hold until `end`. `tick` does a step's work before the step; False when all is done."""

    def __init__(self, robot: Robot, config: ExperimentConfig, environment: Path, bootstrap_end: float,
                 end: float, name: str | None = None, live: LiveSession | None = None):
        self.robot, self.config, self.environment = robot, config, environment
        # `name`: the robot's name in the config (what a live session routes commands by)
        self.name, self.live, self.end = name or robot.name, live, end
        self.result = MissionResult(config.exploration.planner)
        self._stages = iter((lambda: _Hold(robot, config.robot, bootstrap_end), self._planner,
                             lambda: _Hold(robot, config.robot, end)))
        self._stage: _Hold | Explorer | WaypointFollower | ExternalControl | None = None

    def _planner(self) -> Explorer | WaypointFollower | ExternalControl | None:
        config, robot = self.config, self.robot
        planner = config.exploration.planner
        if planner in ("frontier", "tour"):
            params = ExplorerParams.from_config(config)
            # The explorer's region: the configured one (environment.region), else the whole map box.
            region = shapely.Polygon(config.environment.region) if config.environment.region else None
            kind = TourExplorer if planner == "tour" else Explorer
            explorer = kind(robot, config.robot, params, ExplorationArea.from_package(self.environment, region))
            slab = explorer.slab(explorer.altitude) if explorer.flies else None
            self.result.floor = FloorCoverage.of_package(self.environment, robot.pose()[:2, 3], explorer.driver.radius,
                                                         slab, region)
            return explorer
        if planner == "waypoints":
            exploration = config.exploration
            return WaypointFollower(robot, config.robot, exploration.waypoints, config.simulation.duration,
                                    exploration.stop_distance)
        if planner == "external":  # config validation makes sure a live session drives it
            return ExternalControl(robot, config.robot, self.live.inbox(self.name), self.live.every, self.end)
        return None

    def tick(self) -> bool:
        while True:
            if self._stage is None:
                make = next(self._stages, None)
                if make is None:
                    return False
                self._stage = make()
                continue
            stage = self._stage
            if stage.tick(self.result.floor.update) if isinstance(stage, Explorer) else stage.tick():
                return True
            if isinstance(self._stage, Explorer):
                self.result.exploration = self._stage.result()
            elif isinstance(self._stage, WaypointFollower):
                self.result.waypoints = self._stage.result()
            elif isinstance(self._stage, ExternalControl):
                self.result.external = self._stage.result
            self._stage = None

    def stopped(self, reason: str) -> None:
        """The run stopped before its end (`reason`: a live node's answer did not come)."""
        if isinstance(self._stage, ExternalControl):
            self._stage.stopped(reason)
            self.result.external = self._stage.result


@dataclass
class FleetResult:
    """Every robot's mission, by name."""

    robots: dict[str, MissionResult]

    def summary(self) -> dict:
        """A JSON-able account for run.json: the robot's, or each robot's by name."""
        if len(self.robots) == 1:
            return next(iter(self.robots.values())).summary()
        return {name: result.summary() for name, result in self.robots.items()}


def run_mission(world: World, config: ExperimentConfig, environment: Path, on_step: OnStep,
                live: LiveSession | None = None) -> FleetResult:
    """Every robot's mission (bootstrap, its planner for `simulation.duration` s, then hold to the end), stepped
    together: each physics step, each robot in config order does its step's work, then the world steps. A live
    session paces the run and hands the external planners their commands (simulation.live.session); when its node
    stops answering, the run ends there."""
    simulation = config.simulation
    bootstrap_end = world.time + simulation.bootstrap
    end = bootstrap_end + simulation.duration
    missions = {name: RobotMission(world.robot(name), config.for_robot(name), environment, bootstrap_end, end,
                                   name, live) for name in config.robot_names}
    running = live is None or live.sync(world)
    while running:
        active = [mission.tick() for mission in missions.values()]
        if not any(active):
            break
        world.step()
        on_step(world)
        if live is not None and not live.sync(world):
            for mission in missions.values():
                mission.stopped("timeout")
            break
    return FleetResult({name: mission.result for name, mission in missions.items()})

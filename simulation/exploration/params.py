"""What an exploration run is given (the area, the parameters) and what it returns."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import shapely

from core.config import ExperimentConfig
from core.errors import ConfigError
from core.formats.asset_meta import load_meta
from simulation.exploration.goals import GoalParams
from simulation.exploration.occupancy import Grid2D

Reason = Literal["explored", "no frontier", "budget"]


@dataclass(frozen=True)
class ExplorationArea:
    """What the robot knows before it starts: the box its map covers, the floor height and optionally
    the region to explore (a shapely geometry in x, y; default the whole box)."""

    lo: np.ndarray  # (3,) m
    hi: np.ndarray  # (3,) m
    floor: float
    region: shapely.Geometry | None = None

    @classmethod
    def from_package(cls, package: str | Path, region: shapely.Geometry | None = None) -> ExplorationArea:
        """The bounds and floor height of an environment package (its meta.json)."""
        meta = load_meta(Path(package))
        if meta.environment is None:
            raise ConfigError(f"{package} is not an environment package", field="environment")
        lo, hi = (np.asarray(corner, dtype=np.float64) for corner in meta.environment.bounds)
        return cls(lo, hi, float(meta.environment.floor_height), region)


@dataclass(frozen=True)
class ExplorerParams:
    camera: str  # the one the robot looks with: its viewpoints, and the way it goes kept in its view
    also_maps: tuple[str, ...] = ()  # the other cameras whose depth goes into the map (exploration.cameras)
    map_resolution: float = 0.1
    safety_margin: float = 0.3
    replan_period: float = 1.0
    stop_explored_fraction: float = 0.95
    budget: float = 60.0  # s of simulated time
    map_hz: float = 5.0
    control_hz: float = 60.0
    max_range: float = 6.0  # m of depth used for mapping
    decay: float = 2.0  # s a depth hit blocks its cell whatever the map says (moving people)
    lookahead: float = 0.5  # m
    goal_tolerance: float = 0.15  # m
    yaw_tolerance: float = math.radians(10.0)
    min_frontier_cells: int = 4
    altitude: float | None = None  # UAV cruise altitude; None: the middle of robot.uav.z_band
    initial_turn: float = 2 * math.pi  # rad turned in place before setting off
    goal: GoalParams = field(default_factory=GoalParams)

    @property
    def map_cameras(self) -> tuple[str, ...]:
        """Every camera whose depth builds the map, the looking one first."""
        return (self.camera, *self.also_maps)

    @classmethod
    def from_config(cls, config: ExperimentConfig, camera: str | None = None, **overrides) -> ExplorerParams:
        """From `exploration` and `simulation.duration`; `camera` defaults to the first of `exploration.cameras`, or
        the robot's first camera."""
        cameras = {c.name: c for c in config.robot.sensors.cameras}
        if not cameras:
            raise ConfigError("exploration needs a depth camera; robot.sensors.cameras is empty",
                              field="robot.sensors.cameras")
        listed = config.exploration.cameras
        if camera is not None and camera not in cameras:
            raise ConfigError(f"no camera named {camera!r}; cameras: {list(cameras)}", field="robot.sensors.cameras")
        looking = camera or (listed[0] if listed else next(iter(cameras)))
        mapping = [looking, *(name for name in listed if name != looking)]
        for name in mapping:
            if cameras[name].model != "pinhole":
                # The map is built by back-projecting depth through K: through a lens that would put every point
                # in the wrong cell.
                raise ConfigError(f"exploration maps with camera {name!r}'s depth as a pinhole camera's, and it "
                                  f"is {cameras[name].model}: " + (
                                      "list pinhole cameras only in exploration.cameras" if listed else
                                      "make the robot's first camera a pinhole one (list the distorted camera "
                                      "after it)"), field="exploration.cameras" if listed else "robot.sensors.cameras")
        exploration = config.exploration
        values = {"camera": looking, "also_maps": tuple(mapping[1:]), "map_resolution": exploration.map_resolution,
                  "safety_margin": exploration.safety_margin, "replan_period": exploration.replan_period,
                  "stop_explored_fraction": exploration.stop_explored_fraction,
                  "initial_turn": math.radians(exploration.initial_turn_deg), "budget": config.simulation.duration}
        return cls(**(values | overrides))


@dataclass
class ExplorationResult:
    reason: Reason
    time: float  # s of simulated time explored
    map_region_known_fraction: float  # known cells of the map's exploration region (what stop_explored_fraction
    # compares); not the reachable floor's coverage (simulation.exploration.metrics.FloorCoverage)
    history: list[tuple[float, float]]  # (time, map region known fraction) at every map update
    goals_reached: int
    goals_abandoned: int
    replans: int
    grid: Grid2D  # the final 2D map (the cruise slab for the UAV)
    planning_time: float  # CPU s spent planning (for benchmarks; wall-clock bound, never in a run's outputs)

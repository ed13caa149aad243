"""Frontier-based active exploration on the map the robot builds from its own depth cameras.

The loop, in simulation time (physics steps of the world):
- every 1 / map_hz s: render the depth camera (each of `exploration.cameras`: one map update from all of them),
  integrate it into the voxel map, project the 2D map the
  robot plans on (UAV: the slab it flies in; TIAGo: floor seen and nothing in its height band), inflate
  it, and check the explored fraction (known cells of the exploration region) and the current path;
  a path cell that turned untraversable (a person stepped in) triggers a replan at once;
- every `replan_period` s (or on demand): Dijkstra from the robot over the inflated map; keep the
  current goal while it is reachable and still looks at a frontier, else choose a new one
  (simulation.exploration.goals); the path to it is followed by pure pursuit;
- every 1 / control_hz s: the robot's controller turns the carrot point and heading into commands
  (simulation.exploration.drivers); the UAV's flight controller runs on every physics step in between.

The robot faces the way it goes (turning in place first when the path turns sharply), and on arrival
turns to the frontier cell its goal looks at; a frontier still there after that, or a goal not reached
in time, is marked exhausted so the robot never circles a spot it cannot see. It starts with a turn in
place (`exploration.initial_turn_deg`, a full one by default); the UAV then moves to its cruise
altitude, first sideways to a spot whose column down (or up) to the cruise slab it has seen free. When
frontiers are left but none can be reached while a person stands in the way on (the frontier would be
within sight were the obstacles where things moved lately not there: someone in the only doorway), it
waits, facing the way on and looking around every `LOOK_AGAIN` s, for as long as its time lasts: the map
clears where the person was once they walk on; else it turns a full turn in place once more (people and
flying objects may have left obstacles it has not seen go). Exploration ends when the known fraction of the map's region
reaches `stop_explored_fraction`, when no frontier is left or none can be reached after that look
around and nobody is in the way, or at the time budget.

Paths keep the robot's disc (the circle its corners sweep when it turns) clear; the robot follows them
within a few centimetres, so where it finds itself closer to an obstacle than its radius it does not
turn but first moves to the nearest cell with room. Unknown cells within `BLIND_MARGIN` of the robot's
disc count as passable: the camera cannot see the floor right around the robot (or the slab behind the
UAV) and the robot is standing there. Places where
something moved in the last `TRAFFIC_MEMORY` s (people walking, objects flying; the map's dynamic
voxels) cost as much as the edge of the safety margin and are never goals: people who walk a route
tend to walk it again, and a robot waiting there, facing elsewhere, would be walked into.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import shapely
from scipy import ndimage

from core.config import ExperimentConfig, RobotConfig
from core.errors import ConfigError
from core.geometry import yaw_of
from core.robot_catalogue import robot_body
from simulation.backend import Robot, World
from simulation.control import wrap_angle
from simulation.exploration.drivers import make_driver
from simulation.exploration.follower import PathFollower
from simulation.exploration.frontiers import frontier_clusters, frontier_mask
from simulation.exploration.goals import Goal, choose_goal
from simulation.exploration.occupancy import (
    FREE,
    OCCUPIED,
    UNKNOWN,
    Grid2D,
    VoxelMap,
    depth_rays,
    mapping_stride,
    project_ground,
    project_slab,
)
from simulation.exploration.params import ExplorationArea, ExplorationResult, ExplorerParams, Reason
from simulation.exploration.planner import CostMap, SearchTree, cost_map, path_is_clear, search

UAV_VERTICAL_MARGIN = 0.1  # m of slab kept clear above and below the frame: its corners rise 0.1 m at 25 deg tilt
BLIND_MARGIN = 0.4  # m around the robot's disc where unknown cells count as passable
TURN_FIRST = math.radians(60.0)  # heading error beyond which the robot turns before moving on
ALTITUDE_TOLERANCE = 0.05  # m
EXHAUST_RADIUS = 0.5  # m of frontier given up around a goal's target that could not be cleared
GOAL_TIME_FACTOR = 3.0  # a goal must be reached within this times its path length / speed ...
GOAL_TIME_SLACK = 10.0  # ... plus this many seconds (turns, slow-downs)
TRAFFIC_MEMORY = 30.0  # s a place where something moved is avoided
LOOK_AGAIN = 10.0  # s of waiting for a person in the way on between two looks around
FULL_TURN = 2 * math.pi
PLANNING_PHASES = ("transfer", "explore")
REFUGE_MEMORY = 1.0  # s: something seen moving this recently ...
REFUGE_DISTANCE = 0.5  # m: ... within this beyond the disc, clearance and safety margin keeps a holding UAV from
# moving off
PUSH_SETTLE = 0.25  # s after a push during which the robot still gives way


class Explorer:
    """Drives a robot to explore; `run` returns when done or out of time.

    Phases: "spin" (a turn in place), "transfer" (UAV: to a spot where it can change height),
    "descend" (UAV: to the cruise altitude), "explore".
    """

    def __init__(self, robot: Robot, config: RobotConfig, params: ExplorerParams, area: ExplorationArea):
        missing = [name for name in params.map_cameras if name not in robot.camera_names()]
        if missing:
            raise ConfigError(f"no camera named {missing[0]!r}; cameras: {robot.camera_names()}",
                              field="robot.sensors.cameras")
        self.robot, self.params = robot, params
        self.body = robot_body(config)
        self.flies = self.body.flies
        dt = robot.world.timestep
        self._map_every = max(round(1.0 / (params.map_hz * dt)), 1)
        self._control_every = max(round(1.0 / (params.control_hz * dt)), 1)
        self._replan_every = max(round(params.replan_period / dt), 1)
        self.driver = make_driver(robot, config, self._control_every * dt)
        res = params.map_resolution
        lo, hi = np.array(area.lo, dtype=np.float64), np.array(area.hi, dtype=np.float64)
        if self.flies:
            band = config.uav.z_band
            self.altitude = params.altitude if params.altitude is not None else (band.min + band.max) / 2
            lo[2], hi[2] = area.floor, max(hi[2], area.floor + band.max + self.body.height)
        else:
            self.altitude = area.floor
            lo[2], hi[2] = area.floor - res / 2, area.floor + self.body.height  # layer 0 holds the floor
        self.map = VoxelMap(lo, hi, res, decay=params.decay)
        self.grid = Grid2D(np.full(self.map.shape[:2], UNKNOWN, dtype=np.int8), self.map.lo[:2].copy(), res)
        x, y = self.grid.centers()
        self.region = (np.ones(self.grid.shape, dtype=bool) if area.region is None
                       else shapely.contains_xy(area.region, x, y))
        if not self.region.any():
            raise ConfigError("the exploration region holds no map cell", field="exploration")
        self.exhausted = np.zeros(self.grid.shape, dtype=bool)
        self._moved = np.full(self.grid.shape, -np.inf)  # when a dynamic voxel was last seen in each column
        self.walkways = np.zeros(self.grid.shape, dtype=bool)
        self.costs: CostMap | None = None
        self.phase = "spin"
        self._turned, self._last_yaw, self._looked_around = 0.0, None, False
        self._turn = params.initial_turn  # how far the current "spin" phase turns
        self._waiting_since: float | None = None  # since when the robot waits for a person in its way on
        self._seen_around = False  # a full turn in place was made (at the start or later)
        self._flight_z: float | None = None  # the UAV's height until it reaches the cruise altitude
        self._descend_at: np.ndarray | None = None
        self.goal: Goal | None = None
        self.follower: PathFollower | None = None
        self._goal_deadline = math.inf
        self._replan_now = True
        self.history: list[tuple[float, float]] = []
        self.goals_reached = self.goals_abandoned = self.replans = 0
        self.planning_time = 0.0  # CPU s spent planning (for benchmarks; never in a run's outputs)
        self.reason: Reason | None = None
        self._start: float | None = None  # when the first tick came
        self._step, self._stopped = 0, False
        self._pushed_at = -math.inf  # when something last pushed the robot

    # ------------------------------------------------------------ the loop

    def run(self, on_step: Callable[[World], None] | None = None,
            on_map: Callable[[float, Grid2D], None] | None = None) -> ExplorationResult:
        """Explore until done or `params.budget` s have passed; `on_step(world)` runs after every physics
        step, `on_map(time, grid)` after every map update (e.g. for ground-truth measures)."""
        world = self.robot.world
        while self.tick(on_map):
            world.step()
            if on_step is not None:
                on_step(world)
        return self.result()

    def tick(self, on_map: Callable[[float, Grid2D], None] | None = None) -> bool:
        """This physics step's work before the step (perceive, plan, command); False once exploration is over
        (the robot then stopped), so that a loop over several robots steps them together."""
        robot = self.robot
        if self._start is None:
            self._start, self._step = robot.world.time, 0
        if self.reason is None and robot.world.time >= self._start + self.params.budget - 1e-9:
            self.reason = "budget"
        if self.reason is not None:
            if not self._stopped:
                self.driver.stop()
                self._stopped = True
            return False
        step = self._step
        if step % self._map_every == 0:
            self._perceive()
            if on_map is not None:
                on_map(robot.world.time, self.grid)
        due = self._replan_now or step % self._replan_every == 0
        if self.reason is None and self.phase in PLANNING_PHASES and due:
            began = time.process_time()
            self._plan()
            self.planning_time += time.process_time() - began
        if step % self._control_every == 0:
            self._control()
        else:
            self.driver.update()
        self._step += 1
        if self._step % self._map_every == 0:  # the next step perceives: its frame renders its depth first
            for camera in self.params.map_cameras:
                robot.expect_depth(camera)
        return True

    def result(self) -> ExplorationResult:
        fraction = self.history[-1][1] if self.history else 0.0
        return ExplorationResult(self.reason, self.robot.world.time - self._start, fraction, list(self.history),
                                 self.goals_reached, self.goals_abandoned, self.replans, self.grid, self.planning_time)

    def _pose(self) -> tuple[np.ndarray, float]:
        pose = self.robot.pose()
        return pose[:3, 3].copy(), yaw_of(pose)

    # ------------------------------------------------------------ perception

    def _perceive(self) -> None:
        robot, params = self.robot, self.params
        views = []
        for camera in params.map_cameras:
            frame = robot.depth(camera)
            K = frame.camera.K
            stride = mapping_stride(K, params.max_range, self.map.resolution)
            origin, ends, returned = depth_rays(frame.depth, K, frame.camera.pose, params.max_range, stride)
            # A ground robot's floor (the map's lowest layer) is free space, not an obstacle.
            hits = returned if self.flies else returned & (ends[:, 2] >= self.map.lo[2] + self.map.resolution)
            views.append((origin, ends, hits))
        self.map.integrate_views(views, robot.world.time)
        # Until the UAV reaches its cruise altitude it keeps the margin below, where it has not looked, but
        # not above: it was placed there, clear of the ceiling, which may be close.
        layers = self._map_layers()
        self.grid = self._project(layers)
        self._moved[self._moving(layers)] = robot.world.time
        self.walkways = self._walkways()
        self.costs = self._cost_map(self.grid)
        if not self.flies:
            self.driver.know(self.grid)
        known = (self.grid.state != UNKNOWN) & self.region
        fraction = float(np.count_nonzero(known) / np.count_nonzero(self.region))
        self.history.append((robot.world.time, fraction))
        if fraction >= params.stop_explored_fraction:
            self.reason = "explored"
        elif not self._path_clear():
            self._replan_now = True

    def _moving(self, layers: slice) -> np.ndarray:
        """The map's columns (bool over the 2D map) where something moving is seen at this update."""
        return self.map.moving(self.robot.world.time)[:, :, layers].any(axis=2)

    def _map_layers(self) -> slice:
        """The voxel layers of the 2D map now."""
        return self._layers(self.altitude) if self._flight_z is None else self._layers(self._flight_z, above=0.0)

    def slab(self, height: float, below: float = UAV_VERTICAL_MARGIN,
             above: float = UAV_VERTICAL_MARGIN) -> tuple[float, float]:
        """The heights (m) between which a flying robot's 2D map is made: the slab its frame occupies at
        `height` plus `below` and `above` m."""
        return height - self.body.height - below, height + self.body.height + above

    def _layers(self, height: float, below: float = UAV_VERTICAL_MARGIN, above: float = UAV_VERTICAL_MARGIN) -> slice:
        """The voxel layers the 2D map is made of: for the UAV those of its slab (`slab`); for the TIAGo
        everything above the floor layer."""
        if not self.flies:
            return slice(1, None)
        return self.map.layers(*self.slab(height, below, above))

    def _project(self, layers: slice) -> Grid2D:
        blocked = self.map.recently_hit(self.robot.world.time)
        if not self.flies:
            return project_ground(self.map, blocked)
        middles = self.map.lo[2] + (np.array([layers.start, layers.stop - 1]) + 0.5) * self.map.resolution
        return project_slab(self.map, middles[0], middles[1], blocked)

    def _walkways(self) -> np.ndarray:
        """Cells within the robot's radius + safety margin of where something moved lately."""
        moved = self._moved >= self.robot.world.time - TRAFFIC_MEMORY
        if not moved.any():
            return moved
        reach = self.driver.radius + self.driver.clearance + self.params.safety_margin
        return ndimage.distance_transform_edt(~moved) * self.grid.resolution <= reach

    def _cost_map(self, grid: Grid2D) -> CostMap:
        """Inflated map; unknown cells next to the robot are passable, and walkways are avoided when
        there is a way round."""
        position, _ = self._pose()
        x, y = grid.centers()
        near = np.hypot(x - position[0], y - position[1]) <= self.driver.radius + BLIND_MARGIN
        passable = (grid.state == FREE) | ((grid.state == UNKNOWN) & near)
        return cost_map(grid.state == OCCUPIED, passable, grid.resolution, self.driver.radius + self.driver.clearance,
                        self.params.safety_margin, self.walkways)

    def _path_clear(self) -> bool:
        """Whether the rest of the current path (its planned cells, not the robot's own spot) is still
        traversable."""
        if self.follower is None:
            return True
        return path_is_clear(self.costs, self.grid.cell_of(self.follower.ahead()))

    # ------------------------------------------------------------ planning

    def _plan(self) -> None:
        if self._pushed():  # plan once the push is over, from where it left the robot
            self._replan_now = True
            return
        self._replan_now = False
        if self.phase == "transfer" and self.follower is not None and self._path_clear():
            return
        start = self._start_cell()
        if start is None:  # boxed in for now (a person right next to the robot): wait
            self.follower = None
            return
        self.replans += 1
        tree = search(self.costs, start)
        if self.phase == "transfer":
            self._plan_transfer(tree)
            return
        frontiers = self._frontiers()
        # No goal where people walk: the robot would stand in their way, turning, blind to the side.
        cost = np.where(self.walkways, np.inf, tree.cost)
        goal = self.goal
        if goal is not None and not (np.isfinite(cost[goal.cell]) and frontiers[goal.target]):
            goal = None
        if goal is None:
            unknown = (self.grid.state == UNKNOWN) & self.region
            goal = choose_goal(frontiers, unknown, cost, self.grid.resolution, self.params.goal)
            if goal is None:
                self._out_of_goals(frontiers, tree.cost)
                return
            self._looked_around, self._waiting_since = False, None
            self._goal_deadline = self.robot.world.time + GOAL_TIME_FACTOR * goal.cost / self.driver.speed + GOAL_TIME_SLACK
        self.goal = goal
        self._follow(tree, goal.cell)

    def _start_cell(self, costs: CostMap | None = None) -> tuple[int, int] | None:
        """The robot's cell, or the nearest traversable cell within the blind margin (of `costs`, default the
        robot's cost map)."""
        position, _ = self._pose()
        cell = tuple(int(v) for v in self.grid.cell_of(position[:2]))
        traversable = (costs or self.costs).traversable
        if not self.grid.contains(np.array(cell)) or not traversable.any():
            return None
        if traversable[cell]:
            return cell
        distance, (ii, jj) = ndimage.distance_transform_edt(~traversable, return_indices=True)
        if distance[cell] * self.grid.resolution > BLIND_MARGIN:
            return None
        return int(ii[cell]), int(jj[cell])

    def _frontiers(self) -> np.ndarray:
        mask = frontier_mask(self.grid.state, self.region) & ~self.exhausted
        labels, _ = frontier_clusters(mask, self.params.min_frontier_cells)
        return labels > 0

    def _out_of_goals(self, frontiers: np.ndarray, reach: np.ndarray) -> None:
        """No frontier worth a trip (the cells of `frontiers`) can be reached (`reach`: the path cost from the robot
        to each cell). While a person stands in the way on to those left, wait, looking around now and then (a look
        around first turned away from them for seconds, and they may walk on at once); else, if some are left,
        look around once more (people and objects may have left stale obstacles in the way); finish if none are
        left or nobody is in the way. A robot that set off without a full look around makes one before
        it concludes there are none."""
        self.goal, self.follower = None, None
        left = bool(frontiers.any())
        if not left and self._seen_around:
            self.reason = "no frontier"
        elif left and self._blocked_by_people(frontiers, reach):
            # Wait for them facing the way on (a look around first would turn away for seconds, and they may
            # walk on at once).
            now = self.robot.world.time
            if self._waiting_since is None:
                self._waiting_since = now
            elif now >= self._waiting_since + LOOK_AGAIN:
                self._waiting_since = None
                self._look_around()
        elif not self._looked_around:
            self._looked_around = True
            self._look_around()
        else:
            self.reason = "no frontier"

    def _look_around(self) -> None:
        self.phase, self._turned, self._last_yaw, self._turn = "spin", 0.0, None, FULL_TURN

    def _blocked_by_people(self, frontiers: np.ndarray, reach: np.ndarray) -> bool:
        """Whether a person stands in the way on to `frontiers` (`blocked_by_people`)."""
        def costs(state: np.ndarray) -> CostMap:
            return self._cost_map(Grid2D(state, self.grid.origin, self.grid.resolution))

        start = self._start_cell()
        return start is not None and blocked_by_people(self.grid.state, self.walkways, frontiers, reach, start, costs,
                                                       self.params.max_range)

    def _plan_transfer(self, tree: SearchTree) -> None:
        """UAV: go to the nearest reachable spot (at the current height) whose column between this height
        and the cruise slab is seen free, to change height there."""
        z = float(self._pose()[0][2])
        if z > self.altitude:  # down from the frame's top here to the margin under the cruise slab
            column = self._layers(z, below=z - self.altitude + UAV_VERTICAL_MARGIN, above=0.0)
        else:
            column = self._layers(self.altitude, below=self.altitude - z + UAV_VERTICAL_MARGIN)
        grid = self._project(column)
        landing = landing_spots(grid.state, self._cost_map(grid), tree.cost, self.driver.radius + self.driver.clearance,
                                self.params.safety_margin)
        if not landing.any():  # nowhere seen to change height: explore at this one
            self.altitude = z
            self._enter_explore()
            return
        cells = np.argwhere(landing)
        best = cells[np.argmin(tree.cost[landing])]
        self._follow(tree, (int(best[0]), int(best[1])))

    def _follow(self, tree: SearchTree, cell: tuple[int, int]) -> None:
        position, _ = self._pose()
        points = np.vstack([position[:2], self.grid.center_of(tree.path_to(cell))])
        self.follower = PathFollower(points, self.params.lookahead)

    def _give_up_goal(self, reached: bool) -> None:
        """Count the goal and mark the frontier around its target exhausted, in case it is still there."""
        x, y = self.grid.centers()
        target = self.grid.center_of(np.array(self.goal.target))
        self.exhausted |= np.hypot(x - target[0], y - target[1]) <= EXHAUST_RADIUS
        if reached:
            self.goals_reached += 1
        else:
            self.goals_abandoned += 1
        self.goal, self.follower = None, None
        self._replan_now = True

    def _enter_explore(self) -> None:
        self.phase, self._flight_z, self.follower = "explore", None, None
        self._replan_now = True

    # ------------------------------------------------------------ control

    def _control(self) -> None:
        position, yaw = self._pose()
        if self.phase == "spin":
            self._spin(position, yaw)
        elif self._pushed():
            # Something pushes the robot (a person walking into it): it gives way, drops its path and goes on from
            # where the push leaves it once it is over.
            if self.phase == "descend":
                self._descend_at = position[:2].copy()
            self._replan_now = True
            self._drop_path()
            self.driver.give_way()
        elif self.phase == "descend":
            self.driver.go(self._descend_at, yaw, self.altitude)
            if abs(position[2] - self.altitude) <= ALTITUDE_TOLERANCE:
                self._enter_explore()
        elif self.follower is None:
            self._hold(position, yaw)
        elif self.phase == "transfer":
            self._transfer(position, yaw)
        else:
            self._track(position, yaw)

    def _drop_path(self) -> None:
        self.follower = None

    def _pushed(self) -> bool:
        """Whether something pushes the robot (its drive's `pushed`), or did within the last `PUSH_SETTLE` s (a
        person walking alongside pushes it on and off)."""
        now = self.robot.world.time
        if self.driver.pushed():
            self._pushed_at = now
        return now < self._pushed_at + PUSH_SETTLE

    def _spin(self, position: np.ndarray, yaw: float) -> None:
        if self._last_yaw is not None:
            self._turned += abs(float(wrap_angle(yaw - self._last_yaw)))
        self._last_yaw = yaw
        if self._turned < self._turn:
            if self._pushed():  # give way first (`_control`), then turn on
                self.driver.give_way()
                return
            refuge = self._refuge(position)
            if refuge is None:
                self.driver.spin()
            else:  # too close to something to turn: move off first, keeping the heading
                self.driver.go(refuge, yaw, self._height())
            return
        self.driver.hold()
        self._seen_around = self._seen_around or self._turn >= FULL_TURN
        if self.flies and abs(position[2] - self.altitude) > ALTITUDE_TOLERANCE:
            self.phase, self._flight_z, self._replan_now = "transfer", float(position[2]), True
        else:
            self._enter_explore()

    def _transfer(self, position: np.ndarray, yaw: float) -> None:
        follower = self.follower
        carrot = follower.update(position[:2])
        if np.linalg.norm(follower.goal - position[:2]) <= self.params.goal_tolerance:
            self.phase, self._descend_at, self.follower = "descend", position[:2].copy(), None
            self.driver.hold()
            return
        self._drive(position, yaw, carrot, math.atan2(carrot[1] - position[1], carrot[0] - position[0]))

    def _track(self, position: np.ndarray, yaw: float) -> None:
        follower, goal = self.follower, self.goal
        carrot = follower.update(position[:2])
        arrived = np.linalg.norm(follower.goal - position[:2]) <= self.params.goal_tolerance
        target = self.grid.center_of(np.array(goal.target))
        facing = math.atan2(target[1] - position[1], target[0] - position[0])
        if arrived and abs(float(wrap_angle(facing - yaw))) <= self.params.yaw_tolerance:
            self._give_up_goal(reached=True)
            self.driver.hold()
        elif self.robot.world.time > self._goal_deadline:
            self._give_up_goal(reached=False)
            self.driver.hold()
        elif arrived or follower.remaining <= self.params.lookahead:
            self._drive(position, yaw, carrot, facing)
        else:
            self._drive(position, yaw, carrot, math.atan2(carrot[1] - position[1], carrot[0] - position[0]))

    def _drive(self, position: np.ndarray, yaw: float, carrot: np.ndarray, heading: float) -> None:
        """Go for the carrot facing `heading`; turn in place first if the heading is far off, but where
        turning would sweep the robot's corners into something, go for the carrot without turning."""
        if self._refuge(position) is not None:
            heading = yaw
        elif abs(float(wrap_angle(heading - yaw))) > TURN_FIRST:
            carrot = self.follower.point_at(self.follower.progress)
        self.driver.go(carrot, heading, self._height())

    def _hold(self, position: np.ndarray, yaw: float) -> None:
        """Hold where the robot is, unless a flying robot stands closer to an obstacle than its radius (a person
        pushed it there, say): then it moves off first (`_refuge`) rather than hold in contact; but not while
        something still pushes it (the refuge may lie back towards whoever does): its hold gives way; nor while
        something moving is near (`_mover_near`): the nearest cell with room may lie where a person walks next,
        and one who walks into a robot that holds still moves it."""
        moving_off = self.flies and not self._pushed() and not self._mover_near(position)
        refuge = self._refuge(position) if moving_off else None
        if refuge is None:
            self.driver.hold()
        else:
            self.driver.go(refuge, yaw, self._height())

    def _height(self) -> float:
        return self._flight_z if self._flight_z is not None else self.altitude

    def _refuge(self, position: np.ndarray) -> np.ndarray | None:
        """Where to go first when the robot stands closer to an obstacle than its radius (the path keeps
        the radius, the robot follows it only within a few centimetres): the nearest traversable cell's
        centre, or None where there is room to turn."""
        cell = self.grid.cell_of(position[:2])
        if not self.grid.contains(cell) or self.costs.clearance[tuple(cell)] >= self.driver.radius:
            return None
        start = self._start_cell()
        return None if start is None else self.grid.center_of(np.array(start))

    def _mover_near(self, position: np.ndarray) -> bool:
        """Whether something moving was seen in the last `REFUGE_MEMORY` s within the robot's disc, clearance,
        safety margin and `REFUGE_DISTANCE` of `position`."""
        cells = np.argwhere(self._moved >= self.robot.world.time - REFUGE_MEMORY)
        reach = self.driver.radius + self.driver.clearance + self.params.safety_margin + REFUGE_DISTANCE
        return bool(len(cells)) and bool((np.linalg.norm(self.grid.center_of(cells) - position[:2], axis=1)
                                          <= reach).any())


def landing_spots(column: np.ndarray, costs: CostMap, reach: np.ndarray, room: float, safety_margin: float) -> np.ndarray:
    """Where (bool over the map) a flying robot may change height: the cells it can reach (`reach`: the path cost
    from it, inf where unreachable) that have `room` m of seen-free cells round them in the map of the `column` it
    changes height through (the camera never sees the column right below or above the robot, and a person standing
    beside it may reach into it); where there are none, those traversable in that map's cost map `costs` (unknown
    cells right round the robot count as passable, as everywhere): the robot's own spot will do."""
    seen = cost_map(column != FREE, column == FREE, costs.resolution, room, safety_margin)
    landing = seen.traversable & np.isfinite(reach)
    return landing if landing.any() else costs.traversable & np.isfinite(reach)


def blocked_by_people(state: np.ndarray, walkways: np.ndarray, frontiers: np.ndarray, reach: np.ndarray,
                      start: tuple[int, int], costs: Callable[[np.ndarray], CostMap], sight: float) -> bool:
    """Whether a robot at cell `start` of a 2D map `state` could get within `sight` m of a cell of `frontiers`
    (bool) were the obstacles where things moved lately (people: occupied cells on `walkways`) not there, where it
    cannot now (`reach`: the path cost from it to each cell, inf where unreachable); `costs(state)` is its cost
    map of a map state."""
    people = (state == OCCUPIED) & walkways
    if not people.any():
        return False
    past = costs(np.where(people, FREE, state).astype(np.int8))
    opened = np.isfinite(search(past, start).cost) & ~np.isfinite(reach)
    if not opened.any():
        return False
    return bool((ndimage.distance_transform_edt(~opened)[frontiers] * past.resolution <= sight).any())


def explore(robot: Robot, config: ExperimentConfig, area: ExplorationArea, **overrides) -> ExplorationResult:
    """Explore with the exploration settings of `config` (any ExplorerParams field may be overridden)."""
    if config.exploration.planner != "frontier":
        raise ConfigError(f"explore runs the frontier planner; this config asks for {config.exploration.planner!r}",
                          field="exploration.planner")
    params = ExplorerParams.from_config(config, **overrides)
    return Explorer(robot, config.robot, params, area).run()

"""The tour explorer (`exploration.planner: tour`): FUEL-like exploration (Zhou et al., RA-L 2021) on the map
the robot builds, with the frontier explorer's perception, phases and safety (simulation.exploration.explorer).

Frontiers lie between free cells and cells never seen: a cell the map knew and now doubts again (a voxel a
person walked through, a ray's end clipping a seen-free voxel) keeps its last known state for planning, or
every person walking by would leave new frontier behind them for the tour to come back to.

Planning, every `replan_period` s or when the path ahead is blocked:
- the frontier clusters and their viewpoints are brought up to date incrementally
  (simulation.exploration.viewpoints); viewpoints where people walk are left out while there are others;
- while the viewpoint being gone to is reachable, its path clear and it still has frontier cells in view, the
  robot keeps going (clusters change as the robot sees more of them; re-solving the tour whenever one shrinks
  on the way would flip between far-apart targets); once it is within `NEAR` of the viewpoint looking its way
  with fewer than a cluster's minimum size left in view, those few are marked exhausted, and those hidden
  from there only by people (seen from so near, a few cells stay unknown: behind a chair leg, at a wall's
  foot, behind a person walking by), so that no tour comes back for them, and the robot replans;
- else a global tour over every cluster with a reachable viewpoint is solved as an ATSP (path lengths from
  each viewpoint are kept for `ROW_LIFETIME` s, so most rounds run Dijkstra only from new ones), the first
  `REFINE_DEPTH` clusters' viewpoints are refined (simulation.exploration.tour), and the robot sets off to
  the first one on a trajectory that moves and turns at once, from its current speed, within its limits
  (simulation.exploration.motion_plan).

Tracking. The trajectory's reference (motion_plan.Reference) runs in simulation time at a rate: 1 as planned,
and for a flying robot less to slow down, 0 to stop, changed within `BRAKE_FRACTION` of the acceleration limit,
so that the UAV's every stop (to let someone pass, to turn first, to change paths) brakes along the path, where
it stays, instead of towards a set point snapped to where it is, which it overshoots by its stopping distance
(0.6 m from 1.1 m/s) off the path, into places nobody checked, and then flies back. (A ground base brakes in
place within its own limits, without overshoot.) The reference is held back while it is more than a
`lookahead` ahead of the robot's progress along the path, so that a robot held up (a person in the way) never
gets a set point across a corner. The UAV's set point is the reference itself with the reference's velocity fed
forward (taken the controller's velocity time constant ahead, the lag of its velocity shaping, its rate on the
way to the rate wanted), so it flies with the reference at full speed; while the reference is held back nothing
is fed forward. The plan's speed does not slow for the path's corners, and the UAV, whose velocity turns within
its acceleration and jerk limits, cuts a right angle by 0.3 m at 1.1 m/s: its reference slows for each corner
ahead (`Reference.corner_rate`) so that its velocity changes there by at most `CORNER_CHANGE`, slowing at
`CORNER_FRACTION` of the acceleration limit. The TIAGo's set point is the reference `1 / gain` s ahead (its base
controller's position loop lags its set point by that). A new path that leaves the way the robot moves by more
than `SWERVE` (at `SWERVE_SPEED` or more) waits until the UAV has braked to a stop on its current one: turning
its velocity, it would drift off both. A robot closer to an obstacle than its radius moves off first without
turning, as in the frontier explorer, and the UAV holds nowhere closer (a person may have pushed it there).

Heading. While the robot moves, the way it goes stays in its camera's view: the TIAGo's heading within
`LOOK_FRACTION` of the camera's half field of view of it (its ground map holds floor seen free, which may lie under
a table top not seen yet), the UAV's within the half field of view; and it turns first while the way it goes is
outside that (the TIAGo on the spot, the UAV creeping at `CREEP_SPEED`). The UAV's map is the slab it flies in,
seen free, but people walk into it from anywhere: flying sideways or backwards, it flew into people walking
across its way that it could not see, and it yields only to what it sees. The turn to the viewpoint's yaw is
done along the way as far as that allows. The way the robot goes is towards the path a lookahead on (the UAV's
set point itself may be right by it). Where the path just ahead crosses cells not seen yet (unknown cells right
around the robot count as passable), or a walkway (where something moved lately), either robot faces the way it
goes: a UAV flying 45 deg off its heading flew into someone pacing across its way, who came back from the side its
camera did not see (issue 46's seed 118).

Narrow places. The UAV's disc fits its frame's corners and its hard clearance covers the map's cells and its
tracking; doorways 1.1 m wide, mapped a cell narrower, fit the disc but not the clearance. There (`TIGHT_WEIGHT`,
`TIGHT_MARGIN`) it goes only where there is no way round, slowly (`CREEP_SPEED`, slowing for them within its
stopping distance), facing the way it goes (its frame's side, not its corners, towards the door posts), and
never stopping there to look.

Yielding. While something that moves (a person, a flying object) was seen in the last `YIELD_MEMORY` s ahead of
the robot (within `YIELD_CONE` of the way it goes; the map's dynamic voxels hit at a map update, not those a
person left less than the map's decay ago), within `YIELD_DISTANCE` beyond its disc, clearance and safety margin,
the robot brakes to a stop (the UAV on its path, at `YIELD_BRAKE_FRACTION` of its acceleration limit, from where
it is: its reference, which runs ahead of it by its controller's lag, is brought back to it first, or the position
loop, catching up, drew it on towards what it waits for: issue 46's seeds 107 and 108) and lets it pass, for at
most `YIELD_PATIENCE` s: someone who stands there blocks the map's cells, and the path goes round them. The
patience starts again only when what moves is `YIELD_APPROACH` closer than it was when the wait last started
(someone coming on; or the robot, gone on, closing in: past something that stays it goes on a step at a time), or
once the way has been clear for `YIELD_CLEAR` s. (It used to start again at every gap, and a flying
object drifting at the edge of the cone, seen and then not from one map update to the next, held the UAV in a
doorway for 8 s: issue 46's seed 119.) Something moving seen further ahead, but within the way the UAV goes
before it could stop for it (a map update's wait, its controller's lag and its braking: `_reaction_distance`),
slows it at once to `CREEP_SPEED`.
(Waiting for everything moving within the UAV's stopping distance as well kept it from the doorways people
use, and so did waiting for whatever the map saw coming into its way, its velocity estimated from update to
update: issue 46's sweep, median 0.93 -> 0.91.) A path that people walking across block (its blocked cells
all on walkways) is kept, the robot stopped on it, for `HELD_ELSEWHERE` s; then, while it is still held up, the
robot goes meanwhile to frontier it can reach without passing them (on the map with the blocked cells and
`BLOCKAGE_MARGIN` round them shut, `around_blockage`: elsewhere in its room, or through another door), and the
tour takes the held one up again once the way there clears; where there is none, it keeps to the path up to
`HELD_PATIENCE` s before the tour is solved again: solving it whenever someone walked across the path flipped
between far-apart targets, and the robot, turning first at each, stood in a doorway for tens of seconds.

Pushes. People are kinematic: one who walks into the robot moves it. A robot pushed (its velocity departs from
what it commands, `pushed`) drops its path and gives way (simulation.exploration.explorer: the UAV drops its
motion and holds where the push leaves it, a ground base stops), and plans again from there once the push is
over.

A viewpoint is reached when the robot is within `goal_tolerance` of it facing its yaw within
`yaw_tolerance`; the robot holds there for `DWELL_MAPS` map updates (the map takes in what the camera sees
from there), then the frontier cells in its view still frontier then cannot be seen from there and are marked
exhausted. The rest of its cluster (cells hidden from there by furniture the map learnt of since the viewpoint
was chosen), like the cluster of a viewpoint not reached in time, is clustered anew with viewpoints on the map
as it is now, and a frontier cell is given up once `TRIES` of its viewpoints were (viewpoints.give_up).

When no cluster has a reachable viewpoint, the explorer waits while a person stands in the way on, else looks
around (simulation.exploration.explorer): the tour goes round through another door where there is one, since
the person's cells block the map, and through the person's doorway once they walked on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from core.config import RobotConfig
from core.robot_catalogue import robot_body
from simulation.backend import Robot
from simulation.control import wrap_angle
from simulation.control.planar import POSITION_GAIN, YAW_GAIN
from simulation.control.uav_controller import VELOCITY_TIME_CONSTANT
from simulation.exploration.drivers import BaseDriver, UavDriver
from simulation.exploration.explorer import BLIND_MARGIN, GOAL_TIME_FACTOR, GOAL_TIME_SLACK, Explorer
from simulation.exploration.follower import PathFollower
from simulation.exploration.frontiers import frontier_mask
from simulation.exploration.motion_plan import MotionLimits, MotionPlan, Reference, plan_motion
from simulation.exploration.occupancy import FREE, OCCUPIED, UNKNOWN, Grid2D
from simulation.exploration.params import ExplorationArea, ExplorerParams
from simulation.exploration.planner import SAFETY_WEIGHT, CostMap, SearchTree, grid_graph, search
from simulation.exploration.tour import cost_matrix, refine, solve_tour, travel_time
from simulation.exploration.viewpoints import (
    Cluster,
    FrontierInfo,
    Viewpoint,
    ViewpointParams,
    give_up,
    line_of_sight,
    seen_from,
)

DWELL_MAPS = 2  # map updates a robot holds at a viewpoint it reached before it gives up what it has not seen
NEAR = 1.0  # m from a viewpoint within which what is left of its frontier is given up
ROW_LIFETIME = 10.0  # s a viewpoint's path lengths to everywhere are reused (the map grows meanwhile)
REFINE_DEPTH = 3  # clusters at the head of the tour whose viewpoints are refined together
LOOK_SAMPLES = 10  # points of the path ahead checked for cells not seen yet
YIELD_MEMORY = 0.3  # s: something that moved this recently (the last map update or so) is still there
YIELD_DISTANCE = 0.2  # m beyond the robot's disc, clearance and safety margin within which it waits for it
YIELD_CONE = math.radians(45.0)  # off the way ahead
YIELD_PATIENCE = 2.0  # s the robot waits for it; then it goes on (the map blocks a person standing in the way)
YIELD_CLEAR = 1.0  # s the way ahead stays clear before a wait is over
YIELD_APPROACH = 0.1  # m something moving comes closer, while the robot waits, that starts its patience again
HELD_PATIENCE = 3.0  # s the robot keeps to its path, stopped on it, while people walking across block it
HELD_ELSEWHERE = 1.0  # s held up before it looks for frontier it can go to meanwhile without passing them
BLOCKAGE_MARGIN = 0.5  # m round the cells people block a held path in that the way elsewhere keeps out of
LOOK_FRACTION = 0.8  # of the camera's half field of view: how far the heading may be off the way the robot goes
BRAKE_FRACTION = 0.5  # of the acceleration limit: how fast the trajectory's reference slows down and speeds up again
YIELD_BRAKE_FRACTION = 1.0  # ... and how fast it stops for something moving close ahead
CREEP_SPEED = 0.3  # m/s through narrow places (less than the disc plus its clearance from anything known)
TIGHT_WEIGHT = 2 * SAFETY_WEIGHT  # extra cost per metre through such places
TIGHT_MARGIN = 0.08  # m kept there beyond the disc: a wall's end may lie up to a cell nearer than the map has it
CORNER_CHANGE = 0.4  # m/s: the most the UAV's velocity changes at a corner of its path (it then cuts it by < 5 cm)
CORNER_FRACTION = 0.25  # of the acceleration limit: the UAV slows for a corner gently, so that it keeps up
CORNER_WINDOW = 0.3  # m of path before and after a point whose directions give the turn there
SWERVE = math.radians(45.0)  # a new path further off the way the robot moves waits until the robot has braked
SWERVE_SPEED = 0.3  # m/s: slower than this the robot turns onto a new path at once (it drifts a few cm)
MOVING = 0.1  # m/s: slower than this the robot counts as stopped


def motion_limits(config: RobotConfig, driver: UavDriver | BaseDriver) -> MotionLimits:
    """The robot's limits as its controller enforces them."""
    controller = driver.controller
    if robot_body(config).flies:
        uav = config.uav
        return MotionLimits(uav.max_speed, controller.max_acceleration, math.radians(uav.yaw_rate_deg),
                            math.radians(uav.yaw_acceleration_deg), uav.max_jerk)
    limits = controller.limits
    return MotionLimits(limits.max_speed, limits.max_acceleration, limits.max_yaw_rate, limits.max_yaw_acceleration)


@dataclass
class YieldPatience:
    """The robot's wait for something moving close ahead (module notes, Yielding): `YIELD_PATIENCE` s, started
    again when what moves is `YIELD_APPROACH` closer than it was when the wait started, and over once nothing has
    been close ahead for `YIELD_CLEAR` s."""

    since: float | None = None  # s: when the wait last started (None: not waiting)
    nearest: float = math.inf  # m: how close what moves was then
    clear: float | None = None  # s: since when nothing moving has been close ahead

    def waits(self, now: float, distance: float | None) -> bool:
        """Whether the robot waits at simulation time `now`, with something moving `distance` m away close ahead
        (None: nothing)."""
        if distance is None:
            self.clear = now if self.clear is None else self.clear
            if now >= self.clear + YIELD_CLEAR:
                self.since = None
            return False
        self.clear = None
        if self.since is None or distance < self.nearest - YIELD_APPROACH:
            self.since, self.nearest = now, distance
        return now <= self.since + YIELD_PATIENCE


class TourExplorer(Explorer):
    """Explores by a global tour over frontier clusters (module notes); runs like `Explorer`."""

    def __init__(self, robot: Robot, config: RobotConfig, params: ExplorerParams, area: ExplorationArea):
        super().__init__(robot, config, params, area)
        camera = next(c for c in config.sensors.cameras if c.name == params.camera)
        self.info = FrontierInfo(params.map_resolution, ViewpointParams(
            min_size=params.min_frontier_cells, fov=math.radians(camera.fov_deg)))
        self.limits = motion_limits(config, self.driver)
        self.half_fov = math.radians(camera.fov_deg) / 2
        self.look = LOOK_FRACTION * self.half_fov
        if self.flies:
            self.lead, self.velocity_lead = 0.0, VELOCITY_TIME_CONSTANT
            self.yaw_lead = 1.0 / config.attitude_gains.kp
        else:
            self.lead, self.velocity_lead, self.yaw_lead = 1.0 / POSITION_GAIN, None, 1.0 / YAW_GAIN
        self.trajectory: MotionPlan | None = None
        self.target: tuple[Cluster, Viewpoint] | None = None
        self.reference: Reference | None = None  # where along the trajectory the robot should be
        self._swerve = False  # a new path waits for the robot to brake to a stop on the current one
        self._arrived: float | None = None  # when the robot reached the current viewpoint
        self.patience = YieldPatience()  # the wait for something moving close ahead
        self._yielding = False  # whether it waited for it at the last control step
        self._held: float | None = None  # since when the path has been held up by people
        self._rows: dict[tuple[int, int], np.ndarray] = {}  # path lengths from a viewpoint cell to every cell
        self._row_times: dict[tuple[int, int], float] = {}  # when each was computed
        self.tour: list[int] = []  # cluster ids in tour order at the last planning
        self._tries = np.zeros(self.grid.shape, dtype=np.int64)  # viewpoints given up on for each frontier cell
        # Each cell's latest known state: frontiers lie next to cells never seen (module notes).
        self.seen = np.full(self.grid.shape, UNKNOWN, dtype=np.int8)

    def _perceive(self) -> None:
        super()._perceive()
        known = self.grid.state != UNKNOWN
        self.seen[known] = self.grid.state[known]

    def _cost_map(self, grid: Grid2D) -> CostMap:
        """The explorer's cost map (the disc plus its hard clearance), and besides, where the robot has its disc's
        room and `TIGHT_MARGIN` but not the clearance (a doorway a cell narrower on the map than it is), cells at
        `TIGHT_WEIGHT`: the robot goes through them only where there is no way round, slowly and facing the way it
        goes (`_track`), and never stops there to look (no viewpoints)."""
        costs = super()._cost_map(grid)
        radius, clearance = self.driver.radius, self.driver.clearance
        if clearance <= 0:
            return costs
        position, _ = self._pose()
        x, y = grid.centers()
        near = np.hypot(x - position[0], y - position[1]) <= radius + BLIND_MARGIN
        passable = (grid.state == FREE) | ((grid.state == UNKNOWN) & near)
        return with_narrow_passages(costs, passable, radius + TIGHT_MARGIN)

    def _tight(self) -> np.ndarray:
        """Cells with the disc's room but not its clearance (`_cost_map`)."""
        return self.costs.clearance < self.driver.radius + self.driver.clearance

    # ------------------------------------------------------------ planning

    def _plan(self) -> None:
        if self.phase != "explore":
            super()._plan()
            return
        if self._pushed():  # plan once the push is over, from where it left the robot
            self._replan_now = True
            return
        self._replan_now, self._swerve = False, False
        start = self._start_cell()
        if start is None:  # boxed in for now: wait
            self.follower = self.trajectory = None
            return
        self.replans += 1
        graph = grid_graph(self.costs)
        shape = self.grid.shape
        flat = int(np.ravel_multi_index(start, shape))
        cost, predecessors = dijkstra(graph, directed=True, indices=flat, return_predecessors=True)
        tree = SearchTree(start, cost.reshape(shape), predecessors)
        mask = frontier_mask(self.seen, self.region) & ~self.exhausted
        tight = self._tight()
        if self.target is not None and self.follower is not None:
            _, viewpoint = self.target
            in_view, near = self._in_view(viewpoint, mask), self._near(viewpoint)
            # Committed while anything is left to see from there (a tour re-solved whenever a cluster shrinks
            # below its minimum size on the way flips between far-apart targets), and while the way there is only
            # held up by people, for `HELD_PATIENCE` s (the tour re-solved whenever someone walks across the path
            # flips between targets as they walk).
            if len(in_view) >= self.info.params.min_size or (len(in_view) and not near):
                reachable = (np.isfinite(tree.cost[viewpoint.cell]) and self.region[viewpoint.cell]
                             and not tight[viewpoint.cell])
                if reachable and self._path_clear():
                    self._held = None
                    return
                now = self.robot.world.time
                if self._held_by_people() and (self._held is None or now < self._held + HELD_PATIENCE):
                    self._held = now if self._held is None else self._held
                    if now < self._held + HELD_ELSEWHERE:
                        return
                    # Held up a while: meanwhile, frontier the robot can go to without passing them, if any.
                    tree = search(self._around(), start)
                    clusters, options = self._options(tree, mask, tight)
                    if not options:
                        return
                    self._held = None
                    self._set_off_on_tour(graph, tree, clusters, options)
                    return
            elif near:  # its frontier is seen from near; what is left in view (past people) stays unseen
                left = self._in_view(viewpoint, mask, past_people=True)
                give_up(self.info, self.target[0], left, self._tries, self.exhausted)
                mask &= ~self.exhausted
        self._held = None
        clusters, options = self._options(tree, mask, tight)
        if not options:
            self.target = self.trajectory = None
            left = np.zeros(shape, dtype=bool)
            for cluster in clusters.values():
                left[cluster.cells[:, 0], cluster.cells[:, 1]] = True
            self._out_of_goals(left, tree.cost)
            return
        self._set_off_on_tour(graph, tree, clusters, options)

    def _options(self, tree: SearchTree, mask: np.ndarray,
                 tight: np.ndarray) -> tuple[dict[int, Cluster], dict[int, list[Viewpoint]]]:
        """The frontier clusters of `mask` and, by cluster id, their viewpoints the robot can go to on `tree`: only
        where it can go now, and not where people walk while there are others (none: no cluster has one)."""
        for avoid in (self.walkways, np.zeros_like(self.walkways)):
            reach = np.where(avoid | tight | ~self.region, np.inf, tree.cost)
            clusters = self.info.update(mask, self.grid.state == OCCUPIED, np.isfinite(reach))
            options = {c.id: [v for v in c.viewpoints if np.isfinite(reach[v.cell])] for c in clusters.values()}
            options = {i: v for i, v in options.items() if v}
            if options:
                break
        return clusters, options

    def _set_off_on_tour(self, graph: csr_matrix, tree: SearchTree, clusters: dict[int, Cluster],
                         options: dict[int, list[Viewpoint]]) -> None:
        """Solve the tour over the `options` (paths between viewpoints on `graph`, from the robot on `tree`),
        refine its head and set off for its first viewpoint."""
        self._looked_around, self._waiting_since = False, None
        ids = sorted(options)
        order = self._tour(graph, tree, ids, options)
        self.tour = [ids[k - 1] for k in order[1:]]
        head = self.tour[:REFINE_DEPTH]
        choice = self._refine(tree, [options[i] for i in head])
        self._set_off(tree, clusters[head[0]], options[head[0]][choice[0]])

    def _around(self) -> CostMap:
        """The robot's cost map with the cells where people hold up the current path shut (`around_blockage`)."""
        cells = self.grid.cell_of(self.follower.ahead()).reshape(-1, 2)
        return around_blockage(self.costs, cells[self.grid.contains(cells)])

    def _tour(self, graph: csr_matrix, tree: SearchTree, ids: list[int],
              options: dict[int, list[Viewpoint]]) -> list[int]:
        """The ATSP order over the robot (node 0) and each cluster's best reachable viewpoint."""
        cells = [options[i][0].cell for i in ids]
        now = self.robot.world.time
        missing = [c for c in cells if c not in self._rows or self._row_times[c] < now - ROW_LIFETIME]
        if missing:
            flats = np.ravel_multi_index(np.array(missing).T, self.grid.shape)
            rows = dijkstra(graph, directed=True, indices=flats)
            for cell, row in zip(missing, rows):
                self._rows[cell], self._row_times[cell] = row.reshape(self.grid.shape), now
        used = set(cells)
        self._rows = {c: r for c, r in self._rows.items() if c in used}
        self._row_times = {c: t for c, t in self._row_times.items() if c in used}
        n = len(cells) + 1
        lengths = np.full((n, n), np.inf)
        for a, cell_a in enumerate(cells, start=1):
            lengths[0, a] = tree.cost[cell_a]
            for b, cell_b in enumerate(cells, start=1):
                # The newer row knows more of the map: take the shorter of the two directions.
                lengths[a, b] = min(self._rows[cell_a][cell_b], self._rows[cell_b][cell_a])
        yaws = np.array([self._pose()[1]] + [options[i][0].yaw for i in ids])
        return solve_tour(cost_matrix(lengths, yaws, self.limits.speed, self.limits.yaw_rate))

    def _refine(self, tree: SearchTree, layers: list[list[Viewpoint]]) -> list[int]:
        """One viewpoint per cluster at the head of the tour, by least total travel time."""
        speed, yaw_rate, yaw = self.limits.speed, self.limits.yaw_rate, self._pose()[1]
        blocked, resolution = ~self.costs.traversable, self.grid.resolution
        best = [layer[0] for layer in layers]

        def start_cost(cell: np.ndarray, to_yaw: float) -> float:
            return travel_time(tree.cost[tuple(cell)], yaw, to_yaw, speed, yaw_rate)

        def step_cost(k: int, a: np.ndarray, yaw_a: float, b: np.ndarray, yaw_b: float) -> float:
            if line_of_sight(blocked, a, b[None])[0]:
                length = float(np.linalg.norm(b - a)) * resolution
            else:  # round by the clusters' best viewpoints, whose path is known
                row = self._rows.get(best[k].cell)
                if row is None:
                    return math.inf
                offsets = np.linalg.norm(a - best[k].cell) + np.linalg.norm(b - best[k + 1].cell)
                length = float(row[best[k + 1].cell] + offsets * resolution)
            return travel_time(length, yaw_a, yaw_b, speed, yaw_rate)

        candidates = [[(np.array(v.cell), v.yaw) for v in layer] for layer in layers]
        return refine(candidates, start_cost, step_cost)

    def _set_off(self, tree: SearchTree, cluster: Cluster, viewpoint: Viewpoint) -> None:
        """Set off for `viewpoint` along the path to it, from the speed the robot has along it; unless the robot,
        moving, has a trajectory and the new path leaves the way it moves by more than `SWERVE`: turning its
        velocity within its acceleration and jerk limits, it would drift off both paths by its stopping
        distance, into places neither was checked for. It then first brakes to a stop along its trajectory
        (`_track`), and planning is asked for again once it has stopped."""
        position, yaw = self._pose()
        points = np.vstack([position[:2], self.grid.center_of(tree.path_to(viewpoint.cell))])
        ahead = points[min(2, len(points) - 1)] - points[0]
        velocity = self.robot.pose()[:3, :3] @ self.robot.velocity()[0]
        norm, speed = float(np.linalg.norm(ahead)), float(np.linalg.norm(velocity[:2]))
        speed0 = float(velocity[:2] @ ahead / norm) if norm > 0 else 0.0
        if self.flies and self.trajectory is not None and speed >= SWERVE_SPEED and speed0 < speed * math.cos(SWERVE):
            self._swerve = True
            return
        self._swerve = False
        self.trajectory = plan_motion(points, yaw, viewpoint.yaw, self.limits, speed0)
        self.follower = PathFollower(points, self.params.lookahead)
        self.reference = Reference(self.trajectory, BRAKE_FRACTION * self.limits.acceleration / self.limits.speed)
        self.target, self._arrived = (cluster, viewpoint), None
        self._goal_deadline = (self.robot.world.time + GOAL_TIME_FACTOR * self.trajectory.duration
                               + GOAL_TIME_SLACK)

    def _drop_path(self) -> None:
        self.trajectory = self.follower = None

    def _held_by_people(self) -> bool:
        """Whether the rest of the current path is blocked only where people walk: they walk on."""
        cells = self.grid.cell_of(self.follower.ahead()).reshape(-1, 2)
        return held_by_people(self.costs.traversable, self.walkways, cells[self.grid.contains(cells)])

    def _near(self, viewpoint: Viewpoint) -> bool:
        """Within `NEAR` of the viewpoint, looking its way."""
        position, yaw = self._pose()
        return bool(np.linalg.norm(self.grid.center_of(np.array(viewpoint.cell)) - position[:2]) <= NEAR
                    and abs(float(wrap_angle(viewpoint.yaw - yaw))) <= self.half_fov)

    def _in_view(self, viewpoint: Viewpoint, mask: np.ndarray, past_people: bool = False) -> np.ndarray:
        """The cells (K, 2) of the frontier `mask` seen from `viewpoint` (`past_people`: as if the people in
        the way, the occupied cells where things moved lately, were not there)."""
        cells = np.argwhere(mask)
        occupied = self.grid.state == OCCUPIED
        if past_people:
            occupied &= ~self.walkways
        return cells[seen_from(np.array(viewpoint.cell), viewpoint.yaw, cells, occupied, self.grid.resolution,
                               self.info.params)]

    def _finish(self, reached: bool) -> None:
        """Count the viewpoint and give up the frontier it has in view, and try its cluster's other cells
        again (`give_up`)."""
        cluster, viewpoint = self.target
        in_view = self._in_view(viewpoint, frontier_mask(self.seen, self.region)) if reached else np.zeros((0, 2), int)
        give_up(self.info, cluster, in_view, self._tries, self.exhausted)
        if reached:
            self.goals_reached += 1
        else:
            self.goals_abandoned += 1
        self.target = self.trajectory = self.follower = None
        self._replan_now = True

    # ------------------------------------------------------------ control

    def _track(self, position: np.ndarray, yaw: float) -> None:
        trajectory, follower = self.trajectory, self.follower
        if trajectory is None:
            self._hold(position, yaw)
            return
        follower.update(position[:2])
        goal, goal_yaw = trajectory.points[-1], trajectory.end_yaw
        now = self.robot.world.time
        if self._arrived is not None or (np.linalg.norm(goal - position[:2]) <= self.params.goal_tolerance
                                         and abs(float(wrap_angle(goal_yaw - yaw))) <= self.params.yaw_tolerance):
            # Hold until the map has taken in what the camera sees from here, then give up what it still lacks.
            self._arrived = now if self._arrived is None else self._arrived
            if now >= self._arrived + DWELL_MAPS / self.params.map_hz:
                self._finish(reached=True)
            self._hold(position, yaw)
            return
        if self.robot.world.time > self._goal_deadline:
            self._finish(reached=False)
            self._hold(position, yaw)
            return
        velocity = (self.robot.pose()[:3, :3] @ self.robot.velocity()[0])[:2]
        speed = float(np.linalg.norm(velocity))
        if self._held is not None and self._path_clear():
            self._held = None
        # A new path waits until the robot stopped on this one; a path people walk across, until they passed.
        stop = self._swerve or self._held is not None
        brake = BRAKE_FRACTION
        if self._swerve and speed < MOVING:
            self._replan_now = True
        # Something moving close ahead: wait for it; further ahead, but within the way the UAV goes before it
        # stops: slow down at once (`wary`).
        reach = self.driver.radius + self.driver.clearance + self.params.safety_margin + YIELD_DISTANCE
        nearest = self._mover_ahead(position, follower, reach + (self._reaction_distance(speed) if self.flies else 0.0))
        mover = nearest if nearest is not None and nearest <= reach else None
        wary = mover is None and nearest is not None
        if wary:
            brake = YIELD_BRAKE_FRACTION
        waits = self.patience.waits(now, mover)
        if waits:
            if not self.flies:  # a ground base brakes where it is, within its own limits, without overshoot
                self.driver.hold()
                return
            if not self._yielding:  # it brakes from where it is, not from where its reference ran ahead to
                self.reference.back_to(follower.progress, speed)
            stop, brake = True, YIELD_BRAKE_FRACTION
        self._yielding = waits
        # Narrow places within the stopping distance ahead: slowly, facing the way (module notes).
        tight = self.driver.clearance > 0 and self._tight_ahead(follower, self._stopping_distance(speed))
        reference = self.reference
        heading = reference.yaw(self.yaw_lead)
        # The way the robot goes: to the path a lookahead on (the set point itself may be right by the robot).
        away = follower.point_at(follower.progress + self.params.lookahead) - position[:2]
        turn_first, slow = tight, tight or wary
        if np.linalg.norm(away) > self.params.goal_tolerance:  # keep the way ahead in view (module notes)
            travel = math.atan2(away[1], away[0])
            ahead = self._cells_ahead(follower, position)
            # Cells not seen yet, a narrow place, or a walkway (someone who walked across there lately may come
            # back from the side the camera does not see) just ahead: the robot looks the way it goes.
            blind = (bool(np.any(self.grid.state[ahead[:, 0], ahead[:, 1]] == UNKNOWN)) or tight
                     or bool(self.walkways[ahead[:, 0], ahead[:, 1]].any()))
            look = 0.0 if blind else self.look
            heading = travel + float(np.clip(wrap_angle(heading - travel), -look, look))
            if abs(float(wrap_angle(travel - yaw))) > (self.look if blind else self.half_fov):
                # Turn first: a flying robot creeping along its path as it turns (stopped on it before a narrow
                # place), a ground one going for the path where it is (its base brakes in place).
                turn_first, stop, slow = True, stop or tight, True
        # The reference advances with time (a flying robot's scaled down to a stop along the path within its limits:
        # its position loop would overshoot a set point snapped back), and only while it is within a lookahead of
        # the robot's progress.
        wanted = 0.0 if stop else (min(1.0, CREEP_SPEED / self.limits.speed) if slow else 1.0)
        if self.flies:  # slow for the path's corners (module notes)
            wanted = min(wanted, reference.corner_rate(CORNER_FRACTION * self.limits.acceleration, CORNER_CHANGE,
                                                       CORNER_WINDOW))
        else:
            wanted = 1.0
        step = self._control_every * self.robot.world.timestep
        reach = follower.progress + self.params.lookahead
        advancing = reference.advance(step, wanted, reach, brake * self.limits.acceleration / self.limits.speed)
        carrot = reference.point(self.lead, reach)
        feedforward = None
        if self.velocity_lead is not None and advancing and reference.along(self.lead) <= reach:
            feedforward = reference.velocity(self.velocity_lead)
        if turn_first and not self.flies:
            carrot = follower.point_at(follower.progress)
        refuge = self._refuge(position)
        if refuge is not None:  # too close to something to turn: move off first
            self.driver.go(refuge, yaw, self._height())
            return
        self.driver.go(carrot, heading, self._height(), feedforward)

    def _reaction_distance(self, speed: float) -> float:
        """How far the UAV goes from `speed` before it stops for something it sees moving: a map update's wait,
        its controller's lag, and braking at `YIELD_BRAKE_FRACTION` of its acceleration limit."""
        return (speed * (1.0 / self.params.map_hz + VELOCITY_TIME_CONSTANT)
                + speed * speed / (2 * YIELD_BRAKE_FRACTION * self.limits.acceleration))

    def _stopping_distance(self, speed: float) -> float:
        """How far the robot goes from `speed` before it stops on its path: the reference slows at
        `BRAKE_FRACTION` of the acceleration limit, and the robot follows it a velocity time constant behind."""
        return speed * speed / (2 * BRAKE_FRACTION * self.limits.acceleration) + speed * VELOCITY_TIME_CONSTANT

    def _tight_ahead(self, follower: PathFollower, distance: float) -> bool:
        """Whether the path from the robot's progress to `distance` + a lookahead on crosses a narrow place."""
        s = follower.progress + np.linspace(0.0, distance + self.params.lookahead, LOOK_SAMPLES)
        cells = self.grid.cell_of(np.array([follower.point_at(v) for v in s])).reshape(-1, 2)
        cells = cells[self.grid.contains(cells)]
        return bool(self._tight()[cells[:, 0], cells[:, 1]].any())

    def _mover_ahead(self, position: np.ndarray, follower: PathFollower, reach: float) -> float | None:
        """How far (m) the nearest thing that moves (a person) seen lately ahead (within `YIELD_CONE` of the way
        the robot goes) is, up to `reach` m (None: nothing)."""
        cells = np.argwhere(self._moved >= self.robot.world.time - YIELD_MEMORY)
        if not len(cells):
            return None
        offsets = self.grid.center_of(cells) - position[:2]
        way = follower.point_at(follower.progress + self.params.lookahead) - position[:2]
        distance = np.linalg.norm(offsets, axis=1)
        ahead = offsets @ way >= math.cos(YIELD_CONE) * distance * np.linalg.norm(way)
        near = (distance <= reach) & ahead
        return float(distance[near].min()) if near.any() else None

    def _cells_ahead(self, follower: PathFollower, position: np.ndarray) -> np.ndarray:
        """The map cells (K, 2) the path crosses within a lookahead beyond the robot's disc (the disc's own
        cells, which the camera cannot see, hold the robot); for a path that ends within the disc, those its edge
        moves into on the way there."""
        s = follower.progress + np.linspace(0.0, self.driver.radius + self.params.lookahead, LOOK_SAMPLES)
        points = np.array([follower.point_at(v) for v in s])
        beyond = points[np.linalg.norm(points - position[:2], axis=1) > self.driver.radius]
        way = points[-1] - position[:2]
        if not len(beyond) and np.linalg.norm(way) > 1e-6:
            # The path ends within the disc (a viewpoint right behind the robot): the cells its edge moves into.
            length = float(np.linalg.norm(way))
            reach = self.driver.radius + np.linspace(0.0, length, max(2, math.ceil(length / self.grid.resolution) + 1))
            beyond = position[:2] + reach[:, None] * (way / length)
        cells = self.grid.cell_of(beyond).reshape(-1, 2)
        return cells[self.grid.contains(cells)]


def held_by_people(traversable: np.ndarray, walkways: np.ndarray, cells: np.ndarray) -> bool:
    """Whether a path's `cells` (K, 2) are blocked (not `traversable`) somewhere, and only on `walkways` (where
    people walked lately: those in the way walk on, a wall or furniture does not)."""
    blocked = cells[~traversable[cells[:, 0], cells[:, 1]]]
    return bool(len(blocked)) and bool(walkways[blocked[:, 0], blocked[:, 1]].all())


def around_blockage(costs: CostMap, cells: np.ndarray) -> CostMap:
    """`costs` with a path's blocked cells (`cells` (K, 2) not traversable: people stand there) and
    `BLOCKAGE_MARGIN` round them shut: a way that does not pass them."""
    blocked = np.zeros(costs.traversable.shape, dtype=bool)
    cells = cells[~costs.traversable[cells[:, 0], cells[:, 1]]]
    blocked[cells[:, 0], cells[:, 1]] = True
    shut = ndimage.distance_transform_edt(~blocked) * costs.resolution <= BLOCKAGE_MARGIN
    return CostMap(costs.traversable & ~shut, costs.penalty, costs.clearance, costs.resolution)


def with_narrow_passages(costs: CostMap, passable: np.ndarray, radius: float) -> CostMap:
    """`costs`, made for a disc larger than `radius` (the robot's disc and a hard clearance), with the `passable`
    cells that have `radius` of room but not the clearance made traversable at `TIGHT_WEIGHT` per metre: a way
    through a doorway that the disc fits but the clearance does not, taken where there is no way round."""
    tight = passable & (costs.clearance >= radius) & ~costs.traversable
    return CostMap(costs.traversable | tight, np.where(tight, TIGHT_WEIGHT, costs.penalty), costs.clearance,
                   costs.resolution)

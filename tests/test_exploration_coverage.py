"""Exploration that holds beyond one scene: the reachable-floor coverage a run reports (run.json, Recording,
`grade view`) against the exploration benchmark's measure of the same run, and the tour explorer's decisions on
small analytic maps (a frontier behind an obstacle, a person in the only doorway)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys

import numpy as np
import pytest

from core.errors import InputError
from core.formats.run_info import RUN_FILE, RunInfo, floor_coverage, write_run_info
from core.recording import Recording
from pipeline.generate import generate
from postprocess.plots import coverage_figure
from postprocess.view import view_run
from simulation.exploration.explorer import BLIND_MARGIN, blocked_by_people, landing_spots
from simulation.exploration.frontiers import frontier_mask
from simulation.exploration.occupancy import FREE, OCCUPIED, UNKNOWN
from simulation.exploration.planner import CostMap, cost_map, search
from simulation.exploration.tour_explorer import (
    BLOCKAGE_MARGIN,
    YIELD_APPROACH,
    YIELD_CLEAR,
    YIELD_PATIENCE,
    YieldPatience,
    around_blockage,
    held_by_people,
    with_narrow_passages,
)
from simulation.exploration.viewpoints import TRIES, FrontierInfo, ViewpointParams, give_up, seen_from
from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("exploration_benchmark", ROOT / "benchmarks" / "exploration.py")
benchmark = sys.modules["exploration_benchmark"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(benchmark)

RES = 0.1

# ---------------------------------------------------------------- the coverage a run reports

BUDGET = 0.6  # s of exploration after the demo's 1 s bootstrap: four map updates


@pytest.mark.slow
def test_run_json_reports_the_benchmarks_reachable_floor_coverage_of_the_same_run(asset_cache, tmp_path):
    """The benchmark's run and `grade generate` of the same config (the benchmark's small depth camera, one
    person) give the same coverage at every map update, from the end of the bootstrap; `grade view` plots it."""
    args = argparse.Namespace(seed=42, cache=asset_cache, resolution=RES, humans=[1, 1], objects=[0, 0],
                              uav_speed=None, budget=BUDGET, contacts=False)
    row = benchmark.run("flat", "uav", "tour", args, tmp_path)
    config = benchmark.experiment("flat", "uav", "tour", args, tmp_path)
    run = generate(config, tmp_path / "run", cache=asset_cache).run
    recording = Recording.open(run)
    mission = json.loads((run / RUN_FILE).read_text())["mission"]
    series = recording.floor_coverage()
    assert series.tolist() == [list(pair) for pair in row["history"]]
    start = config.simulation.bootstrap
    assert series[0, 0] == pytest.approx(start) and series[-1, 0] == pytest.approx(start + BUDGET, abs=0.21)
    assert mission["reachable_floor_coverage_final"] == series[-1, 1] and row["coverage"][-1] == series[:, 1].max()
    assert mission["reachable_floor_m2"] == pytest.approx(row["floor"])
    # The region fraction counts walls and what lies behind them: well below the floor's coverage.
    assert 0 < mission["map_region_known_fraction"] < 0.8 * mission["reachable_floor_coverage_final"]
    assert "explored_fraction" not in mission
    written = view_run(run).written
    assert run / "view" / "coverage.png" in written


def test_the_coverage_plot_draws_the_series_in_percent():
    series = np.array([[1.0, 0.1], [1.2, 0.35], [1.4, 0.5]])
    figure = coverage_figure(series, "run")
    (line,) = figure.axes[0].get_lines()
    assert line.get_xdata().tolist() == [1.0, 1.2, 1.4]
    assert np.allclose(line.get_ydata(), [10.0, 35.0, 50.0])
    assert "50.0%" in figure.axes[0].get_title()


def run_info(mission: dict) -> RunInfo:
    return RunInfo(name="r", backend="embedded", master_seed=1, config={}, mission=mission)


def test_recorded_coverage_is_read_per_robot_and_a_garbled_one_names_the_field(tmp_path):
    pairs = [[1.0, 0.25], [1.2, 0.5]]
    assert floor_coverage(tmp_path, run_info({"planner": "tour", "reachable_floor_coverage": pairs})).tolist() == pairs
    fleet = run_info({"a": {"planner": "tour", "reachable_floor_coverage": pairs}, "b": {"planner": "none"}})
    assert floor_coverage(tmp_path, fleet, "a").tolist() == pairs
    assert floor_coverage(tmp_path, fleet, "b") is None  # it did not explore
    assert floor_coverage(tmp_path, run_info({"planner": "waypoints"})) is None
    for garbled in ([[1.0, 0.25], [1.0, 0.5]], [[1.0, 1.5]], [1.0, 0.5], "most", [[1.0, None]]):
        with pytest.raises(InputError) as error:
            floor_coverage(tmp_path, run_info({"reachable_floor_coverage": garbled}))
        assert error.value.field == "mission.reachable_floor_coverage" and RUN_FILE in str(error.value)
    write_run_info(tmp_path, run_info({"reachable_floor_coverage": pairs}))
    assert Recording(tmp_path, run_info({"reachable_floor_coverage": pairs})).floor_coverage().tolist() == pairs


# ---------------------------------------------------------------- decisions on small analytic maps

RADIUS, MARGIN = 0.2, 0.1


def two_rooms(doors: tuple[tuple[int, int], ...]) -> np.ndarray:
    """6 m x 4 m (0.1 m cells): two 3 m rooms side by side, known free, the wall between them at x = 3 m with
    1 m doors at the given y cell ranges."""
    state = np.full((60, 40), FREE, dtype=np.int8)
    state[0, :] = state[-1, :] = state[:, 0] = state[:, -1] = OCCUPIED
    state[30, :] = OCCUPIED
    for lo, hi in doors:
        state[30, lo:hi] = FREE
    return state


def costs_of(state: np.ndarray) -> CostMap:
    return cost_map(state == OCCUPIED, state == FREE, RES, RADIUS, MARGIN)


def person_at(state: np.ndarray, centre: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """The map with a person (a 0.3 m disc of occupied cells) at cell `centre`, and the walkways round where they
    moved (the robot's disc and margin round them)."""
    i, j = np.indices(state.shape)
    distance = np.hypot(i - centre[0], j - centre[1]) * RES
    return np.where(distance <= 0.3, OCCUPIED, state).astype(np.int8), distance <= 0.3 + RADIUS + MARGIN


def test_a_person_in_the_only_doorway_is_waited_for_and_passed_once_gone():
    state = two_rooms(((15, 25),))
    frontiers = np.zeros(state.shape, dtype=bool)
    frontiers[45:55, 38] = True  # the far room's far wall, not seen yet
    start = (10, 20)
    blocked, walkways = person_at(state, (30, 20))
    reach = search(costs_of(blocked), start).cost
    assert not np.isfinite(reach[frontiers]).any()  # no way on while they stand there ...
    assert blocked_by_people(blocked, walkways, frontiers, reach, start, costs_of, sight=3.0)  # ... so wait
    # The same obstacle where nothing moved is furniture: nobody to wait for.
    assert not blocked_by_people(blocked, np.zeros_like(walkways), frontiers, reach, start, costs_of, sight=3.0)
    # Nor is there when the frontier beyond the doorway is out of sight from anywhere the robot could then go.
    assert not blocked_by_people(blocked, walkways, np.zeros_like(frontiers), reach, start, costs_of, sight=3.0)
    # Once they walked on (the map clears where they stood), the path goes through the doorway.
    path = search(costs_of(state), start).path_to((50, 30))
    assert path is not None and (path[:, 0] == 30).sum() >= 1 and 15 <= path[path[:, 0] == 30, 1].min()


def test_a_person_in_one_of_two_doorways_is_bypassed_through_the_other():
    state = two_rooms(((5, 15), (25, 35)))
    blocked, _ = person_at(state, (30, 10))
    path = search(costs_of(blocked), (10, 8)).path_to((50, 8))
    assert path is not None
    crossing = path[path[:, 0] == 30, 1]
    assert crossing.min() >= 25  # through the other door
    i, j = np.nonzero((blocked == OCCUPIED) & (state != OCCUPIED))
    gap = np.min(np.hypot(path[:, None, 0] - i[None], path[:, None, 1] - j[None])) * RES - RES / 2
    assert gap >= RADIUS  # the robot's disc never touches the person


def test_while_a_person_holds_the_doorway_up_the_frontier_on_this_side_is_gone_to_and_the_far_one_after():
    """Two rooms and one doorway; unknown floor beyond the doorway and in a corner of the robot's own room. The
    path to the far room, planned while the doorway was free, is held up once a person steps into it; shut there
    (and `BLOCKAGE_MARGIN` round it), the map leaves the corner's frontier reachable, by a way that keeps out of
    the person's, and the far room's not. Once they walked on, the way from the corner to the far room is clear
    through the doorway."""
    state = two_rooms(((15, 25),))
    state[46:59, 1:39] = UNKNOWN  # the far room's far part
    state[1:8, 30:39] = UNKNOWN  # a corner of the robot's own room
    start, far = (10, 8), (40, 20)
    path = search(costs_of(state), start).path_to(far)
    assert path is not None and ((path[:, 0] == 30) & (path[:, 1] >= 15) & (path[:, 1] < 25)).any()
    blocked, walkways = person_at(state, (30, 20))
    costs = costs_of(blocked)
    assert held_by_people(costs.traversable, walkways, path)
    around = around_blockage(costs, path)
    tree = search(around, start)
    info = FrontierInfo(RES, ViewpointParams(fov=math.radians(90)))
    clusters = info.update(frontier_mask(state), blocked == OCCUPIED, np.isfinite(tree.cost))
    own = [c for c in clusters.values() if c.centroid[0] < 30]
    corner = next(v.cell for c in own for v in c.viewpoints if np.isfinite(tree.cost[v.cell]))  # the corner's ...
    assert not np.isfinite(tree.cost[31:]).any()  # ... not the far room's
    way = tree.path_to(corner)
    held = path[~costs.traversable[path[:, 0], path[:, 1]]]
    gap = np.min(np.hypot(way[:, None, 0] - held[None, :, 0], way[:, None, 1] - held[None, :, 1])) * RES
    assert gap > BLOCKAGE_MARGIN
    # They walked on: from the corner, through the doorway to the far room.
    back = search(costs_of(state), corner).path_to(far)
    assert back is not None and ((back[:, 0] == 30) & (back[:, 1] >= 15) & (back[:, 1] < 25)).any()


def test_a_path_held_up_in_one_of_two_doorways_goes_round_through_the_other():
    state = two_rooms(((5, 15), (25, 35)))
    start, far = (10, 8), (50, 8)
    path = search(costs_of(state), start).path_to(far)
    assert path is not None and path[path[:, 0] == 30, 1].max() < 15  # through the near door
    blocked, walkways = person_at(state, (30, 10))
    costs = costs_of(blocked)
    assert held_by_people(costs.traversable, walkways, path)
    way = search(around_blockage(costs, path), start).path_to(far)
    assert way is not None and way[way[:, 0] == 30, 1].min() >= 25  # through the other door


def test_frontier_hidden_behind_furniture_from_its_viewpoint_is_clustered_again_and_seen_from_another():
    """A room (4 x 4 m) whose lower half is unknown; a cupboard stands in it so that the viewpoint a cluster got
    before the cupboard was seen does not see part of it. Giving that viewpoint up exhausts only what it saw; the
    rest gets a new cluster whose viewpoint sees it, and is given up only after `TRIES` viewpoints."""
    params = ViewpointParams(fov=math.radians(90))
    state = np.full((40, 40), FREE, dtype=np.int8)
    state[0, :] = state[-1, :] = state[:, 0] = state[:, -1] = OCCUPIED
    state[20:39, 1:39] = UNKNOWN
    info = FrontierInfo(RES, params)
    clusters = info.update(frontier_mask(state), state == OCCUPIED, state == FREE)
    cluster = min(clusters.values(), key=lambda c: abs(c.centroid[1] - 20))
    viewpoint = cluster.viewpoints[0]
    # A cupboard seen since, halfway between the viewpoint and one end of the cluster.
    end = cluster.cells[np.argmax(np.abs(cluster.cells[:, 1] - viewpoint.cell[1]))]
    middle = np.rint((np.array(viewpoint.cell) + end) / 2).astype(int)
    state[middle[0] - 1:middle[0] + 2, middle[1] - 2:middle[1] + 3] = OCCUPIED
    occupied = state == OCCUPIED
    mask = frontier_mask(state)
    seen = seen_from(np.array(viewpoint.cell), viewpoint.yaw, cluster.cells, occupied, RES, params)
    hidden = cluster.cells[~seen & mask[cluster.cells[:, 0], cluster.cells[:, 1]]]
    assert len(hidden) and seen.any()
    tries, exhausted = np.zeros(state.shape, dtype=np.int64), np.zeros(state.shape, dtype=bool)
    give_up(info, cluster, cluster.cells[seen], tries, exhausted)
    assert exhausted[cluster.cells[seen, 0], cluster.cells[seen, 1]].all()
    assert not exhausted[hidden[:, 0], hidden[:, 1]].any()
    again = info.update(mask & ~exhausted, occupied, (state == FREE) & ~occupied)
    assert cluster.id not in again
    holder = next(c for c in again.values() if (c.cells[:, None] == hidden[0]).all(axis=2).any())
    best = holder.viewpoints[0]
    assert seen_from(np.array(best.cell), best.yaw, hidden, occupied, RES, params).any()
    for _ in range(TRIES - 1):
        give_up(info, holder, np.zeros((0, 2), dtype=np.int64), tries, exhausted)
    assert exhausted[hidden[:, 0], hidden[:, 1]].all()  # never circled for ever


def disc_room(cells: np.ndarray, occupied: np.ndarray) -> np.ndarray:
    """Exact distance (m) from each cell centre to the nearest occupied cell's square, by brute force."""
    i, j = np.nonzero(occupied)
    dx = np.maximum(np.abs(cells[:, None, 0] - i[None]) - 0.5, 0.0)
    dy = np.maximum(np.abs(cells[:, None, 1] - j[None]) - 0.5, 0.0)
    return np.hypot(dx, dy).min(axis=1) * RES


def test_a_doorway_the_disc_fits_but_not_its_clearance_is_passed_only_where_there_is_no_way_round():
    """The UAV's disc (0.424 m) and hard clearance (0.15 m) need 1.15 m; a 1.0 m doorway (a 1.1 m door mapped a cell
    narrower) passes the disc alone. Its cells are traversable at TIGHT_WEIGHT, so a path takes them only where
    there is no way round, and never comes closer to a wall than the disc's radius."""
    radius, clearance = 0.424, 0.15
    start, goal = (10, 20), (50, 20)

    def paths(state: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
        occupied, free = state == OCCUPIED, state == FREE
        hard = cost_map(occupied, free, RES, radius + clearance, MARGIN)
        soft = with_narrow_passages(hard, free, radius)
        return search(hard, start).path_to(goal), search(soft, start).path_to(goal)

    narrow = two_rooms(((15, 25),))
    hard, soft = paths(narrow)
    assert hard is None and soft is not None  # the clearance shut the doorway; the disc passes
    assert disc_room(soft, narrow == OCCUPIED).min() >= radius
    in_door = soft[soft[:, 0] == 30]
    assert len(in_door) and (disc_room(in_door, narrow == OCCUPIED) < radius + clearance).all()
    # With a 1.6 m doorway beside it, the path goes through that one, keeping the clearance all the way.
    both = two_rooms(((5, 15), (21, 37)))
    hard, soft = paths(both)
    assert hard is not None and np.array_equal(hard, soft)
    assert soft[soft[:, 0] == 30, 1].min() >= 21
    assert disc_room(soft, both == OCCUPIED).min() >= radius + clearance


def test_the_uav_changes_height_over_a_column_it_has_seen_free_and_else_where_it_is():
    """At its start the UAV has not seen the column below (or above) itself, nor round it: a person may stand beside
    it. It changes height over the nearest spot with its disc and clearance of column seen free; where there is none,
    where it is (unknown cells right round it count as passable, as everywhere)."""
    room, start = 0.482, (20, 20)
    column = two_rooms(())  # 6 m x 4 m, the column's map seen free but for the walls ...
    i, j = np.indices(column.shape)
    column[np.hypot(i - start[0], j - start[1]) * RES <= 0.6] = UNKNOWN  # ... and what lies right round the UAV
    near = np.hypot(i - start[0], j - start[1]) * RES <= room + BLIND_MARGIN

    def spots(state: np.ndarray) -> np.ndarray:
        costs = cost_map(state == OCCUPIED, (state == FREE) | ((state == UNKNOWN) & near), RES, room, MARGIN)
        return landing_spots(state, costs, search(costs, start).cost, room, MARGIN)

    landing = spots(column)
    assert landing.any() and not landing[start]
    cells = np.argwhere(landing)
    # Every spot has the room seen free round it (within the half cell the maps measure clearance to).
    assert disc_room(cells, column != FREE).min() >= room - RES / 2
    nearest = cells[np.argmin(np.hypot(cells[:, 0] - start[0], cells[:, 1] - start[1]))]
    assert np.hypot(*(nearest - start)) * RES <= 0.6 + room + 2 * RES  # just beyond what it has not seen
    # Nothing of the column seen: where it is.
    assert spots(np.where(column == FREE, UNKNOWN, column).astype(np.int8))[start]


def test_a_path_blocked_only_where_people_walk_is_held_up_by_them_and_one_blocked_by_a_wall_is_not():
    """A straight path of 30 cells; a person standing on it (blocked cells where something moved lately) holds it
    up, a wall across it does not, nor does it with the person there as well, and a clear path is not held up."""
    traversable = np.ones((40, 40), dtype=bool)
    walkways = np.zeros_like(traversable)
    path = np.stack([np.full(30, 20), np.arange(5, 35)], axis=1)
    assert not held_by_people(traversable, walkways, path)
    walkways[15:26, 12:23] = True  # where a person walked, around them
    traversable[18:23, 15:20] = False  # the person, on the path
    assert held_by_people(traversable, walkways, path)
    traversable[:, 30] = False  # a wall across the path, where nobody walked
    assert not held_by_people(traversable, walkways, path)


def test_the_wait_for_something_moving_ahead_restarts_only_when_it_comes_on_or_after_the_way_cleared():
    """`YieldPatience` at 10 Hz: something 0.8 m ahead, standing, then seen and not in turn (a flying object
    drifting at the edge of the view: gaps shorter than `YIELD_CLEAR`): the robot waits `YIELD_PATIENCE` s in
    all, then goes on. Something coming on at 0.3 m/s: the wait starts again each `YIELD_APPROACH` it comes
    closer, so the robot waits while it comes. After the way has been clear `YIELD_CLEAR` s, a wait starts anew."""
    dt = 0.1

    def waited(distance_at, duration: float) -> float:
        patience, waiting = YieldPatience(), 0.0
        for k in range(round(duration / dt)):
            waiting += dt * patience.waits(k * dt, distance_at(k * dt))
        return waiting

    assert waited(lambda t: 0.8, 10.0) == pytest.approx(YIELD_PATIENCE + dt)
    flicker = waited(lambda t: 0.8 if t % 0.6 < 0.3 else None, 10.0)
    assert flicker <= YIELD_PATIENCE + dt and flicker >= YIELD_PATIENCE / 2 - dt
    assert waited(lambda t: max(2.0 - 0.3 * t, 0.2), 5.0) == pytest.approx(5.0)  # comes on all along
    assert waited(lambda t: 0.8 if t < 3.0 or t >= 3.0 + YIELD_CLEAR + dt else None, 8.0) == pytest.approx(
        2 * (YIELD_PATIENCE + dt))
    patience = YieldPatience()
    assert patience.waits(0.0, 0.8) and not patience.waits(YIELD_PATIENCE + dt, 0.8)
    assert patience.waits(YIELD_PATIENCE + 2 * dt, 0.8 - YIELD_APPROACH - 0.01)  # closer: a new wait

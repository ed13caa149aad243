"""The tour explorer's global tour over frontier clusters and its local refinement (FUEL, Zhou et al. 2021).

Costs. Going from one viewpoint to the next takes max(path / speed, |yaw change| / yaw rate) s: the robot
moves and turns at the same time, so the slower of the two decides (FUEL's cost). Path lengths are on the
occupancy grid (Dijkstra over the inflated map, simulation.exploration.planner).

Tour. The order in which to visit the clusters' best viewpoints, starting from the robot, is an
asymmetric travelling-salesman problem: node 0 is the robot, coming back to it costs nothing (the tour is
an open path), and the costs from the robot differ from those towards it. PyVRP (Wouda et al. 2024) solves it
as a one-vehicle routing problem from a depot at the robot, in whole milliseconds: its iterated local search
is stopped after `ITERATIONS` iterations with a fixed seed rather than a time limit, so that the tour is the
same on any machine. It found the optimum (checked against an exact integer program) of every tour the
exploration benchmark met (up to 22 nodes) and of 400 random ones of 3-12 nodes and 24 map-like ones of 15-30
nodes, where OR-Tools' guided local search, used before, missed 14 (by up to 9%) and 3 (by up to 2%); 30
nodes take ~0.06-0.09 s.

Refinement. The first `depth` clusters of the tour each have several viewpoints; the sequence of one
viewpoint per cluster with the least total cost from the robot is found by dynamic programming over the
layers (FUEL's local refinement). Costs from the robot are exact (its Dijkstra); between two candidates of
consecutive clusters they are the straight line where it is clear on the grid, else the path between the
clusters' best viewpoints plus the candidates' offsets from them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from simulation.control import wrap_angle

COST_SCALE = 1000.0  # the solver's integer costs: milliseconds
ITERATIONS = 500  # iterations of the local search
SEED = 0  # of the local search's random choices
UNREACHABLE = 10**9  # ms; a cost for pairs with no known path (never chosen while a path exists)


def travel_time(length: float, yaw_from: float, yaw_to: float, speed: float, yaw_rate: float) -> float:
    """Seconds to go `length` m and turn from `yaw_from` to `yaw_to` at once (module notes)."""
    return max(length / speed, abs(float(wrap_angle(yaw_to - yaw_from))) / yaw_rate)


def cost_matrix(lengths: np.ndarray, yaws: np.ndarray, speed: float, yaw_rate: float) -> np.ndarray:
    """Travel times (n, n) between nodes with path `lengths` (n, n; inf: no path) and `yaws` (n,); node 0
    is the robot: every return to it costs 0."""
    turn = np.abs(wrap_angle(yaws[None, :] - yaws[:, None])) / yaw_rate
    times = np.maximum(lengths / speed, turn)
    times[:, 0] = 0.0
    np.fill_diagonal(times, 0.0)
    return times


def solve_tour(times: np.ndarray) -> list[int]:
    """The order (starting with node 0) that visits every node of the ATSP `times` (n, n) at least cost."""
    n = len(times)
    if n <= 2:
        return list(range(n))
    from pyvrp import Client, Depot, Location, ProblemData, VehicleType, solve  # only the tour explorer needs it
    from pyvrp.stop import MaxIterations

    matrix = np.where(np.isfinite(times), np.rint(times * COST_SCALE), UNREACHABLE).astype(np.int64)
    # One vehicle (the robot) leaves the depot (node 0) and visits the clients 1..n-1; travel time is its
    # distance, and no durations, loads or time windows constrain it.
    data = ProblemData(locations=[Location(0.0, 0.0) for _ in range(n)], clients=[Client(i) for i in range(1, n)],
                       depots=[Depot(0)], vehicle_types=[VehicleType()], distance_matrices=[matrix],
                       duration_matrices=[np.zeros_like(matrix)])
    result = solve(data, stop=MaxIterations(ITERATIONS), seed=SEED, collect_stats=False)
    route = result.best.routes()[0]
    return [0, *(visit.idx + 1 for visit in route if visit.is_client())]  # clients are numbered from 0


def refine(layers: Sequence[Sequence[tuple[np.ndarray, float]]], start_cost: Callable[[np.ndarray, float], float],
           step_cost: Callable[[int, np.ndarray, float, np.ndarray, float], float]) -> list[int]:
    """The index of one candidate per layer minimising start_cost(first) + the step costs between
    consecutive layers' candidates; a candidate is (position, yaw); step_cost(layer, a, yaw_a, b, yaw_b) is
    the cost from a (in `layer`) to b (in layer + 1)."""
    best = np.array([start_cost(p, yaw) for p, yaw in layers[0]])
    back: list[np.ndarray] = []
    for k in range(1, len(layers)):
        previous, current = layers[k - 1], layers[k]
        step = np.array([[best[i] + step_cost(k - 1, pa, ya, pb, yb) for i, (pa, ya) in enumerate(previous)]
                         for pb, yb in current])
        back.append(np.argmin(step, axis=1))
        best = step[np.arange(len(current)), back[-1]]
    choice = [int(np.argmin(best))]
    for pointers in reversed(back):
        choice.append(int(pointers[choice[-1]]))
    return choice[::-1]

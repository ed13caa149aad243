"""Shortest safe paths on a 2D map: obstacle inflation, a grid graph and Dijkstra from the robot.

Inflation. The clearance of a cell is the distance from its centre to the nearest blocked cell's
edge (centre distance minus half a cell). A cell is lethal (the robot's disc would touch an obstacle)
when its clearance is below the robot's radius; cells with less than radius + `safety_margin` of
clearance cost extra, growing linearly to `SAFETY_WEIGHT` at the lethal edge, so paths keep the margin
wherever there is room and still squeeze through a doorway that only the robot itself fits.

Search. The traversable cells form a directed graph (8-connected, a diagonal step only where both
orthogonal neighbours are traversable, so a path never cuts an obstacle's corner; stepping into a cell
costs its length times 1 + the cell's penalty). scipy's Dijkstra from the robot's cell gives the cost to
every cell at once, which goal selection needs anyway, and the predecessor tree gives the path to any
goal. (With all goals wanted at once, A*'s heuristic has nothing to prune.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

SAFETY_WEIGHT = 4.0  # extra cost per metre at zero spare clearance
NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))
NO_PREDECESSOR = -9999  # scipy's marker


@dataclass(frozen=True)
class CostMap:
    """Where the robot's centre may go and what each cell costs to enter."""

    traversable: np.ndarray  # bool (nx, ny)
    penalty: np.ndarray  # float (nx, ny), >= 0
    clearance: np.ndarray  # float (nx, ny), m to the nearest blocked cell's edge
    resolution: float


def clearance_map(blocked: np.ndarray, resolution: float) -> np.ndarray:
    """Distance (m) from each cell centre to the nearest blocked cell's edge; 0 on blocked cells."""
    if not blocked.any():
        return np.full(blocked.shape, np.inf)
    distance = ndimage.distance_transform_edt(~blocked) * resolution
    return np.where(blocked, 0.0, np.maximum(distance - resolution / 2, 0.0))


def cost_map(blocked: np.ndarray, passable: np.ndarray, resolution: float, radius: float,
             safety_margin: float, caution: np.ndarray | None = None) -> CostMap:
    """Inflate `blocked` cells by the robot's `radius`; only `passable` cells (e.g. known free) are
    traversable; the `safety_margin` band beyond the radius is penalised, and so are `caution` cells
    (places to stay out of when there is a way round, e.g. where people walk) as at the lethal edge."""
    clearance = clearance_map(blocked, resolution)
    traversable = passable & ~blocked & (clearance >= radius)
    if safety_margin > 0:
        spare = np.clip((clearance - radius) / safety_margin, 0.0, 1.0)
        penalty = SAFETY_WEIGHT * (1.0 - spare)
    else:
        penalty = np.zeros(blocked.shape)
    if caution is not None:
        penalty = np.where(caution, SAFETY_WEIGHT, penalty)
    return CostMap(traversable, penalty, clearance, resolution)


def grid_graph(costs: CostMap) -> csr_matrix:
    """The directed 8-connected graph over traversable cells; node = flat cell index."""
    traversable = costs.traversable
    nx, ny = traversable.shape
    index = np.arange(nx * ny).reshape(nx, ny)
    sources, targets, weights = [], [], []
    for di, dj in NEIGHBOURS:
        a = (slice(max(-di, 0), nx - max(di, 0)), slice(max(-dj, 0), ny - max(dj, 0)))
        b = (slice(max(di, 0), nx + min(di, 0) or None), slice(max(dj, 0), ny + min(dj, 0) or None))
        ok = traversable[a] & traversable[b]
        if di and dj:  # no corner cutting
            ok &= traversable[b[0], a[1]] & traversable[a[0], b[1]]
        length = costs.resolution * np.hypot(di, dj)
        sources.append(index[a][ok])
        targets.append(index[b][ok])
        weights.append(length * (1.0 + costs.penalty[b][ok]))
    return csr_matrix((np.concatenate(weights), (np.concatenate(sources), np.concatenate(targets))),
                      shape=(nx * ny, nx * ny))


@dataclass(frozen=True)
class SearchTree:
    """Dijkstra from one start cell: cost (m, penalties included) to every cell and the way back."""

    start: tuple[int, int]
    cost: np.ndarray  # (nx, ny), inf where unreachable
    predecessors: np.ndarray  # (nx * ny,) flat predecessor, NO_PREDECESSOR at the start and unreachable cells

    def path_to(self, goal: tuple[int, int]) -> np.ndarray | None:
        """Cells (M, 2) from the start to `goal` inclusive, or None if unreachable."""
        shape = self.cost.shape
        if not np.isfinite(self.cost[goal]):
            return None
        node, start = int(np.ravel_multi_index(goal, shape)), int(np.ravel_multi_index(self.start, shape))
        chain = [node]
        while node != start:
            node = int(self.predecessors[node])
            chain.append(node)
        return np.stack(np.unravel_index(np.array(chain[::-1]), shape), axis=1)


def search(costs: CostMap, start: tuple[int, int]) -> SearchTree:
    """Dijkstra over the traversable cells from `start` (which must itself be traversable)."""
    shape = costs.traversable.shape
    start = (int(start[0]), int(start[1]))
    if not (0 <= start[0] < shape[0] and 0 <= start[1] < shape[1]) or not costs.traversable[start]:
        cost = np.full(shape, np.inf)
        return SearchTree(start, cost, np.full(cost.size, NO_PREDECESSOR))
    flat = int(np.ravel_multi_index(start, shape))
    cost, predecessors = dijkstra(grid_graph(costs), directed=True, indices=flat, return_predecessors=True)
    return SearchTree(start, cost.reshape(shape), predecessors)


def plan_path(costs: CostMap, start: tuple[int, int], goal: tuple[int, int]) -> np.ndarray | None:
    """Cells (M, 2) of the cheapest path from `start` to `goal`, or None."""
    return search(costs, start).path_to(goal)


def path_is_clear(costs: CostMap, cells: np.ndarray) -> bool:
    """Whether every cell of a path is still traversable (after a map update)."""
    cells = np.asarray(cells)
    return bool(costs.traversable[cells[:, 0], cells[:, 1]].all()) if len(cells) else True

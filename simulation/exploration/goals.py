"""Goal choice: where to go next to see the most unknown space for the least travel.

A candidate goal is a reachable cell at most `view_distance` from a frontier cell (its "target", the
nearest frontier cell): from there the robot, turned towards the target, sees past the frontier. The
information gain of a target is the number of unknown cells within `gain_radius` of it that can be
seen through a frontier: unknown cells connected to a frontier through unknown cells, so the inside of
walls and the space outside the building, walled off by occupied cells, count for nothing. Targets
with less than `min_gain` m^2 of gain are not worth a trip. The utility of a candidate is
gain * exp(-distance_weight * path cost) (as in FUEL-style frontier selection: near frontiers win
unless a far one promises much more). The best candidate is the goal.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from simulation.exploration.frontiers import FOUR_NEIGHBOURS


@dataclass(frozen=True)
class GoalParams:
    view_distance: float = 1.5  # m from the goal to the frontier cell it looks at
    gain_radius: float = 1.5  # m around a frontier cell in which unknown cells count as gain
    distance_weight: float = 0.25  # 1/m: utility halves every ln(2) / weight m of path
    min_gain: float = 0.1  # m^2 of visible unknown space below which a frontier is not worth a trip


@dataclass(frozen=True)
class Goal:
    cell: tuple[int, int]
    target: tuple[int, int]  # the frontier cell the robot should face on arrival
    cost: float  # path cost from the robot, m (penalties included)
    gain: float  # unknown cells around the target
    utility: float


def disc_kernel(radius_cells: float) -> np.ndarray:
    r = int(np.ceil(radius_cells))
    i, j = np.mgrid[-r:r + 1, -r:r + 1]
    return (i * i + j * j <= radius_cells * radius_cells).astype(np.float64)


def information_gain(unknown: np.ndarray, resolution: float, radius: float) -> np.ndarray:
    """Number of unknown cells within `radius` (m) of each cell."""
    from scipy.signal import fftconvolve  # here: scipy.signal costs every `grade` process 0.35 s to import

    gain = fftconvolve(unknown.astype(np.float64), disc_kernel(radius / resolution), mode="same")
    return np.rint(np.maximum(gain, 0.0))  # FFT round-off is well below one cell


def visible_unknown(unknown: np.ndarray, frontiers: np.ndarray) -> np.ndarray:
    """Unknown cells connected (4-neighbours, through unknown cells) to a frontier cell."""
    labels, _ = ndimage.label(unknown)
    touching = np.unique(labels[ndimage.binary_dilation(frontiers, structure=FOUR_NEIGHBOURS) & unknown])
    return np.isin(labels, touching[touching > 0])


def choose_goal(frontiers: np.ndarray, unknown: np.ndarray, cost: np.ndarray, resolution: float,
                params: GoalParams = GoalParams()) -> Goal | None:
    """The best goal for the frontier cells `frontiers`, given the path `cost` from the robot to every
    cell (inf where unreachable) and the `unknown` cells; None if no frontier can be viewed."""
    if not frontiers.any():
        return None
    distance, (ti, tj) = ndimage.distance_transform_edt(~frontiers, return_indices=True)
    candidates = np.isfinite(cost) & (distance * resolution <= params.view_distance)
    if not candidates.any():
        return None
    gain = information_gain(visible_unknown(unknown, frontiers), resolution, params.gain_radius)
    candidates &= gain[ti, tj] * resolution**2 >= params.min_gain
    if not candidates.any():
        return None
    ci, cj = np.nonzero(candidates)
    target_gain = gain[ti[ci, cj], tj[ci, cj]]
    utility = target_gain * np.exp(-params.distance_weight * cost[ci, cj])
    best = int(np.argmax(utility))
    cell = (int(ci[best]), int(cj[best]))
    target = (int(ti[cell]), int(tj[cell]))
    return Goal(cell, target, float(cost[cell]), float(target_gain[best]), float(utility[best]))

"""Frontiers: free cells next to unknown ones, grouped into clusters.

A frontier cell is a FREE cell with an UNKNOWN 4-neighbour, both inside the exploration region (cells
outside it are neither explored nor frontiers). Frontier cells are clustered by 8-connectivity; clusters
smaller than `min_size` cells (single unknown specks left between rays) are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from simulation.exploration.occupancy import FREE, UNKNOWN

FOUR_NEIGHBOURS = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=bool)
EIGHT_NEIGHBOURS = np.ones((3, 3), dtype=bool)


@dataclass(frozen=True)
class Frontier:
    cells: np.ndarray  # (K, 2) cell indices
    centroid: np.ndarray  # (2,) mean cell index (not necessarily a frontier cell)

    @property
    def size(self) -> int:
        return len(self.cells)


def frontier_mask(state: np.ndarray, region: np.ndarray | None = None) -> np.ndarray:
    """Bool mask of frontier cells of a 2D map state (UNKNOWN / FREE / OCCUPIED)."""
    region = np.ones(state.shape, dtype=bool) if region is None else region
    unknown = (state == UNKNOWN) & region
    touches_unknown = ndimage.binary_dilation(unknown, structure=FOUR_NEIGHBOURS)
    return (state == FREE) & region & touches_unknown


def label_parts(mask: np.ndarray, min_size: int = 1,
                structure: np.ndarray = EIGHT_NEIGHBOURS) -> tuple[np.ndarray, int]:
    """(labels, n): the connected parts of `mask` of at least `min_size` cells numbered 1..n (0 elsewhere)."""
    labels, count = ndimage.label(mask, structure=structure)
    sizes = np.bincount(labels.ravel(), minlength=count + 1)
    keep = np.flatnonzero(sizes >= min_size)
    keep = keep[keep > 0]
    relabel = np.zeros(count + 1, dtype=np.int64)
    relabel[keep] = np.arange(1, len(keep) + 1)
    return relabel[labels], len(keep)


def frontier_clusters(mask: np.ndarray, min_size: int = 1) -> tuple[np.ndarray, list[Frontier]]:
    """(labels, clusters): `labels` numbers each kept cluster's cells 1..n (0 elsewhere)."""
    labels, count = label_parts(mask, min_size)
    clusters = []
    for label in range(1, count + 1):
        cells = np.argwhere(labels == label)
        clusters.append(Frontier(cells, cells.mean(axis=0)))
    return labels, clusters

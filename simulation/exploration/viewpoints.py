"""The frontier information structure of the tour explorer (FUEL, Zhou et al. 2021): frontier clusters,
each with the viewpoints that see it, kept up to date incrementally as the map grows.

Clusters. Frontier cells (simulation.exploration.frontiers) are grouped by 8-connectivity; a group
reaching further than `max_extent` m from its centroid is split in two across its principal axis until
no part does, so that one viewpoint can see each part. Clusters smaller than `min_size` cells are
dropped.

Incremental update. On each map update a cluster is kept, with its number and viewpoints, while the
connected frontier cells it was split from are exactly the same; only the groups of frontier cells that
changed are clustered anew and get viewpoints. Viewpoints are the costly part (line-of-sight
tests), and most clusters are far from where the map changed.

Viewpoints. Candidates lie on rings of `ring_radii` m around the cluster's centroid, `ring_points` to a ring;
a candidate is kept where the robot's centre may stand (traversable on the cost map, inside the exploration
region). It faces the mean direction of the cluster's cells, and its coverage is the fraction of the cluster's
cells within `view_range` m, within the camera's horizontal field of view, and in line of sight (no occupied
cell between). Candidates covering at least `min_coverage` of the cluster are its viewpoints, best coverage
first, at most `max_viewpoints`. Where no ring candidate is one (the only way in is narrow), every other
standable cell within `view_range` of the centroid is tried. A kept cluster none of whose viewpoints is
standable any more (or that had none: around a frontier at the edge of what was seen, the rings often lay in
unknown space) gets its viewpoints computed again, as the known free space grows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from simulation.exploration.frontiers import EIGHT_NEIGHBOURS

LINE_STEP = 0.5  # cells between line-of-sight samples
TRIES = 2  # viewpoints (reached or not in time) of a frontier cell's clusters before it is given up
FALLBACK_STRIDE = 2  # cells between the candidates tried where the rings give none
MAX_SIGHT_CELLS = 32  # cluster cells checked for coverage (evenly subsampled beyond this)


@dataclass(frozen=True)
class ViewpointParams:
    min_size: int = 4  # cells
    max_extent: float = 1.5  # m from a cluster's centroid to its furthest cell before it is split
    ring_radii: tuple[float, ...] = (0.8, 1.2, 1.6, 2.0)  # m
    ring_points: int = 16
    view_range: float = 3.0  # m within which a frontier cell counts as seen
    fov: float = math.radians(90.0)  # rad, the camera's horizontal field of view
    min_coverage: float = 0.2
    max_viewpoints: int = 5


@dataclass(frozen=True)
class Viewpoint:
    cell: tuple[int, int]
    yaw: float  # rad, facing the cluster
    coverage: float  # fraction of the cluster's cells seen from here


@dataclass(frozen=True)
class Cluster:
    id: int  # numbered in order of creation, never reused
    cells: np.ndarray  # (K, 2) frontier cells
    centroid: np.ndarray  # (2,) mean cell index
    viewpoints: tuple[Viewpoint, ...]  # best coverage first; may be empty


def split(cells: np.ndarray, max_cells: float) -> list[np.ndarray]:
    """`cells` split across their principal axis until no part reaches further than `max_cells` from its
    centroid."""
    centroid = cells.mean(axis=0)
    offsets = cells - centroid
    if len(cells) < 2 or np.max(np.einsum("ij,ij->i", offsets, offsets)) <= max_cells**2:
        return [cells]
    _, vectors = np.linalg.eigh(offsets.T @ offsets)
    side = offsets @ vectors[:, -1] >= 0  # the eigenvector of the largest eigenvalue
    if side.all() or not side.any():
        return [cells]
    return split(cells[side], max_cells) + split(cells[~side], max_cells)


def line_of_sight(occupied: np.ndarray, start: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Bool per row of `ends` (cells, (N, 2)): no occupied cell on the segment from `start` (cell) to it,
    the end cell excluded."""
    delta = ends - start
    steps = int(np.ceil(np.abs(delta).max(initial=0.0) / LINE_STEP)) + 1
    t = np.linspace(0.0, 1.0, steps, endpoint=False)[None, :, None]
    samples = np.rint(start + t * delta[:, None, :]).astype(np.int64)  # (N, S, 2)
    samples = np.clip(samples, 0, np.array(occupied.shape) - 1)
    own = np.all(samples == ends[:, None, :], axis=2)
    return ~np.any(occupied[samples[..., 0], samples[..., 1]] & ~own, axis=1)


def seen_from(cell: np.ndarray, yaw: float, cells: np.ndarray, occupied: np.ndarray, resolution: float,
              params: ViewpointParams) -> np.ndarray:
    """Bool per row of `cells`: seen from `cell` facing `yaw` (within the view range and the field of view, in
    line of sight)."""
    offsets = (cells - cell).astype(np.float64)
    bearing = np.abs((np.arctan2(offsets[:, 1], offsets[:, 0]) - yaw + math.pi) % (2 * math.pi) - math.pi)
    seen = (np.linalg.norm(offsets, axis=1) * resolution <= params.view_range) & (bearing <= params.fov / 2)
    if seen.any():
        seen[seen] = line_of_sight(occupied, np.asarray(cell), cells[seen])
    return seen


def viewpoints_of(cells: np.ndarray, occupied: np.ndarray, standable: np.ndarray, resolution: float,
                  params: ViewpointParams) -> tuple[Viewpoint, ...]:
    """The viewpoints of a cluster of frontier `cells` (module notes); `standable` marks cells where the
    robot's centre may stand."""
    centroid = cells.mean(axis=0)
    sight = cells
    if len(cells) > MAX_SIGHT_CELLS:
        sight = cells[np.linspace(0, len(cells) - 1, MAX_SIGHT_CELLS).astype(int)]
    angles = 2 * math.pi * np.arange(params.ring_points) / params.ring_points
    rings = [centroid + radius / resolution * np.stack([np.cos(angles), np.sin(angles)], axis=1)
             for radius in params.ring_radii]
    found = _viewpoints(np.rint(np.concatenate(rings)).astype(np.int64), sight, occupied, standable, resolution,
                        params)
    if not found:  # nowhere to stand on the rings (a narrow way in): any standable cell in view range
        reach = int(params.view_range / resolution)
        lo = np.maximum(np.floor(centroid).astype(int) - reach, 0)
        hi = np.minimum(np.ceil(centroid).astype(int) + reach + 1, standable.shape)
        near = np.argwhere(standable[lo[0]:hi[0]:FALLBACK_STRIDE, lo[1]:hi[1]:FALLBACK_STRIDE]) * FALLBACK_STRIDE + lo
        found = _viewpoints(near, sight, occupied, standable, resolution, params)
    # Best coverage first; ties keep the candidates' order (nearest ring first), so the result is deterministic.
    found.sort(key=lambda v: -v.coverage)
    return tuple(found[:params.max_viewpoints])


def _viewpoints(candidates: np.ndarray, sight: np.ndarray, occupied: np.ndarray, standable: np.ndarray,
                resolution: float, params: ViewpointParams) -> list[Viewpoint]:
    """The `candidates` (cells) where the robot may stand that see at least `min_coverage` of `sight` cells,
    each facing their mean direction."""
    found = []
    for candidate in candidates:
        if not (0 <= candidate[0] < standable.shape[0] and 0 <= candidate[1] < standable.shape[1]):
            continue
        if not standable[candidate[0], candidate[1]]:
            continue
        offsets = (sight - candidate).astype(np.float64)
        mean = (offsets / np.maximum(np.linalg.norm(offsets, axis=1, keepdims=True), 1e-9)).mean(axis=0)
        yaw = math.atan2(mean[1], mean[0])
        coverage = float(np.count_nonzero(seen_from(candidate, yaw, sight, occupied, resolution, params)) / len(sight))
        if coverage >= params.min_coverage:
            found.append(Viewpoint((int(candidate[0]), int(candidate[1])), yaw, coverage))
    return found


class FrontierInfo:
    """The frontier clusters and their viewpoints, updated incrementally (module notes)."""

    def __init__(self, resolution: float, params: ViewpointParams = ViewpointParams()):
        self.resolution, self.params = resolution, params
        self.clusters: dict[int, Cluster] = {}
        self._components: dict[int, bytes] = {}  # each cluster's connected frontier cells when it was made
        self._next_id = 1
        self.created = 0  # clusters made (with viewpoints computed) so far
        self.kept = 0  # clusters carried over unchanged by updates so far
        self.refreshed = 0  # kept clusters whose viewpoints were computed again

    def forget(self, cluster_id: int) -> None:
        """Drop a cluster and those split from the same frontier cells: these, where still frontier, are clustered
        anew at the next update, with viewpoints on the map as it is then (one of them did not see its cells)."""
        component = self._components.get(cluster_id)
        for i in [i for i, cells in self._components.items() if cells == component]:
            del self.clusters[i], self._components[i]

    def update(self, frontiers: np.ndarray, occupied: np.ndarray, standable: np.ndarray) -> dict[int, Cluster]:
        """Bring the clusters up to date with the frontier cell mask `frontiers`; returns them by id."""
        labels, count = ndimage.label(frontiers, structure=EIGHT_NEIGHBOURS)
        flat = labels.ravel()
        order = np.argsort(flat, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=count + 1))])
        members = [order[bounds[k]:bounds[k + 1]] for k in range(count + 1)]  # flat cell indices by label
        kept: dict[int, Cluster] = {}
        unchanged: set[int] = set()
        for cluster in self.clusters.values():
            i, j = cluster.cells[:, 0], cluster.cells[:, 1]
            label = int(labels[i[0], j[0]])
            if not label or members[label].tobytes() != self._components[cluster.id]:
                continue
            if not any(standable[v.cell] for v in cluster.viewpoints):  # none left where the robot may stand
                cluster = Cluster(cluster.id, cluster.cells, cluster.centroid,
                                  viewpoints_of(cluster.cells, occupied, standable, self.resolution, self.params))
                self.refreshed += 1
            kept[cluster.id] = cluster
            unchanged.add(label)
        self.kept += len(kept)
        self._components = {i: self._components[i] for i in kept}
        max_cells = self.params.max_extent / self.resolution
        for label in range(1, count + 1):
            if label in unchanged or len(members[label]) < self.params.min_size:
                continue
            cells = np.stack(np.unravel_index(members[label], labels.shape), axis=1)
            for part in split(cells, max_cells):
                if len(part) < self.params.min_size:
                    continue
                viewpoints = viewpoints_of(part, occupied, standable, self.resolution, self.params)
                kept[self._next_id] = Cluster(self._next_id, part, part.mean(axis=0), viewpoints)
                self._components[self._next_id] = members[label].tobytes()
                self._next_id += 1
                self.created += 1
        self.clusters = kept
        return kept


def give_up(info: FrontierInfo, cluster: Cluster, in_view: np.ndarray, tries: np.ndarray,
            exhausted: np.ndarray) -> None:
    """A viewpoint of `cluster` is done with (reached, or not in time): mark `exhausted` the frontier cells
    `in_view` (K, 2) from it, still frontier once it was reached (from there they cannot be seen; none when it was
    not), and count a try (`tries`, per cell) for each of the cluster's cells: its other cells, hidden from there by
    what the map learnt since the viewpoint was chosen (furniture in the way), are clustered anew with viewpoints
    on the map as it is now, until they have had `TRIES`."""
    i, j = cluster.cells[:, 0], cluster.cells[:, 1]
    tries[i, j] += 1
    spent = tries[i, j] >= TRIES
    exhausted[i[spent], j[spent]] = True
    exhausted[in_view[:, 0], in_view[:, 1]] = True
    info.forget(cluster.id)

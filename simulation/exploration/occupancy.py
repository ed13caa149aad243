"""The robot's own occupancy map, built from its depth images: 3D log-odds voxels and their 2D projections.

Each depth pixel is a ray from the camera centre. Voxels the ray passes through before its end point
are observed free (a "miss"), the voxel of its end point is observed occupied (a "hit"), except for
returns the caller does not count as obstacles (a ground robot's floor) and for rays longer than the
sensor's range or without a return, which are free up to `max_range` and hit nothing. The traversal
samples each ray every `step_fraction` of a voxel, so a voxel the ray clips at a corner may be skipped
(the next frames fill it in). Per frame each voxel gets at most one update, a hit overriding misses (as
OctoMap does), in log-odds clamped to [minimum, maximum] so a cell can change its mind after a few
frames: that is what clears the cells a person walked out of.

Moving people (and flying objects) are handled by time. Every voxel remembers when it was last hit,
and `recently_hit` marks the hits of the last `decay` seconds as obstacles whatever their log-odds, so
a person seen a moment ago blocks the path at once, until a later frame sees through the voxel (a ray
passes it without a hit): they walked on, and their trail does not block the way for `decay` s behind
them (someone pacing through a doorway would keep it shut). A hit on a voxel the map was sure was free (log-odds
at or below `DYNAMIC_BELOW`) marks it dynamic: something moved in. A dynamic voxel not hit again for
`decay` seconds goes back to free, so a person who walked off while the robot looked elsewhere does not
leave a wall behind; a static surface is first seen from unknown or uncertain space and never decays.

2D maps (int8 UNKNOWN / FREE / OCCUPIED) come from columns of voxels:
- `project_slab` (UAV): a column is occupied if any voxel of the flight slab is occupied, free if all
  are observed free;
- `project_ground` (ground robot): the map's lowest layer holds the floor, which is never a hit; a
  column is occupied if any voxel above the floor layer (up to the robot's height) is occupied, and
  free if the floor layer was seen free, i.e. the camera saw the floor there and nothing above it
  (as costmap_2d's voxel layer projects marks and clearings).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache, lru_cache
from itertools import pairwise

import numpy as np

from simulation.exploration import voxel_kernels
from simulation.render.raycast import RAY_THREADS  # the cores this run's ray work may use (GRADE_THREADS)

UNKNOWN, FREE, OCCUPIED = -1, 0, 1
DYNAMIC_BELOW = -0.8  # log-odds (two misses net): a hit on a voxel this sure to be free is something that moved in


@dataclass(frozen=True)
class LogOdds:
    """Per-observation log-odds increments and clamps (OctoMap's defaults: p_hit 0.7, p_miss 0.4)."""

    hit: float = 0.85
    miss: float = -0.4
    minimum: float = -2.0
    maximum: float = 3.5


@dataclass
class Grid2D:
    """A 2D map; cell (i, j) covers [origin + (i, j) * resolution, origin + (i + 1, j + 1) * resolution)."""

    state: np.ndarray  # int8 (nx, ny): UNKNOWN, FREE or OCCUPIED
    origin: np.ndarray  # (2,) m
    resolution: float  # m

    @property
    def shape(self) -> tuple[int, int]:
        return self.state.shape

    def cell_of(self, xy: np.ndarray) -> np.ndarray:
        """Integer cell indices (..., 2) of world points (..., 2); may lie outside the grid."""
        return np.floor((np.asarray(xy, dtype=np.float64)[..., :2] - self.origin) / self.resolution).astype(np.int64)

    def center_of(self, cells: np.ndarray) -> np.ndarray:
        """World centres (..., 2) of cells (..., 2)."""
        return self.origin + (np.asarray(cells, dtype=np.float64) + 0.5) * self.resolution

    def contains(self, cells: np.ndarray) -> np.ndarray:
        cells = np.asarray(cells)
        return np.all((cells >= 0) & (cells < np.array(self.shape)), axis=-1)

    def centers(self) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) of every cell centre as two (nx, ny) arrays."""
        xs = self.origin[0] + (np.arange(self.shape[0]) + 0.5) * self.resolution
        ys = self.origin[1] + (np.arange(self.shape[1]) + 0.5) * self.resolution
        return np.meshgrid(xs, ys, indexing="ij")


def mapping_stride(K: np.ndarray, max_range: float, resolution: float) -> int:
    """Pixel stride for mapping: neighbouring sampled rays stay within half a voxel of each other out to
    `max_range`, so every voxel a full-resolution image would touch is still crossed."""
    pixel_angle = 1.0 / float(max(K[0, 0], K[1, 1]))  # rad per pixel at the image centre
    return max(int(resolution / 2 / (max_range * pixel_angle)), 1)


@cache
def _traversal_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(RAY_THREADS, thread_name_prefix="mapping")


@lru_cache(maxsize=8)
def _pixel_rays(K: tuple[float, ...], height: int, width: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit directions (3, N) in the optical frame of every `stride`-th pixel and the lengths (N,) of their
    z = 1 rays: the same for every frame of a camera."""
    v, u = np.mgrid[0:height:stride, 0:width:stride]
    pixels = np.stack([u.ravel(), v.ravel(), np.ones(u.size)])
    rays = np.linalg.solve(np.array(K).reshape(3, 3), pixels)  # z = 1 in the optical frame
    norms = np.linalg.norm(rays, axis=0)
    units = rays / norms
    for array in (units, norms):
        array.setflags(write=False)
    return units, norms


def depth_rays(depth: np.ndarray, K: np.ndarray, pose: np.ndarray, max_range: float,
               stride: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(origin (3,), end points (N, 3), returned (N,)) of every `stride`-th pixel's ray (in both
    directions) in the world.

    `depth` is z in the optical frame (0 = no return), `pose` world <- optical frame. A ray that returned
    within `max_range` ends on the surface; the others end `max_range` along the pixel's direction.
    """
    depth = np.asarray(depth, dtype=np.float64)
    if depth.ndim != 2:
        raise ValueError(f"a depth image is 2D, got shape {depth.shape}")
    units, norms = _pixel_rays(tuple(np.asarray(K, dtype=np.float64).ravel().tolist()), *depth.shape, stride)
    distance = depth[::stride, ::stride].ravel() * norms
    returned = (depth[::stride, ::stride].ravel() > 0) & (distance <= max_range)
    distance = np.where(returned, distance, max_range)
    directions = (pose[:3, :3] @ units).T
    origin = pose[:3, 3].astype(np.float64)
    return origin, origin + directions * distance[:, None], returned


@dataclass
class VoxelMap:
    """Log-odds voxels over the box [lo, hi); voxel (i, j, k) starts at lo + (i, j, k) * resolution."""

    lo: np.ndarray
    hi: np.ndarray
    resolution: float
    log_odds_model: LogOdds = field(default_factory=LogOdds)
    step_fraction: float = 0.5  # ray samples per voxel edge: 0.5 = two samples per voxel
    decay: float = 2.0  # s a hit blocks its voxel / a dynamic voxel stays occupied after its last hit
    log_odds: np.ndarray = field(init=False)
    observed: np.ndarray = field(init=False)
    last_hit: np.ndarray = field(init=False)
    last_miss: np.ndarray = field(init=False)
    dynamic: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.lo = np.asarray(self.lo, dtype=np.float64)
        self.hi = np.asarray(self.hi, dtype=np.float64)
        if not self.resolution > 0 or not 0 < self.step_fraction <= 1:
            raise ValueError(f"need resolution > 0 and 0 < step_fraction <= 1, got {self.resolution}, "
                             f"{self.step_fraction}")
        if self.lo.shape != (3,) or self.hi.shape != (3,) or not np.all(self.hi > self.lo):
            raise ValueError(f"map bounds must be two 3-vectors with hi > lo, got {self.lo}, {self.hi}")
        shape = tuple(int(n) for n in np.maximum(np.ceil((self.hi - self.lo) / self.resolution), 1))
        self.log_odds = np.zeros(shape, dtype=np.float32)
        self.observed = np.zeros(shape, dtype=bool)
        self.last_hit = np.full(shape, -np.inf)
        self.last_miss = np.full(shape, -np.inf)
        self.dynamic = np.zeros(shape, dtype=bool)

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.log_odds.shape

    def voxel_of(self, points: np.ndarray) -> np.ndarray:
        return np.floor((np.asarray(points, dtype=np.float64) - self.lo) / self.resolution).astype(np.int64)

    def layer_of(self, z: float) -> int:
        """The layer index holding height z (clamped to the grid)."""
        return int(np.clip(np.floor((z - self.lo[2]) / self.resolution), 0, self.shape[2] - 1))

    def layers(self, z_lo: float, z_hi: float) -> slice:
        """The layers holding any height in [z_lo, z_hi]."""
        return slice(self.layer_of(z_lo), self.layer_of(z_hi) + 1)

    def _traverse(self, origin: np.ndarray, ends: np.ndarray, out: np.ndarray) -> None:
        """Mark in `out` the voxels sampled along each ray from `origin` up to (not including) its end."""
        start = (origin - self.lo) / self.resolution  # voxel units from here on
        offsets = (ends - origin) / self.resolution
        lengths = np.linalg.norm(offsets, axis=1)
        units = (offsets / np.maximum(lengths, 1e-12)[:, None]).T.astype(np.float32)
        samples = np.arange(0.0, float(lengths.max(initial=0.0)), self.step_fraction, dtype=np.float32)
        start, units, shape = start.astype(np.float32), np.ascontiguousarray(units), np.array(self.shape, np.int64)
        # The rays in a few chunks on threads of their own (the loop drops the GIL): a frame's map update is on
        # the robot's critical path (it plans on it before stepping on). Marks only ever set voxels, so the map
        # does not depend on how the rays are split.
        bounds = np.linspace(0, units.shape[1], RAY_THREADS + 1).astype(np.int64)
        jobs = [_traversal_pool().submit(voxel_kernels.mark_samples, start, units[:, a:b], lengths[a:b], samples,
                                         shape, out) for a, b in pairwise(bounds.tolist()) if b > a]
        for job in jobs:
            job.result()

    def integrate(self, origin: np.ndarray, endpoints: np.ndarray, hits: np.ndarray, time: float) -> None:
        """Update from rays `origin` -> `endpoints`; end points with `hits` are obstacles, others free."""
        self.integrate_views([(origin, endpoints, hits)], time)

    def integrate_views(self, views: list[tuple[np.ndarray, np.ndarray, np.ndarray]], time: float) -> None:
        """One update from the rays of several cameras at once, each view (origin, end points, hits) as in
        `integrate`: a voxel two cameras see gets one update, as a voxel two rays of one camera see does."""
        size = self.log_odds.size
        missed, hit = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
        shape = np.array(self.shape, np.int64)
        for origin, endpoints, hits in views:
            origin = np.asarray(origin, dtype=np.float64)
            endpoints = np.asarray(endpoints, dtype=np.float64).reshape(-1, 3)
            hits = np.asarray(hits, dtype=bool).reshape(-1)
            if len(hits) != len(endpoints):
                raise ValueError(f"{len(endpoints)} end points but {len(hits)} hit flags")
            self._traverse(origin, endpoints, missed)
            ends = np.ascontiguousarray(self.voxel_of(endpoints).T)
            voxel_kernels.mark_voxels(ends, ~hits, shape, missed)
            voxel_kernels.mark_voxels(ends, hits, shape, hit)
        hit_index = np.flatnonzero(hit)
        missed[hit_index] = False
        miss_index = np.flatnonzero(missed)
        flat_odds, model = self.log_odds.reshape(-1), self.log_odds_model
        self._expire(time)
        self.dynamic.reshape(-1)[hit_index[flat_odds[hit_index] <= DYNAMIC_BELOW]] = True
        flat_odds[miss_index] = np.maximum(flat_odds[miss_index] + model.miss, model.minimum)
        flat_odds[hit_index] = np.minimum(flat_odds[hit_index] + model.hit, model.maximum)
        self.observed.reshape(-1)[miss_index] = True
        self.observed.reshape(-1)[hit_index] = True
        self.last_hit.reshape(-1)[hit_index] = time
        self.last_miss.reshape(-1)[miss_index] = time

    def _expire(self, time: float) -> None:
        """Dynamic voxels not hit for `decay` s go back to free."""
        stale = self.dynamic & (self.last_hit < time - self.decay)
        if stale.any():
            self.log_odds[stale] = self.log_odds_model.minimum
            self.dynamic[stale] = False

    def moving(self, time: float) -> np.ndarray:
        """Bool voxels where something moving is seen at `time`: dynamic voxels hit then (a dynamic voxel stays one
        for `decay` s after its last hit, after whoever was there has left)."""
        return self.dynamic & (self.last_hit >= time)

    @property
    def occupied(self) -> np.ndarray:
        return self.observed & (self.log_odds > 0)

    @property
    def free(self) -> np.ndarray:
        return self.observed & (self.log_odds <= 0)

    def recently_hit(self, time: float) -> np.ndarray:
        """Voxels hit within the last `decay` seconds before `time` and not seen through since (moving
        obstacles)."""
        return (self.last_hit >= time - self.decay) & (self.last_miss < self.last_hit)


def _grid(vmap: VoxelMap, occupied: np.ndarray, free: np.ndarray) -> Grid2D:
    state = np.full(occupied.shape, UNKNOWN, dtype=np.int8)
    state[free & ~occupied] = FREE
    state[occupied] = OCCUPIED
    return Grid2D(state, vmap.lo[:2].copy(), vmap.resolution)


def project_slab(vmap: VoxelMap, z_lo: float, z_hi: float, blocked: np.ndarray | None = None) -> Grid2D:
    """UAV: columns through the slab [z_lo, z_hi]: occupied if any voxel is occupied (or in `blocked`,
    e.g. recent hits), free if every voxel is observed free."""
    slab = vmap.layers(z_lo, z_hi)
    occupied = vmap.occupied[:, :, slab]
    if blocked is not None:
        occupied = occupied | blocked[:, :, slab]
    return _grid(vmap, occupied.any(axis=2), vmap.free[:, :, slab].all(axis=2))


def project_ground(vmap: VoxelMap, blocked: np.ndarray | None = None) -> Grid2D:
    """Ground robot: layer 0 is the floor; occupied if any voxel above it is occupied (or `blocked`),
    free if the floor layer was seen free."""
    occupied = vmap.occupied[:, :, 1:]
    if blocked is not None:
        occupied = occupied | blocked[:, :, 1:]
    return _grid(vmap, occupied.any(axis=2), vmap.free[:, :, 0])

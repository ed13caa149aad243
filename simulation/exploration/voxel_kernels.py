"""Compiled loops (numba) for the occupancy map's ray traversal: the voxels sampled along each ray and the
voxels of points, marked in a flat boolean grid.

They compute what the whole-array numpy code computed (float32 sample positions, start + unit * sample,
floored), one ray at a time without the (rays x samples) arrays, so the maps are the same bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from core.jit_cache import flush_stale_caches


@njit(cache=True, nogil=True)
def _mark_voxel(x, y, z, shape, out):
    """Set `out` (flat, C order over `shape`) at voxel (x, y, z) if it lies in the grid."""
    if 0 <= x < shape[0] and 0 <= y < shape[1] and 0 <= z < shape[2]:
        out[(np.int64(x) * shape[1] + y) * shape[2] + z] = True


@njit(cache=True, nogil=True)
def mark_samples(start, units, lengths, samples, shape, out):
    """Mark in `out` the voxels floor(start + unit * s) for each ray's samples s < its length.

    `start` (3,) float32 voxel coordinates of the origin, `units` (3, N) float32 unit directions, `lengths`
    (N,) float64 ray lengths in voxels, `samples` ascending float32 distances along a ray."""
    for i in range(units.shape[1]):
        length = lengths[i]
        for k in range(len(samples)):
            s = samples[k]
            if not s < length:
                break
            x = np.int32(np.floor(start[0] + units[0, i] * s))
            y = np.int32(np.floor(start[1] + units[1, i] * s))
            z = np.int32(np.floor(start[2] + units[2, i] * s))
            _mark_voxel(x, y, z, shape, out)


@njit(cache=True, nogil=True)
def mark_voxels(voxels, where, shape, out):
    """Mark in `out` the voxels (3, N) whose `where` (N,) is set."""
    for i in range(voxels.shape[1]):
        if where[i]:
            _mark_voxel(voxels[0, i], voxels[1, i], voxels[2, i], shape, out)


flush_stale_caches(__name__)  # see core.jit_cache

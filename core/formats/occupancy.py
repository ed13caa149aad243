"""`occupancy.npz` of an environment package: the ground-truth 2D map and 3D voxel grid.

Arrays:
- `map2d` (nx, ny) uint8, indexed [ix, iy]: 0 free, 1 occupied (a surface in the obstacle band above the
  floor), 2 outside the floor polygon; cell (ix, iy) starts at `map2d_origin` + (ix, iy) * `map2d_resolution`.
- `map2d_origin` (2,) float64 world XY, m; `map2d_resolution` () float64, m per cell.
- `voxels` (nx, ny, nz) bool surface voxels; `voxels_origin` (3,) float64, m; `voxel_size` () float64, m.
- `legend` (3,) str: the names of the map2d values.
The converters write it (asset_converters/environment.py) as core.assets.layout.OCCUPANCY_FILE; placement's
preview, exploration benchmarks and `grade view` read it. The robot never does: it maps from its own depth.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.rundir import atomic_write_bytes, load_npz_checked

FREE, OCCUPIED, OUTSIDE = 0, 1, 2
LEGEND = ("free", "occupied", "outside")
MAP_ARRAYS = ("map2d", "map2d_origin", "map2d_resolution")
ARRAYS = (*MAP_ARRAYS, "voxels", "voxels_origin", "voxel_size", "legend")


@dataclass
class OccupancyMap:
    grid: np.ndarray  # (nx, ny) uint8 indexed [ix, iy]: FREE, OCCUPIED or OUTSIDE
    origin: np.ndarray  # (2,) world XY of the grid's lower-left corner, m
    resolution: float  # m per cell

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """(x_min, x_max, y_min, y_max) of the whole grid, m."""
        nx, ny = self.grid.shape
        x0, y0 = (float(v) for v in self.origin)
        return x0, x0 + nx * self.resolution, y0, y0 + ny * self.resolution


def save_occupancy(path: str | Path, arrays: dict[str, np.ndarray]) -> Path:
    """Write the arrays of the layout above (compressed, atomically, in the layout's order)."""
    if set(arrays) != set(ARRAYS):
        raise ValueError(f"occupancy arrays must be {ARRAYS}, got {sorted(arrays)}")
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **{key: arrays[key] for key in ARRAYS})
    return atomic_write_bytes(path, buffer.getvalue())


def _grid(path: str | Path, keys: tuple[str, str, str], ndim: int) -> tuple[np.ndarray, np.ndarray, float]:
    """(grid, origin, cell size) of the arrays `keys`, checked: an `ndim`-D grid, an (ndim,) origin, a size > 0."""
    arrays = load_npz_checked(path, list(keys), keys=keys)
    grid, origin, size = (arrays[key] for key in keys)
    if grid.ndim != ndim:
        raise InputError(f"expected a {ndim}D grid, got shape {grid.shape}", path, keys[0])
    if origin.shape != (ndim,):
        raise InputError(f"expected shape ({ndim},), got {origin.shape}", path, keys[1])
    if size.size != 1 or not float(size) > 0:
        raise InputError("expected one positive number", path, keys[2])
    return grid, origin.astype(np.float64), float(size)


def read_occupancy(path: str | Path) -> OccupancyMap:
    """The 2D map of an occupancy.npz, checked (InputError naming the file and array otherwise)."""
    return OccupancyMap(*_grid(path, MAP_ARRAYS, 2))


def read_voxels(path: str | Path) -> tuple[np.ndarray, np.ndarray, float]:
    """The 3D surface voxels of an occupancy.npz: (grid (nx, ny, nz) bool, origin (3,) m, voxel size m)."""
    grid, origin, size = _grid(path, ("voxels", "voxels_origin", "voxel_size"), 3)
    return grid.astype(bool), origin, size

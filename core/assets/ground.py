"""The ground of a terrain: its height and slope under points of the XY plane, by vertical ray casts.

The terrain converter uses it for the obstacle band of the 2D map; placement stands humans and animals on
it. The ground is the highest surface of the ground meshes under a point (an overhang's top, not its
underside); a point outside the ground's outline has no height (NaN).
"""

from __future__ import annotations

import numpy as np
import trimesh

ABOVE = 1.0  # m above the highest ground where the downward rays start


class Ground:
    """Heights and slopes of a ground surface given as triangles (world frame, Z up)."""

    def __init__(self, vertices: np.ndarray, faces: np.ndarray):
        self.mesh = trimesh.Trimesh(np.asarray(vertices, dtype=np.float64), np.asarray(faces, dtype=np.int64),
                                    process=False)
        self.top = float(self.mesh.vertices[:, 2].max()) + ABOVE

    def query(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per point (N, 2): the ground height (N,) and the slope (N,) in degrees from horizontal of the face
        there; NaN for both where no ground lies under the point."""
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        heights, slopes = np.full(len(xy), np.nan), np.full(len(xy), np.nan)
        if not len(xy):
            return heights, slopes
        origins = np.column_stack([xy, np.full(len(xy), self.top)])
        down = np.broadcast_to(np.array([0.0, 0.0, -1.0]), origins.shape)
        locations, rays, faces = self.mesh.ray.intersects_location(origins, down, multiple_hits=False)
        heights[rays] = locations[:, 2]
        cos_tilt = np.clip(np.abs(self.mesh.face_normals[faces, 2]), 0.0, 1.0)
        slopes[rays] = np.degrees(np.arccos(cos_tilt))
        return heights, slopes

    def heights(self, xy: np.ndarray) -> np.ndarray:
        return self.query(xy)[0]

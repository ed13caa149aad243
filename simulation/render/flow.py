"""Forward optical flow: where the surface point under each pixel appears in the next frame.

The point keeps its barycentric coordinates on its triangle, so rigid motion (next pose) and deformation
(next vertex positions) are both followed exactly; static geometry stays put. The moved point is
projected with the next camera pose through the camera's lens; flow = that pixel position minus this pixel's centre.
"""

from __future__ import annotations

import numpy as np

from simulation.render.camera import Camera, depth_of, project, world_to_camera

UNDEFINED_FLOW = np.nan  # no surface under the pixel, or the point ends up behind the next camera


def pixel_flow(camera: Camera, next_pose: np.ndarray, pixels: np.ndarray, points_next: np.ndarray) -> np.ndarray:
    """Flow (2, N) of flat pixel indices `pixels` whose surface points move to `points_next` (3, N)."""
    local = world_to_camera(next_pose, points_next)
    behind = depth_of(camera, local) < camera.near
    local[2, behind] = 1.0
    flow = project(camera, local) - np.stack([pixels % camera.width, pixels // camera.width])
    flow[:, behind] = UNDEFINED_FLOW
    return flow.astype(np.float32)

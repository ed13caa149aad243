"""COCO person keypoints from the recorded human skeletons (humans/), projected into a camera frame.

Each COCO keypoint is taken from the skeleton joint of the same name (SMPL's `left_shoulder`, the procedural
humans' `l_shoulder`); skeletons without face joints (SMPL, the procedural humans) leave nose, eyes and ears
unlabelled (0, 0, 0), as COCO does for keypoints it has no position for. Joints are interpolated linearly to
the frame's time between the recorded samples (humans_hz).

Coordinates follow COCO's continuous pixel frame (the image's top-left corner at (0, 0), so the centre of
pixel (col, row) is (col + 0.5, row + 0.5)), matching the exported boxes; a camera with a lens model
projects through it (core/config/lens.py). Visibility: 0 when the joint is behind the camera (an equidistant
lens sees behind itself: there, at the camera centre) or projects outside the image; 2 when the pixel it projects to shows this person, or shows
a surface no nearer than `DEPTH_TOLERANCE` in front of the joint (a joint lies inside the body, a few
centimetres behind the skin the camera sees); 1 (labelled, occluded) otherwise.
"""

from __future__ import annotations

import numpy as np

from core.config.lens import PINHOLE, Lens, project_directions
from core.formats.humans import HumansDocument
from core.recording import Humans
from export.categories import COCO_KEYPOINTS

DEPTH_TOLERANCE = 0.15  # m: how far the seen surface may lie in front of a joint for it to count as visible
_SIDE_PREFIXES = (("left_", "l_"), ("right_", "r_"))


def _joint_candidates(name: str) -> tuple[str, ...]:
    for long, short in _SIDE_PREFIXES:
        if name.startswith(long):
            return name, short + name[len(long):]
    return (name,)


def keypoint_indices(joint_names: list[str]) -> np.ndarray:
    """(17,) index into `joint_names` of each COCO keypoint, -1 where the skeleton has no such joint."""
    lookup = {n.lower(): i for i, n in enumerate(joint_names)}
    return np.array([next((lookup[c] for c in _joint_candidates(k) if c in lookup), -1) for k in COCO_KEYPOINTS])


class SkeletonTrack:
    """Every recorded human's joints over time, with the COCO keypoint joints picked out."""

    def __init__(self, humans: Humans):
        document: HumansDocument = humans.document
        samples = [humans[i] for i in range(len(humans))]
        self.times = np.array([s.time for s in samples], np.float64)
        self._joints = {h.prim_path: np.stack([s.joints[h.name] for s in samples]).astype(np.float64)
                        for h in document.humans} if samples else {}
        self._indices = {h.prim_path: keypoint_indices(h.joint_names) for h in document.humans}

    def keypoints_world(self, prim_path: str, time: float) -> tuple[np.ndarray, np.ndarray] | None:
        """((17, 3) world positions, (17,) bool labelled) at `time`, None for a prim that is not a human."""
        if prim_path not in self._joints or not len(self.times):
            return None
        joints = self._joints[prim_path]
        k = int(np.clip(np.searchsorted(self.times, time) - 1, 0, max(len(self.times) - 2, 0)))
        if len(self.times) == 1:
            at = joints[0]
        else:
            alpha = np.clip((time - self.times[k]) / (self.times[k + 1] - self.times[k]), 0.0, 1.0)
            at = (1 - alpha) * joints[k] + alpha * joints[k + 1]
        indices = self._indices[prim_path]
        labelled = indices >= 0
        return np.where(labelled[:, None], at[np.maximum(indices, 0)], 0.0), labelled


def project_keypoints(points: np.ndarray, labelled: np.ndarray, pose: np.ndarray, K: np.ndarray,
                      depth: np.ndarray | None, instance: np.ndarray, instance_id: int,
                      lens: Lens = PINHOLE) -> list[float]:
    """COCO's flat [x1, y1, v1, ...] of world `points` (17, 3) seen from camera `pose` (world <- optical) with
    intrinsics `K` through `lens`, visibility by `depth` (m, 0 = no return; the range along the ray through an
    equidistant lens) and `instance` (module docstring)."""
    height, width = instance.shape
    camera = (np.linalg.inv(pose) @ np.c_[points, np.ones(len(points))].T).T[:, :3]
    out: list[float] = []
    for (x, y, z), known in zip(camera, labelled, strict=True):
        distance = float(np.sqrt(x * x + y * y + z * z)) if lens.range_depth else z
        if not known or distance <= 0:
            out += [0.0, 0.0, 0]
            continue
        if lens.pinhole:
            u = K[0, 0] * x / z + K[0, 2] + 0.5
            v = K[1, 1] * y / z + K[1, 2] + 0.5
        else:
            pixel = project_directions((K[0, 0], K[1, 1], K[0, 2], K[1, 2]), lens, np.array([[x], [y], [z]]))
            u, v = float(pixel[0, 0]) + 0.5, float(pixel[1, 0]) + 0.5
        if not (0 <= u < width and 0 <= v < height):
            out += [0.0, 0.0, 0]
            continue
        col, row = int(u), int(v)
        seen = float(depth[row, col]) if depth is not None else 0.0
        visible = instance[row, col] == instance_id or seen <= 0 or seen >= distance - DEPTH_TOLERANCE
        out += [round(float(u), 2), round(float(v), 2), 2 if visible else 1]
    return out

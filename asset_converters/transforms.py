"""Small rotation helpers (quaternions w, x, y, z) built on scipy."""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation


def quat_wxyz_to_matrix(q: np.ndarray) -> np.ndarray:
    """(..., 4) w, x, y, z -> (..., 3, 3)."""
    q = np.asarray(q, dtype=np.float64)
    flat = q.reshape(-1, 4)
    mats = Rotation.from_quat(flat[:, [1, 2, 3, 0]]).as_matrix()
    return mats.reshape(*q.shape[:-1], 3, 3)


def matrix_to_quat_wxyz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    flat = m.reshape(-1, 3, 3)
    q = Rotation.from_matrix(flat).as_quat()[:, [3, 0, 1, 2]]
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)  # canonical: w >= 0
    return q.reshape(*m.shape[:-2], 4)


def axis_angle_to_quat_wxyz(aa: np.ndarray) -> np.ndarray:
    aa = np.asarray(aa, dtype=np.float64)
    q = Rotation.from_rotvec(aa.reshape(-1, 3)).as_quat()[:, [3, 0, 1, 2]]
    return q.reshape(*aa.shape[:-1], 4)


def compose(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """(..., 3, 3) and (..., 3) -> (..., 4, 4)."""
    rotation = np.asarray(rotation, dtype=np.float64)
    out = np.zeros((*rotation.shape[:-2], 4, 4))
    out[..., :3, :3] = rotation
    out[..., :3, 3] = translation
    out[..., 3, 3] = 1.0
    return out


def forward_kinematics(parents: np.ndarray, local_rotations: np.ndarray, local_translations: np.ndarray) -> np.ndarray:
    """Joint world transforms (N, J, 4, 4) from per-frame local (w,x,y,z) rotations and translations."""
    local = compose(quat_wxyz_to_matrix(local_rotations), local_translations)
    world = np.empty_like(local)
    for j, parent in enumerate(parents):
        world[:, j] = local[:, j] if parent < 0 else world[:, parent] @ local[:, j]
    return world


def yaw_rotation(yaw: float) -> np.ndarray:
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


Y_UP_TO_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
"""Rotation taking Y-up data (3D-Front, glTF, SMPL) to Z-up: (x, y, z) -> (x, -z, y)."""

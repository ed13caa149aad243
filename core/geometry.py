"""Rotation and pose helpers shared by every stage, built on scipy.

Quaternions are (w, x, y, z) as in USD unless a name says `xyzw` (ROS, TUM, scipy's default order);
convert at the boundary with `wxyz_to_xyzw` / `xyzw_to_wxyz`. Poses are 4x4 homogeneous matrices
(parent <- child). Yaw is the rotation about world Z, in radians.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.transform import Rotation


def wxyz_to_xyzw(q: np.ndarray) -> np.ndarray:
    """(..., 4) quaternions in USD order (w, x, y, z) -> ROS/TUM/scipy order (x, y, z, w)."""
    return np.asarray(q, dtype=np.float64)[..., [1, 2, 3, 0]]


def xyzw_to_wxyz(q: np.ndarray) -> np.ndarray:
    """(..., 4) quaternions in ROS/TUM/scipy order (x, y, z, w) -> USD order (w, x, y, z)."""
    return np.asarray(q, dtype=np.float64)[..., [3, 0, 1, 2]]


def quat_wxyz_to_matrix(q: np.ndarray) -> np.ndarray:
    """(..., 4) w, x, y, z -> (..., 3, 3)."""
    q = np.asarray(q, dtype=np.float64)
    flat = q.reshape(-1, 4)
    mats = Rotation.from_quat(wxyz_to_xyzw(flat)).as_matrix()
    return mats.reshape(*q.shape[:-1], 3, 3)


def matrix_to_quat_wxyz(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float64)
    flat = m.reshape(-1, 3, 3)
    q = xyzw_to_wxyz(Rotation.from_matrix(flat).as_quat())
    q *= np.where(q[:, :1] < 0, -1.0, 1.0)  # canonical: w >= 0
    return q.reshape(*m.shape[:-2], 4)


def axis_angle_to_quat_wxyz(aa: np.ndarray) -> np.ndarray:
    aa = np.asarray(aa, dtype=np.float64)
    q = xyzw_to_wxyz(Rotation.from_rotvec(aa.reshape(-1, 3)).as_quat())
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
    """3x3 rotation by `yaw` about Z."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def yaw_of(pose: np.ndarray) -> float:
    """Heading of a 3x3 rotation or 4x4 pose: the angle of its x axis in the world XY plane."""
    pose = np.asarray(pose)
    return float(np.arctan2(pose[1, 0], pose[0, 0]))


def pose_from_xyz_yaw(x: float, y: float, z: float, yaw: float) -> np.ndarray:
    """4x4 pose at (x, y, z) turned by `yaw` about Z."""
    return compose(yaw_rotation(yaw), np.array([x, y, z], dtype=np.float64))


def transform_points(pose: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(..., 3) points mapped by a 4x4 pose (child -> parent coordinates)."""
    pose = np.asarray(pose, dtype=np.float64)
    return np.asarray(points, dtype=np.float64) @ pose[:3, :3].T + pose[:3, 3]


Y_UP_TO_Z_UP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
"""Rotation taking Y-up data (3D-Front, glTF, SMPL) to Z-up: (x, y, z) -> (x, -z, y)."""


def rpy_quat(rpy_deg) -> np.ndarray:
    """Quaternion (w, x, y, z) of roll/pitch/yaw in degrees, extrinsic X then Y then Z (the sensor mounts')."""
    return xyzw_to_wxyz(Rotation.from_euler("xyz", list(rpy_deg), degrees=True).as_quat())


def mount_matrix(translation, rpy_deg) -> np.ndarray:
    """link <- sensor 4x4 transform of a sensor mount (translation m, roll/pitch/yaw deg), as the simulation
    places the sensor's site."""
    return compose(quat_wxyz_to_matrix(rpy_quat(rpy_deg)), translation)


def optical_from_imu(camera_translation, camera_rpy_deg, imu_translation, imu_rpy_deg,
                     body_to_optical: np.ndarray) -> np.ndarray:
    """optical <- IMU 4x4 transform of a camera and an IMU mounted on the same link (their mounts'
    translations and roll/pitch/yaw), `body_to_optical` being the camera body -> optical frame rotation."""
    optical = mount_matrix(camera_translation, camera_rpy_deg) @ body_to_optical
    return np.linalg.inv(optical) @ mount_matrix(imu_translation, imu_rpy_deg)


def canonical_mesh(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The same triangle mesh in an order that depends only on its geometry: vertices sorted by coordinates,
    each face rotated to start at its smallest vertex index (winding kept), faces sorted. Multi-threaded
    mesh booleans (manifold3d) return equal meshes in a schedule-dependent order; this makes their files
    byte-identical."""
    order = np.lexsort(vertices.T[::-1])
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    remapped = rank[faces]
    first = np.argmin(remapped, axis=1)
    rotated = np.take_along_axis(remapped, (first[:, None] + np.arange(3)) % 3, axis=1)
    return vertices[order], rotated[np.lexsort(rotated.T[::-1])]

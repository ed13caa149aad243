"""core.geometry against analytic rotations and scipy's own conventions."""

import numpy as np
import pytest
import trimesh
from scipy.spatial.transform import Rotation

from core.geometry import (
    canonical_mesh,
    matrix_to_quat_wxyz,
    pose_from_xyz_yaw,
    quat_wxyz_to_matrix,
    transform_points,
    wxyz_to_xyzw,
    xyzw_to_wxyz,
    yaw_of,
)


def test_quaternion_order_swaps_are_inverse_and_match_scipy():
    xyzw = Rotation.from_euler("xyz", [0.3, -0.2, 1.1]).as_quat()
    wxyz = xyzw_to_wxyz(xyzw)
    assert wxyz[0] == pytest.approx(xyzw[3])
    np.testing.assert_array_equal(wxyz_to_xyzw(wxyz), xyzw)
    np.testing.assert_allclose(quat_wxyz_to_matrix(wxyz), Rotation.from_quat(xyzw).as_matrix(), atol=1e-12)


def test_matrix_to_quaternion_is_canonical_with_w_non_negative():
    # 270 deg about Z: scipy may return w < 0; ours is the same rotation with w >= 0.
    matrix = Rotation.from_euler("z", 270, degrees=True).as_matrix()
    q = matrix_to_quat_wxyz(matrix)
    assert q[0] >= 0
    np.testing.assert_allclose(q, [np.sqrt(0.5), 0, 0, -np.sqrt(0.5)], atol=1e-12)


@pytest.mark.parametrize("yaw", [0.0, 0.5, np.pi / 2, -2.5, 3.0])
def test_pose_from_xyz_yaw_and_yaw_of_round_trip(yaw):
    pose = pose_from_xyz_yaw(1.0, -2.0, 0.5, yaw)
    assert yaw_of(pose) == pytest.approx(yaw)
    assert yaw_of(pose[:3, :3]) == pytest.approx(yaw)
    np.testing.assert_allclose(pose[:3, 3], [1.0, -2.0, 0.5])
    # The x axis of the pose points along (cos yaw, sin yaw) in the world.
    np.testing.assert_allclose(transform_points(pose, [1.0, 0.0, 0.0]) - pose[:3, 3],
                               [np.cos(yaw), np.sin(yaw), 0.0], atol=1e-12)


def test_transform_points_quarter_turn():
    pose = pose_from_xyz_yaw(1.0, 0.0, 0.0, np.pi / 2)
    points = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 3.0]])
    np.testing.assert_allclose(transform_points(pose, points), [[1.0, 1.0, 0.0], [-1.0, 0.0, 3.0]], atol=1e-12)


def test_canonical_mesh_ignores_vertex_and_face_order_and_keeps_winding():
    box = trimesh.creation.box()
    rng = np.random.default_rng(7)
    perm = rng.permutation(len(box.vertices))
    inverse = np.argsort(perm)
    # The same box with shuffled vertices, shuffled faces and each face's corners rotated (winding unchanged).
    faces = np.roll(inverse[box.faces][rng.permutation(len(box.faces))], 1, axis=1)
    shuffled = (box.vertices[perm], faces)
    a, b = canonical_mesh(box.vertices, box.faces), canonical_mesh(*shuffled)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    canonical = trimesh.Trimesh(*a, process=False)
    assert canonical.is_watertight and canonical.is_winding_consistent
    assert canonical.volume == pytest.approx(box.volume)  # a flipped face would change the signed volume

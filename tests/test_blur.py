"""postprocess.blur against independent truths: still cameras, analytic rotations (cv2 warps), the
line-by-line shift of a rolling shutter over a fronto-parallel plane, the homography model on that plane,
and masks against the smear of a moving box."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.config import BlurConfig, RollingShutterConfig
from postprocess import blur, warp

H, W = 120, 160
F = 100.0
K = np.array([[F, 0, (W - 1) / 2], [0, F, (H - 1) / 2], [0, 0, 1]])
INTERIOR = (slice(20, H - 20), slice(25, W - 25))


def texture(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Smooth RGB pattern (periods >= 20 px, so bilinear sampling errs by well under a grey level)."""
    return np.stack([128 + 90 * np.sin(x / 6.0) * np.cos(y / 8.0),
                     128 + 90 * np.cos(x / 9.0 + y / 7.0),
                     128 + 60 * np.sin((x - y) / 5.0)], axis=-1)


def smooth_image() -> np.ndarray:
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    return np.rint(texture(x, y)).astype(np.uint8)


def pose(rotvec=(0.0, 0.0, 0.0), translation=(0.0, 0.0, 0.0)) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    out[:3, 3] = translation
    return out


def linear_motion(velocity=(0.0, 0.0, 0.0), angular=(0.0, 0.0, 0.0)) -> blur.PoseCurve:
    """Pose curve of a camera at the identity at t = 0 with constant (body-frame) velocities."""
    return blur.interpolate_pose(np.array([-1.0, 0.0]), np.stack([pose(-np.array(angular), -np.array(velocity)),
                                                                  np.eye(4)]))


def interior_error(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.abs(a[INTERIOR].astype(int) - b[INTERIOR].astype(int)).max())


def test_zero_motion_leaves_image_unchanged():
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    depth = rng.uniform(0.5, 6, (H, W)).astype(np.float32)
    depth[:10] = 0
    depth[-5:] = np.nan
    frame = pose((0.1, -0.2, 0.3), (1, 2, 3))
    still = np.repeat(frame[None], 7, axis=0)
    assert np.array_equal(blur.motion_blur(rgb, depth, K, frame, still), rgb)
    assert np.array_equal(blur.motion_blur(rgb, None, K, frame, still, "homography", 2.0), rgb)
    assert np.array_equal(blur.rolling_shutter(rgb, depth, K, frame, np.repeat(frame[None], H, axis=0)), rgb)
    curve = blur.interpolate_pose(np.array([0.0, 1.0]), np.stack([frame, frame]))
    for model in blur.MODELS:
        result = blur.blur_and_shutter(rgb, depth, K, curve, 0.5, 0.03, 0.02, 30, model, 2.0)
        assert np.array_equal(result.image, rgb)


def test_rotation_about_optical_axis_is_the_average_of_rotated_images():
    rgb = smooth_image()
    depth = np.random.default_rng(2).uniform(0.5, 6, (H, W)).astype(np.float32)  # irrelevant to a rotation
    angles = np.linspace(-0.08, 0.08, 9)
    frame = pose((0.3, 0.1, 0.0), (1.0, 0.0, 2.0))
    sub_poses = np.stack([frame @ pose((0, 0, angle)) for angle in angles])
    expected = np.zeros(rgb.shape)
    for angle in angles:
        # The sub-pose camera sees frame pixel p at K Rz(angle)^T K^-1 p: cv2 maps dst(M p) = src(p).
        forward = K @ Rotation.from_rotvec((0, 0, angle)).as_matrix().T @ np.linalg.inv(K)
        expected += cv2.warpAffine(rgb, forward[:2], (W, H), flags=cv2.INTER_LINEAR, dst=rgb.copy(),
                                   borderMode=cv2.BORDER_TRANSPARENT)
    expected = np.rint(expected / len(angles)).astype(np.uint8)
    assert interior_error(expected, rgb) > 10  # the rotation blurs
    assert interior_error(blur.motion_blur(rgb, depth, K, frame, sub_poses), expected) <= 2


def test_rolling_shutter_shifts_each_row_by_the_sideways_motion():
    depth_m, speed, readout = 2.0, 3.0, 0.02
    rgb = smooth_image()
    depth = np.full((H, W), depth_m, np.float32)
    curve = linear_motion(velocity=(speed, 0, 0))
    times = blur.row_times(0.0, readout, H)
    result = blur.rolling_shutter(rgb, depth, K, curve(np.array([0.0]))[0], curve(times))
    # Row r sees the plane from x = v t_r: frame column u appears at u - f v t_r / Z.
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    shifts = F * speed * times / depth_m
    assert shifts[0] == pytest.approx(-3.0) and shifts[-1] == 0
    expected = np.rint(texture(x + shifts[:, None], y)).astype(np.uint8)
    assert interior_error(result, expected) <= 2
    combined = blur.blur_and_shutter(rgb, depth, K, curve, 0.0, 0.0, readout, 1)
    assert np.array_equal(combined.image, result)


def test_depth_aware_blur_of_a_fronto_parallel_plane_equals_the_homography_model():
    distance = 2.5
    rgb = smooth_image()
    depth = np.full((H, W), distance, np.float32)
    frame = pose((0.2, 0.0, 0.1), (0.5, 0.5, 0.0))
    curve = blur.interpolate_pose(np.array([0.0, 1.0]), np.stack([frame @ pose((0.3, -0.2, 0.1), (-3, 1, -2)),
                                                                  frame]))
    sub_poses = blur.exposure_poses(curve, 1.0, 0.04, 12)
    depth_aware = blur.motion_blur(rgb, depth, K, frame, sub_poses)
    homography = blur.motion_blur(rgb, None, K, frame, sub_poses, "homography", distance)
    assert interior_error(depth_aware, rgb) > 10  # the motion blurs
    assert interior_error(depth_aware, homography) <= 2


def edge_crossings(profile: np.ndarray) -> tuple[float, float]:
    """Sub-pixel positions where a dark-bright-dark profile crosses its mid level, rising then falling."""
    mid = (profile.min() + profile.max()) / 2
    above = profile > mid
    rise = int(np.argmax(above))
    fall = len(above) - 1 - int(np.argmax(above[::-1]))
    left = rise - 1 + (mid - profile[rise - 1]) / (profile[rise] - profile[rise - 1])
    right = fall + (profile[fall] - mid) / (profile[fall] - profile[fall + 1])
    return left, right


@pytest.mark.parametrize("readout", [0.0, 0.02])
def test_warped_masks_follow_the_blurred_box(readout):
    depth_m, speed, exposure = 2.0, 6.0, 0.02  # smear f v exposure / Z = 6 px
    rgb = np.full((H, W, 3), 30, np.uint8)
    rgb[40:80, 50:110] = 220
    label = np.zeros((H, W), np.uint16)
    label[40:80, 50:110] = 7
    depth = np.full((H, W), depth_m, np.float32)
    curve = linear_motion(velocity=(speed, 0, 0))
    result = blur.blur_and_shutter(rgb, depth, K, curve, 0.0, exposure, readout, 30)
    warped = blur.warp_labels(label, depth, K, np.eye(4), result.mean_poses if readout else result.mean_pose)
    for row in (42, 60, 77):
        left, right = edge_crossings(result.image[row, :, 0].astype(float))
        inside = np.flatnonzero(warped[row] == 7)
        assert abs((inside[0] - 0.5) - left) <= 1 and abs((inside[-1] + 0.5) - right) <= 1
    x_min, y_min, x_max, y_max = blur.boxes_from_mask(warped)[7]
    assert (y_min, y_max) == (40, 79)
    # With a rolling shutter the top row is shifted most: the box widens by the shift across its rows.
    assert abs((x_max - x_min) - (59 + F * speed * readout * 39 / (H - 1) / depth_m)) <= 1


def test_boxes_from_mask_gives_inclusive_bounds():
    mask = np.zeros((10, 12), np.uint16)
    mask[2:5, 3:9] = 4
    mask[7, 11] = 9
    assert blur.boxes_from_mask(mask) == {4: (3, 2, 8, 4), 9: (11, 7, 11, 7)}


def test_pose_curve_and_exposure_instants():
    end = pose((0, 0, 0.4), (2, 0, 0))
    curve = blur.interpolate_pose(np.array([1.0, 2.0]), np.stack([np.eye(4), end]))
    middle = curve(1.5)
    assert np.allclose(middle[:3, 3], [1, 0, 0])
    assert np.allclose(Rotation.from_matrix(middle[:3, :3]).as_rotvec(), [0, 0, 0.2])
    assert np.allclose(curve(np.array([0.0, 3.0])), np.stack([np.eye(4), end]))  # held before and after
    assert np.allclose(blur.exposure_times(2.0, 0.5, 3), [1.5, 1.75, 2.0])
    sub_poses = blur.exposure_poses(curve, 2.0, 0.5, 3)
    assert np.allclose(sub_poses[-1], end) and np.allclose(sub_poses[0], curve(1.5))
    assert np.allclose(blur.row_times(1.0, 0.1, 3), [0.9, 0.95, 1.0])


def test_blur_without_readout_is_plain_motion_blur_and_records_its_parameters():
    rng = np.random.default_rng(3)
    rgb = smooth_image()
    depth = rng.uniform(1, 4, (H, W)).astype(np.float32)
    curve = linear_motion(velocity=(1.0, -0.5, 2.0), angular=(0.3, -0.2, 0.5))
    result = blur.blur_and_shutter(rgb, depth, K, curve, 0.0, 0.03, 0.0, 10)
    sub_poses = blur.exposure_poses(curve, 0.0, 0.03, 10)
    assert np.array_equal(result.image, blur.motion_blur(rgb, depth, K, np.eye(4), sub_poses))
    params = result.params
    assert params["exposure"] == 0.03 and params["readout"] == 0.0 and params["sub_poses"] == 10
    assert np.allclose(params["sub_pose_transforms"], sub_poses)  # the frame pose is the identity here
    assert np.allclose(params["mean_pose_transform"], curve(-0.015), atol=1e-6)  # constant velocity


def test_same_inputs_give_the_same_frames_and_timings():
    rng = np.random.default_rng(4)
    rgb = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    depth = rng.uniform(0.5, 6, (H, W)).astype(np.float32)
    curve = linear_motion(velocity=(1.0, 0.2, 0.5), angular=(0.2, 0.4, -0.3))
    first = blur.blur_and_shutter(rgb, depth, K, curve, 0.0, 0.03, 0.015, 30)
    second = blur.blur_and_shutter(rgb, depth, K, curve, 0.0, 0.03, 0.015, 30)
    assert np.array_equal(first.image, second.image) and first.params == second.params
    config = BlurConfig(exposure=None), RollingShutterConfig()
    timings = [blur.sequence_timing(*config, np.random.default_rng(5)) for _ in range(2)]
    assert timings[0] == timings[1] and 0 < timings[0][0] <= 0.1 and timings[0][1] >= 0
    assert blur.sequence_timing(None, None, np.random.default_rng(5)) == (0.0, 0.0)


def test_path_average_follows_the_exact_pose_by_pose_average():
    """warp.path_rows (exact at the path's ends and middle, interpolated between, fewer samples on short
    paths) against warp.average_rows (every pose refined) on a scene with depth steps, a slanted plane and
    a no-return patch, under translation and rotation with a rolling shutter."""
    rgb = smooth_image()
    y = np.repeat(np.arange(H)[:, None], W, axis=1)
    depth = np.where(y > 70, 1.2 * F / np.maximum(y - (H - 1) / 2, 1e-3), 5.0).astype(np.float32)  # wall, floor
    depth[30:80, 30:70] = 1.5  # a box in front
    depth[:15, 120:] = 0  # no return
    for velocity, angular, samples in (((1.5, 0.3, -0.4), (0.3, -1.0, 0.5), 30), ((0.2, 0, 0), (0, 0, 0.2), 9)):
        curve = linear_motion(velocity=velocity, angular=angular)
        times = blur.row_times(0.0, 0.015, H)[:, None] + blur.exposure_times(0.0, 0.02, samples)[None, :]
        A, o = warp.rays(K, np.eye(4), curve(times.reshape(-1)).reshape(H, samples, 4, 4))
        inverse = warp.inverse_depth(depth)
        exact = warp.average_rows(rgb, inverse, F, F, K[0, 2], K[1, 2], A, o).astype(int)
        weights = warp.path_weights(samples)
        weights.flags.writeable = False  # as postprocess.blur passes them (cached): the signature warm-up compiled
        path = warp.path_rows(rgb.astype(np.float32), inverse, F, F, K[0, 2], K[1, 2], A, o, weights,
                              warp.PATH_DENSITY, warp.SMOOTH_TOLERANCE).astype(int)
        error = np.abs(path - exact)
        assert interior_error(path, rgb) > 5  # the motion blurs
        # Off by more than 2 grey levels only at a few pixels whose path crosses a depth step unnoticed.
        assert error.mean() < 0.1 and (error > 2).mean() < 0.005 and error.max() <= 10


def test_path_weights_keep_the_uniform_mean():
    for samples in (1, 2, 3, 9, 30):
        weights = warp.path_weights(samples)
        assert np.allclose(weights[1:].sum(axis=1), 1, atol=1e-6)
        assert np.allclose(weights[samples], 1 / samples)  # as many samples as poses: the plain mean
        if samples > 2:
            n = samples // 2 + 1  # evenly spread over [0, 1], symmetric in time
            assert np.allclose(weights[n, :n], weights[n, :n][::-1])

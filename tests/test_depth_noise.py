"""postprocess.depth_noise: on large constant-depth images, per distance bin, the empirical noise matches each
model's sigma(z) (and the gaussian model's mean) written out independently here; validity, range cut,
determinism, the PNG conversion and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from core.config import DepthNoiseConfig
from core.errors import InputError
from core.formats.images import depth_metres, depth_millimetres
from postprocess.depth_noise import apply_depth_noise

SIZE = (400, 400)  # 160,000 pixels: the std of a std estimate is ~0.18 %
FOCAL_PX = 600.0
K = np.array([[FOCAL_PX, 0.0, 320.0], [0.0, FOCAL_PX, 240.0], [0.0, 0.0, 1.0]])


def constant(z: float) -> np.ndarray:
    return np.full(SIZE, z, dtype=np.float32)


def error_stats(z: float, config: DepthNoiseConfig, seed: int = 0) -> tuple[float, float, float]:
    """(mean error, std, valid fraction) of the noisy image of a flat wall at z."""
    noisy = apply_depth_noise(constant(z), K, config, np.random.default_rng(seed))
    assert noisy.dtype == np.float32 and noisy.shape == SIZE
    error = noisy[np.isfinite(noisy)].astype(np.float64) - np.float64(np.float32(z))
    return float(error.mean()), float(error.std()), float(np.isfinite(noisy).mean())


@pytest.mark.parametrize("z", [0.3, 0.8, 1.5, 2.5, 3.4])
def test_realsense_std_is_z2_subpixel_over_f_baseline(z):
    config = DepthNoiseConfig(model="realsense", subpixel=0.2, baseline=0.05)
    sigma = z ** 2 * 0.2 / (FOCAL_PX * 0.05)
    mean, std, valid = error_stats(z, config)
    assert valid == 1.0
    assert abs(std / sigma - 1.0) < 0.02
    assert abs(mean) < 4 * sigma / np.sqrt(SIZE[0] * SIZE[1])


def test_realsense_sigma_is_capped_at_ten_metres():
    # z = 100 m with f = 600 px: z^2 0.2 / 30 = 66.7 m, capped to 10 m (still 10 sigma above 0: all valid).
    config = DepthNoiseConfig(model="realsense", max_range=200.0)
    _, std, valid = error_stats(100.0, config)
    assert valid == 1.0
    assert abs(std / 10.0 - 1.0) < 0.02


@pytest.mark.parametrize("z", [0.5, 1.0, 2.0, 3.0])
def test_kinect_std_is_nguyen_quadratic(z):
    config = DepthNoiseConfig(model="kinect")
    sigma = 0.0012 + 0.0019 * (z - 0.4) ** 2
    mean, std, valid = error_stats(z, config)
    assert valid == 1.0
    # float32 output quantises at ~z * 6e-8: negligible against sigma >= 1.2 mm.
    assert abs(std / sigma - 1.0) < 0.02
    assert abs(mean) < 4 * sigma / np.sqrt(SIZE[0] * SIZE[1])


@pytest.mark.parametrize("z", [0.2, 0.49, 3.01, 3.4])
def test_kinect_invalid_outside_half_to_three_metres(z):
    noisy = apply_depth_noise(constant(z), K, DepthNoiseConfig(model="kinect"), np.random.default_rng(0))
    assert np.all(np.isnan(noisy))


@pytest.mark.parametrize("z", [0.5, 1.2, 2.0, 3.3])
def test_gaussian_mean_and_std_follow_their_polynomials(z):
    config = DepthNoiseConfig(model="gaussian", gaussian_mean=[0.001, -0.002, 0.003],
                              gaussian_sigma=[0.002, 0.001, 0.004])
    mean_truth = 0.001 - 0.002 * z + 0.003 * z ** 2
    sigma = 0.002 + 0.001 * z + 0.004 * z ** 2
    mean, std, valid = error_stats(z, config)
    assert valid == 1.0
    assert abs(std / sigma - 1.0) < 0.02
    assert abs(mean - mean_truth) < 4 * sigma / np.sqrt(SIZE[0] * SIZE[1])


def test_gaussian_default_is_one_millimetre_per_square_metre():
    _, std, _ = error_stats(2.0, DepthNoiseConfig(model="gaussian"))
    assert abs(std / (0.001 * 2.0 ** 2) - 1.0) < 0.02


def test_zero_sigma_is_exact():
    config = DepthNoiseConfig(model="gaussian", gaussian_mean=[0.0], gaussian_sigma=[0.0])
    depth = np.linspace(0.1, 3.4, 100, dtype=np.float32).reshape(10, 10)
    assert np.array_equal(apply_depth_noise(depth, K, config, np.random.default_rng(0)), depth)


@pytest.mark.parametrize("model", ["realsense", "kinect", "gaussian"])
def test_range_cut_is_on_true_depth_and_invalid_inputs_stay_invalid(model):
    config = DepthNoiseConfig(model=model, min_range=1.0, max_range=2.0)
    depth = np.array([[0.0, np.nan, np.inf, -1.0],
                      [0.99, 1.0, 1.5, 2.0],
                      [2.01, 5.0, 1.2, 0.0]], dtype=np.float32)
    before = depth.copy()
    noisy = apply_depth_noise(depth, K, config, np.random.default_rng(3))
    expected_valid = np.array([[False, False, False, False],
                               [False, True, True, True],
                               [False, False, True, False]])
    assert np.array_equal(np.isfinite(noisy), expected_valid)
    assert np.array_equal(depth, before, equal_nan=True)  # input untouched


def test_true_depth_inside_range_stays_valid_even_if_noise_crosses_it():
    # A wall exactly at max_range: half the noisy values land beyond it, and all are kept (cut on TRUE depth).
    config = DepthNoiseConfig(model="kinect", max_range=2.0)
    noisy = apply_depth_noise(constant(2.0), K, config, np.random.default_rng(4))
    assert np.all(np.isfinite(noisy))
    assert 0.45 < np.mean(noisy > 2.0) < 0.55


def test_noisy_depth_at_or_below_zero_is_invalid():
    config = DepthNoiseConfig(model="gaussian", gaussian_sigma=[0.1])  # z = 0.1 m: ~16 % of draws go below 0
    noisy = apply_depth_noise(constant(0.1), K, config, np.random.default_rng(5))
    finite = noisy[np.isfinite(noisy)]
    assert np.all(finite > 0)
    assert 0.12 < np.mean(~np.isfinite(noisy)) < 0.20


def test_same_seed_same_bytes_other_seed_other_noise():
    depth = np.random.default_rng(9).uniform(0.3, 4.0, (120, 160)).astype(np.float32)
    depth[::7, ::5] = 0.0
    config = DepthNoiseConfig()
    first = apply_depth_noise(depth, K, config, np.random.default_rng(11))
    again = apply_depth_noise(depth, K, config, np.random.default_rng(11))
    other = apply_depth_noise(depth, K, config, np.random.default_rng(12))
    assert first.tobytes() == again.tobytes()
    valid = np.isfinite(first) & np.isfinite(other)
    assert valid.mean() > 0.8
    assert not np.any(first[valid] == other[valid])
    assert np.all(np.isnan(first[::7, ::5]))


def test_depth_png_stores_nan_as_zero_and_round_trips():
    depth = np.array([[np.nan, 0.0, 1.2346], [2.0, np.inf, 70.0]], dtype=np.float32)
    stored = depth_millimetres(depth)
    assert stored.dtype == np.uint16
    assert stored.tolist() == [[0, 0, 1235], [2000, 0, 65535]]  # rounded; beyond 65.535 m saturates
    assert depth_metres(stored)[1, 0] == np.float32(2.0)


@pytest.mark.parametrize("depth, K_bad, field, words", [
    (np.ones((2, 2, 1)), K, "depth", "2-D"),
    (np.ones(4), K, "depth", "2-D"),
    (np.ones((2, 2)), np.eye(2), "K", "3x3"),
    (np.ones((2, 2)), np.diag([np.nan, 1.0, 1.0]), "K", "3x3"),
    (np.ones((2, 2)), np.diag([0.0, 1.0, 1.0]), "K", "K[0, 0]"),
])
def test_bad_input_raises_input_error(depth, K_bad, field, words):
    with pytest.raises(InputError) as error:
        apply_depth_noise(depth, K_bad, DepthNoiseConfig(), np.random.default_rng(0))
    assert error.value.field == field
    assert words in str(error.value)


def test_gaussian_settings_that_leave_float32_are_refused_naming_them():
    depth = np.full((4, 5), 2.0)
    config = DepthNoiseConfig(model="gaussian", gaussian_sigma=[1e308])
    with pytest.raises(InputError) as error:
        apply_depth_noise(depth, K, config, np.random.default_rng(0))
    assert error.value.field == "gaussian_sigma" and "[1e+308]" in str(error.value)
    # the largest sigma float32 holds still gives finite depths (or no return where negative)
    within = apply_depth_noise(depth, K, DepthNoiseConfig(model="gaussian", gaussian_sigma=[1e37]),
                               np.random.default_rng(0))
    assert np.all(np.isnan(within) | np.isfinite(within))

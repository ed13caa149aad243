"""postprocess.imu_noise against independent truth: allantools' overlapping Allan deviation for the white
noise and the bias random walk, the Gauss-Markov steady state and recursion, the turn-on draws, determinism
and bad input."""

from __future__ import annotations

import allantools
import numpy as np
import pytest

from core.config import ImuNoiseConfig
from core.errors import InputError
from postprocess.imu_noise import ImuNoiseResult, apply_imu_noise, sample_period

RATE_HZ = 200.0
QUIET = {"gyro_noise_density": 0.0, "gyro_random_walk": 0.0, "gyro_turn_on_bias": 0.0,
         "accel_noise_density": 0.0, "accel_random_walk": 0.0, "accel_turn_on_bias": 0.0}


def constant_stream(seconds: float, rate_hz: float = RATE_HZ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A robot at rest: gravity on z, no rotation."""
    count = round(seconds * rate_hz)
    time = np.arange(count) / rate_hz
    accel = np.tile([0.0, 0.0, 9.81], (count, 1))
    gyro = np.zeros((count, 3))
    return time, accel, gyro


def noisy(config: ImuNoiseConfig, seconds: float, seed: int) -> tuple[np.ndarray, np.ndarray, ImuNoiseResult]:
    time, accel, gyro = constant_stream(seconds)
    return accel, gyro, apply_imu_noise(time, accel, gyro, config, np.random.default_rng(seed))


def adev(series: np.ndarray, taus: list[float]) -> np.ndarray:
    """allantools' overlapping Allan deviation of a rate signal (data_type "freq") sampled at RATE_HZ."""
    taus_out, deviation, _, _ = allantools.oadev(series, rate=RATE_HZ, data_type="freq", taus=taus)
    np.testing.assert_allclose(taus_out, taus)
    return deviation


def test_white_noise_allan_deviation_at_one_second_is_the_noise_density():
    # White rate noise: ADEV(tau) = N / sqrt(tau), so ADEV(1 s) = N. Two hours at 200 Hz: ~0.5 % scatter.
    config = ImuNoiseConfig(**{**QUIET, "gyro_noise_density": 3.394e-4, "accel_noise_density": 4.0e-3})
    accel, gyro, result = noisy(config, 2 * 3600, seed=1)
    for measured, truth, density in ((result.angular_velocity, gyro, config.gyro_noise_density),
                                     (result.linear_acceleration, accel, config.accel_noise_density)):
        ratios = np.array([adev(measured[:, axis] - truth[:, axis], [1.0, 4.0])
                           for axis in range(3)]) / (density / np.sqrt([1.0, 4.0]))
        print("white noise ADEV / (N / sqrt(tau)) at tau = 1, 4 s, per axis:", ratios.round(4).tolist())
        np.testing.assert_allclose(ratios[:, 0], 1.0, atol=0.03)
        np.testing.assert_allclose(ratios[:, 1], 1.0, atol=0.06)  # fewer 4 s intervals: more scatter
    assert np.all(result.gyro_bias == 0) and np.all(result.accel_bias == 0)


def test_bias_random_walk_allan_deviation_is_k_sqrt_tau_over_3():
    # With tau_correlation >> run length the Gauss-Markov bias is a rate random walk: ADEV(tau) = K sqrt(tau / 3).
    # Its ADEV scatters more (few independent tau-long intervals), hence 8 % on the 3-axis mean, 15 % per axis.
    config = ImuNoiseConfig(**{**QUIET, "gyro_random_walk": 3.8785e-5, "gyro_bias_correlation_time": 1e9,
                               "accel_random_walk": 6.0e-3, "accel_bias_correlation_time": 1e9})
    taus = [1.0, 3.0, 10.0]
    accel, gyro, result = noisy(config, 2 * 3600, seed=2)
    for measured, truth, walk in ((result.angular_velocity, gyro, config.gyro_random_walk),
                                  (result.linear_acceleration, accel, config.accel_random_walk)):
        ratios = np.array([adev(measured[:, axis] - truth[:, axis], taus)
                           for axis in range(3)]) / (walk * np.sqrt(np.array(taus) / 3.0))
        print("random walk ADEV / (K sqrt(tau / 3)) at tau = 1, 3, 10 s, per axis:", ratios.round(4).tolist())
        np.testing.assert_allclose(ratios, 1.0, atol=0.15)
        np.testing.assert_allclose(ratios.mean(axis=0), 1.0, atol=0.08)


def test_white_and_walk_together_follow_both_asymptotes():
    # GRADE's default gyro: white dominates at 1 s, both add in quadrature (they are independent).
    config = ImuNoiseConfig(**{**QUIET, "gyro_noise_density": 3.394e-4, "gyro_random_walk": 3.8785e-5,
                               "gyro_bias_correlation_time": 1e9})
    _, gyro, result = noisy(config, 2 * 3600, seed=3)
    taus = np.array([1.0, 10.0])
    expected = np.sqrt(config.gyro_noise_density ** 2 / taus + config.gyro_random_walk ** 2 * taus / 3.0)
    ratios = np.array([adev(result.angular_velocity[:, axis] - gyro[:, axis], taus.tolist()) for axis in range(3)]) / expected
    np.testing.assert_allclose(ratios.mean(axis=0), 1.0, atol=0.05)


def test_short_correlation_time_bias_reaches_gauss_markov_steady_state():
    # Steady state of b_k = phi b_{k-1} + sigma_b_d w_k: var = random_walk^2 tau / 2. One hour with tau = 1 s
    # gives ~3600 correlation times per axis (~2.4 % scatter on a variance, ~1.4 % over 3 axes).
    tau = 1.0
    config = ImuNoiseConfig(**{**QUIET, "gyro_random_walk": 2.0e-3, "gyro_bias_correlation_time": tau,
                               "accel_random_walk": 5.0e-2, "accel_bias_correlation_time": tau})
    _, _, result = noisy(config, 3600, seed=4)
    for bias, walk in ((result.gyro_bias, config.gyro_random_walk), (result.accel_bias, config.accel_random_walk)):
        steady = walk ** 2 * tau / 2.0
        settled = bias[int(20 * tau * RATE_HZ):]  # past the start from 0
        ratio = settled.var(axis=0).mean() / steady
        print("Gauss-Markov bias variance / (K^2 tau / 2):", round(float(ratio), 4))
        assert abs(ratio - 1.0) < 0.05
        # Correlation after one correlation time: exp(-1).
        lag = int(tau * RATE_HZ)
        correlation = np.mean([np.corrcoef(settled[:-lag, axis], settled[lag:, axis])[0, 1] for axis in range(3)])
        assert abs(correlation - np.exp(-1.0)) < 0.03


def test_bias_follows_the_rotors_recursion_from_zero():
    # The increments b_k - phi b_{k-1} (b_{-1} = 0) must be white with sigma_b_d, the first one included.
    dt, tau, walk = 1.0 / RATE_HZ, 50.0, 1.0e-2
    config = ImuNoiseConfig(**{**QUIET, "gyro_random_walk": walk, "gyro_bias_correlation_time": tau})
    _, _, result = noisy(config, 1000, seed=5)
    phi = np.exp(-dt / tau)
    sigma_b_d = np.sqrt(walk ** 2 * tau / 2.0 * (1.0 - np.exp(-2.0 * dt / tau)))
    previous = np.vstack([np.zeros((1, 3)), result.gyro_bias[:-1]])
    increments = result.gyro_bias - phi * previous
    assert abs(increments.std() / sigma_b_d - 1.0) < 0.01
    assert abs(np.corrcoef(increments[:-1, 0], increments[1:, 0])[0, 1]) < 0.01
    # The bias starts at 0: the first reading carries a single increment, not a steady-state draw.
    first_biases = np.array([noisy(config, 0.01, seed)[2].gyro_bias[0] for seed in range(400)])
    assert abs(first_biases.std() / sigma_b_d - 1.0) < 0.1


def test_measured_is_true_plus_bias_plus_white():
    config = ImuNoiseConfig()  # GRADE's defaults, everything on
    accel, gyro, result = noisy(config, 600, seed=6)
    dt = 1.0 / RATE_HZ
    for measured, truth, bias, density in (
            (result.angular_velocity, gyro, result.gyro_bias, config.gyro_noise_density),
            (result.linear_acceleration, accel, result.accel_bias, config.accel_noise_density)):
        assert measured.shape == truth.shape and measured.dtype == np.float64
        white = measured - truth - bias
        assert abs(white.std() / (density / np.sqrt(dt)) - 1.0) < 0.01
        assert np.all(np.abs(white.mean(axis=0)) < 4 * density / np.sqrt(dt) / np.sqrt(len(white)))


def turn_on_draws(draw: str, seeds: int) -> tuple[np.ndarray, np.ndarray, ImuNoiseConfig]:
    config = ImuNoiseConfig(**{**QUIET, "gyro_turn_on_bias": 0.0087, "accel_turn_on_bias": 0.196,
                               "turn_on_draw": draw})
    results = [noisy(config, 2 / RATE_HZ, seed)[2] for seed in range(seeds)]
    gyro = np.array([result.gyro_bias for result in results])  # (seeds, 2, 3)
    accel = np.array([result.accel_bias for result in results])
    # Drawn once: the same for every sample of a stream.
    assert np.all(gyro[:, 0] == gyro[:, 1]) and np.all(accel[:, 0] == accel[:, 1])
    return gyro[:, 0].ravel(), accel[:, 0].ravel(), config


def test_turn_on_bias_normal_draw_has_zero_mean_and_turn_on_std():
    gyro, accel, config = turn_on_draws("normal", seeds=2000)  # 6000 draws each
    for draws, sigma in ((gyro, config.gyro_turn_on_bias), (accel, config.accel_turn_on_bias)):
        assert abs(draws.mean()) < 4 * sigma / np.sqrt(draws.size)
        assert abs(draws.std() / sigma - 1.0) < 0.05
        assert np.any(draws < 0)


def test_turn_on_bias_upstream_uniform_draw_is_positive_within_bound():
    gyro, accel, config = turn_on_draws("upstream_uniform", seeds=2000)
    for draws, bound in ((gyro, config.gyro_turn_on_bias), (accel, config.accel_turn_on_bias)):
        assert np.all(draws >= 0) and np.all(draws <= bound)
        assert abs(draws.mean() / (bound / 2) - 1.0) < 0.05  # U(0, b): mean b / 2
        assert draws.max() > 0.95 * bound


def test_same_seed_same_bytes_other_generator_other_noise():
    time, accel, gyro = constant_stream(60)
    config = ImuNoiseConfig()
    first = apply_imu_noise(time, accel, gyro, config, np.random.default_rng(7))
    again = apply_imu_noise(time, accel, gyro, config, np.random.default_rng(7))
    other = apply_imu_noise(time, accel, gyro, config, np.random.default_rng(8))
    for field in ("linear_acceleration", "angular_velocity", "accel_bias", "gyro_bias"):
        assert getattr(first, field).tobytes() == getattr(again, field).tobytes()
        assert not np.any(getattr(first, field) == getattr(other, field))
    # Inputs untouched.
    assert np.all(gyro == 0) and np.all(accel[:, 2] == 9.81)


def test_dt_is_the_median_step():
    time = np.arange(1000) / RATE_HZ
    time[500:] += 0.5 / RATE_HZ  # one late sample does not change the period
    assert sample_period(time) == pytest.approx(1.0 / RATE_HZ)


@pytest.mark.parametrize("time, accel, gyro, field, words", [
    (np.array([0.0]), np.zeros((1, 3)), np.zeros((1, 3)), "time", "at least 2 samples"),
    (np.array([]), np.zeros((0, 3)), np.zeros((0, 3)), "time", "at least 2 samples"),
    (np.zeros((3, 1)), np.zeros((3, 3)), np.zeros((3, 3)), "time", "1-D"),
    (np.array([0.0, 0.1, 0.1]), np.zeros((3, 3)), np.zeros((3, 3)), "time", "increase strictly"),
    (np.array([0.0, 0.2, 0.1]), np.zeros((3, 3)), np.zeros((3, 3)), "time", "increase strictly"),
    (np.array([0.0, np.nan, 0.1]), np.zeros((3, 3)), np.zeros((3, 3)), "time", "inf or NaN"),
    (np.arange(3.0), np.zeros((2, 3)), np.zeros((3, 3)), "linear_acceleration", "shape (3, 3)"),
    (np.arange(3.0), np.zeros((3, 3)), np.zeros((3, 2)), "angular_velocity", "shape (3, 3)"),
    (np.arange(3.0), np.zeros(9), np.zeros((3, 3)), "linear_acceleration", "shape (3, 3)"),
    (np.arange(3.0), np.zeros((3, 3)), np.full((3, 3), np.inf), "angular_velocity", "inf or NaN"),
])
def test_bad_input_raises_input_error(time, accel, gyro, field, words):
    with pytest.raises(InputError) as error:
        apply_imu_noise(time, accel, gyro, ImuNoiseConfig(), np.random.default_rng(0))
    assert error.value.field == field
    assert words in str(error.value)


@pytest.mark.parametrize("setting", ["accel_noise_density", "gyro_noise_density", "gyro_random_walk"])
def test_settings_that_overflow_are_refused_naming_them(setting):
    time = np.arange(100) / RATE_HZ
    with pytest.raises(InputError) as error:
        apply_imu_noise(time, np.zeros((100, 3)), np.zeros((100, 3)), ImuNoiseConfig(**{setting: 1e308}),
                        np.random.default_rng(0))
    assert error.value.field == setting and f"{setting} = 1e+308" in str(error.value)

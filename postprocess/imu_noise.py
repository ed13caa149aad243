"""IMU noise: the RotorS discrete noise model GRADE applies to a clean IMU stream, per axis.

For a stream sampled every dt seconds (the median step of its time array), each axis of each sensor gets

    measured_k = true_k + turn_on + b_k + sigma_d * n_k                 n_k ~ N(0, 1), white
    b_k        = phi * b_{k-1} + sigma_b_d * w_k,  b_{-1} = 0           w_k ~ N(0, 1), first-order Gauss-Markov
    sigma_d    = noise_density / sqrt(dt)
    phi        = exp(-dt / tau)
    sigma_b_d  = sqrt(random_walk^2 * tau / 2 * (1 - exp(-2 dt / tau)))  (exact discretisation, Maybeck 4-114)
    turn_on    ~ N(0, turn_on_bias) once per axis, or U(0, turn_on_bias) with turn_on_draw="upstream_uniform"

As in RotorS' gazebo_imu_plugin the bias is stepped before each reading, so the first reading already
carries one increment. Units: gyroscope rad/s (density rad/s/sqrt(Hz), random walk rad/s^2/sqrt(Hz)),
accelerometer m/s^2 (m/s^2/sqrt(Hz), m/s^3/sqrt(Hz)); tau in seconds.

All randomness comes from the caller's generator, drawn in a fixed order (accelerometer turn-on, bias
increments, white noise, then the same for the gyroscope) and whatever the parameters are (a zero sigma
still draws), so one generator state always gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.signal import lfilter

from core.config import ImuNoiseConfig
from core.errors import InputError

AXES = 3


@dataclass(frozen=True)
class ImuNoiseResult:
    """Noisy readings and the total bias (turn-on + Gauss-Markov) in each, all (N, 3) float64."""

    linear_acceleration: np.ndarray  # m/s^2
    angular_velocity: np.ndarray  # rad/s
    accel_bias: np.ndarray  # m/s^2
    gyro_bias: np.ndarray  # rad/s


@dataclass(frozen=True)
class _AxisNoise:
    """One sensor's noise parameters (one of the two halves of ImuNoiseConfig)."""

    noise_density: float
    random_walk: float
    correlation_time: float
    turn_on: float


def sample_period(time: np.ndarray) -> float:
    """The stream's dt in s: the median step, robust to an odd late or early sample."""
    time = np.asarray(time, dtype=np.float64)
    if time.ndim != 1 or time.size < 2:
        raise InputError(f"an IMU stream needs at least 2 samples in a 1-D time array, got shape {time.shape}",
                         field="time")
    if not np.all(np.isfinite(time)):
        raise InputError("the IMU time array holds inf or NaN", field="time")
    steps = np.diff(time)
    if np.any(steps <= 0):
        first = int(np.argmax(steps <= 0))
        raise InputError(f"IMU time must increase strictly; sample {first + 1} ({time[first + 1]!r} s) does not "
                         f"follow {time[first]!r} s", field="time")
    return float(np.median(steps))


def _checked_readings(values: np.ndarray, count: int, field: str) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (count, AXES):
        raise InputError(f"expected shape ({count}, {AXES}) to match the {count} time samples, got {values.shape}",
                         field=field)
    if not np.all(np.isfinite(values)):
        raise InputError("the readings hold inf or NaN", field=field)
    return values


def _turn_on(turn_on: float, draw: str, rng: np.random.Generator) -> np.ndarray:
    if draw == "upstream_uniform":
        # GRADE's code draws U(0, b): always positive; kept only to replicate its data.
        return rng.uniform(0.0, turn_on, AXES)
    return turn_on * rng.standard_normal(AXES)


def _total_bias(count: int, dt: float, noise: _AxisNoise, draw: str,
                rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(bias (N, 3) incl. turn-on, white noise (N, 3)) for one sensor."""
    tau = noise.correlation_time
    phi = np.exp(-dt / tau)
    # -expm1(-x) = 1 - exp(-x) without cancellation when dt << tau (tau is 1000 s by default).
    # In numpy floats: settings too large overflow to inf (refused by the caller) instead of raising here.
    sigma_b_d = np.sqrt(np.float64(noise.random_walk) ** 2 * tau / 2.0 * -np.expm1(-2.0 * dt / tau))
    sigma_d = noise.noise_density / np.sqrt(dt)

    turn_on = _turn_on(noise.turn_on, draw, rng)
    increments = sigma_b_d * rng.standard_normal((count, AXES))
    white = sigma_d * rng.standard_normal((count, AXES))
    # b_k = phi b_{k-1} + increment_k with b_{-1} = 0 is the IIR filter 1 / (1 - phi z^-1): lfilter runs it in C.
    gauss_markov = lfilter([1.0], [1.0, -phi], increments, axis=0)
    return turn_on + gauss_markov, white


def apply_imu_noise(time: np.ndarray, linear_acceleration: np.ndarray, angular_velocity: np.ndarray,
                    config: ImuNoiseConfig, rng: np.random.Generator) -> ImuNoiseResult:
    """Add RotorS IMU noise (module docstring) to one IMU stream.

    `time` (N,) s, strictly increasing, N >= 2; `linear_acceleration` (N, 3) m/s^2; `angular_velocity`
    (N, 3) rad/s. Raises InputError for a malformed stream. The inputs are not modified.
    """
    dt = sample_period(time)
    count = len(time)
    accel = _checked_readings(linear_acceleration, count, "linear_acceleration")
    gyro = _checked_readings(angular_velocity, count, "angular_velocity")

    accel_noise = _AxisNoise(config.accel_noise_density, config.accel_random_walk,
                             config.accel_bias_correlation_time, config.accel_turn_on_bias)
    gyro_noise = _AxisNoise(config.gyro_noise_density, config.gyro_random_walk,
                            config.gyro_bias_correlation_time, config.gyro_turn_on_bias)
    with np.errstate(over="ignore", invalid="ignore"):
        accel_bias, accel_white = _total_bias(count, dt, accel_noise, config.turn_on_draw, rng)
        gyro_bias, gyro_white = _total_bias(count, dt, gyro_noise, config.turn_on_draw, rng)
        result = ImuNoiseResult(linear_acceleration=accel + accel_bias + accel_white,
                                angular_velocity=gyro + gyro_bias + gyro_white,
                                accel_bias=accel_bias, gyro_bias=gyro_bias)
    for sensor, noisy in (("accel", result.linear_acceleration), ("gyro", result.angular_velocity)):
        if not np.all(np.isfinite(noisy)):
            # Finite settings may still overflow (a density of 1e308 over a 2.5 ms step): refused, never written.
            settings = {f"{sensor}_{name}": getattr(config, f"{sensor}_{name}")
                        for name in ("noise_density", "random_walk", "turn_on_bias")}
            values = ", ".join(f"{name} = {value!r}" for name, value in settings.items())
            raise InputError(f"the noisy readings overflow to inf or NaN with {values}: these are standard "
                             f"deviations of a real IMU, orders of magnitude below 1",
                             field=max(settings, key=settings.__getitem__))
    return result

"""A discrete PID on scalars or small vectors, with output and rate limits and anti-windup.

u = kp e + ki integral(e) + kd de/dt, element-wise. The derivative is either passed in (e.g. minus the
measured velocity, which avoids the kick a set-point jump gives a differentiated error) or taken as the
finite difference of the error (zero on the first update). Anti-windup: the integral term ki integral(e)
is clamped to +-`integral_limit` (in output units) and frozen while the output saturates in the
direction the error pushes (conditional integration), so a long saturation does not leave a wound-up
integral that overshoots afterwards. The output is clipped to +-`output_limit` and then moved at most
`rate_limit` per second from the last output (zero before the first update: the actuator starts at
rest). Limits may be scalars or arrays with one limit per element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Pid:
    kp: float
    ki: float = 0.0
    kd: float = 0.0
    output_limit: float | np.ndarray = math.inf
    rate_limit: float | np.ndarray = math.inf
    integral_limit: float | np.ndarray = math.inf
    _integral: np.ndarray | None = field(default=None, init=False, repr=False)
    _last_error: np.ndarray | None = field(default=None, init=False, repr=False)
    _last_output: np.ndarray | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("kp", "ki", "kd", "output_limit", "rate_limit", "integral_limit"):
            value = getattr(self, name)
            if not np.all(np.asarray(value) >= 0):
                raise ValueError(f"PID {name} must be >= 0, got {value}")

    def reset(self) -> None:
        """Forget the integral, the last error and the last output."""
        self._integral = self._last_error = self._last_output = None

    def update(self, error: np.ndarray | float, dt: float, error_rate: np.ndarray | float | None = None) -> np.ndarray:
        """The output for `error` after `dt` seconds; `error_rate` is de/dt if known."""
        if not dt > 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        error = np.asarray(error, dtype=np.float64)
        if error_rate is None:
            error_rate = np.zeros_like(error) if self._last_error is None else (error - self._last_error) / dt
        error_rate = np.asarray(error_rate, dtype=np.float64)
        integral = np.zeros_like(error) if self._integral is None else self._integral  # ki * integral(e)
        candidate = np.clip(integral + self.ki * error * dt, -self.integral_limit, self.integral_limit)
        unclipped = self.kp * error + candidate + self.kd * error_rate
        # Integrate only where the output is inside its limit or the error pulls it back in.
        saturated = (np.abs(unclipped) > self.output_limit) & (np.sign(unclipped) == np.sign(error))
        integral = np.where(saturated, integral, candidate)
        output = np.clip(self.kp * error + integral + self.kd * error_rate, -self.output_limit, self.output_limit)
        last = np.zeros_like(output) if self._last_output is None else self._last_output
        step = np.asarray(self.rate_limit) * dt
        output = np.clip(output, last - step, last + step)
        self._integral, self._last_error, self._last_output = integral, error, output
        return output

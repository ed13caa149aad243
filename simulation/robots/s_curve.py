"""The learned S-shaped velocity profile of the TIAGo++ Omni base, its parameter network, and the
command follower that shapes every velocity command with it.

The real robot does not jump to a new velocity command: its wheels ramp up along an S-shaped
curve whose shape depends on how large the change is. A change is measured by the conservative
wheel-reference bound (rad/s at the wheel)

    L = sqrt((|dvx| - |dwz| Ly)^2 + (|dvy| + |dwz| Lx)^2) / r

of the twist change (dvx, dvy, dwz), and the commanded twist moves from the current command to the
new one as  twist(t) = start + (S(t) / L) (target - start),  with S(0) = 0 and S -> L.

The curve (P = 5, softplus_k(x) = log(1 + exp(k x)) / k, sigmoid(x) = 1 / (1 + exp(-x)))
----------------------------------------------------------------------------------------------
Parameters (a, b, m, k1, k2): a (s) the length of the smooth start, b (s) the latest break point,
m (rad/s^2, wheel reference) the slope of the linear part, k1 and k2 the sharpness of the two bends.

Ramp, for t < tb:

    S1(t) = (m a / 2P) [softplus_k1(2P t / a - P) - softplus_k1(-P)]
    S1'(t) = m sigmoid(k1 (2P t / a - P))

a softplus that is flat at t = 0 and becomes the line of slope m after about t = a. The paper's
ramp has no "- softplus_k1(-P)"; subtracting it makes S(0) = 0 exactly for any k1 (for k1 P >> 1
the two agree: at k1 = 1 the offset is 0.7 % of m a / 2P), so a new command never jumps.

Break point tb = min(b, t_rho), where S1(t_rho) = rho L (rho = BREAK_FRACTION), in closed form

    t_rho = a / 2P [P + softplus_k1^-1(2P rho L / (m a) + softplus_k1(-P))],
    softplus_k^-1(y) = log(exp(k y) - 1) / k.

The cap keeps the ramp from passing L for small changes (a ramp of slope m would reach a small L
long before b); for large changes b decides.

Approach, for t >= tb, with u = t - tb, Sb = S1(tb), D = S1'(tb), R = L - Sb > 0:

    S2(t) = L - R g(u),     g(u) = softplus_k2(P - lambda u) / softplus_k2(P),
    lambda = D softplus_k2(P) / (R sigmoid(k2 P)),
    S2'(t) = D sigmoid(k2 (P - lambda u)) / sigmoid(k2 P).

g is a mirrored softplus ramp: g(0) = 1, it falls linearly at first, bends with sharpness k2 and
decays like exp(-k2 lambda u) to 0. Hence S2(tb) = Sb (value continuous) and S2'(tb) = R lambda
sigmoid(k2 P) / softplus_k2(P) = D (slope continuous, which is how lambda is chosen); S2' > 0 and
falls (g is convex), so S rises monotonically, convex before tb and concave after, to L.

The network
-----------
An MLP maps L to the five parameters (core.formats.s_curve: the network, its bounded heads and its .npz
file). `default_network()` is the built-in profile used when `robot.tiago.s_curve` is unset (see its
docstring); `grade robot calibrate` fits one to recorded wheel velocities (simulation/tiago/calibration.py).

The follower
------------
`SCurveFollower` applies this to a stream of commands. A command is first scaled down, whole (so
its direction and curvature stay), until its rim-speed bound L r is at most `robot.tiago.max_speed`
and |wz| at most `max_yaw_rate_deg`. A command that differs from the current target starts a new
transition from the twist commanded at that moment (so an unfinished transition hands over without
a jump). Each physics step gets the commanded twist at the step's midpoint.

Kinematics convention: L uses |dvx|, |dvy|, |dwz| only, so it does not depend on the sign
convention of the mecanum matrix; the wheel speeds themselves follow `mecanum.ik_matrix`, the ROS
form (FL, FR, RL, RR) = (1/r) [[1, -1, -L], [1, 1, L], [1, 1, -L], [1, -1, L]] for x forward,
y left, z up (the issue's matrix with the vy column negated assumes y to the right).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit

from core.formats.s_curve import (
    PARAM_NAMES,
    SCurveNetwork,
    head_inverse,
    load_network,
    softplus,
    weight_shapes,
)
from simulation.robots.mecanum import HALF_TRACK, HALF_WHEELBASE, WHEEL_RADIUS

if TYPE_CHECKING:
    from core.config import TiagoConfig

LINEAR_POINT = 5.0  # P: the softplus argument range [-P, P] spans the bend
BREAK_FRACTION = 0.8  # rho: the ramp hands over to the approach by rho L at the latest
MIN_CHANGE = 1e-6  # rad/s: smaller wheel-reference changes are applied at once
COMMAND_TOLERANCE = 1e-9  # a command this close to the current target is the same command

# The built-in profile: a smooth 0.15 s start into a ramp of 13 rad/s^2 at the wheel (1 m/s^2 at
# the rim; a 1 m/s step is 90 % done after 1.0 s and within 0.1 % after 1.4 s), which hands over at
# rho L to a soft approach. The same
# parameters for every L: the ramp's slope is an acceleration limit, so the change size only moves
# the break point (b is left at its far end, so t_rho decides).
DEFAULT_PARAMS = {"a": 0.15, "b": 4.95, "m": 13.0, "k1": 1.0, "k2": 0.5}


# ---------------------------------------------------------------- the curve


def inverse_softplus(y: np.ndarray, k: np.ndarray | float = 1.0) -> np.ndarray:
    """The x with softplus_k(x) = y, for y > 0."""
    ky = np.multiply(k, y)
    return (ky + np.log(-np.expm1(-ky))) / k


def _unpack(params: np.ndarray) -> tuple[np.ndarray, ...]:
    params = np.asarray(params, dtype=np.float64)
    if params.shape[-1:] != (5,):
        raise ValueError(f"S-curve parameters are (..., 5) = {PARAM_NAMES}, got shape {params.shape}")
    return tuple(params[..., i] for i in range(5))


def _ramp(t: np.ndarray, a: np.ndarray, m: np.ndarray, k1: np.ndarray) -> np.ndarray:
    scale = m * a / (2 * LINEAR_POINT)
    return scale * (softplus(2 * LINEAR_POINT * t / a - LINEAR_POINT, k1) - softplus(-LINEAR_POINT, k1))


def _ramp_slope(t: np.ndarray, a: np.ndarray, m: np.ndarray, k1: np.ndarray) -> np.ndarray:
    return m * expit(k1 * (2 * LINEAR_POINT * t / a - LINEAR_POINT))


@dataclass(frozen=True)
class CurveBreak:
    """Where the ramp hands over to the approach: time tb, value Sb, slope D, rate lambda."""

    time: np.ndarray
    value: np.ndarray
    slope: np.ndarray
    rate: np.ndarray


def curve_break(change: np.ndarray, params: np.ndarray) -> CurveBreak:
    """The break point of the S-curve for change(s) L > 0 and parameters (..., 5)."""
    change = np.asarray(change, dtype=np.float64)
    if np.any(~(change > 0)):
        raise ValueError(f"an S-curve needs a change L > 0, got {change}")
    a, b, m, k1, k2 = _unpack(params)
    p = LINEAR_POINT
    t_rho = a / (2 * p) * (p + inverse_softplus(2 * p * BREAK_FRACTION * change / (m * a) + softplus(-p, k1), k1))
    time = np.minimum(b, t_rho)
    value = _ramp(time, a, m, k1)
    slope = _ramp_slope(time, a, m, k1)
    rate = slope * softplus(p, k2) / ((change - value) * expit(k2 * p))
    return CurveBreak(time, value, slope, rate)


def s_curve(t: np.ndarray, change: np.ndarray, params: np.ndarray) -> np.ndarray:
    """S(t): the part of a change L done t seconds after the command (0 before it); broadcasts."""
    return s_curve_samples(t, change, params, None)


def s_curve_samples(t: np.ndarray, change: np.ndarray, params: np.ndarray, curve: np.ndarray | None) -> np.ndarray:
    """S at times t (N,) of the curves `curve` (N,) out of changes (R,) with parameters (..., R, 5):
    each curve's break point is computed once, not once per sample (calibration's inner loop).
    With `curve` None, t broadcasts against the curves as in `s_curve`."""
    t = np.maximum(np.asarray(t, dtype=np.float64), 0.0)
    change = np.asarray(change, dtype=np.float64)
    a, _, m, k1, k2 = _unpack(params)
    brk = curve_break(change, params)
    p = LINEAR_POINT

    def per_sample(values: np.ndarray) -> np.ndarray:
        return values if curve is None else np.broadcast_to(values, brk.time.shape)[..., curve]

    tb, a_s, k1_s, k2_s = per_sample(brk.time), per_sample(a), per_sample(k1), per_sample(k2)
    ramp = per_sample(m * a / (2 * p)) * (softplus(2 * p * np.minimum(t, tb) / a_s - p, k1_s)
                                          - per_sample(softplus(-p, k1)))
    remaining = per_sample((change - brk.value) / softplus(p, k2))
    approach = per_sample(change + np.zeros_like(brk.time)) - remaining * softplus(
        p - per_sample(brk.rate) * np.maximum(t - tb, 0.0), k2_s)
    return np.where(t < tb, ramp, approach)


def s_curve_slope(t: np.ndarray, change: np.ndarray, params: np.ndarray) -> np.ndarray:
    """S'(t) in rad/s^2 (wheel reference); 0 before the command."""
    t = np.asarray(t, dtype=np.float64)
    a, _, m, k1, k2 = _unpack(params)
    brk = curve_break(change, params)
    u = np.maximum(t - brk.time, 0.0)
    approach = brk.slope * expit(k2 * (LINEAR_POINT - brk.rate * u)) / expit(k2 * LINEAR_POINT)
    slope = np.where(t < brk.time, _ramp_slope(np.clip(t, 0.0, brk.time), a, m, k1), approach)
    return np.where(t < 0, 0.0, slope)


def wheel_reference_change(delta: np.ndarray, radius: float = WHEEL_RADIUS, lx: float = HALF_WHEELBASE,
                           ly: float = HALF_TRACK) -> np.ndarray:
    """L (rad/s) of twist change(s) (..., 3) = (dvx, dvy, dwz): the conservative wheel-reference bound."""
    delta = np.abs(np.asarray(delta, dtype=np.float64))
    dvx, dvy, dwz = delta[..., 0], delta[..., 1], delta[..., 2]
    return np.hypot(dvx - dwz * ly, dvy + dwz * lx) / radius


def rim_speed(twist: np.ndarray) -> np.ndarray:
    """The same bound in m/s for a twist: what `max_speed` limits."""
    return wheel_reference_change(twist) * WHEEL_RADIUS


def default_network() -> SCurveNetwork:
    """The built-in profile (DEFAULT_PARAMS for every L): the hidden layers are zero and the last
    layer's bias holds the heads' pre-activations. No public wheel recordings of the real base were
    available to fit it; calibrate a network from your robot's recordings with `grade robot
    calibrate` and set `robot.tiago.s_curve` to use it."""
    weights = [np.zeros(shape) for shape in weight_shapes()]
    weights[-1] = head_inverse(np.array([DEFAULT_PARAMS[name] for name in PARAM_NAMES]))
    return SCurveNetwork(tuple(weights))


# ---------------------------------------------------------------- the command follower


def limit_twist(twist: np.ndarray, max_speed: float, max_yaw_rate: float) -> np.ndarray:
    """Scale a twist down (direction and curvature kept) so its rim speed bound is at most
    `max_speed` (m/s) and |wz| at most `max_yaw_rate` (rad/s)."""
    twist = np.asarray(twist, dtype=np.float64)
    scale = 1.0
    speed = float(rim_speed(twist))
    if speed > max_speed:
        scale = max_speed / speed
    if abs(twist[2]) * scale > max_yaw_rate:
        scale = max_yaw_rate / abs(twist[2])
    return twist * scale


class SCurveFollower:
    """Turns velocity commands into the S-shaped commanded twist, one physics step at a time.

    `command(twist)` starts a transition from the current commanded twist (mid-transition if a
    previous one is unfinished) to the new, speed-limited command; `advance(dt)` returns the twist
    to apply over the next step, sampled at the step's midpoint, and moves time on.
    """

    def __init__(self, network: SCurveNetwork | None = None, max_speed: float = 1.0,
                 max_yaw_rate: float = np.radians(86.0)):
        if not (max_speed > 0 and max_yaw_rate > 0):
            raise ValueError(f"speed limits must be > 0, got {max_speed} m/s, {max_yaw_rate} rad/s")
        self.network = network if network is not None else default_network()
        self.max_speed = max_speed
        self.max_yaw_rate = max_yaw_rate
        self._start = np.zeros(3)
        self._target = np.zeros(3)
        self._change = 0.0
        self._params: np.ndarray | None = None
        self._elapsed = 0.0

    @property
    def target(self) -> np.ndarray:
        return self._target.copy()

    @property
    def current(self) -> np.ndarray:
        """The commanded twist now."""
        return self._at(self._elapsed)

    def command(self, twist: np.ndarray) -> None:
        twist = np.asarray(twist, dtype=np.float64)
        if twist.shape != (3,) or not np.all(np.isfinite(twist)):
            raise ValueError(f"a command is 3 finite numbers (vx, vy, wz), got {twist}")
        target = limit_twist(twist, self.max_speed, self.max_yaw_rate)
        if np.max(np.abs(target - self._target)) <= COMMAND_TOLERANCE:
            return
        self._start = self.current
        self._target = target
        self._change = float(wheel_reference_change(target - self._start))
        self._params = self.network.params(self._change) if self._change > MIN_CHANGE else None
        self._elapsed = 0.0

    def advance(self, dt: float) -> np.ndarray:
        """The twist for the next `dt` seconds (its midpoint value); time moves on by dt."""
        twist = self._at(self._elapsed + dt / 2)
        self._elapsed += dt
        return twist

    def get_state(self) -> dict[str, np.ndarray]:
        """The transition under way (arrays, for a simulator's state); NaN params: none."""
        params = np.full(len(PARAM_NAMES), np.nan) if self._params is None else np.asarray(self._params, dtype=np.float64)
        return {"start": self._start.copy(), "target": self._target.copy(), "change": np.array(self._change),
                "params": params.copy(), "elapsed": np.array(self._elapsed)}

    def set_state(self, state: dict[str, np.ndarray]) -> None:
        self._start = np.array(state["start"], dtype=np.float64).reshape(3)
        self._target = np.array(state["target"], dtype=np.float64).reshape(3)
        self._change = float(state["change"])
        params = np.array(state["params"], dtype=np.float64).reshape(-1)
        self._params = None if np.isnan(params).all() else params
        self._elapsed = float(state["elapsed"])

    def _at(self, elapsed: float) -> np.ndarray:
        if self._params is None:
            return self._target.copy()
        done = float(s_curve(elapsed, self._change, self._params)) / self._change
        return self._start + done * (self._target - self._start)


def follower_for(tiago_config: TiagoConfig) -> SCurveFollower:
    """The follower a `robot.tiago` config section describes (network file or the built-in one)."""
    network = load_network(tiago_config.s_curve) if tiago_config.s_curve is not None else default_network()
    return SCurveFollower(network, tiago_config.max_speed, np.radians(tiago_config.max_yaw_rate_deg))

"""A motion plan: progress along a path that moves and turns at the same time, within the robot's limits.

The robot goes along a polyline of length L from its current speed to rest at the end, and turns from its
yaw to the goal's (the shortest way, by D rad) in proportion to the distance gone: at progress u in [0, 1]
it is at arc length u L facing yaw0 + u D, so it arrives at the end facing the goal's yaw. Speed, yaw rate
and their derivatives are then u' L and u' |D|, u'' L and u'' |D|, ..., so the limits on u' are the
tighter of speed / L and yaw rate / |D|, and likewise for u'' (acceleration, yaw acceleration) and u'''
(jerk; the TIAGo's base controller has no jerk limit).

The profile of u' is: a ramp from its start value to a cruise value, a cruise, a ramp down to zero. A ramp
from v_a to v_b is a half cosine, v_a + (v_b - v_a)(1 - cos(pi t / T)) / 2, whose peak acceleration is
pi |dv| / 2T and peak jerk pi^2 |dv| / 2T^2; T is the shortest that keeps both within the limits. The
cruise value is the largest (up to the limit) whose two ramps fit in the distance; a start too fast to
stop in the distance ramps straight down and the position stays at the end.

A `Reference` runs a plan in simulation time at a rate: 1 as planned, less to slow down, 0 to stop, changed by
at most a braking rate per second, so that a robot told to stop (to let a person pass, to turn first) brakes
along its path within its limits and stays on it, rather than towards a set point it overshoots. The plan's
speed does not slow for the path's corners; `corner_speed` is how fast the reference may go so that, braking at a
given deceleration, it takes each corner ahead slowly enough for the robot to turn with it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulation.control import wrap_angle

BISECTIONS = 40


@dataclass(frozen=True)
class MotionLimits:
    speed: float  # m/s
    acceleration: float  # m/s^2
    yaw_rate: float  # rad/s
    yaw_acceleration: float  # rad/s^2
    jerk: float | None = None  # m/s^3; None: not limited


@dataclass(frozen=True)
class Ramp:
    start: float  # u' at its start
    end: float  # u' at its end
    duration: float

    @property
    def distance(self) -> float:
        return (self.start + self.end) * self.duration / 2

    def at(self, t: float) -> tuple[float, float, float, float]:
        """(u gone, u', u'', u''') at t s into the ramp."""
        if self.duration <= 0:
            return 0.0, self.start, 0.0, 0.0
        w, dv = math.pi / self.duration, self.end - self.start
        return (self.start * t + dv / 2 * (t - math.sin(w * t) / w), self.start + dv / 2 * (1 - math.cos(w * t)),
                dv / 2 * w * math.sin(w * t), dv / 2 * w * w * math.cos(w * t))


def ramp(start: float, end: float, acceleration: float, jerk: float | None) -> Ramp:
    """The shortest half-cosine ramp between two values of u' within the limits on u'' and u'''."""
    change = abs(end - start)
    duration = math.pi * change / (2 * acceleration)
    if jerk is not None:
        duration = max(duration, math.pi * math.sqrt(change / (2 * jerk)))
    return Ramp(start, end, duration)


@dataclass(frozen=True)
class MotionPlan:
    """Progress along a path (positions and yaw) over time from its start (module notes)."""

    points: np.ndarray  # (M, 2) the path
    yaw0: float
    turn: float  # rad, signed
    up: Ramp
    cruise: float  # s at the cruise value of u'
    down: Ramp
    arc: np.ndarray  # (M,) arc length at each point

    @property
    def length(self) -> float:
        return float(self.arc[-1])

    @property
    def duration(self) -> float:
        return self.up.duration + self.cruise + self.down.duration

    @property
    def end_yaw(self) -> float:
        return float(wrap_angle(self.yaw0 + self.turn))

    def progress(self, t: float) -> tuple[float, float, float, float]:
        """(u, u', u'', u''') at t s after the start (clamped to [0, duration]; u at most 1)."""
        t = min(max(t, 0.0), self.duration)
        if t < self.up.duration:
            state = self.up.at(t)
        elif t < self.up.duration + self.cruise:
            state = (self.up.distance + self.up.end * (t - self.up.duration), self.up.end, 0.0, 0.0)
        else:
            u, v, a, j = self.down.at(t - self.up.duration - self.cruise)
            state = (self.up.distance + self.up.end * self.cruise + u, v, a, j)
        return min(state[0], 1.0), state[1], state[2], state[3]

    def _segment(self, s: float) -> int:
        """The index of the path segment holding arc length `s`."""
        return int(np.clip(np.searchsorted(self.arc, s, side="right") - 1, 0, len(self.points) - 2))

    def point_at(self, s: float) -> np.ndarray:
        """The path point at arc length `s` (clamped)."""
        s = min(max(s, 0.0), self.length)
        k = self._segment(s)
        span = self.arc[k + 1] - self.arc[k]
        t = 0.0 if span <= 0 else (s - self.arc[k]) / span
        return self.points[k] + t * (self.points[k + 1] - self.points[k])

    def at(self, t: float) -> tuple[np.ndarray, float]:
        """(position (2,), yaw) at t s after the start."""
        u = self.progress(t)[0]
        return self.point_at(u * self.length), float(wrap_angle(self.yaw0 + u * self.turn))

    def velocity_at(self, t: float) -> np.ndarray:
        """The velocity (2,) m/s at t s after the start: along the path's segment there at u' L (none once
        the position stays at the end)."""
        u, rate = self.progress(t)[:2]
        if u >= 1.0:
            return np.zeros(2)
        k = self._segment(u * self.length)
        segment = self.points[k + 1] - self.points[k]
        norm = float(np.linalg.norm(segment))
        return np.zeros(2) if norm <= 0 else segment / norm * rate * self.length

    def sample(self, dt: float) -> dict[str, np.ndarray]:
        """Speed, acceleration, jerk, yaw rate and yaw acceleration (magnitudes) every `dt` s."""
        states = np.array([self.progress(t) for t in np.arange(0.0, self.duration + dt, dt)])
        scale = np.array([self.length, abs(self.turn)])
        return {"time": np.arange(len(states)) * dt, "progress": states[:, 0],
                "speed": np.abs(states[:, 1]) * scale[0], "acceleration": np.abs(states[:, 2]) * scale[0],
                "jerk": np.abs(states[:, 3]) * scale[0], "yaw_rate": np.abs(states[:, 1]) * scale[1],
                "yaw_acceleration": np.abs(states[:, 2]) * scale[1]}


def plan_motion(points: np.ndarray, yaw0: float, yaw1: float, limits: MotionLimits,
                    speed0: float = 0.0) -> MotionPlan:
    """The trajectory along `points` (M, 2) from `speed0` m/s (along the path) and yaw `yaw0` to rest at the
    end facing `yaw1` (module notes)."""
    points = np.asarray(points, dtype=np.float64)
    if len(points) == 1:
        points = np.vstack([points, points])
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(points, axis=0), axis=1))])
    length, turn = float(arc[-1]), float(wrap_angle(yaw1 - yaw0))
    # Limits on u', u'', u''' (module notes): the tighter of the translation's and the turn's.
    rate, accel = math.inf, math.inf
    jerk = None
    if length > 0:
        rate, accel = limits.speed / length, limits.acceleration / length
        jerk = None if limits.jerk is None else limits.jerk / length
    if turn != 0:
        rate, accel = min(rate, limits.yaw_rate / abs(turn)), min(accel, limits.yaw_acceleration / abs(turn))
    if not math.isfinite(rate):  # nothing to go, nothing to turn
        return MotionPlan(points, yaw0, 0.0, Ramp(0.0, 0.0, 0.0), 0.0, Ramp(0.0, 0.0, 0.0), arc)
    start = min(max(speed0 / length, 0.0), rate) if length > 0 else 0.0

    def ramps(cruise: float) -> tuple[Ramp, Ramp]:
        return ramp(start, cruise, accel, jerk), ramp(cruise, 0.0, accel, jerk)

    up, down = ramps(rate)
    if up.distance + down.distance > 1.0:
        lo, hi = 0.0, rate
        for _ in range(BISECTIONS):
            middle = (lo + hi) / 2
            up, down = ramps(middle)
            lo, hi = (middle, hi) if up.distance + down.distance <= 1.0 else (lo, middle)
        up, down = ramps(lo)
    gone = up.distance + down.distance
    cruise = (1.0 - gone) / up.end if up.end > 0 and gone < 1.0 else 0.0
    return MotionPlan(points, yaw0, turn, up, cruise, down, arc)


@dataclass
class Reference:
    """Where along `plan` the robot should be: its time runs with simulation time times `rate`, which moves
    towards the rate wanted by at most `brake` per second (module notes)."""

    plan: MotionPlan
    brake: float  # 1/s: the most the rate changes per second
    time: float = 0.0  # s along the plan
    rate: float = 1.0
    wanted: float = 1.0  # the rate it moves towards

    def advance(self, step: float, wanted: float, reach: float = math.inf, brake: float | None = None) -> bool:
        """`step` s on with the rate moved towards `wanted` (in [0, 1]), by at most `brake` per second (default the
        reference's own); the time stays while the plan would then be further than `reach` m along the path.
        Whether it advanced."""
        if brake is not None:
            self.brake = brake
        self.wanted = wanted
        self.rate = self._rate_in(step)
        if self.plan.progress(self.time + step * self.rate)[0] * self.plan.length > reach:
            return False
        self.time += step * self.rate
        return True

    def back_to(self, along: float, speed: float) -> None:
        """Where the reference runs `along` m or more along the path, ahead of a robot there at `speed` m/s: move it
        back there, its rate the one at which it moves at that speed, so that braking from here brakes the robot
        from where it is (the position loop, catching up with a reference ahead, would carry it on meanwhile)."""
        if along >= self.along():
            return
        lo, hi = 0.0, self.time
        while hi - lo > 1e-4:  # progress only grows with time
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if self.plan.progress(mid)[0] * self.plan.length < along else (lo, mid)
        self.time = lo
        planned = self.speed()
        self.rate = float(np.clip(speed / planned, 0.0, 1.0)) if planned > 0 else 0.0

    def point(self, lead: float = 0.0, reach: float = math.inf) -> np.ndarray:
        """The path point `lead` s of the plan ahead (at the current rate), at most `reach` m along the path."""
        u = self.plan.progress(self.time + lead * self.rate)[0]
        return self.plan.point_at(min(u * self.plan.length, reach))

    def velocity(self, lead: float = 0.0) -> np.ndarray:
        """The reference's velocity (2,) m/s `lead` s ahead, its rate then on its way to the rate wanted (what a
        controller that lags by `lead` is fed forward: braking, it brakes as early)."""
        rate = self._rate_in(lead)
        return rate * self.plan.velocity_at(self.time + lead * (self.rate + rate) / 2)

    def _rate_in(self, seconds: float) -> float:
        return float(np.clip(self.wanted, self.rate - self.brake * seconds, self.rate + self.brake * seconds))

    def speed(self) -> float:
        """The plan's speed (m/s) at the reference's time (the reference moves at `rate` times it)."""
        return self.plan.progress(self.time)[1] * self.plan.length

    def corner_rate(self, deceleration: float, change: float, window: float) -> float:
        """The rate at which the reference takes the corners ahead within the braking distance at `deceleration`
        slowly enough (`corner_speed`); inf where the plan stands still."""
        planned = self.speed()
        if planned <= 0:
            return math.inf
        horizon = planned**2 / (2 * deceleration) + window
        return corner_speed(self.plan, self.along(), deceleration, change, window, horizon) / planned

    def yaw(self, lead: float = 0.0) -> float:
        return self.plan.at(self.time + lead * self.rate)[1]

    def along(self, lead: float = 0.0) -> float:
        """m along the path `lead` s ahead."""
        return self.plan.progress(self.time + lead * self.rate)[0] * self.plan.length


def corner_speed(plan: MotionPlan, along: float, deceleration: float, change: float, window: float,
                 horizon: float) -> float:
    """The speed (m/s) from which a reference `along` m along `plan`'s path, braking at `deceleration`, turns each
    corner within `horizon` m ahead with its velocity changing by at most `change` m/s: the path's direction
    over `window` m before a point against that over `window` m after it (a grid path's staircase is no corner)
    gives the turn there, θ, and the speed there at most change / (2 sin(θ / 2))."""
    length = plan.length
    if length <= 0:
        return math.inf
    steps = max(2, math.ceil(horizon / (window / 3)) + 1)
    s = np.clip(along + np.linspace(0.0, horizon, steps), 0.0, length)
    here = np.array([plan.point_at(v) for v in s])
    before = here - np.array([plan.point_at(v - window) for v in s])
    after = np.array([plan.point_at(v + window) for v in s]) - here
    norms = np.linalg.norm(before, axis=1) * np.linalg.norm(after, axis=1)
    cosine = np.where(norms > 1e-12, np.einsum("ij,ij->i", before, after) / np.maximum(norms, 1e-12), 1.0)
    half = np.sqrt(np.clip((1.0 - cosine) / 2.0, 0.0, 1.0))  # sin(θ / 2)
    allowed = np.where(half > 1e-9, change / (2.0 * np.maximum(half, 1e-9)), math.inf)
    return float(np.min(np.sqrt(allowed**2 + 2.0 * deceleration * (s - along))))

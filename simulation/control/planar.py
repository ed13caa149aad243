"""A P controller for an omnidirectional base: drive to a point in the world and turn to a heading.

The translational command points at the target with a speed proportional to its distance, limited to
`max_speed`; the yaw rate is proportional to the heading error (the shortest way round), limited to
`max_yaw_rate`. Both are expressed in the base frame (vx, vy, wz) and change by at most
`max_acceleration` (m/s^2) and `max_yaw_acceleration` (rad/s^2), so the command is continuous as a
real base's would be. The explorer uses it to follow paths with a ground base.

A base that is not holonomic (differential, skid steer) cannot move sideways: while the target is farther than
`FACE_DISTANCE` it turns to face it instead of to the heading asked for, and drives forward at the speed the
holonomic law gives times the cosine of its heading error (none while facing more than 90 deg away).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from core.robot_catalogue import RobotBody
from simulation.control.uav_controller import clip_norm, wrap_angle

POSITION_GAIN = 1.5  # 1/s: speed per metre of distance to the target
YAW_GAIN = 2.0  # 1/s: yaw rate per radian of heading error
MAX_ACCELERATION = 1.0  # m/s^2
MAX_YAW_ACCELERATION = 3.0  # rad/s^2
FACE_DISTANCE = 0.1  # m: a non-holonomic base faces its target while it is farther than this


class TwistGuard(Protocol):
    """What may veto a base's twists (vx, vy, wz in its frame): simulation.exploration.footprint_guard."""

    def admissible(self, twist: np.ndarray) -> bool:
        """Whether the base may take `twist` now."""

    def fallbacks(self, wanted: np.ndarray) -> Iterable[np.ndarray]:
        """Twists to try in turn instead of `wanted`, where it is vetoed."""


@dataclass(frozen=True)
class PlanarLimits:
    max_speed: float  # m/s
    max_yaw_rate: float  # rad/s
    max_acceleration: float = MAX_ACCELERATION
    max_yaw_acceleration: float = MAX_YAW_ACCELERATION


class PlanarController:
    """Twist commands (vx, vy, wz in the base frame) towards a target point and heading."""

    def __init__(self, limits: PlanarLimits, position_gain: float = POSITION_GAIN, yaw_gain: float = YAW_GAIN,
                 holonomic: bool = True):
        self.limits = limits
        self.position_gain, self.yaw_gain, self.holonomic = position_gain, yaw_gain, holonomic
        self._twist = np.zeros(3)

    @classmethod
    def from_body(cls, body: RobotBody) -> PlanarController:
        """With a ground robot's speed limits and drive."""
        return cls(PlanarLimits(body.max_speed, math.radians(body.max_yaw_rate_deg)), holonomic=body.holonomic)

    @property
    def twist(self) -> np.ndarray:
        return self._twist.copy()

    def command(self, pose: tuple[float, float, float], target: np.ndarray | None, heading: float | None,
                dt: float, guard: TwistGuard | None = None) -> np.ndarray:
        """The twist for the next `dt` s: towards `target` (x, y; None: stay) turning to `heading` (rad;
        None: keep turning rate zero). `pose` is the base's (x, y, yaw). A `guard`, where given, vetoes twists
        (`_shape`)."""
        if not dt > 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        x, y, yaw = pose
        velocity = np.zeros(2)
        if target is not None:
            offset = np.asarray(target, dtype=np.float64)[:2] - (x, y)
            velocity = clip_norm(self.position_gain * offset, self.limits.max_speed)
            if not self.holonomic and np.hypot(*offset) > FACE_DISTANCE:
                heading = math.atan2(offset[1], offset[0])
        c, s = math.cos(yaw), math.sin(yaw)
        local = np.array([c * velocity[0] + s * velocity[1], -s * velocity[0] + c * velocity[1]])
        if not self.holonomic:  # forward only: the part of the velocity along the heading
            local = np.array([max(local[0], 0.0), 0.0])
        rate = 0.0 if heading is None else self.yaw_gain * float(wrap_angle(heading - yaw))
        rate = float(np.clip(rate, -self.limits.max_yaw_rate, self.limits.max_yaw_rate))
        return self._shape(np.array([local[0], local[1], rate]), dt, guard)

    def spin(self, rate: float, dt: float, guard: TwistGuard | None = None) -> np.ndarray:
        """Turn in place at `rate` rad/s (limited); `guard` as in `command`."""
        rate = float(np.clip(rate, -self.limits.max_yaw_rate, self.limits.max_yaw_rate))
        return self._shape(np.array([0.0, 0.0, rate]), dt, guard)

    def track(self, twist: np.ndarray, dt: float) -> np.ndarray:
        """The twist for the next `dt` s towards `twist` (vx, vy, wz; already within the speed limits), within the
        acceleration limits: how a commanded twist (a live run's cmd_vel) reaches the base."""
        return self._shape(np.asarray(twist, dtype=np.float64), dt)

    def stop(self) -> np.ndarray:
        """A zero twist at once, outside the acceleration limits (the base gives way to a push, or its mission
        ends): the next command starts from rest, not from the twist before the stop, which the base no longer
        has and which would drive it on the old way, by then perhaps into a wall a push left it next to."""
        self._twist = np.zeros(3)
        return self._twist.copy()

    def _shape(self, wanted: np.ndarray, dt: float, guard: TwistGuard | None = None) -> np.ndarray:
        """The twist towards `wanted` within the acceleration limits; where a `guard` vetoes it, towards the first
        of its fallbacks it lets through (a non-holonomic base's, forward only), and failing those, braking."""
        twist = self._towards(wanted, dt)
        if guard is not None and not guard.admissible(twist):
            fallbacks = (f if self.holonomic else np.array([max(f[0], 0.0), 0.0, f[2]]) for f in guard.fallbacks(wanted))
            twist = next((t for t in (self._towards(f, dt) for f in fallbacks) if guard.admissible(t)),
                         self._towards(np.zeros(3), dt))
        self._twist = twist
        return twist.copy()

    def _towards(self, wanted: np.ndarray, dt: float) -> np.ndarray:
        change = wanted - self._twist
        change[:2] = clip_norm(change[:2], self.limits.max_acceleration * dt)
        change[2] = float(np.clip(change[2], -self.limits.max_yaw_acceleration * dt,
                                  self.limits.max_yaw_acceleration * dt))
        return self._twist + change

"""The UAV's 6-DOF PID controller: position or velocity set points -> the six virtual joint velocities.

The UAV model (simulation.robots.uav_model) moves on slide joints x, y, z (world axes) and hinge joints
roll, pitch, yaw nested in that order, so its orientation is Rx(roll) Ry(pitch) Rz(yaw) and its thrust
axis (body z) points along (sin p, -sin r cos p, cos r cos p) whatever the yaw.

Translation. In position mode a PID on the position error (gains `robot.position_gains`; its derivative is
minus the measured velocity, so a new set point gives no derivative kick), plus the set point's own velocity
when one is given (feed-forward: a moving set point is tracked without the lag of a PID alone), gives a
velocity set point; in velocity mode the set point is given. Either is limited to `max_speed` (norm over x, y,
z), and z is kept inside `z_band` (a position target is clamped into it; a vertical velocity is throttled near
its edges). The commanded velocity follows the set point through a jerk-limited profile: the acceleration it
asks for is the gap over `VELOCITY_TIME_CONSTANT`, at most `max_acceleration` (and g tan(max_tilt), the most a
quadrotor tilted by max_tilt can reach), and at most sqrt(max_jerk * gap), so that it can be wound down at
half the jerk limit by the time the gap closes; the acceleration moves towards it by at most `max_jerk` per
second. So the commanded velocity never steps and its acceleration never jumps.

Attitude. Roll and pitch set points are the tilt a quadrotor needs for that acceleration, clipped to
+-max_tilt, or zero with `lock_roll_pitch` ("horizontal" flight: the body stays level while the virtual
joints translate). Yaw follows a yaw set point the shortest way round (errors wrapped to [-pi, pi)) or a
commanded yaw rate. A PID on the attitude errors (gains `robot.attitude_gains`, derivative minus the
measured rates) gives the rate set points, limited to `roll_pitch_rate_deg` and `yaw_rate_deg` and to
sqrt(angular acceleration * error) (so the turn can stop on its target); a roll or pitch rate that would
carry the joint past +-max_tilt within the step is cut back. The commanded rates move towards their set
points by at most `roll_pitch_acceleration_deg` and `yaw_acceleration_deg` per second.

Servos. The commanded velocities and rates above are the motion the body should have. The model's velocity
servos (simulation.robots.uav_model) reach a command with a first-order lag, so the command sent leads the
reference's next value by the servo's time constant times the reference's acceleration (MuJoCo's implicit-fast
step moves the body by (command - velocity) / (time constant + step)): the body then moves with the reference,
its accelerations within the limits. Call `command` once per physics step (a flight controller's inner loop;
the set points may come slower): a command held for several steps moves the body in steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.config import PidGains, RobotConfig, UavLimits
from simulation.control.pid import Pid
from simulation.robots.uav_model import SERVO_TIME_CONSTANT

GRAVITY = 9.81  # m/s^2
VELOCITY_TIME_CONSTANT = 0.2  # s: lag of the commanded velocity behind its set point (smooth starts and stops)
JOINT_NAMES = ("uav_x", "uav_y", "uav_z", "uav_roll", "uav_pitch", "uav_yaw")


def wrap_angle(angle: np.ndarray | float) -> np.ndarray | float:
    """Angles mapped into [-pi, pi)."""
    return (np.asarray(angle) + np.pi) % (2 * np.pi) - np.pi


def clip_norm(vector: np.ndarray, limit: float) -> np.ndarray:
    """`vector` scaled down to length `limit` if it is longer."""
    norm = float(np.linalg.norm(vector))
    return vector * (limit / norm) if norm > limit else vector


@dataclass(frozen=True)
class UavState:
    """Joint positions and velocities of the UAV: position (m), attitude roll/pitch/yaw (rad) and rates."""

    position: np.ndarray  # (3,) world
    attitude: np.ndarray  # (3,) roll, pitch, yaw
    velocity: np.ndarray  # (3,) world, m/s
    rates: np.ndarray  # (3,) joint rates, rad/s

    @classmethod
    def from_joint_states(cls, states: dict[str, tuple[float, float]]) -> UavState:
        """From `PhysicsWorld.joint_states()` / `Robot.joint_states()` of a UAV world."""
        missing = [name for name in JOINT_NAMES if name not in states]
        if missing:
            raise KeyError(f"joint states lack the UAV joints {missing}; have {sorted(states)}")
        values = np.array([states[name] for name in JOINT_NAMES], dtype=np.float64)
        return cls(values[:3, 0], values[3:, 0], values[:3, 1], values[3:, 1])


class UavController:
    """Turns position (+ yaw) or velocity (+ yaw rate) set points into joint velocity commands."""

    def __init__(self, limits: UavLimits, position_gains: PidGains, attitude_gains: PidGains):
        if not limits.max_tilt_deg > 0:
            raise ValueError("robot.uav.max_tilt_deg must be > 0: the tilt bounds the acceleration "
                             "(use lock_roll_pitch for level flight)")
        self.limits = limits
        self.max_tilt = math.radians(limits.max_tilt_deg)
        self.max_acceleration = min(limits.max_acceleration, GRAVITY * math.tan(self.max_tilt))
        self.rate_limits = np.radians([limits.roll_pitch_rate_deg, limits.roll_pitch_rate_deg, limits.yaw_rate_deg])
        self.angular_acceleration_limits = np.radians(
            [limits.roll_pitch_acceleration_deg, limits.roll_pitch_acceleration_deg, limits.yaw_acceleration_deg])
        self.position_pid = Pid(position_gains.kp, position_gains.ki, position_gains.kd,
                                output_limit=limits.max_speed, integral_limit=limits.max_speed)
        self.attitude_pid = Pid(attitude_gains.kp, attitude_gains.ki, attitude_gains.kd,
                                output_limit=self.rate_limits, integral_limit=self.rate_limits)
        self._mode = "hold"
        self._position_target: np.ndarray | None = None
        self._feedforward = np.zeros(3)
        self._yaw_target: float | None = None
        self._velocity_target = np.zeros(3)
        self._yaw_rate_target = 0.0
        # The reference motion: velocity, its acceleration and the joint rates (see "Servos" above).
        self._velocity: np.ndarray | None = None
        self._acceleration = np.zeros(3)
        self._rates: np.ndarray | None = None

    @classmethod
    def from_config(cls, robot: RobotConfig) -> UavController:
        """With the limits and gains of a config's `robot` section."""
        return cls(robot.uav, robot.position_gains, robot.attitude_gains)

    # ------------------------------------------------------------ set points

    def set_position_target(self, position: np.ndarray, yaw: float | None = None,
                            velocity: np.ndarray | None = None) -> None:
        """Fly to `position` (z clamped into z_band) and turn to `yaw` (rad; None keeps the current target);
        `velocity` (world, m/s) is how the set point moves, fed forward (None: it stands still)."""
        position = np.asarray(position, dtype=np.float64)
        if position.shape != (3,) or not np.isfinite(position).all():
            raise ValueError(f"a position target is 3 finite numbers, got {position}")
        feedforward = np.zeros(3) if velocity is None else np.asarray(velocity, dtype=np.float64)
        if feedforward.shape != (3,) or not np.isfinite(feedforward).all():
            raise ValueError(f"a set point's velocity is 3 finite numbers, got {velocity}")
        self._feedforward = feedforward
        band = self.limits.z_band
        position = np.array([position[0], position[1], min(max(position[2], band.min), band.max)])
        if self._mode != "position":
            self.position_pid.reset()
        self._mode, self._position_target = "position", position
        if yaw is not None:
            self._yaw_target = float(yaw)

    def set_velocity_target(self, velocity: np.ndarray, yaw_rate: float = 0.0) -> None:
        """Fly with `velocity` (world, m/s; limited to max_speed) turning at `yaw_rate` (rad/s)."""
        velocity = np.asarray(velocity, dtype=np.float64)
        if velocity.shape != (3,) or not np.isfinite(velocity).all() or not math.isfinite(yaw_rate):
            raise ValueError(f"a velocity target is 3 finite numbers and a finite yaw rate, got {velocity}, {yaw_rate}")
        self._mode, self._velocity_target, self._yaw_rate_target = "velocity", velocity, float(yaw_rate)
        self._yaw_target = None

    def stopping_offset(self, dt: float) -> np.ndarray:
        """Where (world offset, m) the commanded motion comes to rest if its velocity set point drops to zero
        now: the reference velocity run on through the acceleration and jerk limits (`_shaped_acceleration`) at
        `dt` s a step until it stops. Zero before the first command."""
        if self._velocity is None:
            return np.zeros(3)
        velocity, acceleration, offset = self._velocity.copy(), self._acceleration.copy(), np.zeros(3)
        saved = self._acceleration
        try:
            for _ in range(round(10.0 / dt)):  # a stop from any speed within the limits takes less
                self._acceleration = acceleration
                acceleration = self._shaped_acceleration(-velocity, dt)
                velocity = velocity + acceleration * dt
                offset += velocity * dt
                if np.linalg.norm(velocity) < 1e-4 and np.linalg.norm(acceleration) < 1e-3:
                    break
        finally:
            self._acceleration = saved
        return offset

    def drop_motion(self) -> None:
        """Stop commanding motion now: the reference velocity and acceleration drop to zero (not within the limits:
        the servos then stop the UAV at once), for a UAV that something else moves (a person who walked into it),
        so that it commands nothing of its own against or along the push. Nothing before the first command."""
        if self._velocity is not None:
            self._velocity = np.zeros(3)
            self._acceleration = np.zeros(3)

    @property
    def reference_velocity(self) -> np.ndarray:
        """The velocity (world, m/s) the commanded motion has now, without the servos' lead (see "Servos"): the
        UAV flying on its own moves with it within millimetres per second. Zero before the first command."""
        return np.zeros(3) if self._velocity is None else self._velocity.copy()

    @property
    def position_target(self) -> np.ndarray | None:
        return None if self._position_target is None else self._position_target.copy()

    # ------------------------------------------------------------ control step

    def command(self, state: UavState, dt: float) -> np.ndarray:
        """Joint velocities (x, y, z m/s; roll, pitch, yaw rad/s) for the next `dt` seconds."""
        if not dt > 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        if self._mode == "hold":  # no set point yet: hold where the controller first saw the UAV
            self.set_position_target(state.position, float(state.attitude[2]))
        if self._yaw_target is None and self._mode == "position":
            # Where a turn under way comes to rest, braking as _rate_setpoint does: no turning back.
            rate = float(state.rates[2])
            self._yaw_target = float(state.attitude[2]) + rate * abs(rate) / self.angular_acceleration_limits[2]
        setpoint = self._velocity_setpoint(state, dt)
        if self._velocity is None:  # the reference starts from the motion the UAV has
            self._velocity, self._rates = state.velocity.copy(), state.rates.copy()
        self._acceleration = self._shaped_acceleration(setpoint - self._velocity, dt)
        self._velocity = clip_norm(self._velocity + self._acceleration * dt, self.limits.max_speed)
        rate_setpoint = self._rate_setpoint(state, self._acceleration, dt)
        step = self.angular_acceleration_limits * dt
        angular_acceleration = np.clip(rate_setpoint - self._rates, -step, step) / dt
        self._rates = self._rates + angular_acceleration * dt
        velocity = clip_norm(self._velocity + SERVO_TIME_CONSTANT * self._acceleration, self.limits.max_speed)
        rates = np.clip(self._rates + SERVO_TIME_CONSTANT * angular_acceleration, -self.rate_limits, self.rate_limits)
        return np.concatenate([velocity, rates])

    def _shaped_acceleration(self, gap: np.ndarray, dt: float) -> np.ndarray:
        """The commanded velocity's next acceleration towards closing `gap` (see the module docstring)."""
        distance = float(np.linalg.norm(gap))
        wanted = np.zeros(3)
        if distance > 0:
            magnitude = min(self.max_acceleration, distance / VELOCITY_TIME_CONSTANT,
                            math.sqrt(self.limits.max_jerk * distance))
            wanted = gap * (magnitude / distance)
        return self._acceleration + clip_norm(wanted - self._acceleration, self.limits.max_jerk * dt)

    def _velocity_setpoint(self, state: UavState, dt: float) -> np.ndarray:
        band, speed = self.limits.z_band, self.limits.max_speed
        if self._mode == "position":
            error = self._position_target - state.position
            return clip_norm(self._feedforward + self.position_pid.update(error, dt, -state.velocity), speed)
        velocity = clip_norm(self._velocity_target, speed)
        # Throttle the climb or descent so z eases onto the band's edge instead of crossing it: with this
        # gain the loop through the velocity lag is critically damped.
        gain = 1.0 / (4.0 * VELOCITY_TIME_CONSTANT)
        low, high = gain * (band.min - state.position[2]), gain * (band.max - state.position[2])
        velocity[2] = min(max(velocity[2], min(low, 0.0)), max(high, 0.0))
        return velocity

    def _rate_setpoint(self, state: UavState, acceleration: np.ndarray, dt: float) -> np.ndarray:
        if self.limits.lock_roll_pitch:
            roll = pitch = 0.0
        else:
            thrust = np.array([acceleration[0], acceleration[1], GRAVITY + acceleration[2]])
            thrust /= np.linalg.norm(thrust)
            pitch = math.asin(float(np.clip(thrust[0], -1.0, 1.0)))
            roll = math.atan2(-thrust[1], thrust[2])
            roll, pitch = (float(np.clip(a, -self.max_tilt, self.max_tilt)) for a in (roll, pitch))
        yaw = self._yaw_target if self._yaw_target is not None else float(state.attitude[2])
        error = wrap_angle(np.array([roll, pitch, yaw]) - state.attitude)
        # At most the rate from which the turn can still stop on its target at half the acceleration limit.
        limits = np.minimum(self.rate_limits, np.sqrt(self.angular_acceleration_limits * np.abs(error)))
        rates = np.clip(self.attitude_pid.update(error, dt, -state.rates), -limits, limits)
        if self._mode == "velocity":
            rates[2] = float(np.clip(self._yaw_rate_target, -self.rate_limits[2], self.rate_limits[2]))
        # Never let roll or pitch step past the tilt limit (or away from level when locked).
        tilt = 0.0 if self.limits.lock_roll_pitch else self.max_tilt
        rates[:2] = np.clip(rates[:2], (-tilt - state.attitude[:2]) / dt, (tilt - state.attitude[:2]) / dt)
        return rates

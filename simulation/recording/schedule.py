"""Which stream is sampled at which physics step (architecture.md §4 rates).

A stream at `rate_hz` is sampled every physics_hz / rate_hz steps (config validation guarantees a whole
number), from step 0: at t = 0, 1/rate, 2/rate, ... up to and including the run's last step.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config import ExperimentConfig
from core.config.sensor_kinds import kind_of

STEP_TOLERANCE = 1e-6


def steps_between(physics_hz: float, rate_hz: float) -> int:
    ratio = physics_hz / rate_hz
    if abs(ratio - round(ratio)) > STEP_TOLERANCE or round(ratio) < 1:
        raise ValueError(f"{rate_hz:g} Hz does not divide the physics rate {physics_hz:g} Hz")
    return round(ratio)


@dataclass(frozen=True)
class Schedule:
    """Steps between samples of every stream, by stream name."""

    every: dict[str, int]
    total_steps: int  # the run's last step (bootstrap + duration)
    marker_step: int  # the start-of-experiment marker (end of the bootstrap)
    checkpoint_every: int

    @classmethod
    def from_config(cls, config: ExperimentConfig) -> Schedule:
        physics = config.simulation.physics_hz
        rates = config.simulation.rates
        every = {"clock": rates.clock_hz, "tf": rates.tf_hz, "joint_states": rates.joint_states_hz,
                 "pose": rates.pose_hz, "odom": rates.odom_hz, "humans": rates.humans_hz}
        every |= {kind_of(sensor).stream(sensor.name): physics if kind_of(sensor).every_step else sensor.rate_hz
                  for sensor in config.robot.sensors.root}
        steps = {name: steps_between(physics, rate) for name, rate in every.items()}
        sim = config.simulation
        return cls(steps, round((sim.bootstrap + sim.duration) * physics), round(sim.bootstrap * physics),
                   max(round(config.recording.checkpoint_period * physics), 1))

    def due(self, stream: str, step: int) -> bool:
        return step % self.every[stream] == 0

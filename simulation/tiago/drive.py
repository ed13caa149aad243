"""Velocity command files, driving a TIAGo++ Omni model through the S-curve follower, and the
paper's trajectory evaluation (mean relative error between two models, or a model and a recording).

Command sources (`read_commands`):

- Text files, one command per line `vx vy wz seconds` (m/s, m/s, rad/s, s in the base frame: x
  forward, y left, z up), as in tiago_isaac's test_commands. Blank lines and `#` comments are
  skipped. A two-column line `speed seconds` (upstream's square.txt) is read the way upstream's
  square recording script uses it: a square of four legs (speed, 0, 0), (0, -speed, 0),
  (-speed, 0, 0), (0, speed, 0), each for `seconds`. Any other column count is an error.
- JSON (`.json`): recorded cmd_vel messages, a list of {time, linear{x, y, z}, angular{x, y, z}}
  (upstream's real_cmd_vel_output.json). Each message holds until the next one (the base
  controller acts on the latest message); the last holds for the median message interval. The
  real recording interleaves a second publisher's zero messages at 10 Hz with the 100 Hz commands,
  each superseded within 10 ms. Such glitches (a twist held under GLITCH_SECONDS between two equal
  twists) are removed, shortest first: kept, each would restart the S-curve from its flat start
  and slow a 1 m/s ramp about fourfold.

Commands run back to back; the base is not stopped after the last one (end a file with
`0 0 0 1` to stop). Every physics step the follower's twist goes to `PhysicsWorld.set_base_twist`:
the lightweight model sets it as the base velocity, the physical model turns it into wheel speeds
through `mecanum.ik_matrix` (ROS convention (FL, FR, RL, RR) = (1/r) [[1, -1, -L], [1, 1, L],
[1, 1, -L], [1, -1, L]] for x forward, y left; the often-quoted matrix with the vy column negated
belongs to a y-right frame).

Evaluation (`compare_models`): as in the paper, 4 s commands from rest at 20 speeds from 0.05 to
1.0 m/s along x, y and the x-y diagonal (speed along the diagonal, vx = vy = speed / sqrt 2) and
20 yaw rates from 0.05 to 1.5 rad/s. The relative error of one run is the distance between the two
end points (each displacement taken in its own start frame) over the reference's displacement; for
rotations, the difference of the yaw turned over the reference's yaw turned. Reported as the mean
and standard deviation over the 20 runs of a group. A recorded trajectory (CSV with at least time,
x, y, yaw, e.g. from a motion tracker) is compared the same way: `read_trace_csv`, then
`relative_error` against a model's run of the same command.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.formats.csv_table import read_csv_table, write_csv_table
from core.formats.s_curve import SCurveNetwork
from core.geometry import yaw_of
from core.rundir import read_json, read_utf8
from simulation.physics import PhysicsWorld, StartPose, build_world
from simulation.robots.s_curve import SCurveFollower
from simulation.robots.tiago_model import lightweight, physical

TIAGO_MODELS = {"physical": physical, "lightweight": lightweight}
TRAJECTORY_COLUMNS = ("time", "x", "y", "yaw", "vx", "vy", "wz")
COMMAND_SECONDS = 4.0
# Longest command sequence `grade robot drive` simulates, s: an hour at 1 kHz is 3.6 M trajectory rows in memory.
MAX_DRIVE_SECONDS = 3600.0
MAX_COMMAND = 1000.0  # m/s or rad/s: any command file's velocities, before the base model clips them
SPEEDS = np.linspace(0.05, 1.0, 20)  # m/s
YAW_RATES = np.linspace(0.05, 1.5, 20)  # rad/s
GLITCH_SECONDS = 0.02  # s: twice the 100 Hz command period
MIN_REFERENCE_MOTION = 1e-6  # m or rad: a reference that moved less has no relative error
JSON_FIELDS = (("linear", "x"), ("linear", "y"), ("angular", "z"))


@dataclass(frozen=True)
class Command:
    """Hold the twist (vx, vy, wz) for `seconds`."""

    vx: float
    vy: float
    wz: float
    seconds: float

    @property
    def twist(self) -> np.ndarray:
        return np.array([self.vx, self.vy, self.wz])


# ---------------------------------------------------------------- command sources


def read_commands(path: str | Path) -> list[Command]:
    """Commands from a text command file or a recorded cmd_vel JSON (see the module notes)."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        commands = cmd_vel_commands(read_json(path, "command file"), path)
    else:
        commands = parse_commands(read_utf8(path, "command file"), path)
    if not commands:
        raise InputError("no commands in the file", path)
    total = sum(c.seconds for c in commands)
    if total > MAX_DRIVE_SECONDS:
        raise InputError(f"the commands last {total:g} s in total, more than the {MAX_DRIVE_SECONDS:g} s a drive "
                         "may simulate (its trajectory is kept in memory)", path, "seconds")
    return commands


def parse_commands(text: str, source: str | Path = "<commands>") -> list[Command]:
    """Parse `vx vy wz seconds` lines (and two-column square lines); errors name the line."""
    commands: list[Command] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"line {number}"
        try:
            values = [float(v) for v in line.split()]
        except ValueError:
            raise InputError(f"expected numbers 'vx vy wz seconds', got {raw.strip()!r}", source, where) from None
        if not all(math.isfinite(v) for v in values):
            raise InputError(f"values must be finite, got {raw.strip()!r}", source, where)
        if any(abs(v) > MAX_COMMAND for v in values[:-1]):
            raise InputError(f"velocities must be within +-{MAX_COMMAND:g} m/s or rad/s (the base model clips them "
                             f"to its own limits; far beyond, its wheel speeds overflow), got {raw.strip()!r}",
                             source, where)
        if len(values) == 4:
            legs = [tuple(values)]
        elif len(values) == 2:  # upstream square.txt: `speed seconds`, one square per line
            speed, seconds = values
            legs = [(speed, 0.0, 0.0, seconds), (0.0, -speed, 0.0, seconds), (-speed, 0.0, 0.0, seconds),
                    (0.0, speed, 0.0, seconds)]
        else:
            raise InputError(f"expected 4 columns 'vx vy wz seconds' (or 2, 'speed seconds' for a square), got "
                             f"{len(values)}: {raw.strip()!r}", source, where)
        if legs[0][3] <= 0:
            raise InputError(f"the duration must be > 0 s, got {legs[0][3]}", source, where)
        commands += [Command(*leg) for leg in legs]
    return commands


def cmd_vel_commands(messages: object, source: str | Path = "<cmd_vel>") -> list[Command]:
    """Recorded cmd_vel messages (parsed JSON) as held commands (consecutive equal twists merged)."""
    if not isinstance(messages, list) or not messages:
        raise InputError("expected a non-empty list of {time, linear, angular} messages", source)
    times, twists = [], []
    for index, message in enumerate(messages):
        try:
            times.append(float(message["time"]))
            twists.append([float(message[group][axis]) for group, axis in JSON_FIELDS])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"expected time, linear.x, linear.y, angular.z numbers ({exc!r})", source,
                             f"[{index}]") from None
    times, twists = np.array(times), np.array(twists)
    if not (np.all(np.isfinite(times)) and np.all(np.isfinite(twists))):
        raise InputError("times and velocities must be finite", source)
    if np.any(np.diff(times) < 0):
        raise InputError(f"message times must not decrease (message {int(np.argmax(np.diff(times) < 0)) + 1})",
                         source, "time")
    gaps = np.diff(times)
    last = float(np.median(gaps)) if len(gaps) else 0.0
    holds = np.append(gaps, last)
    held = [Command(*map(float, twist), float(hold)) for twist, hold in zip(twists, holds) if hold > 0]
    return remove_glitches(merge_repeats(held), GLITCH_SECONDS)


def merge_repeats(commands: Sequence[Command]) -> list[Command]:
    """Consecutive commands with the same twist joined into one."""
    merged: list[Command] = []
    for command in commands:
        if merged and np.array_equal(merged[-1].twist, command.twist):
            merged[-1] = replace(merged[-1], seconds=merged[-1].seconds + command.seconds)
        else:
            merged.append(command)
    return merged


def remove_glitches(commands: Sequence[Command], max_seconds: float) -> list[Command]:
    """Drop twists held under `max_seconds` between two equal twists (shortest first), folding
    their time into the surrounding command."""
    commands = merge_repeats(commands)
    while True:
        glitches = [i for i in range(1, len(commands) - 1) if commands[i].seconds < max_seconds
                    and np.array_equal(commands[i - 1].twist, commands[i + 1].twist)]
        if not glitches:
            return commands
        i = min(glitches, key=lambda j: commands[j].seconds)
        seconds = sum(c.seconds for c in commands[i - 1:i + 2])
        commands[i - 1:i + 2] = [replace(commands[i - 1], seconds=seconds)]


# ---------------------------------------------------------------- base traces


@dataclass(frozen=True)
class BaseTrace:
    """A driven base's samples (N, 7): time, x, y, yaw (continuous, not wrapped), and the base's
    body-frame velocity vx, vy, wz (odometry twist)."""

    samples: np.ndarray

    def column(self, name: str) -> np.ndarray:
        return self.samples[:, TRAJECTORY_COLUMNS.index(name)]

    @property
    def time(self) -> np.ndarray:
        return self.column("time")

    def final_pose(self) -> np.ndarray:
        """(x, y, yaw) at the end."""
        return self.samples[-1, 1:4].copy()

    def displacement(self) -> tuple[np.ndarray, float]:
        """(dx, dy) from the first to the last sample in the start pose's frame, and the yaw turned."""
        x0, y0, yaw0 = self.samples[0, 1:4]
        x1, y1, yaw1 = self.samples[-1, 1:4]
        c, s = math.cos(yaw0), math.sin(yaw0)
        return np.array([c * (x1 - x0) + s * (y1 - y0), -s * (x1 - x0) + c * (y1 - y0)]), float(yaw1 - yaw0)


def write_trace_csv(trajectory: BaseTrace, path: str | Path) -> Path:
    """Write the trajectory as CSV with a header row (atomic)."""
    return write_csv_table(path, TRAJECTORY_COLUMNS, trajectory.samples)


def read_trace_csv(path: str | Path) -> BaseTrace:
    """A trajectory CSV (ours, or a recording with at least time, x, y, yaw columns; missing
    velocity columns are read as NaN)."""
    columns = read_csv_table(path, TRAJECTORY_COLUMNS[:4], TRAJECTORY_COLUMNS[4:], what="trajectory")
    rows = len(columns["time"])
    samples = np.column_stack([columns.get(name, np.full(rows, np.nan)) for name in TRAJECTORY_COLUMNS])
    if not np.all(np.isfinite(samples[:, :4])):
        raise InputError("time, x, y and yaw must be finite", path)
    return BaseTrace(samples)


# ---------------------------------------------------------------- driving


def build_tiago(model: str, start: StartPose | None = None) -> PhysicsWorld:
    """A TIAGo++ Omni world (physical or lightweight) on an empty floor, at the origin by default."""
    if model not in TIAGO_MODELS:
        raise ValueError(f"unknown TIAGo model {model!r}; expected one of {sorted(TIAGO_MODELS)}")
    return build_world(TIAGO_MODELS[model](), start or StartPose())


def _sample(world: PhysicsWorld) -> list[float]:
    pose = world.base_pose()
    linear, angular = world.base_velocity()
    return [world.time, pose[0, 3], pose[1, 3], yaw_of(pose), linear[0], linear[1], angular[2]]


def drive(world: PhysicsWorld, commands: Sequence[Command], follower: SCurveFollower,
          on_step: Callable[[int], None] | None = None) -> BaseTrace:
    """Run the commands back to back through the follower; one trajectory sample per physics step
    (the first is the state before driving). `on_step(n)` reports progress in physics steps."""
    dt = float(world.model.opt.timestep)
    rows = [_sample(world)]
    elapsed_steps, end = 0, 0.0
    for command in commands:
        follower.command(command.twist)
        end += command.seconds
        # Round the running end time, not each duration, so durations off the step grid don't drift.
        steps = round(end / dt) - elapsed_steps
        for _ in range(steps):
            world.set_base_twist(follower.advance(dt))
            world.step()
            rows.append(_sample(world))
        elapsed_steps += steps
        if on_step is not None:
            on_step(steps)
    samples = np.array(rows)
    samples[:, 3] = np.unwrap(samples[:, 3])
    return BaseTrace(samples)


def drive_model(model: str, commands: Sequence[Command], network: SCurveNetwork | None = None,
                max_speed: float = 1.0, max_yaw_rate: float = np.radians(86.0),
                on_step: Callable[[int], None] | None = None) -> BaseTrace:
    """Drive a fresh TIAGo model (from the origin, at rest) through the commands."""
    return drive(build_tiago(model), commands, SCurveFollower(network, max_speed, max_yaw_rate), on_step)


def total_steps(commands: Sequence[Command], dt: float) -> int:
    return round(sum(c.seconds for c in commands) / dt)


# ---------------------------------------------------------------- evaluation


def paper_commands() -> dict[str, np.ndarray]:
    """The paper's command set: group name -> (20, 3) twists, each held COMMAND_SECONDS from rest."""
    zeros = np.zeros_like(SPEEDS)
    diagonal = SPEEDS / math.sqrt(2.0)
    return {
        "x": np.stack([SPEEDS, zeros, zeros], axis=1),
        "y": np.stack([zeros, SPEEDS, zeros], axis=1),
        "x-y": np.stack([diagonal, diagonal, zeros], axis=1),
        "rotation": np.stack([zeros, zeros, YAW_RATES], axis=1),
    }


def relative_error(trajectory: BaseTrace, reference: BaseTrace, rotation: bool = False) -> float:
    """End-point error of `trajectory` relative to how far `reference` travelled (or turned)."""
    moved, turned = trajectory.displacement()
    ref_moved, ref_turned = reference.displacement()
    if rotation:
        if abs(ref_turned) < MIN_REFERENCE_MOTION:
            raise ValueError("the reference did not turn; a relative yaw error is undefined")
        return abs(turned - ref_turned) / abs(ref_turned)
    distance = float(np.linalg.norm(ref_moved))
    if distance < MIN_REFERENCE_MOTION:
        raise ValueError("the reference did not move; a relative position error is undefined")
    return float(np.linalg.norm(moved - ref_moved)) / distance


def mean_relative_error(errors: Sequence[float]) -> tuple[float, float]:
    """(mean, standard deviation) of per-run relative errors."""
    values = np.asarray(errors, dtype=np.float64)
    return float(values.mean()), float(values.std())


def run_from_rest(world: PhysicsWorld, twist: np.ndarray, network: SCurveNetwork | None = None,
                  seconds: float = COMMAND_SECONDS) -> BaseTrace:
    """Reset the world to its initial state and hold one command from rest."""
    world.set_state(world.initial_state)
    return drive(world, [Command(*map(float, twist), seconds)], SCurveFollower(network))


def compare_models(model: str, reference: str, network: SCurveNetwork | None = None,
                   groups: dict[str, np.ndarray] | None = None,
                   on_run: Callable[[], None] | None = None) -> dict[str, tuple[float, float]]:
    """Mean and std of the relative error of `model` against `reference` per command group."""
    groups = paper_commands() if groups is None else groups
    worlds = {name: build_tiago(name) for name in {model, reference}}
    table = {}
    for group, twists in groups.items():
        errors = []
        for twist in twists:
            ours = run_from_rest(worlds[model], twist, network)
            theirs = run_from_rest(worlds[reference], twist, network)
            errors.append(relative_error(ours, theirs, rotation=group == "rotation"))
            if on_run is not None:
                on_run()
        table[group] = mean_relative_error(errors)
    return table

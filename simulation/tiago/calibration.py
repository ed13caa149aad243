"""Fit the S-curve network (simulation/robots/s_curve.py) to recorded wheel velocities of step commands.

Recordings
----------
- CSV with a header row: `time, FL, FR, RL, RR` (s; wheel speeds in rad/s, positive rolling
  forward as in mecanum.py) and optionally `vx, vy, wz`, the commanded twist at each row. Without
  command columns the file is one step from rest at its first row, to the twist the wheels settle
  at (the mean of the last TAIL_FRACTION of the rows).
- A ROS 1 `.bag` file or a ROS 2 bag folder, read with rosbags' AnyReader: sensor_msgs/JointState
  (on /joint_states if present) with the four wheel joints, named as on the real robot
  (wheel_front_left_joint, ...) or as in GRADE's model (wheel_FL_joint, ...), and optionally
  geometry_msgs/Twist on a topic ending in `cmd_vel` (its messages are held until the next one; the
  glitches of a second zero publisher are removed as in drive.cmd_vel_commands). Times are the bag's
  receive times. Without cmd_vel the bag is one step from rest, as a CSV without commands.

Each commanded change lasting at least MIN_STEP_SECONDS and of size L >= MIN_STEP_CHANGE gives one
step response: the part of the change done, p(t) = (w(t) - w0) . dw / |dw|^2, with w0 and dw the
wheel speeds (inverse kinematics) of the previous command and of the change, t from the command.
A response whose wheels do not settle near the command (a wrong sign convention, say) is an
InputError.

Fit
---
The network maps each response's L to curve parameters; the loss is the mean squared difference
of S(t)/L and p(t), every response weighted equally. Gradients: central differences of the loss
with respect to each response's five head pre-activations (cheap: five numbers per response),
back-propagated exactly through the MLP; Adam updates the weights. Each of `restarts` runs starts
from its own seeded random weights; the one with the lowest validation error wins. Validation holds
out VALIDATION_FRACTION of the responses (seeded), or, with fewer than MIN_HOLDOUT_RESPONSES
responses, every VALIDATION_STRIDE-th sample of each. Continuity of S and S' at the bends holds by
construction of the curve, so the fit needs no constraints. The reported error is the RMS of
S(t)/L - p(t) (a fraction of the step).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.formats.csv_table import read_csv_table
from core.formats.s_curve import SCurveNetwork, head_params, weight_shapes
from core.seeding import generator
from simulation.robots.mecanum import WHEEL_NAMES, base_twist, wheel_speeds
from simulation.robots.s_curve import s_curve_samples, wheel_reference_change
from simulation.tiago.drive import GLITCH_SECONDS, Command, remove_glitches

# The command columns of a CSV recording (m/s, m/s, rad/s): the step responses' commands, when all are given.
COMMAND_COLUMNS = ("vx", "vy", "wz")
MIN_STEP_SECONDS = 0.5  # s: shorter commands do not show the whole profile
MIN_STEP_CHANGE = 0.2  # rad/s (wheel reference): smaller changes are lost in encoder noise
TAIL_FRACTION = 0.2  # of a command-less recording: where the wheels have settled
SETTLED_RANGE = (0.7, 1.3)  # p(t) over a response's tail must lie in here
MAX_SAMPLES_PER_RESPONSE = 200
VALIDATION_FRACTION = 0.2
MIN_HOLDOUT_RESPONSES = 3
VALIDATION_STRIDE = 5
ITERATIONS = 3000
LEARNING_RATE = 0.02
ADAM_BETAS = (0.9, 0.999)
ADAM_EPS = 1e-8
FD_STEP = 1e-5  # central-difference step on the head pre-activations
INIT_OUTPUT_RANGE = 2.0  # restarts draw the last-layer bias uniformly in +-this (sigmoid 0.12 .. 0.88)
WHEEL_JOINTS = {
    "FL": ("wheel_front_left_joint", "wheel_FL_joint"),
    "FR": ("wheel_front_right_joint", "wheel_FR_joint"),
    "RL": ("wheel_rear_left_joint", "wheel_RL_joint"),
    "RR": ("wheel_rear_right_joint", "wheel_RR_joint"),
}
JOINT_STATE = "sensor_msgs/msg/JointState"
TWIST = "geometry_msgs/msg/Twist"


@dataclass(frozen=True)
class StepResponse:
    """One commanded change: its size L (rad/s), and the part done p at times t since the command."""

    source: str
    change: float
    time: np.ndarray
    progress: np.ndarray


@dataclass(frozen=True)
class Calibration:
    network: SCurveNetwork
    validation_error: float
    training_error: float
    responses: int
    restarts: int


# ---------------------------------------------------------------- reading recordings


def read_recording(path: str | Path) -> list[StepResponse]:
    """The step responses in one recording (CSV, ROS 1 .bag or ROS 2 bag folder)."""
    path = Path(path)
    if not path.exists():
        raise InputError("recording not found", path)
    if path.suffix.lower() == ".csv":
        time, wheels, commands = _read_csv(path)
    else:
        time, wheels, commands = _read_bag(path)
    return step_responses(time, wheels, commands, str(path))


def step_responses(time: np.ndarray, wheels: np.ndarray, commands: tuple[np.ndarray, np.ndarray] | None,
                   source: str) -> list[StepResponse]:
    """Responses from wheel speeds (N, 4) at `time`, given (command times, twists (M, 3)) or None."""
    time, wheels = np.asarray(time, dtype=np.float64), np.asarray(wheels, dtype=np.float64)
    if len(time) < 2 or np.any(np.diff(time) < 0) or not np.all(np.isfinite(wheels)):
        raise InputError("expected at least 2 samples with non-decreasing times and finite wheel speeds", source)
    if commands is None:
        tail = wheels[int(len(wheels) * (1 - TAIL_FRACTION)):]
        settled = tail.mean(axis=0)
        steps = [(time[0], np.zeros(3), base_twist(settled), time[-1] + 1.0)]
    else:
        steps = _command_steps(*commands, end=time[-1], source=source)
    responses = []
    for start, before, after, end in steps:
        change = float(wheel_reference_change(after - before))
        if end - start < MIN_STEP_SECONDS or change < MIN_STEP_CHANGE:
            continue
        inside = (time >= start) & (time < end)
        if inside.sum() < 2:
            continue
        delta = wheel_speeds(after - before)
        progress = (wheels[inside] - wheel_speeds(before)) @ delta / (delta @ delta)
        since = time[inside] - start
        settled = float(np.median(progress[since >= (1 - TAIL_FRACTION) * since[-1]]))
        if not SETTLED_RANGE[0] <= settled <= SETTLED_RANGE[1]:
            raise InputError(f"the wheels settle at {settled:.2f} of the commanded change {np.round(after, 3)} "
                             f"(expected about 1; are the wheel speeds in rad/s, positive rolling forward?)",
                             source, f"t={start:.3f}")
        keep = np.unique(np.linspace(0, len(since) - 1, MAX_SAMPLES_PER_RESPONSE).round().astype(int))
        responses.append(StepResponse(source, change, since[keep], progress[keep]))
    return responses


def _command_steps(times: np.ndarray, twists: np.ndarray, end: float,
                   source: str) -> list[tuple[float, np.ndarray, np.ndarray, float]]:
    """(start, twist before, twist after, end) of each held command."""
    if len(times) == 0:
        raise InputError("no velocity commands", source, "cmd_vel")
    holds = np.append(np.diff(times), max(end - times[-1], 0.0))
    held = [Command(*map(float, twist), float(hold)) for twist, hold in zip(twists, holds)]
    steps, start, before = [], float(times[0]), np.zeros(3)
    for command in remove_glitches(held, GLITCH_SECONDS):
        steps.append((start, before, command.twist, start + command.seconds))
        start, before = start + command.seconds, command.twist
    return steps


def _read_csv(path: Path) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    table = read_csv_table(path, ["time", *WHEEL_NAMES], COMMAND_COLUMNS, min_rows=2, what="recording")
    if not all(np.all(np.isfinite(column)) for column in table.values()):
        raise InputError("values must be finite", path)
    wheels = np.column_stack([table[name] for name in WHEEL_NAMES])
    commands = None
    if all(name in table for name in COMMAND_COLUMNS):
        twists = np.column_stack([table[name] for name in COMMAND_COLUMNS])
        change = np.any(np.diff(twists, axis=0) != 0, axis=1)
        rows_at = np.concatenate([[0], np.flatnonzero(change) + 1])
        commands = (table["time"][rows_at], twists[rows_at])
    return table["time"], wheels, commands


def _read_bag(path: Path) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    from core.formats.bags.reader import open_bag

    try:
        with open_bag(path) as reader:
            states = [c for c in reader.connections if c.msgtype == JOINT_STATE]
            preferred = [c for c in states if c.topic == "/joint_states"]
            states = preferred or states
            if not states:
                raise InputError(f"no {JOINT_STATE} topic", path, "/joint_states")
            time, wheels = [], []
            for connection, stamp, raw in reader.messages(connections=states):
                message = reader.deserialize(raw, connection.msgtype)
                speeds = _wheel_velocities(list(message.name), np.asarray(message.velocity, dtype=np.float64))
                if speeds is not None:
                    time.append(stamp * 1e-9)
                    wheels.append(speeds)
            if not wheels:
                names = sorted({n for names in WHEEL_JOINTS.values() for n in names})
                raise InputError(f"no joint state message has velocities of the four wheel joints {names}", path,
                                 states[0].topic)
            twists = [c for c in reader.connections if c.msgtype == TWIST and c.topic.endswith("cmd_vel")]
            command_times, command_twists = [], []
            for connection, stamp, raw in reader.messages(connections=twists):
                message = reader.deserialize(raw, connection.msgtype)
                command_times.append(stamp * 1e-9)
                command_twists.append([message.linear.x, message.linear.y, message.angular.z])
    except (ValueError, KeyError) as exc:  # a message whose fields do not fit its type
        raise InputError(f"not a readable ROS bag ({exc})", path) from exc
    commands = (np.array(command_times), np.array(command_twists).reshape(-1, 3)) if command_times else None
    order = np.argsort(time, kind="stable")
    return np.array(time)[order], np.array(wheels)[order], commands


def _wheel_velocities(names: list[str], velocities: np.ndarray) -> np.ndarray | None:
    """FL, FR, RL, RR speeds from one JointState, or None if it lacks a wheel."""
    speeds = []
    for wheel in WHEEL_NAMES:
        index = next((names.index(n) for n in WHEEL_JOINTS[wheel] if n in names), None)
        if index is None or index >= len(velocities):
            return None
        speeds.append(velocities[index])
    return np.array(speeds)


# ---------------------------------------------------------------- fitting


@dataclass(frozen=True)
class _Samples:
    """Samples of several responses, flattened: response index, time, measured progress, weight."""

    response: np.ndarray
    time: np.ndarray
    progress: np.ndarray
    weight: np.ndarray
    changes: np.ndarray  # (R,) L of every response (also those without samples here)

    @staticmethod
    def build(responses: Sequence[StepResponse], masks: Sequence[np.ndarray]) -> _Samples:
        count = sum(1 for m in masks if m.any())
        parts = [(i, r.time[m], r.progress[m], np.full(m.sum(), 1.0 / (m.sum() * count)))
                 for i, (r, m) in enumerate(zip(responses, masks)) if m.any()]
        return _Samples(
            np.concatenate([np.full(len(t), i) for i, t, _, _ in parts]), np.concatenate([t for _, t, _, _ in parts]),
            np.concatenate([p for _, _, p, _ in parts]), np.concatenate([w for _, _, _, w in parts]),
            np.array([r.change for r in responses]))

    def squared_errors(self, outputs: np.ndarray) -> np.ndarray:
        """Weighted squared error of each sample (..., N) for head pre-activations (..., R, 5)."""
        done = s_curve_samples(self.time, self.changes, head_params(outputs), self.response)
        return self.weight * (done / self.changes[self.response] - self.progress) ** 2

    def loss_by_response(self, outputs: np.ndarray) -> np.ndarray:
        """Loss of each response (B, R) for a batch of head pre-activations (B, R, 5)."""
        errors = self.squared_errors(outputs)
        count = len(self.changes)
        index = (np.arange(len(outputs))[:, None] * count + self.response).ravel()
        return np.bincount(index, errors.ravel(), minlength=len(outputs) * count).reshape(len(outputs), count)

    def rms(self, network: SCurveNetwork) -> float:
        return math.sqrt(float(self.squared_errors(network.activations(self.changes)[3]).sum()))


def split(responses: Sequence[StepResponse], seed: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(training masks, validation masks), one boolean mask over each response's samples."""
    if len(responses) >= MIN_HOLDOUT_RESPONSES:
        held = max(1, round(VALIDATION_FRACTION * len(responses)))
        chosen = set(generator(seed, "robots/calibration/validation").choice(len(responses), held, replace=False))
        validation = [np.full(len(r.time), i in chosen) for i, r in enumerate(responses)]
    else:
        validation = [np.arange(len(r.time)) % VALIDATION_STRIDE == VALIDATION_STRIDE - 1 for r in responses]
    return [~m for m in validation], validation


def loss_and_gradient(network: SCurveNetwork, samples: _Samples) -> tuple[float, tuple[np.ndarray, ...]]:
    """Training loss and its gradient with respect to every weight (see the module notes)."""
    _, _, w2, _, w3, _ = network.weights
    x, h1, h2, outputs = network.activations(samples.changes)
    # One batched evaluation: the outputs, then each output moved by +step and -step.
    steps = np.concatenate([np.zeros((1, 5)), FD_STEP * np.eye(5), -FD_STEP * np.eye(5)])
    losses = samples.loss_by_response(outputs[None] + steps[:, None, :])
    loss = float(losses[0].sum())
    grad_out = (losses[1:6] - losses[6:]).T / (2 * FD_STEP)
    # softplus'(z) = sigmoid(z) = 1 - exp(-softplus(z)), from the stored activations.
    grad_h2 = grad_out @ w3
    grad_z2 = grad_h2 * -np.expm1(-h2)
    grad_z1 = (grad_z2 @ w2) * -np.expm1(-h1)
    return loss, (grad_z1.T @ x, grad_z1.sum(0), grad_z2.T @ h1, grad_z2.sum(0), grad_out.T @ h2, grad_out.sum(0))


def initial_network(rng: np.random.Generator) -> SCurveNetwork:
    """Random weights (variance 1 / fan-in) with a random last-layer bias across the heads' ranges."""
    weights = []
    for shape in weight_shapes():
        if len(shape) == 2:
            weights.append(rng.normal(0.0, 1.0 / math.sqrt(shape[1]), size=shape))
        else:
            weights.append(np.zeros(shape))
    weights[-1] = rng.uniform(-INIT_OUTPUT_RANGE, INIT_OUTPUT_RANGE, size=weight_shapes()[-1])
    return SCurveNetwork(tuple(weights))


def train(network: SCurveNetwork, samples: _Samples, iterations: int = ITERATIONS,
          learning_rate: float = LEARNING_RATE) -> SCurveNetwork:
    """Adam on the training loss, from `network`."""
    weights = [w.copy() for w in network.weights]
    first = [np.zeros_like(w) for w in weights]
    second = [np.zeros_like(w) for w in weights]
    beta1, beta2 = ADAM_BETAS
    for step in range(1, iterations + 1):
        _, grads = loss_and_gradient(SCurveNetwork(tuple(weights), network.input_scale), samples)
        for w, g, m, v in zip(weights, grads, first, second):
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            w -= learning_rate * (m / (1 - beta1**step)) / (np.sqrt(v / (1 - beta2**step)) + ADAM_EPS)
    return SCurveNetwork(tuple(weights), network.input_scale)


def fit_network(responses: Sequence[StepResponse], restarts: int = 100, seed: int = 0,
                iterations: int = ITERATIONS, on_restart: Callable[[float], None] | None = None) -> Calibration:
    """Fit from `restarts` random starts; keep the network with the lowest validation error.
    `on_restart(best validation error so far)` is called after each restart."""
    if not responses:
        raise InputError("no usable step responses (each needs a change of at least "
                         f"{MIN_STEP_CHANGE} rad/s held for {MIN_STEP_SECONDS} s)")
    if restarts < 1 or iterations < 1:
        raise ValueError(f"restarts and iterations must be >= 1, got {restarts}, {iterations}")
    training_masks, validation_masks = split(responses, seed)
    if not any(m.any() for m in training_masks) or not any(m.any() for m in validation_masks):
        samples = sum(len(r.time) for r in responses)
        raise InputError(f"too little to fit and validate on: {len(responses)} step response(s) with {samples} "
                         f"samples in all (with fewer than {MIN_HOLDOUT_RESPONSES} responses, every "
                         f"{VALIDATION_STRIDE}th sample is held out, so each response needs {VALIDATION_STRIDE} "
                         "or more); record longer or more steps")
    training = _Samples.build(responses, training_masks)
    validation = _Samples.build(responses, validation_masks)
    best: tuple[float, SCurveNetwork] | None = None
    for restart in range(restarts):
        rng = generator(seed, f"robots/calibration/restart/{restart}")
        network = train(initial_network(rng), training, iterations)
        error = validation.rms(network)
        if best is None or error < best[0]:
            best = (error, network)
        if on_restart is not None:
            on_restart(best[0])
    error, network = best
    return Calibration(network, error, training.rms(network), len(responses), restarts)


def calibrate(paths: Sequence[str | Path], restarts: int = 100, seed: int = 0, iterations: int = ITERATIONS,
              on_restart: Callable[[float], None] | None = None) -> Calibration:
    """Read recordings and fit the network (see the module notes)."""
    responses = [response for path in paths for response in read_recording(path)]
    return fit_network(responses, restarts, seed, iterations, on_restart)

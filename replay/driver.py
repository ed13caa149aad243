"""Re-simulating a recorded run on its own timeline, with a recorder attached (the replay's new recording).

teleport: every physics step of the window is put in its logged state (states.npz `step.*`: the robot's
full physics state; humans and flying objects follow from the time; lights as logged), then sampled. The
robot, humans and objects are exactly where they were, whatever else changed, and each IMU reading is the
forward pass of the step that led there with the commands it ran with, so it repeats the recorded one.
Every sensor sample lands on a physics step (sensor rates divide the physics rate), so nothing between
logged steps is needed.

physics: the checkpoint at or before the window's start is restored (states.npz `checkpoint.*`) and the
logged commands and joint targets are applied again step by step through the physics engine; unchanged
surroundings repeat the run bit for bit, changed ones (hidden humans the robot touched) make it drift, which the
report shows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from core.errors import InputError
from core.formats.states import CHECKPOINT_PREFIX, STEP_PREFIX, robot_key, robot_names
from replay.overrides import LightOverride
from simulation.backend import Robot, World
from simulation.recording.recorder import Recorder

MODES = ("teleport", "physics")


@dataclass(frozen=True)
class Window:
    first: int  # physics steps, inclusive
    last: int


def window_steps(time: np.ndarray, start: float | None, end: float | None, source: str) -> Window:
    """The steps of the log inside [start, end] s (the whole log by default)."""
    if not len(time):
        raise InputError("the state log is empty", source, "time")
    first = 0 if start is None else int(np.searchsorted(time, start - 1e-9))
    last = len(time) - 1 if end is None else int(np.searchsorted(time, end + 1e-9)) - 1
    if first > last or first >= len(time):
        raise InputError(f"the window [{start}, {end}] s holds no step of the run ({time[0]:g} to {time[-1]:g} s)",
                         source, "--from/--to")
    return Window(first, last)


def _commands(world: World, states: dict[str, np.ndarray]) -> list[tuple[Robot, np.ndarray]]:
    """Each robot with its logged commands (N, C): the one robot's, or each of a multi-robot log's."""
    names = robot_names(states)
    if names is None:
        return [(world.robot(), states["command"])]
    return [(world.robot(name), states[robot_key("command", name)]) for name in names]


def _joint_targets(world: World, states: dict[str, np.ndarray]) -> list[tuple[Robot, list[str], np.ndarray]]:
    """Each robot whose log holds joint targets, with the joints' names and the targets (N, T)."""
    names = robot_names(states) or [None]
    return [(world.robot(name), [str(joint) for joint in states[robot_key("joint_target_names", name)]],
             states[robot_key("joint_targets", name)]) for name in names if robot_key("joint_targets", name) in states]


def _lights(states: dict[str, np.ndarray], step: int, change: LightOverride | None) -> tuple[np.ndarray, np.ndarray]:
    intensity, color = states["light_intensity"][step], states["light_color"][step]
    if change is not None:
        intensity = intensity * change.intensity_scale
        if change.color is not None:
            color = np.broadcast_to(np.asarray(change.color, float), color.shape)
    return intensity, color


def replay_teleport(world: World, recorder: Recorder, states: dict[str, np.ndarray], window: Window,
                    lights: LightOverride | None, source: str, on_step: Callable[[int], None]) -> None:
    """Put the scene in each logged step of `window` and sample it (module docstring)."""
    teleport = Teleport(world, states, lights, source)
    for step in range(window.first, window.last + 1):
        teleport.to(step)
        recorder.sample(world)
        on_step(step)


class Teleport:
    """Puts the world in any logged step of `states`, in any order (module docstring): a teleport replay's
    every step, or only the steps of the frames a subset replay renders."""

    def __init__(self, world: World, states: dict[str, np.ndarray], lights: LightOverride | None, source: str):
        self.rows = {key[len(STEP_PREFIX):]: value for key, value in states.items() if key.startswith(STEP_PREFIX)}
        if not self.rows:
            raise InputError("the state log has no per-step states (step.*): the run was recorded by an older GRADE; "
                             "replay it with --mode physics", source)
        self.world, self.states, self.lights, self.source = world, states, lights, source
        self.commands = _commands(world, states)

    def to(self, index: int) -> None:
        """The scene as it was at the log's row `index`, with the commands and lights of that step."""
        state = {key: value[index] for key, value in self.rows.items()}
        previous = {key: value[index - 1] for key, value in self.rows.items()} if index > 0 else None
        for robot, logged in self.commands:
            robot.set_command(logged[index])  # logged again as the command of this step
        # The physics step of the row's time: the row's index, unless the log starts later (a window's replay).
        step = round(float(self.states["time"][index]) / self.world.timestep)
        self.world.teleport(step, state, previous, self.source)
        self.world.set_lights(*_lights(self.states, index, self.lights))


def replay_physics(world: World, recorder: Recorder, states: dict[str, np.ndarray], window: Window,
                   lights: LightOverride | None, source: str, on_step: Callable[[int], None]) -> None:
    """From the checkpoint at or before the window, apply the logged commands again (module docstring)."""
    steps = states["checkpoint_steps"]
    index = int(np.searchsorted(steps, window.first, side="right")) - 1
    if index < 0:
        raise InputError(f"no checkpoint at or before step {window.first}", source, "checkpoint_steps")
    world.set_state({key[len(CHECKPOINT_PREFIX):]: value[index] for key, value in states.items()
                       if key.startswith(CHECKPOINT_PREFIX)}, source)
    commands, targets = _commands(world, states), _joint_targets(world, states)
    step = int(steps[index])
    if lights is not None:
        world.set_lights(*_lights(states, step, lights))
    if step == window.first:
        recorder.sample(world)
        on_step(step)
    while step < window.last:
        step += 1
        for robot, logged in commands:
            robot.set_command(logged[step])  # the command the step ran with (setting it again is a no-op)
        for robot, joints, logged in targets:
            robot.set_joint_positions(dict(zip(joints, logged[step], strict=True)))
        world.step()
        if lights is not None:
            world.set_lights(*_lights(states, step, lights))
        if step >= window.first:
            recorder.sample(world)
            on_step(step)

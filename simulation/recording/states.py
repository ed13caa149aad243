"""The state log: collects per physics step what replay and analysis need, plus full checkpoints, and
saves them as states.npz (layout: core.formats.states).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.formats.states import CHECKPOINT_PREFIX, ROBOT_NAMES, STATES_SCHEMA, STEP_PREFIX, robot_key, save_states
from core.geometry import matrix_to_quat_wxyz
from simulation.backend import World


class StateLog:
    """The log of a run; `robots` names the robots of a multi-robot run (their arrays under robots/<name>/), None
    for one robot."""

    def __init__(self, world: World, checkpoint_every: int, robots: list[str] | None = None):
        self.checkpoint_every = checkpoint_every
        self.robots = robots
        self._robots = {name: world.robot(name) for name in robots or [None]}
        self.joint_names = {name: list(robot.joint_states()) for name, robot in self._robots.items()}
        # Robots with commandable joints log their targets, which physics replay applies again.
        self.target_names = {name: list(robot.commandable_joints()) for name, robot in self._robots.items()
                             if robot.commandable_joints()}
        actors = world.actor_states()
        self.human_names, self.object_names = list(actors.human_names), list(actors.object_names)
        self._rows: dict[str, list[np.ndarray]] = {}
        self._checkpoints: dict[str, list[np.ndarray]] = {}
        self._checkpoint_steps: list[int] = []

    def _add(self, key: str, value) -> None:
        self._rows.setdefault(key, []).append(np.asarray(value, dtype=np.float64))

    def record(self, world: World, step: int) -> None:
        """Log the world's current state as step `step`."""
        actors = world.actor_states()
        self._add("time", world.time)
        for name, robot in self._robots.items():
            pose = robot.pose()
            joints = robot.joint_states()
            command = robot.command()
            self._add(robot_key("robot_position", name), pose[:3, 3])
            self._add(robot_key(ROTATION, name), pose[:3, :3])  # to quaternions in one call when saved
            self._add(robot_key("joint_positions", name), [joints[n][0] for n in self.joint_names[name]])
            self._add(robot_key("joint_velocities", name), [joints[n][1] for n in self.joint_names[name]])
            self._add(robot_key("command", name), command if step else np.zeros_like(command))
            if name in self.target_names:
                targets = robot.joint_targets()
                self._add(robot_key("joint_targets", name), [targets[n] for n in self.target_names[name]])
        self._add("human_animation_time", actors.animation_time)
        self._add("object_position", actors.object_position)
        self._add("object_quat_wxyz", actors.object_quat_wxyz)
        intensity, color = world.light_settings()
        self._add("light_intensity", intensity)
        self._add("light_color", color)
        for key, value in world.step_state().items():
            self._add(STEP_PREFIX + key, value)
        if step % self.checkpoint_every == 0:
            self._checkpoint_steps.append(step)
            for key, value in world.get_state().items():
                self._checkpoints.setdefault(key, []).append(np.asarray(value))

    def arrays(self) -> dict[str, np.ndarray]:
        arrays = {key: np.stack(rows) for key, rows in self._rows.items() if not key.endswith(ROTATION)}
        for name in self.joint_names:
            rotations = np.stack(self._rows[robot_key(ROTATION, name)])
            arrays[robot_key("robot_quat_wxyz", name)] = matrix_to_quat_wxyz(rotations).reshape(-1, 4)
        arrays |= {CHECKPOINT_PREFIX + key: np.stack(rows) for key, rows in self._checkpoints.items()}
        arrays["schema"] = np.array(STATES_SCHEMA)
        for name, joints in self.joint_names.items():
            arrays[robot_key("joint_names", name)] = np.array(joints, dtype=str)
        for name, joints in self.target_names.items():
            arrays[robot_key("joint_target_names", name)] = np.array(joints, dtype=str)
        arrays |= {"human_names": np.array(self.human_names, dtype=str),
                   "object_names": np.array(self.object_names, dtype=str),
                   "checkpoint_steps": np.array(self._checkpoint_steps, dtype=np.int64)}
        if self.robots is not None:
            arrays[ROBOT_NAMES] = np.array(self.robots, dtype=str)
        return arrays

    def save(self, path: Path) -> None:
        save_states(path, self.arrays())


ROTATION = "robot_rotation"  # rows of 3x3 matrices, turned into robot_quat_wxyz when saved

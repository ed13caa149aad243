"""The state log: collects per physics step what replay and analysis need, plus full checkpoints, and
saves them as states.npz (layout: core.formats.states).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.formats.states import CHECKPOINT_PREFIX, STATES_SCHEMA, STEP_PREFIX, save_states
from core.geometry import matrix_to_quat_wxyz
from simulation.backend import Backend


class StateLog:
    def __init__(self, backend: Backend, checkpoint_every: int):
        self.checkpoint_every = checkpoint_every
        joints = backend.joint_states()
        self.joint_names = list(joints)
        actors = backend.actor_states()
        self.human_names, self.object_names = list(actors.human_names), list(actors.object_names)
        self._rows: dict[str, list[np.ndarray]] = {}
        self._checkpoints: dict[str, list[np.ndarray]] = {}
        self._checkpoint_steps: list[int] = []

    def _add(self, key: str, value) -> None:
        self._rows.setdefault(key, []).append(np.asarray(value, dtype=np.float64))

    def record(self, backend: Backend, step: int) -> None:
        """Log the backend's current state as step `step`."""
        pose = backend.robot_pose()
        joints = backend.joint_states()
        actors = backend.actor_states()
        self._add("time", backend.time)
        self._add("robot_position", pose[:3, 3])
        self._add("robot_rotation", pose[:3, :3])  # to quaternions in one call when saved
        self._add("joint_positions", [joints[n][0] for n in self.joint_names])
        self._add("joint_velocities", [joints[n][1] for n in self.joint_names])
        self._add("command", backend.robot_command() if step else np.zeros_like(backend.robot_command()))
        self._add("human_animation_time", actors.animation_time)
        self._add("object_position", actors.object_position)
        self._add("object_quat_wxyz", actors.object_quat_wxyz)
        intensity, color = backend.light_settings()
        self._add("light_intensity", intensity)
        self._add("light_color", color)
        for key, value in backend.step_state().items():
            self._add(STEP_PREFIX + key, value)
        if step % self.checkpoint_every == 0:
            self._checkpoint_steps.append(step)
            for key, value in backend.get_state().items():
                self._checkpoints.setdefault(key, []).append(np.asarray(value))

    def arrays(self) -> dict[str, np.ndarray]:
        arrays = {key: np.stack(rows) for key, rows in self._rows.items()}
        arrays["robot_quat_wxyz"] = matrix_to_quat_wxyz(arrays.pop("robot_rotation")).reshape(-1, 4)
        arrays |= {CHECKPOINT_PREFIX + key: np.stack(rows) for key, rows in self._checkpoints.items()}
        arrays |= {"schema": np.array(STATES_SCHEMA), "joint_names": np.array(self.joint_names, dtype=str),
                   "human_names": np.array(self.human_names, dtype=str),
                   "object_names": np.array(self.object_names, dtype=str),
                   "checkpoint_steps": np.array(self._checkpoint_steps, dtype=np.int64)}
        return arrays

    def save(self, path: Path) -> None:
        save_states(path, self.arrays())

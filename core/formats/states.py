"""`states.npz`: the state log, per physics step what replay and analysis need, plus full checkpoints.

Arrays (N physics steps, state i at time i * dt; written compressed):

    schema                 ()            str      "grade.states/1"
    time                   (N,)          float64  simulation s
    robot_position         (N, 3)        float64  world <- base_link translation, m
    robot_quat_wxyz        (N, 4)        float64  world <- base_link rotation (w, x, y, z), w >= 0
    joint_names            (J,)          str
    joint_positions        (N, J)        float64  rad or m
    joint_velocities       (N, J)        float64
    command                (N, C)        float64  applied during the step that led to state i (row 0: zeros)
    joint_target_names     (T,)          str      the commandable joints (the TIAGo's torso and head); absent for
                                                  robots without
    joint_targets          (N, T)        float64  their position targets during the step that led to state i
    human_names            (H,)          str
    human_animation_time   (N, H)        float64  each human's animation clip time, s
    object_names           (O,)          str
    object_position        (N, O, 3)     float64  each flying object, world m
    object_quat_wxyz       (N, O, 4)     float64
    light_intensity        (N, L)        float64  as rendered
    light_color            (N, L, 3)     float64
    step.<key>             (N, ...)      float64  the backend's compact state at every step (World.step_state;
                                                  embedded: MuJoCo qpos, qvel, ctrl, act, qacc_warmstart,
                                                  userdata), for teleport replay; absent in older runs
    checkpoint_steps       (K,)          int64    the steps with a checkpoint (every checkpoint_period s)
    checkpoint.<key>       (K, ...)               the backend's complete state (World.get_state) there

A run with several robots (config `robots:`) holds the per-robot arrays (robot_position, robot_quat_wxyz,
joint_names, joint_positions, joint_velocities, command; joint_target_names and joint_targets where the robot has
them) once per robot under `robots/<name>/` (e.g. `robots/my_robot_0/robot_position`) instead, listed by

    robot_names            (R,)          str      the robots in config order

`step.*` and `checkpoint.*` (the simulator's whole state) and the rest are shared.

Physics replay restores a checkpoint and re-applies the logged commands and joint targets, reproducing the run
bit for bit; teleport replay puts the scene in each step's logged state.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.formats.versions import check_schema, schema_tag
from core.rundir import load_npz_checked

STATES_KIND, STATES_MAJOR = "states", 1
STATES_SCHEMA = schema_tag(STATES_KIND, STATES_MAJOR)
STATES_FILE = "states.npz"
ROBOT_ARRAYS = ("robot_position", "robot_quat_wxyz", "joint_names", "joint_positions", "joint_velocities", "command")
SHARED_REQUIRED = ("schema", "time", "checkpoint_steps")
PER_STEP = ("robot_position", "robot_quat_wxyz", "joint_positions", "command", "joint_targets")
PATH_ARRAYS = ("robot_position", "robot_quat_wxyz")
STEP_PREFIX = "step."
CHECKPOINT_PREFIX = "checkpoint."
ROBOT_NAMES = "robot_names"
ROBOTS_PREFIX = "robots/"


def robot_key(key: str, robot: str | None = None) -> str:
    """The array `key` (one of ROBOT_ARRAYS) of robot `robot` in a multi-robot log; None: a one-robot log's."""
    return key if robot is None else f"{ROBOTS_PREFIX}{robot}/{key}"


def robot_names(arrays: dict[str, np.ndarray]) -> list[str] | None:
    """The robots of a multi-robot log, None for a one-robot log."""
    return [str(n) for n in arrays[ROBOT_NAMES]] if ROBOT_NAMES in arrays else None


def choose_robot(arrays: dict[str, np.ndarray], robot: str | None, path: Path) -> str | None:
    """The robot whose arrays to read (`robot_key`): `robot`, by default a multi-robot log's first; None for a
    one-robot log. InputError naming the robots when `robot` is not one of them."""
    names = robot_names(arrays)
    if names is None:
        return None
    if robot is None:
        return names[0]
    if robot not in names:
        raise InputError(f"no robot {robot!r} in the state log; robots: {', '.join(names)}", path, ROBOT_NAMES)
    return robot


def _required(arrays: dict[str, np.ndarray]) -> list[str]:
    """The arrays a log must hold: the shared ones and each robot's."""
    names = robot_names(arrays) if ROBOT_NAMES in arrays else [None]
    return [*SHARED_REQUIRED, *(robot_key(key, name) for name in names for key in ROBOT_ARRAYS)]


def save_states(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write the arrays (the layout above, `schema` included) compressed, in the order given; checked
    first, so a writer bug fails here rather than in a later replay."""
    missing = [key for key in _required(arrays) if key not in arrays]
    if missing:
        raise ValueError(f"states.npz needs the arrays {missing}")
    _check(arrays, Path(path))
    np.savez_compressed(path, **arrays)


def _check(arrays: dict[str, np.ndarray], path: Path) -> None:
    check_schema(str(arrays["schema"]), STATES_KIND, STATES_MAJOR, path)
    steps = len(arrays["time"])
    for name in robot_names(arrays) if ROBOT_NAMES in arrays else [None]:
        for key in (robot_key(k, name) for k in PER_STEP):
            if key in arrays and len(arrays[key]) != steps:
                raise InputError(f"has {len(arrays[key])} rows, time has {steps}", path, key)


def load_states(path: Path) -> dict[str, np.ndarray]:
    """Every array of states.npz, checked (InputError naming the file and array otherwise)."""
    arrays = load_npz_checked(path, list(SHARED_REQUIRED))
    missing = [key for key in _required(arrays) if key not in arrays]
    if missing:
        raise InputError(f"missing arrays {missing}; found {sorted(arrays)}", path, missing[0])
    _check(arrays, Path(path))
    return arrays


@dataclass
class RobotPath:
    time: np.ndarray  # (N,) s
    position: np.ndarray  # (N, 3) world m
    quat_wxyz: np.ndarray  # (N, 4) world <- base_link


def load_robot_path(path: Path, robot: str | None = None) -> RobotPath:
    """Only a robot's path from states.npz (the other arrays, checkpoints included, are not decompressed): robot
    `robot` of a multi-robot log (default its first), the robot of a one-robot log."""
    path = Path(path)
    names = load_npz_checked(path, ["schema", "time"], keys=("schema", "time", ROBOT_NAMES))
    name = choose_robot(names, robot, path)
    keys = {robot_key(key, name): key for key in PATH_ARRAYS}
    found = load_npz_checked(path, list(keys), keys=tuple(keys))
    arrays = {"schema": names["schema"], "time": names["time"], **{keys[k]: v for k, v in found.items()}}
    _check(arrays, path)
    position = arrays["robot_position"]
    if position.ndim != 2 or position.shape[1] != 3 or len(position) == 0:
        raise InputError(f"expected shape (N>0, 3), got {position.shape}", path, "robot_position")
    if arrays["time"].shape != (len(position),):
        raise InputError(f"expected shape ({len(position)},), got {arrays['time'].shape}", path, "time")
    if arrays["robot_quat_wxyz"].shape != (len(position), 4):
        raise InputError(f"expected shape ({len(position)}, 4), got {arrays['robot_quat_wxyz'].shape}", path,
                         "robot_quat_wxyz")
    return RobotPath(arrays["time"].astype(np.float64), position.astype(np.float64),
                     arrays["robot_quat_wxyz"].astype(np.float64))

"""The complete integration state of a MuJoCo world as named numpy arrays, for recording and replay.

Besides positions, velocities, actuator activations, controls and mocap poses, the state holds the
solver's warm start (`qacc_warmstart`), without which a restored run would take different solver
iterations and drift from the original in the last bits; with it, get -> step n -> set -> step n
reproduces the first run exactly. `userdata` carries commands kept outside ctrl (the lightweight
TIAGo's base twist, the TIAGo's joint targets).
"""

from __future__ import annotations

import mujoco
import numpy as np

from core.errors import InputError

STATE_FIELDS = (
    "qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat", "qacc_warmstart", "qfrc_applied", "xfrc_applied",
    "userdata",
)


# What a step of the log holds for teleport replay: positions, velocities, controls and the solver's warm
# start (so that evaluating the sensors again repeats the recorded readings).
STEP_FIELDS = ("qpos", "qvel", "ctrl", "act", "qacc_warmstart", "userdata")
APPLIED_FIELDS = ("ctrl", "userdata")  # the commands a step ran with: logged with the state it led to


# Why a logged state no longer fits the world rebuilt from its run's config: the robot's model changed (the TIAGo's
# torso and head became joints), or the file is not the run's.
MODEL_CHANGED = (": the world rebuilt from the run's config has another robot model than the one that recorded it "
                 "(a run from an older GRADE, whose robot had other joints, cannot be replayed by this one: record it "
                 "again)")

def set_step_state(data: mujoco.MjData, state: dict[str, np.ndarray], applied: dict[str, np.ndarray] | None,
                   source: str = "state") -> None:
    """Write a logged step state (STEP_FIELDS) into `data`, with `applied`'s ctrl and userdata instead of
    the state's own when given; nothing is recomputed. InputError naming the field for a missing or
    misshaped one."""
    for name in STEP_FIELDS:
        value = (applied if applied is not None and name in APPLIED_FIELDS else state).get(name)
        target = getattr(data, name)
        if value is None:
            raise InputError("missing step state field", source, name)
        if np.shape(value) != target.shape:
            raise InputError(f"shape {np.shape(value)} does not match this world's {target.shape}{MODEL_CHANGED}",
                             source, name)
        target[...] = value


def get_state(data: mujoco.MjData) -> dict[str, np.ndarray]:
    """A copy of the state: `time` (0-d array) plus one array per name in STATE_FIELDS."""
    state = {"time": np.array(data.time, dtype=np.float64)}
    for name in STATE_FIELDS:
        state[name] = np.array(getattr(data, name), dtype=np.float64, copy=True)
    return state


def set_state(model: mujoco.MjModel, data: mujoco.MjData, state: dict[str, np.ndarray],
              source: str = "state") -> None:
    """Restore a state from `get_state` (e.g. loaded from states.npz) and recompute derived quantities.

    A missing field or one whose shape does not match this world raises InputError naming it.
    """
    arrays = {}
    for name in ("time", *STATE_FIELDS):
        if name not in state:
            raise InputError("missing state field", source, name)
        value = np.asarray(state[name], dtype=np.float64)
        expected = np.shape(data.time) if name == "time" else getattr(data, name).shape
        if value.shape != expected:
            raise InputError(f"shape {value.shape} does not match this world's {expected}{MODEL_CHANGED}", source, name)
        if not np.isfinite(value).all():
            raise InputError("non-finite values", source, name)
        arrays[name] = value
    data.time = float(arrays.pop("time"))
    for name, value in arrays.items():
        getattr(data, name)[...] = value
    # Positions, contacts and sensors of the restored state; mj_forward leaves the state itself as is.
    warmstart = data.qacc_warmstart.copy()
    mujoco.mj_forward(model, data)
    data.qacc_warmstart[:] = warmstart

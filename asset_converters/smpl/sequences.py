"""SMPL-family motion sequences: reading AMASS and plain SMPL `.npz` files, resampling them to a target
frame rate, fitting their joints to a body model and finding which axis is up.

AMASS (`poses` (N, 156) SMPL-H axis-angle, `trans`, `betas`, `gender`, `mocap_framerate`) is Z-up.
Plain SMPL sequences (`poses` (N, 72) or (N, 24, 3), `trans`, `fps`) follow the SMPL template's own
convention, Y-up, unless the user says otherwise (`--up`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from asset_converters.smpl.body_model import BODY_JOINTS, JOINT_NAMES, normalize_gender
from core.errors import InputError
from core.geometry import Y_UP_TO_Z_UP
from core.progress import get_logger
from core.rundir import load_npz_checked

log = get_logger("convert.smpl")

FPS_KEYS = ("mocap_framerate", "mocap_frame_rate", "fps", "frame_rate")
POSE_WIDTHS = {3 * j: j for j in JOINT_NAMES}  # 72 -> SMPL (24 joints), 156 -> SMPL-H (52 joints)
DEFAULT_UP = {"amass": "z", "smpl": "y"}
UP_ROTATIONS = {"z": np.eye(3), "y": Y_UP_TO_Z_UP}
SMPL_TEMPLATE_UP = np.array([0.0, 1.0, 0.0])  # the body's up direction in the SMPL template


@dataclass(frozen=True)
class MotionSequence:
    """One SMPL-family motion, axis-angle per joint, in the data's own up convention."""

    source: Path
    format: str  # "amass" | "smpl"
    poses: np.ndarray  # (N, J, 3), J = 24 (SMPL) or 52 (SMPL-H)
    trans: np.ndarray  # (N, 3)
    fps: float
    betas: np.ndarray | None = None
    gender: str | None = None

    @property
    def frame_count(self) -> int:
        return len(self.poses)

    @property
    def joint_count(self) -> int:
        return self.poses.shape[1]


def read_sequence(path: str | Path) -> MotionSequence:
    """Read an AMASS or plain SMPL `.npz`; InputError naming the file and field for anything malformed."""
    path = Path(path)
    data = load_npz_checked(path, ["poses", "trans"])
    poses = check_poses(data["poses"], path)
    n = len(poses)
    trans = np.asarray(data["trans"], dtype=np.float64)
    if trans.shape != (n, 3):
        raise InputError(f"shape {trans.shape} does not match poses: expected ({n}, 3), one row per frame",
                         path, "trans")
    if not np.isfinite(trans).all():
        raise InputError("contains NaN or infinite values", path, "trans")
    fps_key = next((k for k in FPS_KEYS if k in data), None)
    if fps_key is None:
        raise InputError(f"no frame rate: expected one of {list(FPS_KEYS)}", path, "fps")
    fps = _scalar(data[fps_key], path, fps_key)
    if not np.isfinite(fps) or fps <= 0:
        raise InputError(f"frame rate must be > 0, got {fps}", path, fps_key)
    betas = None
    if "betas" in data:
        betas = np.asarray(data["betas"], dtype=np.float64).reshape(-1)
        if not np.isfinite(betas).all():
            raise InputError("contains NaN or infinite values", path, "betas")
    gender = normalize_gender(data["gender"], path) if "gender" in data else None
    fmt = "amass" if "mocap_framerate" in data or "mocap_frame_rate" in data or poses.shape[1] == 52 else "smpl"
    return MotionSequence(path, fmt, poses, trans, fps, betas, gender)


def check_poses(raw: np.ndarray, path: Path, field: str = "poses") -> np.ndarray:
    """(N, 72) / (N, 156) / (N, 24, 3) / (N, 52, 3) -> (N, J, 3) float64, finite, N >= 1."""
    poses = np.asarray(raw)
    if not np.issubdtype(poses.dtype, np.number):
        raise InputError(f"expected numbers, found dtype {poses.dtype}", path, field)
    poses = poses.astype(np.float64)
    if poses.ndim >= 1 and len(poses) == 0:
        raise InputError("has no frames", path, field)
    widths = ", ".join(f"{w} ({j} joints)" for w, j in POSE_WIDTHS.items())
    if poses.ndim == 3 and poses.shape[2] == 3 and poses.shape[1] in JOINT_NAMES:
        pass
    elif poses.ndim == 2 and poses.shape[1] in POSE_WIDTHS:
        poses = poses.reshape(len(poses), -1, 3)
    else:
        raise InputError(f"shape {poses.shape}: expected (frames, width) with width {widths}, "
                         "or (frames, joints, 3)", path, field)
    if not np.isfinite(poses).all():
        bad = np.flatnonzero(~np.isfinite(poses).all(axis=(1, 2)))
        raise InputError(f"contains NaN or infinite values (first bad frame {bad[0]})", path, field)
    return poses


def _scalar(value: np.ndarray, path: Path, field: str) -> float:
    try:
        return float(np.asarray(value).reshape(-1)[0])
    except (TypeError, ValueError, IndexError) as exc:
        raise InputError(f"expected a number ({exc})", path, field) from exc


# ---------------------------------------------------------------- joints and axes


def fit_joints(poses: np.ndarray, joint_count: int) -> np.ndarray:
    """Map (N, J_source, 3) poses onto a model with `joint_count` joints.

    SMPL-H (52) -> SMPL (24): the 22 body joints are copied and SMPL's two hand joints (left_hand,
    right_hand: the knuckles, which carry the fingers' skin) are set to identity, i.e. flat open hands.
    SMPL-H's 30 finger joints have no SMPL counterpart; this is the usual approximation of AMASS
    preprocessing for SMPL models (e.g. VIBE and SPIN). SMPL (24) -> SMPL-H (52): the 22 body joints are
    copied and the fingers left straight.
    """
    if poses.shape[1] == joint_count:
        return poses
    out = np.zeros((len(poses), joint_count, 3))
    out[:, :BODY_JOINTS] = poses[:, :BODY_JOINTS]
    return out


def detected_up(poses: np.ndarray) -> str:
    """'z' or 'y': where the root orientation points the SMPL body's up axis, on average over frames."""
    up = Rotation.from_rotvec(poses[:, 0]).apply(SMPL_TEMPLATE_UP).mean(axis=0)
    return "z" if abs(up[2]) > abs(up[1]) else "y"


def resolve_up(seq: MotionSequence, up: str | None) -> str:
    """The up axis to use: the user's choice or the format's default; warns when the poses disagree."""
    if up is not None and up not in UP_ROTATIONS:
        raise InputError(f"up axis must be one of {sorted(UP_ROTATIONS)}, got {up!r}", seq.source, "up")
    chosen = up or DEFAULT_UP[seq.format]
    looks = detected_up(seq.poses)
    if looks != chosen:
        log.warning("%s: treating the data as %s-up, but its root orientation looks %s-up; pass --up %s if "
                    "the body comes out lying down", seq.source, chosen.upper(), looks.upper(), looks)
    return chosen


# ---------------------------------------------------------------- resampling


def resample_times(frame_count: int, source_fps: float, target_fps: float) -> np.ndarray:
    """Source-frame coordinates (fractional) of the target frames, covering the source's duration."""
    duration = (frame_count - 1) / source_fps
    # A small tolerance keeps a last frame that round-off would drop (e.g. 120.00005 fps sources).
    count = int(np.floor(duration * target_fps + 1e-6)) + 1
    return np.minimum(np.arange(count) * (source_fps / target_fps), frame_count - 1)


def interpolate_rotations(rotvecs: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """Slerp (N, J, 3) axis-angle rotations at fractional frame coordinates -> (M, J, 3)."""
    lo = np.floor(coords).astype(np.int64)
    hi = np.minimum(lo + 1, len(rotvecs) - 1)
    alpha = (coords - lo)[:, None]
    r0 = Rotation.from_rotvec(rotvecs[lo].reshape(-1, 3))
    r1 = Rotation.from_rotvec(rotvecs[hi].reshape(-1, 3))
    step = (r0.inv() * r1).as_rotvec().reshape(len(coords), -1, 3)
    out = (r0 * Rotation.from_rotvec((step * alpha[:, :, None]).reshape(-1, 3))).as_rotvec().reshape(step.shape)
    exact = alpha[:, 0] == 0  # keep source frames bit-for-bit where no interpolation is needed
    out[exact] = rotvecs[lo[exact]]
    return out


def interpolate_linear(values: np.ndarray, coords: np.ndarray) -> np.ndarray:
    """Lerp (N, ...) arrays at fractional frame coordinates -> (M, ...)."""
    lo = np.floor(coords).astype(np.int64)
    hi = np.minimum(lo + 1, len(values) - 1)
    alpha = (coords - lo).reshape(-1, *([1] * (values.ndim - 1)))
    return values[lo] * (1 - alpha) + values[hi] * alpha


def resample(seq: MotionSequence, target_fps: float) -> MotionSequence:
    """The sequence at `target_fps`: rotations slerped, translations lerped."""
    if not np.isfinite(target_fps) or target_fps <= 0:
        raise InputError(f"target fps must be > 0, got {target_fps}", seq.source, "fps")
    if target_fps == seq.fps:
        return seq
    coords = resample_times(seq.frame_count, seq.fps, target_fps)
    return replace(seq, poses=interpolate_rotations(seq.poses, coords),
                   trans=interpolate_linear(seq.trans, coords), fps=float(target_fps))

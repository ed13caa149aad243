"""Procedural motions for the humanoid: walk, jog, idle, talk and wave, as per-frame joint rotations.

Joint rotations are relative to the parent and, because every bind rotation is the identity,
expressed in axes parallel to the world's in the rest pose: x forward, y to the body's left, z up.
A rotation about +y by a positive angle swings a hanging limb backwards; about +x, towards +y.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from asset_converters.procedural.humanoid import JOINTS, PARENTS, Body, J, sole_points
from core.geometry import forward_kinematics, xyzw_to_wxyz

FPS = 30.0
WALK_DISTANCE = (2.0, 4.0)  # m
WALK_SPEED = 0.72  # body heights per second (about 1.25 m/s for 1.75 m)
STRIDE = 0.83  # body heights per gait cycle (two steps)
JOG_DISTANCE = (3.0, 5.0)  # m
JOG_SPEED = 1.3  # body heights per second (about 2.3 m/s for 1.75 m)
JOG_STRIDE = 1.1  # body heights per gait cycle
TALK_SECONDS = (3.0, 4.5)
TALK_GESTURE_HZ = (0.6, 1.2)
IDLE_SECONDS = (3.0, 4.5)
WAVE_SECONDS = (3.0, 4.0)
WAVE_RAISE = 0.7  # s to raise (and to lower) the arm
WAVE_HZ = (1.5, 2.5)


@dataclass(frozen=True)
class Motion:
    local_rotations: np.ndarray  # (N, J, 4) w, x, y, z
    local_translations: np.ndarray  # (N, J, 3)


class Pose:
    """Accumulates per-frame rotations per joint (applied in the order they are added)."""

    def __init__(self, frames: int):
        self.frames = frames
        self.rotations = [Rotation.identity(frames) for _ in JOINTS]

    def turn(self, joint: str, axis: str, angle: np.ndarray | float) -> None:
        unit = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}[axis]
        angle = np.broadcast_to(np.asarray(angle, dtype=float), (self.frames,))
        self.rotations[J[joint]] = self.rotations[J[joint]] * Rotation.from_rotvec(np.outer(angle, unit))

    def quaternions(self) -> np.ndarray:
        return np.stack([xyzw_to_wxyz(r.as_quat(canonical=True)) for r in self.rotations], axis=1)


def _translations(body: Body, frames: int, root: np.ndarray) -> np.ndarray:
    """Rest offsets from each parent, with the root's per-frame position."""
    offsets = np.array([body.joints[j] - (body.joints[p] if p >= 0 else 0.0) for j, p in enumerate(PARENTS)])
    out = np.repeat(offsets[None], frames, axis=0)
    out[:, 0] = root
    return out


def _plant(body: Body, rotations: np.ndarray, translations: np.ndarray) -> Motion:
    """Move the root up or down in every frame so the lowest sole corner rests on z = 0:
    no foot sinks into the floor and the body never floats."""
    world = forward_kinematics(PARENTS, rotations, translations)
    ankles = world[:, [J["l_ankle"], J["r_ankle"]]]  # (N, 2, 4, 4)
    soles = np.einsum("nfij,fcj->nfci", ankles[..., :3, :3], sole_points(body)) + ankles[:, :, None, :3, 3]
    planted = translations.copy()
    planted[:, 0, 2] -= soles[..., 2].min(axis=(1, 2))
    return Motion(rotations, planted)


def _smoothstep(x: np.ndarray) -> np.ndarray:
    x = np.clip(x, 0.0, 1.0)
    return x * x * (3 - 2 * x)


@dataclass(frozen=True)
class Gait:
    distance: tuple[float, float]  # m
    speed: float  # body heights per second
    stride: float  # body heights per gait cycle
    hip: tuple[float, float]  # swing amplitude range, rad
    arm: tuple[float, float]  # swing amplitude range, rad
    knee_swing: float  # extra knee bend in mid-swing, rad
    elbow: float  # elbow bend, rad
    lean: float  # forward lean of the spine, rad


WALK = Gait(WALK_DISTANCE, WALK_SPEED, STRIDE, (0.35, 0.5), (0.25, 0.45), 0.65, 0.25, 0.05)
JOG = Gait(JOG_DISTANCE, JOG_SPEED, JOG_STRIDE, (0.45, 0.6), (0.35, 0.55), 1.1, 1.3, 0.15)


def _gait(rng: np.random.Generator, body: Body, gait: Gait) -> Motion:
    """A straight gait along +x: legs and arms swing in opposition, the pelvis bobs."""
    h = body.height
    distance, speed = float(rng.uniform(*gait.distance)), gait.speed * h * float(rng.uniform(0.9, 1.1))
    frames = round(distance / speed * FPS) + 1
    t = np.arange(frames) / FPS
    phase = 2 * np.pi * speed / (gait.stride * h) * t + float(rng.uniform(0, 2 * np.pi))
    hip_amp, arm_amp = float(rng.uniform(*gait.hip)), float(rng.uniform(*gait.arm))
    pose = Pose(frames)
    for side, offset in (("l", 0.0), ("r", np.pi)):
        p = phase + offset
        hip = -hip_amp * np.sin(p)  # negative: the leg swings forward
        knee = 0.08 + gait.knee_swing * np.maximum(np.cos(p), 0.0) ** 1.5  # bends most in mid-swing
        # Foot pitch in the world (positive: toes down): rolls onto the toes while the leg is behind,
        # lifts the toes in the swing, flat otherwise.
        pitch = 0.35 * np.maximum(-np.sin(p), 0.0) ** 2 - 0.1 * np.maximum(np.cos(p), 0.0)
        pose.turn(f"{side}_hip", "y", hip)
        pose.turn(f"{side}_knee", "y", knee)
        pose.turn(f"{side}_ankle", "y", pitch - hip - knee)
        # Each arm swings against the leg on its side.
        pose.turn(f"{side}_shoulder", "y", arm_amp * np.sin(p))
        pose.turn(f"{side}_elbow", "y", -(gait.elbow + 0.25 * np.maximum(-np.sin(p), 0.0)))
    pose.turn("pelvis", "z", 0.07 * np.sin(phase))
    pose.turn("chest", "z", -0.1 * np.sin(phase))
    pose.turn("spine", "y", -gait.lean)
    root = np.zeros((frames, 3))
    root[:, 0] = speed * t
    root[:, 2] = body.joints[0, 2]  # the pelvis height then follows from planting the feet
    return _plant(body, pose.quaternions(), _translations(body, frames, root))


def walk(rng: np.random.Generator, body: Body) -> Motion:
    """A straight walk along +x of 2-4 m."""
    return _gait(rng, body, WALK)


def jog(rng: np.random.Generator, body: Body) -> Motion:
    """A straight jog along +x of 3-5 m: longer strides, bent elbows, more knee lift, a forward lean.
    Planted like every motion: one foot always touches the floor (no flight phase)."""
    return _gait(rng, body, JOG)


def idle(rng: np.random.Generator, body: Body) -> Motion:
    """Standing: breathing, a slow side-to-side weight shift, looking around. The feet stay put."""
    h = body.height
    frames = round(float(rng.uniform(*IDLE_SECONDS)) * FPS)
    t = np.arange(frames) / FPS
    duration = frames / FPS
    # Whole cycles over the clip, so it loops.
    breath = 2 * np.pi * max(1, round(duration / 3.5)) * t / duration + float(rng.uniform(0, 2 * np.pi))
    sway = 2 * np.pi * t / duration + float(rng.uniform(0, 2 * np.pi))
    shift = 0.015 * h * np.sin(sway)
    leg = body.joints[J["l_hip"], 2] - body.joints[J["l_ankle"], 2]
    tilt = np.arcsin(shift / leg)
    pose = Pose(frames)
    for side in ("l", "r"):
        pose.turn(f"{side}_hip", "x", -tilt)  # the legs lean so the feet stay where they are
        pose.turn(f"{side}_ankle", "x", tilt)
        pose.turn(f"{side}_shoulder", "y", 0.04 * np.sin(sway + (0 if side == "l" else np.pi)))
        pose.turn(f"{side}_elbow", "y", -0.12)
    pose.turn("spine", "x", 0.5 * tilt)
    pose.turn("chest", "y", -0.025 * (0.5 + 0.5 * np.sin(breath)))
    pose.turn("head", "z", float(rng.uniform(0.2, 0.4)) * np.sin(2 * sway + float(rng.uniform(0, np.pi))))
    pose.turn("neck", "y", 0.05 * np.sin(sway))
    root = np.repeat(body.joints[:1], frames, axis=0)
    root[:, 1] += shift
    return _plant(body, pose.quaternions(), _translations(body, frames, root))


def wave(rng: np.random.Generator, body: Body) -> Motion:
    """The right arm rises above the head, waves side to side, and comes down again."""
    frames = round(float(rng.uniform(*WAVE_SECONDS)) * FPS)
    t = np.arange(frames) / FPS
    duration = frames / FPS
    raised = _smoothstep(t / WAVE_RAISE) * _smoothstep((duration - t) / WAVE_RAISE)
    beat = np.sin(2 * np.pi * float(rng.uniform(*WAVE_HZ)) * t)
    pose = Pose(frames)
    # Negative about x takes the right arm out to the side and up (2.6 rad: 30 deg short of vertical).
    pose.turn("r_shoulder", "x", -2.6 * raised)
    pose.turn("r_shoulder", "y", -0.2 * raised)  # a little in front of the body
    pose.turn("r_elbow", "x", -(0.5 + 0.35 * beat) * raised)  # the forearm sweeps over the head and back
    pose.turn("r_wrist", "x", -0.25 * beat * raised)
    pose.turn("l_elbow", "y", -0.15)
    pose.turn("chest", "x", -0.06 * raised)  # lean away from the raised arm
    pose.turn("head", "x", 0.05 * raised)
    root = np.repeat(body.joints[:1], frames, axis=0)
    return _plant(body, pose.quaternions(), _translations(body, frames, root))


def talk(rng: np.random.Generator, body: Body) -> Motion:
    """Standing and talking: both forearms gesture out of phase, the head nods, the chest turns a little
    towards the listener and back. The feet stay put."""
    frames = round(float(rng.uniform(*TALK_SECONDS)) * FPS)
    t = np.arange(frames) / FPS
    duration = frames / FPS
    beat = 2 * np.pi * float(rng.uniform(*TALK_GESTURE_HZ)) * t
    phases = rng.uniform(0, 2 * np.pi, 3)
    # Whole cycles of the slow turn over the clip, so it loops.
    turn = np.sin(2 * np.pi * t / duration + phases[2])
    pose = Pose(frames)
    for side, sign, phase in (("l", 1.0, phases[0]), ("r", -1.0, phases[1])):
        lift = 0.5 + 0.5 * np.sin(beat + phase)
        pose.turn(f"{side}_shoulder", "y", -(0.2 + 0.25 * lift))  # upper arm a little forward
        pose.turn(f"{side}_shoulder", "x", sign * 0.1 * lift)  # and out to the side
        pose.turn(f"{side}_elbow", "y", -(0.9 + 0.5 * lift))  # forearm up in front
        pose.turn(f"{side}_wrist", "x", sign * 0.3 * np.sin(beat + phase))
    pose.turn("chest", "z", 0.15 * turn)
    pose.turn("head", "y", 0.08 * np.sin(2 * beat + phases[0]))  # nods twice per gesture
    pose.turn("head", "z", 0.2 * turn)
    root = np.repeat(body.joints[:1], frames, axis=0)
    return _plant(body, pose.quaternions(), _translations(body, frames, root))


MOTIONS: dict[str, Callable[[np.random.Generator, Body], Motion]] = {
    "walk": walk, "idle": idle, "wave": wave, "jog": jog, "talk": talk}

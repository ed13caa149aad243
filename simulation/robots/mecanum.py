"""Mecanum kinematics of the TIAGo++ Omni base (four wheels, 45 deg rollers, "X" layout).

Base frame (REP-103): x forward, y left, z up; a twist is (vx, vy, wz) in m/s and rad/s in that
frame. Wheel order is FL, FR, RL, RR; a positive wheel speed rolls that wheel forward (+x).

With L = Lx + Ly the inverse kinematics is

    w = (1/r) [[1, -1, -L],     FL
               [1,  1,  L],     FR
               [1,  1, -L],     RL
               [1, -1,  L]] @ [vx, vy, wz]    RR

which is the layout of the physical model in `tiago_model.py` (rollers of FL and RR lean one
way, FR and RL the other; seen from above, the upper rollers form an X and the ground contacts an
O, the standard "X" mecanum layout): each wheel can only
roll without slip along its bottom roller's axis, which gives exactly these rows (the driving test
in tests/test_robot_models.py checks the sign of every column against MuJoCo). This is the form
of ros2_controllers' mecanum_drive_controller. The forward kinematics is the pseudo-inverse.

The often-quoted variant with the vy column negated, rows [1, 1, -L], [1, -1, L], [1, -1, -L],
[1, 1, L], belongs to a frame with y to the right (or to this matrix with front and rear rows
swapped); no roller layout satisfies it in a right-handed x-forward, y-left, z-up frame, since a
wheel's rotation coefficient is -(y + h x) for roller handedness h = -(its vy coefficient).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from core.robot_catalogue import TIAGO_WHEEL_RADIUS

WHEEL_RADIUS = TIAGO_WHEEL_RADIUS  # m
HALF_WHEELBASE = 0.244  # Lx: base centre to the wheel axles along x, m
HALF_TRACK = 0.22317  # Ly: base centre to the wheel mid-planes along y, m
WHEEL_NAMES = ("FL", "FR", "RL", "RR")
# Wheel centre positions in the base frame (x, y), in WHEEL_NAMES order.
WHEEL_POSITIONS = np.array([[1.0, 1.0], [1.0, -1.0], [-1.0, 1.0], [-1.0, -1.0]]) * (HALF_WHEELBASE, HALF_TRACK)
# Roller handedness per wheel: +1 where the bottom roller's axis runs from front-right to back-left
# (FL, RR), -1 for the mirror image (FR, RL). The physical model builds its rollers from this.
ROLLER_HANDEDNESS = np.array([1.0, -1.0, -1.0, 1.0])


@lru_cache(maxsize=8)
def ik_matrix(radius: float = WHEEL_RADIUS, lx: float = HALF_WHEELBASE, ly: float = HALF_TRACK) -> np.ndarray:
    """(4, 3) matrix mapping a base twist (vx, vy, wz) to wheel speeds (rad/s); read-only, cached."""
    # A wheel at (x, y) moves with the base at (vx - wz y, vy + wz x); its bottom roller lets it slip
    # freely across the roller axis only, so the rolling speed r w = v_x - h v_y.
    x, y = (np.sign(WHEEL_POSITIONS) * (lx, ly)).T
    h = ROLLER_HANDEDNESS
    matrix = np.stack([np.ones(4), -h, -y - h * x], axis=1) / radius
    matrix.flags.writeable = False
    return matrix


def wheel_speeds(twist: np.ndarray, radius: float = WHEEL_RADIUS, lx: float = HALF_WHEELBASE,
                 ly: float = HALF_TRACK) -> np.ndarray:
    """Inverse kinematics: base twist(s) (..., 3) -> wheel speeds (..., 4) in FL, FR, RL, RR order."""
    twist = np.asarray(twist, dtype=np.float64)
    if twist.shape[-1] != 3:
        raise ValueError(f"a twist has 3 components (vx, vy, wz), got shape {twist.shape}")
    return twist @ ik_matrix(radius, lx, ly).T


def base_twist(speeds: np.ndarray, radius: float = WHEEL_RADIUS, lx: float = HALF_WHEELBASE,
               ly: float = HALF_TRACK) -> np.ndarray:
    """Forward kinematics: wheel speeds (..., 4) -> the least-squares base twist (..., 3)."""
    speeds = np.asarray(speeds, dtype=np.float64)
    if speeds.shape[-1] != 4:
        raise ValueError(f"wheel speeds have 4 components (FL, FR, RL, RR), got shape {speeds.shape}")
    return speeds @ np.linalg.pinv(ik_matrix(radius, lx, ly)).T

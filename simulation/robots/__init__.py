"""Robot models for the embedded (MuJoCo) backend and the mecanum kinematics of TIAGo++ Omni."""

from __future__ import annotations

from simulation.robots.mecanum import WHEEL_NAMES, WHEEL_RADIUS, base_twist, ik_matrix, wheel_speeds
from simulation.robots.spec import RobotModel
from simulation.robots.tiago_model import lightweight, physical
from simulation.robots.uav_model import uav

__all__ = [
    "WHEEL_NAMES", "WHEEL_RADIUS", "RobotModel", "base_twist", "ik_matrix", "lightweight", "physical", "robot_model",
    "uav", "wheel_speeds",
]


def robot_model(kind: str, tiago_model: str = "lightweight") -> RobotModel:
    """The model for a config's `robot.kind` ("uav" | "tiago_omni") and `robot.tiago.model`."""
    if kind == "uav":
        return uav()
    if kind == "tiago_omni":
        builders = {"physical": physical, "lightweight": lightweight}
        if tiago_model not in builders:
            raise ValueError(f"unknown TIAGo model {tiago_model!r}; expected one of {sorted(builders)}")
        return builders[tiago_model]()
    raise ValueError(f"unknown robot kind {kind!r}; expected 'uav' or 'tiago_omni'")

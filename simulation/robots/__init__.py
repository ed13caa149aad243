"""Robot models for the embedded (MuJoCo) backend, the mecanum kinematics of TIAGo++ Omni and its
S-curve velocity profiles. Names are imported on first use, so `grade --help` stays fast."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from simulation.robots.spec import RobotModel

_EXPORTS = {
    **{name: "mecanum" for name in ("WHEEL_NAMES", "WHEEL_RADIUS", "base_twist", "ik_matrix", "wheel_speeds")},
    **{name: "scurve" for name in ("SCurveFollower", "SCurveNetwork", "default_network", "follower_for",
                                   "load_network", "save_network")},
    "RobotModel": "spec", "lightweight": "tiago_model", "physical": "tiago_model", "uav": "uav_model",
    "robot_app": "cli",  # the `grade robot` commands
}
__all__ = sorted([*_EXPORTS, "robot_model"])


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'simulation.robots' has no attribute {name!r}")
    return getattr(import_module(f"simulation.robots.{_EXPORTS[name]}"), name)


def robot_model(kind: str, tiago_model: str = "lightweight") -> RobotModel:
    """The model for a config's `robot.kind` ("uav" | "tiago_omni") and `robot.tiago.model`."""
    from simulation.robots.tiago_model import lightweight, physical
    from simulation.robots.uav_model import uav

    if kind == "uav":
        return uav()
    if kind == "tiago_omni":
        builders = {"physical": physical, "lightweight": lightweight}
        if tiago_model not in builders:
            raise ValueError(f"unknown TIAGo model {tiago_model!r}; expected one of {sorted(builders)}")
        return builders[tiago_model]()
    raise ValueError(f"unknown robot kind {kind!r}; expected 'uav' or 'tiago_omni'")

"""Robot models for the embedded (MuJoCo) backend, one module per kind of core.robot_catalogue (`uav_model`,
`tiago_model`, `description_model`) and what they share (`spec`, `mjcf`), the mecanum kinematics of TIAGo++ Omni
(`mecanum`) and its S-curve velocity profiles (`s_curve`). Import the defining module: importing this package
loads none of them, so `grade --help` stays fast."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.config import RobotConfig
    from simulation.robots.spec import RobotModel


def _uav(robot: RobotConfig) -> RobotModel:
    from simulation.robots.uav_model import uav

    return uav()


def _tiago(robot: RobotConfig) -> RobotModel:
    from simulation.robots.tiago_model import lightweight, physical

    return {"physical": physical, "lightweight": lightweight}[robot.tiago.model]()


def _description(robot: RobotConfig) -> RobotModel:
    from simulation.robots.description_model import description_model

    return description_model(robot)


# One model builder per robot kind (the keys of core.robot_catalogue.KINDS).
MODELS: dict[str, Callable[[RobotConfig], RobotModel]] = {"uav": _uav, "tiago_omni": _tiago, "custom": _description}


def robot_model(robot: RobotConfig) -> RobotModel:
    """The model of a config's `robot` (its kind, and the kind's own settings)."""
    return MODELS[robot.kind](robot)

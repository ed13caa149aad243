"""Robot models for the embedded (MuJoCo) backend (`spec`, `tiago_model`, `uav_model`), the mecanum
kinematics of TIAGo++ Omni (`mecanum`), its S-curve velocity profiles (`scurve`) and the `grade robot`
commands (`cli`). Import the defining module: importing this package loads none of them, so
`grade --help` stays fast."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.robot_catalogue import ROBOTS

if TYPE_CHECKING:
    from simulation.robots.spec import RobotModel


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
    raise ValueError(f"unknown robot kind {kind!r}; expected one of {sorted(ROBOTS)}")

"""Robot controllers: a PID with limits and anti-windup, the UAV's 6-DOF PID joint velocity controller and
a P controller for the TIAGo's omnidirectional base."""

from simulation.control.pid import Pid
from simulation.control.planar import PlanarController, PlanarLimits
from simulation.control.uav_controller import JOINT_NAMES, UavController, UavState, clip_norm, wrap_angle

__all__ = [
    "JOINT_NAMES", "Pid", "PlanarController", "PlanarLimits", "UavController", "UavState", "clip_norm", "wrap_angle",
]

"""MuJoCo physics of the embedded backend: environment collision, robots, kinematic bodies, IMUs, state."""

from simulation.physics.environment import ConvexPiece, EnvironmentCollision, decompose, load_environment_collision
from simulation.physics.kinematic import KinematicBody, human_body, object_body
from simulation.physics.model import (
    DEFAULT_TIMESTEP,
    PhysicsWorld,
    PlacedRobot,
    build_fleet,
    build_mjcf,
    build_world,
)
from simulation.physics.robot_handle import StartPose
from simulation.physics.sensors import SensorMount
from simulation.physics.state import STATE_FIELDS, get_state, set_state

__all__ = [
    "DEFAULT_TIMESTEP", "STATE_FIELDS", "ConvexPiece", "EnvironmentCollision", "KinematicBody", "PhysicsWorld",
    "PlacedRobot", "SensorMount", "StartPose", "build_fleet", "build_mjcf", "build_world", "decompose", "get_state", "human_body",
    "load_environment_collision", "object_body", "set_state",
]

"""The embedded backend (architecture.md §5): a `Scene` loaded from scene.usda and its asset packages, and the
`EmbeddedWorld` built from it (MuJoCo physics and sensors, the Embree ray-cast renderer, Cycles) with its
`EmbeddedRobot`s."""

from simulation.embedded.randomization import Randomizer, kelvin_to_rgb, planckian_xy
from simulation.embedded.robot import EmbeddedRobot
from simulation.embedded.scene import RobotPlacement, Scene, load_scene
from simulation.embedded.sensors import BODY_TO_OPTICAL, CameraSensor, LidarSensor
from simulation.embedded.world import EmbeddedWorld

__all__ = [
    "BODY_TO_OPTICAL", "CameraSensor", "EmbeddedRobot", "EmbeddedWorld", "LidarSensor", "Randomizer", "RobotPlacement",
    "Scene", "kelvin_to_rgb", "load_scene", "planckian_xy",
]

"""The embedded backend (DESIGN.md §5): MuJoCo physics and sensors, the Embree ray-cast renderer, a scene
loaded from scene.usda and its asset packages."""

from simulation.embedded.backend import EmbeddedBackend
from simulation.embedded.randomization import Randomizer, kelvin_to_rgb, planckian_xy
from simulation.embedded.scene_file import SceneFile, read_scene_file
from simulation.embedded.scene_loader import EmbeddedScene, load_scene
from simulation.embedded.sensors import BODY_TO_OPTICAL, CameraSensor, LidarSensor

__all__ = [
    "BODY_TO_OPTICAL", "CameraSensor", "EmbeddedBackend", "EmbeddedScene", "LidarSensor", "Randomizer", "SceneFile",
    "kelvin_to_rgb", "load_scene", "planckian_xy", "read_scene_file",
]

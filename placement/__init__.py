"""Collision-free placement (DESIGN.md §2 "Placement"): humans via their swept traces (python-fcl),
flying objects with smooth random motion, and the robot's start pose.

Public surface: `place_scene` (config sections in, `PlacedScene` out), `write_outputs`,
`list_packages`, the placement.json schema with `load_placement`/`write_placement`, and the
helpers later stages need to play a placement back (`animation_time`, `flying_pose`).
"""

from placement.flying import flying_pose
from placement.robot_start import ROBOT_VOLUMES
from placement.schema import (
    AnimationSchedule,
    FlyingMotion,
    FlyingObject,
    PlacedHuman,
    Placement,
    RejectedHuman,
    RobotStart,
    animation_time,
    load_placement,
    write_placement,
)
from placement.stage import PlacedScene, list_packages, place_scene, write_outputs

__all__ = [
    "ROBOT_VOLUMES", "AnimationSchedule", "FlyingMotion", "FlyingObject", "PlacedHuman", "PlacedScene", "Placement",
    "RejectedHuman", "RobotStart", "animation_time", "flying_pose", "list_packages", "load_placement",
    "place_scene", "write_outputs", "write_placement",
]

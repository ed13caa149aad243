"""Collision-free placement (DESIGN.md §2 "Placement"): humans via their swept traces (python-fcl),
flying objects with smooth random motion, and the robot's start pose.

Public surface: `place_scene` (config sections in, `PlacedScene` out), `write_outputs`,
`list_packages`, the placement.json schema with `load_placement`/`write_placement`, the helpers later
stages need to play a placement back (`animation_time`, `flying_pose`) and `compose_scene`
(scene.usda). Names are imported on first use, so the CLI starts without loading FCL and trimesh.
"""

from importlib import import_module

_EXPORTS = {
    "flying_pose": "flying", "ROBOT_VOLUMES": "robot_start", "compose_scene": "compose",
    **{name: "schema" for name in ("AnimationSchedule", "FlyingMotion", "FlyingObject", "PlacedHuman", "Placement",
                                   "RejectedHuman", "RobotStart", "animation_time", "load_placement",
                                   "write_placement")},
    **{name: "stage" for name in ("PlacedScene", "list_packages", "place_scene", "write_outputs")},
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'placement' has no attribute {name!r}")
    return getattr(import_module(f"placement.{_EXPORTS[name]}"), name)

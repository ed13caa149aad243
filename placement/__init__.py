"""Collision-free placement (DESIGN.md §2 "Placement"): humans via their swept traces (python-fcl),
flying objects with smooth random motion, and the robot's start pose.

Public surface: `place_scene` (config sections in, `PlacedScene` out), `write_outputs`,
`list_packages`, `compose_scene` (scene.usda), the robot volumes and the `grade place` command. The
placement.json format, with `load_placement`/`write_placement` and the playback helpers
(`animation_time`, `flying_pose`), is defined in core.formats.placement and exported here as this
stage's artifact. Names are imported on first use, so the CLI starts without loading FCL and trimesh.
"""

from importlib import import_module

# name -> the module that defines it
_EXPORTS = {
    "ROBOT_VOLUMES": "placement.robot_start", "compose_scene": "placement.compose",
    "place_command": "placement.cli",
    **{name: "core.formats.placement" for name in (
        "AnimationSchedule", "FlyingMotion", "FlyingObject", "PlacedHuman", "Placement", "RejectedHuman", "RobotStart",
        "animation_time", "flying_pose", "load_placement", "write_placement")},
    **{name: "placement.stage" for name in ("PlacedScene", "list_packages", "place_scene", "write_outputs")},
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'placement' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)

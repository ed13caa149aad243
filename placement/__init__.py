"""Collision-free placement (architecture.md §2 "Placement"): humans via their swept traces (python-fcl),
flying objects with smooth random motion, and the robot's start pose.

Modules: `stage` (`place_scene`: config sections in, `PlacementResult` out; `write_outputs`, `list_packages`),
`compose` (`compose_scene`, scene.usda), `robot_start` (the robot volumes) and `cli` (`grade place`). The
placement.json format, with `load_placement`/`write_placement` and the playback helpers (`animation_time`,
`flying_pose`), is core.formats.placement. Import the defining module: importing this package loads
nothing, so the CLI starts without FCL and trimesh.
"""

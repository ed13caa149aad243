"""Read `scene.usda` (layout: core.formats.scene_layout) into what the embedded backend builds: which
package each placed prim references, its asset id, where it stands, and its playback parameters.

Every reference is checked before anything is built: a scene that names a missing or incomplete
package, or a package of the wrong kind, raises InputError naming the scene file and the prim, so no
simulation starts half-loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.formats.scene_layout import ENVIRONMENT_PRIM, SceneHuman, SceneObject, ScenePrim, read_scene_layout
from core.geometry import yaw_of
from simulation.physics import StartPose

IDENTITY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class RobotPlacement:
    """A robot's start in the scene: its name in a multi-robot run (None for the one robot), kind and pose."""

    name: str | None
    kind: str
    start: StartPose


@dataclass(frozen=True)
class SceneFile:
    path: Path
    environment: ScenePrim
    humans: tuple[SceneHuman, ...]  # the humans, then the animals
    objects: tuple[SceneObject, ...]
    robot_kind: str
    robot_start: StartPose
    robots: tuple[RobotPlacement, ...]  # every robot, the first being robot_kind at robot_start


def read_scene_file(path: str | Path) -> SceneFile:
    """The placed environment, humans, flying objects and robot start of a scene.usda."""
    layout = read_scene_layout(path)
    if not np.allclose(layout.environment.pose, np.eye(4), atol=IDENTITY_TOLERANCE):
        # The collision pieces and floor plane are built in the package frame.
        raise InputError("the embedded backend needs the environment untransformed", layout.path, ENVIRONMENT_PRIM)
    start = layout.robot_pose
    return SceneFile(
        # Animals play like humans: one animated actor list, humans first.
        path=layout.path, environment=layout.environment, humans=layout.humans + layout.animals,
        objects=layout.objects,
        robot_kind=layout.robot_kind,
        robot_start=_start(start),
        robots=tuple(RobotPlacement(robot.name, robot.kind, _start(robot.pose)) for robot in layout.robots),
    )


def _start(pose: np.ndarray) -> StartPose:
    return StartPose(float(pose[0, 3]), float(pose[1, 3]), float(pose[2, 3]), yaw_of(pose))

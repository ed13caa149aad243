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
from core.formats.asset_meta import Kind, load_meta
from core.formats.placement import AnimationSchedule, FlyingMotion
from core.formats.scene_layout import ENVIRONMENT_PRIM, ScenePrim, read_scene_layout
from core.geometry import yaw_of
from simulation.physics import StartPose

IDENTITY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class PlacedPrim:
    prim_path: str  # in scene.usda
    package: Path
    asset_id: str
    pose: np.ndarray  # world <- package frame, 4x4


@dataclass(frozen=True)
class PlacedHumanPrim(PlacedPrim):
    schedule: AnimationSchedule


@dataclass(frozen=True)
class FlyingObjectPrim(PlacedPrim):
    motion: FlyingMotion


@dataclass(frozen=True)
class SceneFile:
    path: Path
    environment: PlacedPrim
    humans: tuple[PlacedHumanPrim, ...]
    objects: tuple[FlyingObjectPrim, ...]
    robot_kind: str
    robot_start: StartPose


def _placed(prim: ScenePrim, scene: Path, kind: Kind) -> dict:
    meta = load_meta(prim.package)
    if meta.kind != kind:
        raise InputError(f"references a {meta.kind!r} package ({prim.package}); expected {kind!r}", scene,
                         prim.prim_path)
    return {"prim_path": prim.prim_path, "package": prim.package, "asset_id": meta.id, "pose": prim.pose}


def read_scene_file(path: str | Path) -> SceneFile:
    """The placed environment, humans, flying objects and robot start of a scene.usda."""
    layout = read_scene_layout(path)
    env = _placed(layout.environment, layout.path, "environment")
    if not np.allclose(env["pose"], np.eye(4), atol=IDENTITY_TOLERANCE):
        # The collision pieces and floor plane are built in the package frame.
        raise InputError("the embedded backend needs the environment untransformed", layout.path, ENVIRONMENT_PRIM)
    humans = tuple(PlacedHumanPrim(**_placed(h, layout.path, "animated"), schedule=h.schedule) for h in layout.humans)
    objects = tuple(FlyingObjectPrim(**_placed(o, layout.path, "object"), motion=o.motion) for o in layout.objects)
    start = layout.robot_pose
    return SceneFile(
        path=layout.path, environment=PlacedPrim(**env), humans=humans, objects=objects, robot_kind=layout.robot_kind,
        robot_start=StartPose(float(start[0, 3]), float(start[1, 3]), float(start[2, 3]), yaw_of(start)),
    )

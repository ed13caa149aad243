"""Compose `scene.usda`: the environment, each placed human, animal and flying object as a reference to its
package, and the robot start, so the same file loads in Isaac Sim and in the embedded backend.

The prim layout and the `grade:*` attributes are core.formats.scene_layout, which the simulation reads
the file with.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pxr import Usd, UsdGeom

from core.formats import scene_layout as layout
from core.formats.placement import Placement
from core.rundir import FILE_MODE


def compose_scene(placement: Placement, out: str | Path, duration: float | None = None) -> Path:
    """Write scene.usda next to (or anywhere relative to) the packages; paths stay relative."""
    out = Path(out).absolute()
    out.parent.mkdir(parents=True, exist_ok=True)
    # Author in a temporary file beside the target so relative references resolve as they will there.
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.stem}.", suffix=".usda", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        stage = Usd.Stage.CreateNew(str(tmp))
        _author(stage, placement, out.parent, duration)
        stage.Save()
        tmp.chmod(FILE_MODE)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _author(stage: Usd.Stage, placement: Placement, scene_dir: Path, duration: float | None) -> None:
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    stage.SetTimeCodesPerSecond(layout.TIME_CODES_PER_SECOND)
    if duration is not None:
        stage.SetStartTimeCode(0)
        stage.SetEndTimeCode(duration * layout.TIME_CODES_PER_SECOND)
    world = UsdGeom.Xform.Define(stage, layout.SCENE_ROOT).GetPrim()
    stage.SetDefaultPrim(world)
    layout.set_seed(world, placement.seed)

    layout.add_package_reference(stage, layout.ENVIRONMENT_PRIM, placement.environment.path, scene_dir)
    for group in (layout.HUMANS_PRIM, layout.OBJECTS_PRIM):
        UsdGeom.Xform.Define(stage, group)
    if placement.animals:
        UsdGeom.Xform.Define(stage, layout.ANIMALS_PRIM)
    for path_of, group in ((layout.human_prim_path, placement.humans), (layout.animal_prim_path, placement.animals)):
        for i, human in enumerate(group):
            prim = layout.add_package_reference(stage, path_of(i, human.asset_id), human.asset_path, scene_dir)
            layout.set_xyz_yaw(prim, human.x, human.y, human.z, human.yaw)
            layout.set_schedule(prim, human.animation)
    for i, obj in enumerate(placement.flying_objects):
        prim = layout.add_package_reference(stage, layout.object_prim_path(i, obj.asset_id), obj.asset_path,
                                            scene_dir)
        layout.set_motion(prim, obj.motion)
    for robot in placement.robot_starts:
        start = UsdGeom.Xform.Define(stage, layout.robot_start_path(robot.name)).GetPrim()
        layout.set_xyz_yaw(start, robot.x, robot.y, robot.z, robot.yaw)
        layout.set_robot_kind(start, robot.kind)

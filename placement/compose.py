"""Compose `scene.usda`: the environment, each placed human and flying object as a reference to its
package, and the robot start, so the same file loads in Isaac Sim and in the embedded backend.

Animation schedules and flying-object motions cannot be expressed as plain USD composition (a clip
that plays forward then backward, a sum of sinusoids), so they are stored as `grade:*` attributes;
placement.json stays the source of truth for both.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pxr import Gf, Sdf, Usd, UsdGeom

from asset_converters.usd_io import prim_name
from core.rundir import FILE_MODE
from placement.schema import Placement

SCENE_ROOT = "/World"
# Scene time codes per second: the camera/odometry rate, so a time code is one 60 Hz tick.
SCENE_TIME_CODES_PER_SECOND = 60.0


def _reference(stage: Usd.Stage, path: str, package: str, scene_dir: Path) -> Usd.Prim:
    prim = UsdGeom.Xform.Define(stage, path).GetPrim()
    asset = Path(os.path.relpath(Path(package) / "asset.usdc", scene_dir)).as_posix()
    prim.GetReferences().AddReference(f"./{asset}" if not asset.startswith(".") else asset)
    return prim


def _set_pose(prim: Usd.Prim, x: float, y: float, z: float, yaw_rad: float) -> None:
    xform = UsdGeom.Xformable(prim)
    xform.ClearXformOpOrder()
    xform.AddTranslateOp().Set(Gf.Vec3d(x, y, z))
    xform.AddRotateZOp().Set(float(yaw_rad) * 180.0 / 3.141592653589793)


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
    stage.SetTimeCodesPerSecond(SCENE_TIME_CODES_PER_SECOND)
    if duration is not None:
        stage.SetStartTimeCode(0)
        stage.SetEndTimeCode(duration * SCENE_TIME_CODES_PER_SECOND)
    world = UsdGeom.Xform.Define(stage, SCENE_ROOT).GetPrim()
    stage.SetDefaultPrim(world)
    world.CreateAttribute("grade:seed", Sdf.ValueTypeNames.Int).Set(placement.seed)

    _reference(stage, f"{SCENE_ROOT}/environment", placement.environment.path, scene_dir)
    for group in ("humans", "flying_objects"):
        UsdGeom.Xform.Define(stage, f"{SCENE_ROOT}/{group}")
    for i, human in enumerate(placement.humans):
        prim = _reference(stage, f"{SCENE_ROOT}/humans/{prim_name(f'human_{i:02d}_{human.asset_id}')}",
                          human.asset_path, scene_dir)
        _set_pose(prim, human.x, human.y, human.z, human.yaw)
        schedule = human.animation
        prim.CreateAttribute("grade:animation:start", Sdf.ValueTypeNames.Double).Set(schedule.start)
        prim.CreateAttribute("grade:animation:period", Sdf.ValueTypeNames.Double).Set(schedule.period)
        prim.CreateAttribute("grade:animation:clipEnd", Sdf.ValueTypeNames.Double).Set(schedule.clip_end)
        prim.CreateAttribute("grade:animation:reverse", Sdf.ValueTypeNames.Bool).Set(schedule.reverse)
    for i, obj in enumerate(placement.flying_objects):
        prim = _reference(stage, f"{SCENE_ROOT}/flying_objects/{prim_name(f'object_{i:02d}_{obj.asset_id}')}",
                          obj.asset_path, scene_dir)
        motion = obj.motion
        xform = UsdGeom.Xformable(prim)
        xform.AddTranslateOp().Set(Gf.Vec3d(*motion.center))
        xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(*motion.orientation))
        prim.CreateAttribute("grade:motion", Sdf.ValueTypeNames.String).Set(
            json.dumps(motion.model_dump(mode="json"), sort_keys=True))
    robot = placement.robot
    start = UsdGeom.Xform.Define(stage, f"{SCENE_ROOT}/robot_start").GetPrim()
    _set_pose(start, robot.x, robot.y, robot.z, robot.yaw)
    start.CreateAttribute("grade:robot:kind", Sdf.ValueTypeNames.String).Set(robot.kind)

"""The asset and scene artifact formats (core.formats.asset_meta, .placement, .scene_layout): round trips
through the writers and readers the stages use, newer schema versions refused, and malformed files
reported by file and field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pxr import Sdf, Usd, UsdGeom

from asset_converters.package import CONVERTER_VERSION, write_package
from core.errors import InputError
from core.formats.asset_meta import (
    AnimationInfo,
    AssetMeta,
    EnvironmentInfo,
    ObjectInfo,
    SourceInfo,
    load_meta,
    read_meta,
    write_meta,
)
from core.formats.placement import (
    AnimationSchedule,
    EnvironmentRef,
    FlyingMotion,
    FlyingObject,
    PlacedHuman,
    Placement,
    PlacementParameters,
    RobotStart,
    RobotVolume,
    flying_pose,
    load_placement,
    write_placement,
)
from core.formats.scene_layout import (
    ENVIRONMENT_PRIM,
    MOTION_ATTR,
    SCENE_ROOT,
    human_prim_path,
    object_prim_path,
    read_scene_layout,
)
from core.geometry import pose_from_xyz_yaw, quat_wxyz_to_matrix
from placement.compose import compose_scene

SOURCE = SourceInfo(dataset="test", files={"input.obj": "0" * 64}, options={"scale": 1.0})
HUMAN_POSE = (1.5, -0.5, 0.02, 0.7)  # x, y, z, yaw
ROBOT_POSE = (-1.0, 2.0, 0.0, -2.5)
# rotateZ ops hold float32 degrees: headings come back to within a float32 rounding of the angle.
YAW_TOLERANCE = 1e-6  # rad


def environment_meta(asset_id: str = "room") -> AssetMeta:
    return AssetMeta(
        id=asset_id, kind="environment", converter="test", converter_version=CONVERTER_VERSION, source=SOURCE,
        semantic_labels={"/asset/architecture/floor": "floor"},
        environment=EnvironmentInfo(
            bounds=((-3.0, -3.0, 0.0), (3.0, 3.0, 2.5)), floor_height=0.0, floor_area=36.0,
            floor_polygon={"type": "Polygon", "coordinates": [[[-3, -3], [3, -3], [3, 3], [-3, 3], [-3, -3]]]},
        ),
    )


def animated_meta(asset_id: str = "walker") -> AssetMeta:
    return AssetMeta(
        id=asset_id, kind="animated", converter="test", converter_version=CONVERTER_VERSION, source=SOURCE,
        animation=AnimationInfo(fps=30.0, frame_count=2, duration=2 / 30, joint_names=["root"], ground_offset=0.01,
                                root_trajectory=[(0.0, 0.0, 1.0), (0.1, 0.0, 1.0)], motions={"walk": (0, 1)}),
    )


def object_meta(asset_id: str = "mug") -> AssetMeta:
    return AssetMeta(id=asset_id, kind="object", converter="test", converter_version=CONVERTER_VERSION,
                     source=SOURCE, object=ObjectInfo(extents=(0.1, 0.1, 0.12), center=(0.0, 0.0, 0.06)))


def package(folder: Path, meta: AssetMeta) -> Path:
    """A complete package written by the converters' own writer: a stage with the `/asset` default prim."""

    def build(tmp: Path) -> AssetMeta:
        stage = Usd.Stage.CreateNew(str(tmp / "asset.usdc"))
        stage.SetDefaultPrim(UsdGeom.Xform.Define(stage, "/asset").GetPrim())
        stage.GetRootLayer().Save()
        return meta

    return write_package(folder / meta.id, "test", build)


# ---------------------------------------------------------------- meta.json


@pytest.mark.parametrize("meta", [environment_meta(), animated_meta(), object_meta()], ids=lambda m: m.kind)
def test_meta_round_trip(tmp_path, meta):
    path = write_meta(tmp_path, meta)
    assert path == tmp_path / "meta.json"
    assert json.loads(path.read_text())["schema"] == AssetMeta.schema_tag() == "grade.asset/1"
    assert read_meta(path) == meta


def test_load_meta_needs_a_complete_package_of_the_asked_kind(tmp_path):
    folder = package(tmp_path, environment_meta())
    assert load_meta(folder) == load_meta(folder, "environment") == environment_meta()
    with pytest.raises(InputError, match="expected an object package, got kind 'environment'") as info:
        load_meta(folder, "object")
    assert (info.value.file, info.value.field) == (str(folder / "meta.json"), "kind")
    (folder / "MANIFEST.json").unlink()
    with pytest.raises(InputError, match="not a complete asset package"):
        load_meta(folder)


def test_meta_of_a_newer_major_version_is_refused(tmp_path):
    path = write_meta(tmp_path, environment_meta())
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "schema": "grade.asset/2", "new_field": 1}))
    with pytest.raises(InputError, match=r"'grade\.asset/2' is newer .*'grade\.asset/1'") as info:
        read_meta(path)
    assert (info.value.file, info.value.field) == (str(path), "schema")
    path.write_text(json.dumps({**data, "schema": "grade.placement/1"}))
    with pytest.raises(InputError, match=r"expected schema 'grade\.asset/1', found 'grade\.placement/1'"):
        read_meta(path)


def test_malformed_meta_names_file_and_field(tmp_path):
    path = write_meta(tmp_path, environment_meta())
    data = json.loads(path.read_text())
    data["environment"]["floor_height"] = "low"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        read_meta(path)
    assert (info.value.file, info.value.field) == (str(path), "environment.floor_height")
    path.write_text('{"schema": "grade.asset/1", ')
    with pytest.raises(InputError, match="malformed JSON") as info:
        read_meta(path)
    assert info.value.file == str(path)
    path.write_text("[]")
    with pytest.raises(InputError, match="expected a JSON object"):
        read_meta(path)


# ---------------------------------------------------------------- placement.json

MOTION = FlyingMotion(
    center=(0.5, 0.5, 1.2), amplitude=((0.2, 0.1, 0.0), (0.1, 0.0, 0.05), (0.05, 0.0, 0.0)),
    frequency_hz=((0.1, 0.2, 0.3), (0.15, 0.25, 0.35), (0.05, 0.1, 0.2)), phase=((0.0, 1.0, 2.0),) * 3,
    orientation=(0.8, 0.0, 0.6, 0.0), angular_velocity_deg=(0.0, 0.0, 30.0), speed=0.3, radius=0.5,
    z_range=(0.3, 2.5),
)


def make_placement(environment: Path, human: Path, obj: Path) -> Placement:
    x, y, z, yaw = HUMAN_POSE
    rx, ry, rz, ryaw = ROBOT_POSE
    return Placement(
        seed=17, environment=EnvironmentRef(id="room", path=str(environment)),
        parameters=PlacementParameters(human_count_range=(1, 1), human_candidates=1, max_tries=5, contact_threshold=1,
                                       human_contact_threshold=1, flying_count_range=(1, 1), flying_candidates=1,
                                       flying_collision_check=False),
        humans=[PlacedHuman(asset_id="walker", asset_path=str(human), x=x, y=y, z=z, yaw=yaw, contacts=0, tries=2,
                            animation=AnimationSchedule(start=0.25, clip_end=1 / 30, period=2 / 30, reverse=True))],
        rejected_humans=[],
        flying_objects=[FlyingObject(asset_id="mug", asset_path=str(obj), motion=MOTION, tries=1)],
        rejected_flying_objects=[],
        robot=RobotStart(kind="tiago_omni", x=rx, y=ry, z=rz, yaw=ryaw, tries=1, heading_clearance=2.0,
                         volume=RobotVolume(shape="cylinder", extents=(0.6, 0.6, 1.2))),
    )


@pytest.fixture
def packages(tmp_path):
    assets = tmp_path / "assets"
    return package(assets, environment_meta()), package(assets, animated_meta()), package(assets, object_meta())


def test_placement_round_trip_with_relative_paths(tmp_path, packages):
    placement = make_placement(*packages)
    path = write_placement(placement, tmp_path / "scene" / "placement.json")
    stored = json.loads(path.read_text())
    assert stored["schema"] == Placement.schema_tag() == "grade.placement/1"
    assert stored["environment"]["path"] == "../assets/room"  # relative to the file's folder
    assert stored["humans"][0]["asset_path"] == "../assets/walker"
    assert load_placement(path) == placement


def test_placement_of_a_newer_major_version_is_refused(tmp_path, packages):
    path = write_placement(make_placement(*packages), tmp_path / "placement.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema": "grade.placement/3"}))
    with pytest.raises(InputError, match=r"'grade\.placement/3' is newer .*'grade\.placement/1'") as info:
        load_placement(path)
    assert (info.value.file, info.value.field) == (str(path), "schema")


def test_malformed_placement_names_file_and_field(tmp_path, packages):
    path = write_placement(make_placement(*packages), tmp_path / "placement.json")
    data = json.loads(path.read_text())
    data["humans"][0]["yaw"] = None
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_placement(path)
    assert (info.value.file, info.value.field) == (str(path), "humans.0.yaw")
    path.unlink()
    with pytest.raises(InputError, match="placement.json not found"):
        load_placement(path)


# ---------------------------------------------------------------- scene.usda


def test_scene_layout_round_trip(tmp_path, packages):
    environment, human, obj = packages
    placement = make_placement(environment, human, obj)
    scene = compose_scene(placement, tmp_path / "scene" / "scene.usda", duration=2.0)

    layout = read_scene_layout(scene)
    assert layout.seed == placement.seed and layout.robot_kind == "tiago_omni"
    assert (layout.environment.prim_path, layout.environment.package) == (ENVIRONMENT_PRIM, environment)
    np.testing.assert_array_equal(layout.environment.pose, np.eye(4))
    [placed_human], [placed_object] = layout.humans, layout.objects
    assert (placed_human.prim_path, placed_human.package) == (human_prim_path(0, "walker"), human)
    assert placed_human.prim_path == f"{SCENE_ROOT}/humans/human_00_walker"
    assert placed_human.schedule == placement.humans[0].animation
    np.testing.assert_allclose(placed_human.pose, pose_from_xyz_yaw(*HUMAN_POSE), rtol=0, atol=YAW_TOLERANCE)
    assert (placed_object.prim_path, placed_object.package) == (object_prim_path(0, "mug"), obj)
    assert placed_object.motion == MOTION
    # The prim stands at the motion's centre, turned as the motion is at t = 0.
    np.testing.assert_allclose(placed_object.pose[:3, :3], quat_wxyz_to_matrix(flying_pose(MOTION, 0.0)[1][0]),
                               atol=1e-12)
    np.testing.assert_allclose(placed_object.pose[:3, 3], MOTION.center, atol=1e-12)
    np.testing.assert_allclose(layout.robot_pose, pose_from_xyz_yaw(*ROBOT_POSE), rtol=0, atol=YAW_TOLERANCE)
    assert [layout.environment.asset_id, placed_human.asset_id, placed_object.asset_id] == ["room", "walker", "mug"]


def test_scene_with_a_broken_motion_or_wrong_package_names_scene_and_prim(tmp_path, packages):
    environment, human, obj = packages
    scene = compose_scene(make_placement(environment, human, obj), tmp_path / "scene.usda")
    layer = Sdf.Layer.FindOrOpen(str(scene))
    layer.GetAttributeAtPath(f"{object_prim_path(0, 'mug')}.{MOTION_ATTR}").default = "{"
    layer.Save()
    with pytest.raises(InputError, match=f"{MOTION_ATTR} is not a valid flying motion") as info:
        read_scene_layout(scene)
    assert (info.value.file, info.value.field) == (str(scene), object_prim_path(0, "mug"))

    swapped = make_placement(environment, obj, obj)  # an object package placed as a human
    scene = compose_scene(swapped, tmp_path / "swapped.usda")
    with pytest.raises(InputError, match="references a 'object' package") as info:
        read_scene_layout(scene)
    assert (info.value.file, info.value.field) == (str(scene), human_prim_path(0, "walker"))


def test_occupancy_round_trip_and_malformed_arrays_are_named(tmp_path):
    from core.formats.occupancy import LEGEND, OUTSIDE, read_occupancy, read_voxels, save_occupancy

    grid = np.zeros((4, 3), np.uint8)
    grid[0] = OUTSIDE
    voxels = np.zeros((4, 3, 2), bool)
    voxels[1, 1, 1] = True
    arrays = {"map2d": grid, "map2d_origin": np.array([-1.0, 2.0]), "map2d_resolution": np.array(0.05),
              "voxels": voxels, "voxels_origin": np.array([-1.0, 2.0, 0.0]), "voxel_size": np.array(0.1),
              "legend": np.array(LEGEND)}
    path = save_occupancy(tmp_path / "occupancy.npz", arrays)
    occupancy = read_occupancy(path)
    np.testing.assert_array_equal(occupancy.grid, grid)
    assert occupancy.extent == pytest.approx((-1.0, -0.8, 2.0, 2.15))
    grid3, origin3, size3 = read_voxels(path)
    np.testing.assert_array_equal(grid3, voxels)
    assert tuple(origin3) == (-1.0, 2.0, 0.0) and size3 == 0.1
    save_occupancy(tmp_path / "bad.npz", {**arrays, "map2d_resolution": np.array(-1.0)})
    with pytest.raises(InputError) as error:
        read_occupancy(tmp_path / "bad.npz")
    assert error.value.field == "map2d_resolution"

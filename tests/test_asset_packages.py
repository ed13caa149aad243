"""The shared package writers, checked through pxr and independent geometry."""

from __future__ import annotations

import json

import numpy as np
import pytest
import trimesh
from pxr import Usd, UsdGeom, UsdSkel

from asset_converters.animated import TRACE_TOLERANCE, write_animated_package
from asset_converters.environment import write_environment_package
from asset_converters.objects import write_object_package
from core.assets.animation import load_animation
from core.assets.parts import Animation, Light, Material, SceneMesh, SkinnedMesh
from core.assets.skinning import joint_world_transforms, posed_meshes
from core.assets.usd_read import read_meshes
from core.errors import InputError
from core.formats.asset_meta import SourceInfo, load_meta
from core.formats.manifest import StageStatus, stage_status
from core.geometry import axis_angle_to_quat_wxyz


def bending_bar(frames: int = 12) -> Animation:
    """A 1 m bar along x with two joints; the second bends up to 90 deg while the root walks along y."""
    box = trimesh.creation.box(extents=(1.0, 0.1, 0.1))
    box = box.subdivide().subdivide()
    vertices = box.vertices + [0.5, 0, 0]
    w2 = np.clip((vertices[:, 0] - 0.3) / 0.4, 0, 1)
    indices = np.stack([np.zeros(len(vertices), int), np.ones(len(vertices), int)], axis=1)
    weights = np.stack([1 - w2, w2], axis=1)
    bind = np.stack([np.eye(4), np.eye(4)])
    bind[1, 0, 3] = 0.5
    angles = np.linspace(0, np.pi / 2, frames)
    rot = np.zeros((frames, 2, 4))
    rot[:, 0] = axis_angle_to_quat_wxyz(np.zeros((frames, 3)))
    rot[:, 1] = axis_angle_to_quat_wxyz(np.stack([np.zeros(frames), -angles, np.zeros(frames)], axis=1))
    trans = np.zeros((frames, 2, 3))
    trans[:, 0, 1] = np.linspace(0, 0.5, frames)
    trans[:, 0, 2] = 0.3
    trans[:, 1, 0] = 0.5
    mesh = SkinnedMesh("bar", vertices, box.faces, indices, weights, Material("bar", (0.8, 0.2, 0.2)))
    return Animation("bar", 30.0, ["root", "tip"], np.array([-1, 0]), bind, rot, trans, skinned=[mesh],
                     semantic_label="person", motions={"bend": (0, frames - 1)})


def test_skinning_matches_analytic_pose():
    anim = bending_bar()
    verts, _ = posed_meshes(anim, anim.frame_count - 1)[0]
    tip_rest = anim.skinned[0].rest_vertices
    far = tip_rest[:, 0] > 0.99  # fully weighted to the tip joint
    # Bent by 90 deg about -y at x = 0.5: the far end points up, root moved 0.5 in y, 0.3 in z.
    np.testing.assert_allclose(verts[far, 0], 0.5 - tip_rest[far, 2], atol=1e-9)
    np.testing.assert_allclose(verts[far, 2], 0.3 + 0.5, atol=1e-9)
    np.testing.assert_allclose(verts[far, 1], tip_rest[far, 1] + 0.5, atol=1e-9)


def test_animated_package_usd_matches_numpy_and_trace_contains_frames(tmp_path):
    anim = bending_bar()
    out = write_animated_package(anim, tmp_path / "bar", SourceInfo(dataset="test"), "h1", trace_window=2)
    assert stage_status(out, "h1") is StageStatus.COMPLETE
    stage = Usd.Stage.Open(str(out / "asset.usdc"))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetTimeCodesPerSecond() == 30.0
    skel_anim = UsdSkel.Animation(stage.GetPrimAtPath("/asset/bar/animation"))
    assert len(skel_anim.GetRotationsAttr().GetTimeSamples()) == anim.frame_count
    mesh_prim = stage.GetPrimAtPath("/asset/bar/bar")
    assert UsdSkel.BindingAPI(mesh_prim).GetSkeletonRel().GetTargets()[0] == "/asset/bar/skeleton"
    for frame in (0, 5, anim.frame_count - 1):
        usd_points = read_meshes(out / "asset.usdc", time=frame)[0].vertices
        np.testing.assert_allclose(usd_points, posed_meshes(anim, frame)[0][0], atol=1e-5)

    trace = trimesh.load(out / "trace.stl")
    assert trace.is_watertight
    world = joint_world_transforms(anim)
    for frame in range(anim.frame_count):
        verts = posed_meshes(anim, frame, world)[0][0]
        assert (trace.nearest.signed_distance(verts) > -TRACE_TOLERANCE - 1e-9).all()  # inside, within tolerance

    meta = load_meta(out)
    assert meta.animation.frame_count == anim.frame_count
    assert meta.animation.ground_offset == pytest.approx(-(0.3 - 0.05), abs=1e-6)
    np.testing.assert_allclose(meta.animation.root_trajectory[-1], [0, 0.5, 0.3])
    back = load_animation(out)
    np.testing.assert_allclose(posed_meshes(back, 7)[0][0], posed_meshes(anim, 7)[0][0], atol=1e-6)


def l_shaped_room() -> list[SceneMesh]:
    floor_a = trimesh.creation.box(extents=(4, 2, 0.0))  # flat quads at z=0
    floor_a.apply_translation((2, 1, 0))
    floor_b = trimesh.creation.box(extents=(2, 2, 0.0))
    floor_b.apply_translation((1, 3, 0))
    floors = [SceneMesh(f"floor{i}", np.unique(f.vertices, axis=0)[[0, 1, 3, 2]],
                        [[0, 1, 2], [0, 2, 3]], "floor", "architecture", is_floor=True)
              for i, f in enumerate((floor_a, floor_b))]
    table = trimesh.creation.box(extents=(0.5, 0.5, 0.8))
    table.apply_translation((3, 1, 0.4))
    wall = trimesh.creation.box(extents=(4, 0.1, 2.5))
    wall.apply_translation((2, -0.05, 1.25))
    return floors + [SceneMesh("table", table.vertices, table.faces, "table"),
                     SceneMesh("wall", wall.vertices, wall.faces, "wall", "architecture")]


def test_environment_package_polygon_occupancy_and_labels(tmp_path):
    meshes = l_shaped_room()
    out = write_environment_package(meshes, [Light("ceiling", (2, 2, 2.4))], tmp_path / "room",
                                    SourceInfo(dataset="test"), "h")
    meta = load_meta(out)
    env = meta.environment
    assert env.floor_area == pytest.approx(8 + 4)  # non-convex L: hull area would be 14
    assert env.floor_height == pytest.approx(0.0)
    np.testing.assert_allclose(env.bounds[1], [4, 4, 2.5])
    grids = np.load(out / "occupancy.npz")
    res, origin = float(grids["map2d_resolution"]), grids["map2d_origin"]
    cell = lambda x, y: tuple(((np.array([x, y]) - origin) / res).astype(int))
    assert grids["map2d"][cell(3.0, 1.24)] == 1  # table edge
    assert grids["map2d"][cell(1.0, 1.0)] == 0  # free floor
    assert grids["map2d"][cell(3.0, 3.0)] == 2  # outside the L
    labels = {m.semantic_label for m in read_meshes(out / "asset.usdc")}
    assert labels == {"floor", "table", "wall"}
    assert trimesh.load(out / "collision.stl").bounds[1][2] == pytest.approx(2.5)
    stage = Usd.Stage.Open(str(out / "asset.usdc"))
    assert stage.GetPrimAtPath("/asset/lights/ceiling")


def test_object_package_and_bad_meshes_write_nothing(tmp_path):
    mug = trimesh.creation.cylinder(radius=0.04, height=0.1)
    out = write_object_package([SceneMesh("mug", mug.vertices, mug.faces, "mug", "object")], "mug",
                               tmp_path / "mug", SourceInfo(dataset="test"), "h")
    meta = load_meta(out)
    np.testing.assert_allclose(meta.object.extents, [0.08, 0.08, 0.1], atol=1e-3)
    assert trimesh.load(out / "collision.stl").is_convex
    flat = SceneMesh("flat", [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], [[0, 1, 2], [1, 3, 2]], "x")
    with pytest.raises(InputError, match="degenerate"):
        write_object_package([flat], "x", tmp_path / "flat", SourceInfo(dataset="test"), "h")
    with pytest.raises(InputError, match="empty mesh"):
        write_object_package([SceneMesh("e", np.zeros((0, 3)), np.zeros((0, 3)), "x")], "x", tmp_path / "e",
                             SourceInfo(dataset="test"), "h")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mug"]
    json.loads((out / "meta.json").read_text())

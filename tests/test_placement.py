"""Placement: hand-made cases with known answers, 40-candidate scenes checked by an independent
boolean (manifold3d) intersection test, the corridor, the robot heading, flying motion, the
placement.json contract, the CLI and bad inputs; real 3D-Front and procedural environments when
their converters are present."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import fcl
import manifold3d
import numpy as np
import pytest
import shapely
import trimesh
from conftest import run_grade
from PIL import Image
from pydantic import ValidationError
from smpl_fixtures import build_body_model, save_npz
from test_gltf import write_critter

from asset_converters.animated import write_animated_package
from asset_converters.batch import run_jobs
from asset_converters.environment import write_environment_package
from asset_converters.front3d import convert_house
from asset_converters.mesh import MeshOptions, mesh_jobs
from asset_converters.objects import write_object_package
from asset_converters.procedural import build_demo_assets
from asset_converters.smpl import convert_sequence
from core.assets.animation import load_animation
from core.assets.parts import Animation, Material, SceneMesh, SkinnedMesh
from core.assets.usd_read import read_meshes
from core.config import FlyingObjectsConfig, HumansConfig, IntRange, RobotConfig
from core.errors import ConfigError, InputError
from core.formats.asset_meta import SourceInfo, load_meta
from core.formats.manifest import MANIFEST, write_manifest
from core.formats.placement import AnimationSchedule, animation_time, flying_pose, load_placement
from core.geometry import axis_angle_to_quat_wxyz, yaw_rotation
from core.robot_catalogue import robot_body
from placement.cli import place_command
from placement.humans import Crowd, load_human, place_humans
from placement.robot_start import open_heading, robot_volume
from placement.place import list_packages, place_scene, write_outputs
from placement.world import load_placement_world

WALL_HEIGHT = 2.0
NO_HUMANS = HumansConfig(count=IntRange(min=0, max=0))
NO_FLYING = FlyingObjectsConfig(count=IntRange(min=0, max=0))
VOLUME_TOL = 1e-6  # m^3: "no overlap" for the boolean intersection check
FCL_LIFT = 0.01  # m: a placed trace touches the floor; lifted this much, only real overlaps remain


def fcl_model(mesh: trimesh.Trimesh) -> fcl.BVHModel:
    model = fcl.BVHModel()
    model.beginModel(len(mesh.vertices), len(mesh.faces))
    model.addSubModel(np.asarray(mesh.vertices, np.float64), np.asarray(mesh.faces, np.int32))
    model.endModel()
    return model


# ---------------------------------------------------------------- synthetic fixtures


def floor_piece(x0: float, y0: float, x1: float, y1: float) -> SceneMesh:
    return SceneMesh("floor", [[x0, y0, 0], [x1, y0, 0], [x1, y1, 0], [x0, y1, 0]], [[0, 1, 2], [0, 2, 3]], "floor",
                     "architecture", is_floor=True)


def box_piece(name: str, center, extents, category: str = "furniture", subdivisions: int = 0) -> SceneMesh:
    box = trimesh.creation.box(extents=extents)
    for _ in range(subdivisions):
        box = box.subdivide()
    box.apply_translation(center)
    return SceneMesh(name, box.vertices, box.faces, name.rstrip("0123456789"), category)


def wall(name: str, x0: float, y0: float, x1: float, y1: float) -> SceneMesh:
    return box_piece(name, ((x0 + x1) / 2, (y0 + y1) / 2, WALL_HEIGHT / 2), (x1 - x0, y1 - y0, WALL_HEIGHT),
                     "architecture")


def plant(center, leaves: int = 40, size: float = 0.5) -> SceneMesh:
    """Thin, open leaf triangles: they may graze a trace (a few contacts) without blocking it."""
    rng = np.random.default_rng(7)
    tris = np.asarray(center) + rng.uniform(-size / 2, size / 2, (leaves, 3, 3)) * [1, 1, 2] + [0, 0, size]
    return SceneMesh("plant", tris.reshape(-1, 3), np.arange(leaves * 3).reshape(-1, 3), "plant")


def bench_room() -> list[SceneMesh]:
    """6 x 4 m walled room: table, closed wardrobe, hanging lamp, vase on the floor, leafy plant, and a
    dense free-standing screen."""
    t = 0.1
    return [
        floor_piece(0, 0, 6, 4), wall("wall0", -t, -t, 6 + t, 0), wall("wall1", -t, 4, 6 + t, 4 + t),
        wall("wall2", -t, 0, 0, 4), wall("wall3", 6, 0, 6 + t, 4),
        box_piece("table", (2.0, 2.0, 0.4), (1.2, 0.8, 0.8)),
        box_piece("wardrobe", (5.0, 3.2, 1.0), (1.5, 1.2, 2.0)),
        box_piece("lamp", (4.0, 1.0, 1.5), (0.1, 0.1, 0.1)),
        box_piece("vase", (3.0, 3.0, 0.25), (0.1, 0.1, 0.5)),
        plant((0.8, 3.2, 0.0)),
        box_piece("screen", (1.0, 0.8, 0.75), (1.0, 0.1, 1.5), subdivisions=4),  # 3072 triangles
    ]


def corridor() -> list[SceneMesh]:
    """A 6 x 1 m corridor open at both ends, with a 1 m window gap in its north wall at x in [1.5, 2.5]."""
    t = 0.1
    return [floor_piece(0, 0, 6, 1), wall("south", 0, -t, 6, 0), wall("north0", 0, 1, 1.5, 1 + t),
            wall("north1", 2.5, 1, 6, 1 + t)]


def rigid_animation(name: str, extents, translation_x: float = 0.0, turn: float = 0.0, frames: int = 6,
                    lift: float = 0.1) -> Animation:
    """A box skinned to one joint, floating `lift` above z = 0 (so the ground offset is -lift), that
    walks `translation_x` metres along +x and turns by `turn` radians about +z over the clip."""
    box = trimesh.creation.box(extents=extents)
    box.apply_translation((0, 0, extents[2] / 2 + lift))
    count = len(box.vertices)
    mesh = SkinnedMesh("body", box.vertices, box.faces, np.zeros((count, 1), int), np.ones((count, 1)),
                       Material("body", (0.2, 0.5, 0.8)))
    rotations = axis_angle_to_quat_wxyz(np.stack([np.zeros(frames), np.zeros(frames),
                                                  np.linspace(0, turn, frames)], axis=1))[:, None]
    translations = np.zeros((frames, 1, 3))
    translations[:, 0, 0] = np.linspace(0, translation_x, frames)
    return Animation(name, 10.0, ["root"], np.array([-1]), np.eye(4)[None], rotations, translations,
                     skinned=[mesh], semantic_label="person")


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("placement")
    source = SourceInfo(dataset="test")
    humans = root / "humans"
    # walker: trace x in [-0.2, 1.2], y in [-0.15, 0.15], z in [0.1, 1.8] before the ground offset.
    walker = rigid_animation("walker", (0.4, 0.3, 1.7), translation_x=1.0)
    write_animated_package(walker, humans / "walker", source, "w")
    write_animated_package(rigid_animation("stander", (0.5, 0.4, 1.8)), humans / "stander", source, "s")
    write_animated_package(rigid_animation("turner", (0.8, 0.2, 1.6), turn=np.pi / 2), humans / "turner", source, "t")
    objects = root / "objects"
    for name, mesh in (("mug", trimesh.creation.cylinder(radius=0.05, height=0.12)),
                       ("cube", trimesh.creation.box(extents=(0.15, 0.15, 0.15)))):
        write_object_package([SceneMesh(name, mesh.vertices, mesh.faces, name, "object")], name, objects / name,
                             source, name)
    write_environment_package(bench_room(), [], root / "bench", source, "b")
    write_environment_package(corridor(), [], root / "corridor", source, "c")
    return {"root": root, "humans": humans, "objects": objects, "bench": root / "bench",
            "corridor": root / "corridor", "walker": humans / "walker"}


@pytest.fixture(scope="module")
def bench(assets):
    return load_placement_world(assets["bench"])


# ---------------------------------------------------------------- independent geometry


def manifold_of(mesh: trimesh.Trimesh) -> manifold3d.Manifold:
    """The mesh as a manifold3d solid, built once per mesh (meshes are not changed after their first use)."""
    if "manifold" not in mesh.metadata:
        mesh.metadata["manifold"] = manifold3d.Manifold(manifold3d.Mesh(
            vert_properties=np.asarray(mesh.vertices, np.float32), tri_verts=np.asarray(mesh.faces, np.uint32)))
    return mesh.metadata["manifold"]


def overlap_volume(a: trimesh.Trimesh, b: trimesh.Trimesh) -> float:
    if np.any(a.bounds[0] > b.bounds[1]) or np.any(b.bounds[0] > a.bounds[1]):
        return 0.0
    return (manifold_of(a) ^ manifold_of(b)).volume()


def placed_trace(human, trace_path: Path) -> trimesh.Trimesh:
    """The trace at its placed pose, built here from the JSON values (not from placement's matrices)."""
    trace = trimesh.load(trace_path)
    c, s = np.cos(human.yaw), np.sin(human.yaw)
    matrix = np.array([[c, -s, 0, human.x], [s, c, 0, human.y], [0, 0, 1, human.z], [0, 0, 0, 1]])
    return trace.apply_transform(matrix)


def closed_pieces(meshes: list[SceneMesh]) -> dict[str, trimesh.Trimesh]:
    pieces = {}
    for m in meshes:
        mesh = trimesh.Trimesh(m.vertices, m.faces)
        if mesh.is_watertight:
            pieces[m.name] = mesh
    return pieces


def robot_mesh(robot) -> trimesh.Trimesh:
    ex, ey, ez = robot.volume.extents
    center_z = robot.z if robot.kind == "uav" else robot.z + ez / 2
    if robot.volume.shape == "box":
        mesh = trimesh.creation.box(extents=(ex, ey, ez))
        mesh.apply_transform(trimesh.transformations.rotation_matrix(robot.yaw, (0, 0, 1)))
    else:
        mesh = trimesh.creation.cylinder(radius=ex / 2, height=ez, sections=48)
    return mesh.apply_translation((robot.x, robot.y, center_z))


# ---------------------------------------------------------------- hand-made cases


def test_hand_made_cases_have_known_answers(assets, bench):
    walker = load_human(assets["walker"])
    assert walker.ground_offset == pytest.approx(-0.1)
    # yaw 0: the walker's trace spans x in [x - 0.2, x + 1.2], y in [y - 0.15, y + 0.15].
    cases = {
        "free floor": ((3.0, 1.5), (True, None, 0), (True, None, 0)),
        "inside the closed wardrobe": ((4.5, 3.2), (False, "inside", 0), (False, "inside", 0)),
        "swallowing the hanging lamp": ((3.5, 1.0), (False, "inside", 0), (False, "inside", 0)),
        "1 mm from the outer wall": ((2.0, 0.151), (True, None, 0), (True, None, 0)),
        "1 mm from the dense screen": ((0.6, 1.001), (True, None, 0), (True, None, 0)),
        "5 cm into the dense screen": ((0.6, 0.95), (False, "contacts", 1), (False, "contacts", 200)),
        "through the outer wall": ((2.0, 0.10), (False, "outside", 0), (False, "outside", 0)),
    }
    strict, tolerant = Crowd(bench, contact_threshold=1), Crowd(bench, contact_threshold=200)
    for name, ((x, y), expect_strict, expect_tolerant) in cases.items():
        for crowd, expected in ((strict, expect_strict), (tolerant, expect_tolerant)):
            verdict = crowd.test(walker, x, y, 0.0)
            assert (verdict.accepted, verdict.reason, verdict.contacts) == expected, (name, crowd.contact_threshold)
    # A trace reaching down to the floor around the vase swallows it: the vase's sides cross the lifted
    # trace's bottom (a few contacts), then the containment test refuses it.
    vase = tolerant.test(walker, 2.6, 3.0, 0.0)
    assert (vase.accepted, vase.reason) == (False, "inside") and 0 < vase.contacts < 200
    # Plant leaves graze the trace: a few contacts, accepted under the default threshold only.
    leaves = tolerant.test(walker, 0.5, 3.2, 0.0)
    assert leaves.accepted and 0 < leaves.contacts < 200
    assert strict.test(walker, 0.5, 3.2, 0.0).reason == "contacts"
    # 10 cm into the coarse (12-triangle) table: few contacts, but part of the trace is inside a closed
    # piece, so it is refused however tolerant the contact threshold; 2 cm clear of it is fine.
    into_table = tolerant.test(walker, 2.7, 2.0, 0.0)
    assert (into_table.accepted, into_table.reason) == (False, "penetrates") and 0 < into_table.contacts < 200
    assert tolerant.test(walker, 2.82, 2.0, 0.0).accepted
    # A second human on the same spot, or crossing the first one's path, is refused.
    strict.add(walker, 3.0, 1.5, 0.0)
    assert strict.test(walker, 3.0, 1.5, 0.0).reason == "human"
    assert strict.test(walker, 3.5, 1.0, np.pi / 2).reason == "human"
    assert strict.test(walker, 3.0, 2.5, 0.0).accepted  # 0.7 m beside it
    # The contained lamp and wardrobe are closed pieces; the leafy plant is represented by its hull.
    names = {s.name.rsplit("/", 1)[-1] for s in bench.solids}
    assert {"table", "wardrobe", "lamp", "vase", "screen", "plant", "wall0"} <= names


def test_corridor_accepts_only_poses_along_it(assets):
    world = load_placement_world(assets["corridor"])
    walker = load_human(assets["walker"])
    crowd = Crowd(world, contact_threshold=1)
    assert crowd.test(walker, 2.0, 0.5, 0.0).accepted
    assert not crowd.test(walker, 2.0, 0.5, np.pi / 2).accepted  # 1.4 m long across a 1 m corridor
    humans = HumansConfig(count=IntRange(min=8, max=8), contact_threshold=1, max_tries=60)
    scene = place_scene(assets["corridor"], [assets["walker"]], [], humans, NO_FLYING, RobotConfig(), seed=5)
    placed = scene.placement.humans
    assert placed, scene.placement.rejected_humans
    for human in placed:
        trace = placed_trace(human, assets["walker"] / "trace.stl")
        assert trace.bounds[0, 1] >= -1e-6 and trace.bounds[1, 1] <= 1 + 1e-6  # between the walls
        # 1.4 |sin| + 0.3 |cos| <= 1 across the corridor
        assert 1.4 * abs(np.sin(human.yaw)) + 0.3 * abs(np.cos(human.yaw)) <= 1.0 + 1e-6


def test_robot_heading_avoids_walls_and_windows(assets):
    world = load_placement_world(assets["corridor"])
    # At x = 2 (under the window gap): east is 4 m of corridor, west 2 m, north leaves the floor at 0.5 m.
    yaw, clearance = open_heading(world, 2.0, 0.5, [1.0])
    assert abs(np.angle(np.exp(1j * yaw))) < np.radians(10)
    assert clearance > 2.0
    free = world.free_distance((2.0, 0.5, 1.0), np.array([[0, 1.0, 0], [1.0, 0, 0], [0, -1.0, 0]]))
    np.testing.assert_allclose(free, [0.5, 4.0, 0.5], atol=0.06)


# ---------------------------------------------------------------- whole scenes, checked independently


@pytest.mark.parametrize("robot_kind", ["uav", "tiago_omni"])
def test_forty_candidates_no_overlap_by_boolean_intersection(assets, robot_kind):
    humans = HumansConfig(count=IntRange(min=40, max=40), contact_threshold=1, max_tries=40)
    packages = list_packages(assets["humans"], "animated")
    scene = place_scene(assets["bench"], packages, [], humans, NO_FLYING, RobotConfig(kind=robot_kind), seed=11)
    placement = scene.placement
    assert placement.parameters.human_candidates == 40
    assert len(placement.humans) + len(placement.rejected_humans) == 40
    assert len(placement.humans) >= 8
    for rejected in placement.rejected_humans:
        assert rejected.tries == 40 and sum(rejected.reasons.values()) == 40
        assert rejected.reason in rejected.reasons

    pieces = closed_pieces(bench_room())
    polygon = shapely.box(0, 0, 6, 4).buffer(1e-6)
    traces = []
    for human in placement.humans:
        trace = placed_trace(human, Path(human.asset_path) / "trace.stl")
        assert trace.bounds[0, 2] == pytest.approx(0.0, abs=1e-5)  # feet on the floor via ground_offset
        assert shapely.contains_xy(polygon, trace.vertices[:, 0], trace.vertices[:, 1]).all()
        for name, piece in pieces.items():
            assert overlap_volume(trace, piece) < VOLUME_TOL, (human.asset_id, name)
        traces.append(trace)
    for i, a in enumerate(traces):
        for b in traces[i + 1:]:
            assert overlap_volume(a, b) < VOLUME_TOL

    robot = placement.robot
    assert robot.volume == robot_volume(robot_body(RobotConfig(kind=robot_kind)))
    body = robot_mesh(robot)
    for piece in [*pieces.values(), *traces]:
        assert overlap_volume(body, piece) < VOLUME_TOL
    if robot_kind == "uav":
        assert 0.5 <= robot.z <= 2.5  # default z band above the floor at 0
    else:
        assert robot.z == 0.0


@pytest.mark.slow
def test_placement_json_png_deterministic_and_round_trip(assets, tmp_path):
    args = [str(assets["bench"]), "--humans", str(assets["humans"]), "--objects", str(assets["objects"]),
            "--count", "10-12", "--flying-count", "3", "--seed", "4", "--max-tries", "30", "--robot", "tiago_omni"]
    first = run_grade("place", *args, "--out", str(tmp_path / "a" / "placement.json"))
    assert first.returncode == 0, first.stderr
    second = run_grade("place", *args, "--out", str(tmp_path / "b" / "placement.json"))
    assert second.returncode == 0, second.stderr
    for name in ("placement.json", "placement.png"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name

    raw = json.loads((tmp_path / "a" / "placement.json").read_text())
    assert raw["schema"] == "grade.placement/1" and raw["seed"] == 4
    assert raw["environment"]["id"] == "bench"
    assert not Path(raw["humans"][0]["asset_path"]).is_absolute()  # relative to placement.json
    placement = load_placement(tmp_path / "a" / "placement.json")
    assert Path(placement.environment.path) == assets["bench"]
    assert {Path(h.asset_path).parent for h in placement.humans} == {assets["humans"]}
    assert 10 <= placement.parameters.human_candidates <= 12 and len(placement.flying_objects) == 3
    assert all(h.animation.reverse and h.animation.period == pytest.approx(2 * h.animation.clip_end)
               for h in placement.humans)

    image = np.asarray(Image.open(tmp_path / "a" / "placement.png").convert("RGB"))
    assert image.shape[0] > 200 and image.shape[1] > 300
    robot = placement.robot
    scale = min(100.0, 960 / 6.2)  # preview: <= 1000 px, 20 px margins, bounds -0.1 .. 6.1
    u, v = int((robot.x + 0.1) * scale + 20), int((4.1 - robot.y) * scale + 20)
    assert tuple(image[v, u]) == (220, 0, 0)  # the robot marker (red)

    other = place_scene(assets["bench"], list_packages(assets["humans"], "animated"), [],
                        HumansConfig(count=IntRange(min=10, max=12), max_tries=30), NO_FLYING,
                        RobotConfig(kind="tiago_omni"), seed=5).placement
    assert [(h.x, h.y) for h in other.humans] != [(h.x, h.y) for h in placement.humans]


def test_flying_objects_stay_in_polygon_and_band_with_their_speed(assets):
    flying = FlyingObjectsConfig(count=IntRange(min=6, max=6), collision_check=True)
    scene = place_scene(assets["bench"], [], list_packages(assets["objects"], "object"), NO_HUMANS, flying,
                        RobotConfig(), seed=2)
    objects = scene.placement.flying_objects
    assert len(objects) == 6
    pieces = closed_pieces(bench_room())
    t = np.arange(0.0, 600.0, 0.05)
    for obj in objects:
        motion = obj.motion
        hull = trimesh.load(Path(obj.asset_path) / "collision.stl")
        reach = np.linalg.norm(hull.vertices, axis=1).max()
        positions, quats = flying_pose(motion, t)
        offsets = np.linalg.norm(positions[:, :2] - motion.center[:2], axis=1)
        assert offsets.max() <= motion.radius + 1e-9
        disc = shapely.Point(motion.center[:2]).buffer(motion.radius + reach, quad_segs=64)
        assert shapely.box(0, 0, 6, 4).buffer(1e-6).contains(disc)
        assert positions[:, 2].min() - reach >= motion.z_range[0] - 1e-9
        assert positions[:, 2].max() + reach <= motion.z_range[1] + 1e-9
        assert motion.z_range[0] >= 0.3 - 1e-9 and motion.z_range[1] <= 2.0 + 1e-9  # band, under the walls' top
        speed = np.linalg.norm(np.diff(positions, axis=0), axis=1) / 0.05
        assert np.sqrt(np.mean(speed**2)) == pytest.approx(motion.speed, rel=0.05)
        assert 0.1 <= motion.speed <= 0.6
        turn = 2 * np.degrees(np.arccos(np.clip(np.abs(np.sum(quats[1:] * quats[:-1], axis=1)), 0, 1))) / 0.05
        np.testing.assert_allclose(turn, np.linalg.norm(motion.angular_velocity_deg), atol=1e-3)
        for index in range(0, 1200, 40):  # collision_check: the first 60 s touch nothing closed
            moved = hull.copy()
            moved.apply_transform(trimesh.transformations.quaternion_matrix(quats[index]))
            moved.apply_translation(positions[index])
            assert all(overlap_volume(moved, piece) < VOLUME_TOL for piece in pieces.values())


def test_every_package_plays_once_before_any_repeats(assets, bench):
    packages = list_packages(assets["humans"], "animated")  # walker, stander, turner
    for seed in range(2):
        for count in (len(packages), 2 * len(packages)):
            humans = HumansConfig(count=IntRange(min=count, max=count), max_tries=1)
            placed, rejected, _, _ = place_humans(bench, packages, humans, seed)
            played = [h.asset_id for h in placed] + [r.asset_id for r in rejected]
            assert sorted(played) == sorted([p.name for p in packages] * (count // len(packages)))


def test_animation_schedule_plays_forward_then_backward():
    ping_pong = AnimationSchedule(start=0.5, clip_end=2.0, period=4.0, reverse=True)
    np.testing.assert_allclose(animation_time(ping_pong, [0.0, 1.5, 2.5, 3.5, 4.0]), [0.5, 2.0, 1.0, 0.0, 0.5])
    wrap = AnimationSchedule(start=0.0, clip_end=0.9, period=1.0, reverse=False)
    np.testing.assert_allclose(animation_time(wrap, [0.5, 0.95, 1.2]), [0.5, 0.9, 0.2])


# ---------------------------------------------------------------- bad input


def rewrite_meta(package: Path, change) -> None:
    meta = json.loads((package / "meta.json").read_text())
    change(meta)
    (package / "meta.json").write_text(json.dumps(meta))
    write_manifest(package, "convert/test", "edited")


def test_bad_inputs_raise_clear_errors(assets, tmp_path):
    packages = [assets["walker"]]
    no_polygon = tmp_path / "no_polygon"
    shutil.copytree(assets["corridor"], no_polygon)
    rewrite_meta(no_polygon, lambda m: m["environment"].update(floor_polygon={"type": "Polygon", "coordinates": []}))
    with pytest.raises(InputError, match="floor_polygon"):
        place_scene(no_polygon, packages, [], HumansConfig(), NO_FLYING, RobotConfig(), seed=0)

    empty_trace = tmp_path / "humans" / "empty"
    shutil.copytree(assets["walker"], empty_trace)
    (empty_trace / "trace.stl").write_bytes(b"solid empty\nendsolid empty\n")
    write_manifest(empty_trace, "convert/animated", "edited")
    with pytest.raises(InputError, match="trace.stl"):
        place_scene(assets["corridor"], [empty_trace], [], HumansConfig(count=IntRange(min=1, max=1)), NO_FLYING,
                    RobotConfig(), seed=0)

    with pytest.raises(InputError, match="expected an environment package"):
        place_scene(assets["walker"], packages, [], HumansConfig(), NO_FLYING, RobotConfig(), seed=0)
    with pytest.raises(ValidationError, match="contact_threshold"):  # the config model itself refuses it
        HumansConfig(contact_threshold=0)
    with pytest.raises(InputError, match="no animated packages"):
        place_scene(assets["corridor"], [], [], HumansConfig(), NO_FLYING, RobotConfig(), seed=0)
    with pytest.raises(InputError, match="expected an object package, got kind .animated."):
        list_packages(assets["humans"], "object")

    incomplete = tmp_path / "incomplete"
    shutil.copytree(assets["humans"], incomplete)
    (incomplete / "stander" / MANIFEST).unlink()
    with pytest.raises(InputError, match="stander.*not a complete asset package"):
        list_packages(incomplete, "animated")
    with pytest.raises(ConfigError, match="--count"):
        place_command(assets["corridor"], humans=assets["humans"], count="9-3", out=tmp_path / "x.json")
    assert not (tmp_path / "x.json").exists()


@pytest.mark.slow
def test_cli_bad_input_exits_2_and_writes_nothing(assets, tmp_path):
    out = tmp_path / "out" / "placement.json"
    for args, needle in (
        (["--humans", str(tmp_path / "missing")], "not found"),
        (["--humans", str(assets["humans"]), "--count", "40-7"], "--count"),
    ):
        result = run_grade("place", str(assets["corridor"]), *args, "--out", str(out))
        assert result.returncode == 2, result.stderr
        assert needle in result.stderr and "Traceback" not in result.stderr
    assert not out.parent.exists()


# ---------------------------------------------------------------- real environments


def check_real_scene(scene, environment: Path) -> None:
    """40 candidates in a converted environment: traces over the floor, clear of each other (boolean
    intersection), none swallowed by or swallowing a closed piece, none with zero contacts overlapping
    a closed piece, and the robot clear of all."""
    placement = scene.placement
    assert placement.parameters.human_candidates == 40
    assert len(placement.humans) + len(placement.rejected_humans) == 40
    assert len(placement.humans) >= 5
    traces = [placed_trace(h, Path(h.asset_path) / "trace.stl") for h in placement.humans]
    for trace in traces:
        assert scene.world.inside_polygon(trace.vertices[:, :2]).all()
    for i, a in enumerate(traces):
        for b in traces[i + 1:]:
            assert overlap_volume(a, b) < VOLUME_TOL
    for solid in scene.world.solids:
        for trace in traces:
            shared = overlap_volume(trace, solid.mesh) if solid.mesh.is_volume else 0.0
            assert shared < abs(trace.volume) - VOLUME_TOL  # not swallowed
            assert shared < abs(solid.mesh.volume) - VOLUME_TOL  # not swallowing
    # A trace with no contact at all overlaps no closed piece of the scene (pieces read back through pxr).
    closed = [m for m in (trimesh.Trimesh(p.vertices, p.faces) for p in read_meshes(environment / "asset.usdc"))
              if m.is_volume]
    assert closed
    for trace in traces:  # contacts allowed by the threshold never mean standing deep inside furniture
        for piece in closed:
            assert overlap_volume(trace, piece) < 0.05 * abs(trace.volume)
    for human, trace in zip(placement.humans, traces):
        if human.contacts == 0:
            for piece in closed:
                assert overlap_volume(trace, piece) < VOLUME_TOL, human
    body = robot_mesh(placement.robot)
    for trace in traces:
        assert overlap_volume(body, trace) < VOLUME_TOL


@pytest.fixture(scope="module")
def front3d_house(realdata, tmp_path_factory) -> Path:
    """The real 3D-Front house converted without furniture models (furniture as bbox boxes)."""
    return convert_house(realdata / "front3d" / "0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json",
                         tmp_path_factory.mktemp("front3d") / "house")


@pytest.mark.slow
def test_forty_candidates_in_converted_3d_front_house(assets, front3d_house, tmp_path):
    house = front3d_house
    humans = HumansConfig(count=IntRange(min=40, max=40))
    scene = place_scene(house, list_packages(assets["humans"], "animated"), [], humans, NO_FLYING,
                        RobotConfig(kind="tiago_omni"), seed=1)
    check_real_scene(scene, house)
    write_outputs(scene, tmp_path / "placement.json", tmp_path / "placement.png")
    assert load_placement(tmp_path / "placement.json").robot.kind == "tiago_omni"


@pytest.mark.slow
def test_forty_candidates_in_procedural_demo_environment(tmp_path):
    demo = build_demo_assets(tmp_path / "demo", seed=0, humans=3, objects=2)  # walk, idle, wave
    humans = HumansConfig(count=IntRange(min=40, max=40))
    scene = place_scene(demo.environment, demo.humans, demo.objects, humans, FlyingObjectsConfig(),
                        RobotConfig(), seed=0)
    check_real_scene(scene, demo.environment)


@pytest.fixture(scope="module")
def front3d_world(front3d_house):
    return load_placement_world(front3d_house)


def test_real_amass_walk_window_lands_in_the_3d_front_house(front3d_house, front3d_world, realdata, tmp_path):
    """The CMU 01_01 walk (3.6 m of travel: its whole trace fits in no room of this house) cut to the default
    window lands 7 times in the real house, every placed trace checked here with FCL and shapely."""
    save_npz(build_body_model(), tmp_path / "models" / "SMPL_NEUTRAL.npz")
    walk = convert_sequence(realdata / "amass" / "cmu_01_01_smpl_poses.npz", tmp_path / "walk", tmp_path / "models")
    world = front3d_world
    humans = HumansConfig(count=IntRange(min=7, max=7))  # GRADE's smallest crowd
    placed, rejected, _, candidates = place_humans(world, [walk], humans, seed=0)
    print(f"CMU 01_01 window in the 3D-Front house: {len(placed)} of {candidates} placed")
    assert len(placed) >= 5, [r.reasons for r in rejected]
    traces = [placed_trace(h, walk / "trace.stl") for h in placed]
    model = fcl_model(trimesh.load(walk / "trace.stl"))  # local frame, posed from the JSON values below
    lifted = [fcl.CollisionObject(model, fcl.Transform(yaw_rotation(h.yaw), [h.x, h.y, h.z + FCL_LIFT]))
              for h in placed]
    house = fcl.CollisionObject(fcl_model(trimesh.load(front3d_house / "collision.stl")), fcl.Transform())
    for i, trace in enumerate(lifted):
        assert shapely.contains_xy(world.polygon, *traces[i].vertices[:, :2].T).all()  # over the floor
        for other in lifted[i + 1:]:
            assert fcl.collide(trace, other, fcl.CollisionRequest(), fcl.CollisionResult()) == 0
        request = fcl.CollisionRequest(num_max_contacts=humans.contact_threshold, enable_contact=True)
        assert fcl.collide(trace, house, request, fcl.CollisionResult()) < humans.contact_threshold
    closed = [m for m in (trimesh.Trimesh(p.vertices, p.faces) for p in read_meshes(front3d_house / "asset.usdc"))
              if m.is_volume]
    for trace in traces:
        for piece in closed:
            assert overlap_volume(trace, piece) < humans.max_inside_fraction * abs(trace.volume) + VOLUME_TOL


def test_skinned_gltf_character_route_without_smpl(front3d_world, tmp_path):
    """The documented route (docs/guides/convert.md) for users without an SMPL licence: a skinned, animated glTF
    character converted as a person (`grade convert mesh --kind animated --label person --height H --animation
    NAME`, here through the same jobs) and placed in the real house as a package. The character is test_gltf's synthetic
    skinned critter (a Fox-like four-legged shape, so a small height keeps its body short enough for rooms)."""
    (tmp_path / "characters").mkdir()
    write_critter(tmp_path / "characters" / "critter.glb")
    height = 0.4
    options = MeshOptions(kind="animated", height=height, label="person", animation="Idle")
    result = run_jobs(mesh_jobs(tmp_path / "characters", tmp_path / "humans", options), "characters")
    assert result.failed == [] and len(result.converted) == 1
    package = list_packages(tmp_path / "humans", "animated")[0]
    meta = load_meta(package)
    assert set(meta.semantic_labels.values()) == {"person"} and meta.source.dataset == "gltf"
    rest = np.concatenate([m.rest_vertices for m in load_animation(package).skinned])
    assert np.ptp(rest[:, 2]) == pytest.approx(height, rel=1e-3)  # the rest mesh scaled to the asked height
    placed, _, _, _ = place_humans(front3d_world, [package], HumansConfig(count=IntRange(min=3, max=3)), seed=0)
    assert placed and all(h.asset_id == package.name for h in placed)

"""MuJoCo physics of the embedded backend: environment collision, IMUs, kinematic bodies, state."""

from __future__ import annotations

import numpy as np
import pytest
import shapely
import trimesh
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

from asset_converters.environment import write_environment_package
from asset_converters.objects import write_object_package
from core.assets.parts import SceneMesh
from core.errors import ConfigError, InputError
from core.formats.asset_meta import SourceInfo
from core.geometry import quat_wxyz_to_matrix, xyzw_to_wxyz
from core.seeding import generator
from simulation.physics import (
    STATE_FIELDS,
    SensorMount,
    StartPose,
    build_world,
    decompose,
    human_body,
    load_environment_collision,
    object_body,
)
from simulation.physics.environment import MAX_PIECES_PER_PRIM, PRIM_GRID_CELLS
from simulation.robots.tiago_model import CHASSIS_HALF_XY, lightweight, physical
from simulation.robots.uav_model import uav

ROOM = 6.0  # m, square room with walls at x, y = 0 and ROOM
WALL_HEIGHT = 2.5
L_CORNER = np.array([3.5, 3.5])  # outer corner of the L-shaped piece; arms 2 m along +x and +y
L_THICKNESS = 0.1
PENETRATION_MARGIN = 0.005  # m
GRAVITY = 9.81


def quad(name: str, corners: list, label: str = "wall", floor: bool = False) -> SceneMesh:
    """A single-sided quad (as 3D-Front walls are), facing the side its corners wind about."""
    return SceneMesh(name, np.array(corners, float), [[0, 1, 2], [0, 2, 3]], label, "architecture", is_floor=floor)


def l_shaped_piece() -> trimesh.Trimesh:
    arm_x = trimesh.creation.box(extents=(2.0, L_THICKNESS, 1.0))
    arm_x.apply_translation((1.0, L_THICKNESS / 2, 0.5))
    arm_y = trimesh.creation.box(extents=(L_THICKNESS, 2.0, 1.0))
    arm_y.apply_translation((L_THICKNESS / 2, 1.0, 0.5))
    piece = trimesh.boolean.union([arm_x, arm_y])
    piece.apply_translation((*L_CORNER, 0.0))
    return piece


def room_meshes() -> list[SceneMesh]:
    s, h = ROOM, WALL_HEIGHT
    table = trimesh.creation.box(extents=(0.8, 0.6, 0.75))
    table.apply_translation((1.5, 4.5, 0.375))
    piece = l_shaped_piece()
    return [
        quad("floor", [(0, 0, 0), (s, 0, 0), (s, s, 0), (0, s, 0)], "floor", floor=True),
        quad("wall_east", [(s, 0, 0), (s, 0, h), (s, s, h), (s, s, 0)]),  # normals point into the room
        quad("wall_west", [(0, 0, 0), (0, s, 0), (0, s, h), (0, 0, h)]),
        quad("wall_south", [(0, 0, 0), (0, 0, h), (s, 0, h), (s, 0, 0)]),
        quad("wall_north", [(0, s, 0), (s, s, 0), (s, s, h), (0, s, h)]),
        SceneMesh("l_piece", piece.vertices, piece.faces, "wall", "architecture"),
        SceneMesh("table", table.vertices, table.faces, "table"),
    ]


@pytest.fixture(scope="module")
def room(tmp_path_factory):
    folder = tmp_path_factory.mktemp("env")
    return write_environment_package(room_meshes(), [], folder / "room", SourceInfo(dataset="test"), "room")


@pytest.fixture(scope="module")
def room_collision(room):
    return load_environment_collision(room)


def inside(point: np.ndarray, hull_points: np.ndarray, tol: float = 1e-7) -> bool:
    equations = ConvexHull(hull_points).equations
    return bool((equations[:, :3] @ point + equations[:, 3] <= tol).all())


def covered(vertices: np.ndarray, pieces: list[np.ndarray], tol: float = 1e-7) -> bool:
    """Every vertex lies in the hull of at least one piece."""
    hit = np.zeros(len(vertices), dtype=bool)
    for piece in pieces:
        equations = ConvexHull(piece).equations
        hit |= (vertices @ equations[:, :3].T + equations[:, 3] <= tol).all(axis=1)
    return bool(hit.all())


# ---------------------------------------------------------------- environment collision


def test_room_pieces_are_convex_parts_that_cover_every_prim(room_collision):
    by_prim: dict[str, list] = {}
    for piece in room_collision.pieces:
        by_prim.setdefault(piece.prim_path.rsplit("/", 1)[-1], []).append(piece)
    assert "floor" not in by_prim  # the floor plane carries the robot
    assert room_collision.floor_height == pytest.approx(0.0)
    for wall in ("wall_east", "wall_west", "wall_south", "wall_north"):
        assert [p.method for p in by_prim[wall]] == ["slab"]
    assert [p.method for p in by_prim["table"]] == ["hull"]
    l_pieces = by_prim["l_piece"]
    assert 3 <= len(l_pieces) <= 64 and {p.method for p in l_pieces} == {"slab"}
    meshes = {m.name: m for m in room_meshes()}
    for name in ("wall_east", "table", "l_piece"):
        assert covered(meshes[name].vertices, [p.vertices for p in by_prim[name]])
    # Slabs go behind the visible side: the east wall's slab lies outside the room.
    assert by_prim["wall_east"][0].vertices[:, 0].min() == pytest.approx(ROOM)
    # A single hull of the L would fill its inner corner; the pieces leave it free.
    corner_point = np.array([*(L_CORNER + 0.5), 0.5])
    assert inside(corner_point, meshes["l_piece"].vertices)
    assert not any(inside(corner_point, p.vertices) for p in l_pieces)


def test_a_door_opening_in_a_flat_wall_stays_open():
    outline = [(0, 0), (1, 0), (1, 2), (1.9, 2), (1.9, 0), (4, 0), (4, 2.5), (0, 2.5)]  # door 0.9 x 2 m
    flat, faces = trimesh.creation.triangulate_polygon(shapely.Polygon(outline))
    vertices = np.column_stack([flat[:, 0], np.zeros(len(flat)), flat[:, 1]])
    pieces = decompose(vertices, faces)
    assert len(pieces) >= 2 and {m for m, _ in pieces} == {"slab"}
    assert covered(vertices, [p for _, p in pieces])
    for y in (-0.02, 0.02):  # the slab is on one side; the opening must be free on both
        assert not any(inside(np.array([1.45, y, 1.0]), p) for _, p in pieces)


def test_curved_parts_fall_back_to_a_bounded_grid():
    torus = trimesh.creation.torus(major_radius=0.5, minor_radius=0.1, major_sections=24, minor_sections=8)
    pieces = decompose(torus.vertices, torus.faces)
    assert 1 < len(pieces) <= 64 and {m for m, _ in pieces} == {"cell"}
    assert covered(torus.vertices, [p for _, p in pieces])
    assert not any(inside(np.zeros(3), p) for _, p in pieces)  # the hole stays open


def test_a_prim_of_hundreds_of_parts_is_capped_by_a_coarse_grid():
    centres = generator(0, "tests/scattered-parts").uniform(0.0, 2.0, size=(MAX_PIECES_PER_PRIM + 20, 3))
    triangle = np.array([[0.0, 0.0, 0.0], [0.05, 0.0, 0.0], [0.0, 0.05, 0.02]])
    vertices = (centres[:, None, :] + triangle).reshape(-1, 3)
    pieces = decompose(vertices, np.arange(len(vertices)).reshape(-1, 3))
    assert len(pieces) <= PRIM_GRID_CELLS**3 and {m for m, _ in pieces} == {"cell"}
    assert covered(vertices, [p for _, p in pieces], tol=1e-6)


def test_physical_robot_driven_into_a_wall_stops_at_it(room_collision):
    world = build_world(physical(), StartPose(ROOM - 1.5, 2.0), room_collision)
    world.set_base_twist(np.array([0.5, 0.0, 0.0]))
    world.step(int(3.0 * 240))
    front = world.base_pose()[0, 3] + CHASSIS_HALF_XY[0]
    assert ROOM - PENETRATION_MARGIN <= front <= ROOM + PENETRATION_MARGIN


def test_robot_drives_into_the_inner_corner_of_an_l_piece(room_collision):
    world = build_world(lightweight(), StartPose(5.0, 5.0), room_collision)
    world.set_base_twist(np.array([-0.5, -0.5, 0.0]))
    world.step(int(3.0 * 240))
    x, y = world.base_pose()[:2, 3]
    inner = L_CORNER + L_THICKNESS
    assert x - CHASSIS_HALF_XY[0] == pytest.approx(inner[0], abs=PENETRATION_MARGIN)
    assert y - CHASSIS_HALF_XY[1] == pytest.approx(inner[1], abs=PENETRATION_MARGIN)
    # There, the chassis corner overlaps the L's single convex hull, which would have stopped it.
    corner = np.array([x - CHASSIS_HALF_XY[0], y - CHASSIS_HALF_XY[1], 0.2])
    assert inside(corner, l_shaped_piece().vertices)


def test_environment_input_errors(tmp_path):
    with pytest.raises(InputError, match="not a complete asset package"):
        load_environment_collision(tmp_path)
    mug = trimesh.creation.cylinder(radius=0.04, height=0.1)
    package = write_object_package([SceneMesh("mug", mug.vertices, mug.faces, "mug", "object")], "mug",
                                   tmp_path / "mug", SourceInfo(dataset="test"), "h")
    with pytest.raises(InputError, match="expected an environment package"):
        load_environment_collision(package)
    with pytest.raises(InputError, match="collision.stl"):
        object_body("mug", tmp_path)


# ---------------------------------------------------------------- IMUs


@pytest.mark.parametrize("robot, settle_steps", [(uav, 240), (physical, 240), (lightweight, 10)],
                         ids=["uav", "tiago-physical", "tiago-lightweight"])
def test_imus_at_rest_read_gravity_and_no_rotation(robot, settle_steps):
    world = build_world(robot(), StartPose(1.0, 1.0, 1.5, 0.7))
    world.step(settle_steps)
    assert set(world.imu_names) == {"imu_body", "imu_camera"}
    for name in world.imu_names:
        accel, gyro = world.imu(name)
        # Measured: exact for the UAV and the lightweight base; 2e-4 m/s^2 and 1.4e-6 rad/s of contact
        # jitter on the physical TIAGo's wheels.
        np.testing.assert_allclose(accel, [0.0, 0.0, GRAVITY], atol=0.005)
        np.testing.assert_allclose(gyro, 0.0, atol=1e-4)
    assert world.sensor_time == pytest.approx(world.time - world.model.opt.timestep)


def test_imu_reads_in_its_own_frame_including_centripetal_acceleration():
    radius, rate = 0.5, 1.0
    mount = SensorMount("imu_arm", "base_link", translation=(radius, 0.0, 0.0), rpy_deg=(90.0, 0.0, 0.0))
    world = build_world(uav(), StartPose(0.0, 0.0, 1.0), imus=[mount])
    world.set_joint_velocities(np.array([0.0, 0.0, 0.0, 0.0, 0.0, rate]))
    world.step(240)
    accel, gyro = world.imu("imu_arm")
    to_sensor = Rotation.from_euler("xyz", [90.0, 0.0, 0.0], degrees=True).as_matrix().T
    np.testing.assert_allclose(gyro, to_sensor @ [0.0, 0.0, rate], atol=1e-6)
    np.testing.assert_allclose(accel, to_sensor @ [-rate**2 * radius, 0.0, GRAVITY], atol=1e-4)
    pose = world.sensor_pose("imu_arm")
    assert np.linalg.norm(pose[:2, 3]) == pytest.approx(radius)


def test_a_sensor_on_a_missing_link_is_a_clear_error():
    with pytest.raises(ConfigError, match="'gripper_link'") as info:
        build_world(physical(), imus=[SensorMount("wrist_imu", "gripper_link")])
    assert "wrist_imu" in str(info.value) and "head_2_link" in str(info.value)
    with pytest.raises(ConfigError, match="head_2_link"):
        build_world(uav(), frames=[SensorMount("cam", "head_2_link")])


# ---------------------------------------------------------------- kinematic bodies and state


def test_mocap_bodies_follow_their_poses_and_push_the_robot(tmp_path):
    mug = trimesh.creation.cylinder(radius=0.04, height=0.1)
    package = write_object_package([SceneMesh("mug", mug.vertices, mug.faces, "mug", "object")], "mug",
                                   tmp_path / "mug", SourceInfo(dataset="test"), "h")
    world = build_world(physical(), kinematic=[human_body("walker"), object_body("mug", package)])
    quat = xyzw_to_wxyz(Rotation.from_euler("xyz", [10, 20, 30], degrees=True).as_quat())
    world.set_kinematic_pose("object/mug", np.array([0.5, -2.0, 1.2]), quat)
    start, end, steps = 1.0, 0.2, 480
    for i in range(steps):  # the human walks 0.8 m into the standing robot
        world.set_kinematic_pose("human/walker", np.array([start + (end - start) * i / steps, 0.0, 0.0]), [1, 0, 0, 0])
        world.step()
    mug_pose = world.body_pose("object/mug")
    np.testing.assert_allclose(mug_pose[:3, 3], [0.5, -2.0, 1.2], atol=1e-12)
    np.testing.assert_allclose(mug_pose[:3, :3], quat_wxyz_to_matrix(quat), atol=1e-12)
    robot_front = world.base_pose()[0, 3] + CHASSIS_HALF_XY[0]
    human_back = world.body_pose("human/walker")[0, 3] - 0.25
    assert robot_front < 0.0  # pushed back
    # Not deeply penetrated: the soft contact needs about 1.5 cm to slide 70 kg on locked wheels.
    assert robot_front - human_back < 0.02
    with pytest.raises(KeyError, match="human/nobody"):
        world.set_kinematic_pose("human/nobody", np.zeros(3), np.array([1.0, 0, 0, 0]))


@pytest.mark.parametrize("robot", [physical, uav], ids=["tiago-physical", "uav"])
def test_state_round_trip_replays_identically(robot, room_collision):
    world = build_world(robot(), StartPose(2.0, 2.0, 1.0), room_collision, kinematic=[human_body("h")])
    if robot is uav:
        world.set_joint_velocities(np.array([0.3, 0.2, 0.0, 0.1, 0.0, 0.4]))
    else:
        world.set_base_twist(np.array([0.4, 0.1, 0.3]))
    world.set_kinematic_pose("human/h", np.array([2.6, 2.0, 0.0]), np.array([1.0, 0, 0, 0]))
    world.step(30)
    saved = world.get_state()
    assert set(saved) == {"time", *STATE_FIELDS}
    world.step(60)
    first, first_sensors, first_pose = world.get_state(), world.data.sensordata.copy(), world.base_pose()
    world.set_state(saved)
    world.step(60)
    for key, value in first.items():
        assert np.array_equal(value, world.get_state()[key]), key
    assert np.array_equal(first_sensors, world.data.sensordata)
    assert np.array_equal(first_pose, world.base_pose())


def test_set_state_rejects_missing_and_misshapen_fields():
    world = build_world(uav())
    state = world.get_state()
    with pytest.raises(InputError, match="qvel"):
        world.set_state({k: v for k, v in state.items() if k != "qvel"}, source="states.npz")
    with pytest.raises(InputError, match="states.npz: qpos: shape"):
        world.set_state({**state, "qpos": np.zeros(7)}, source="states.npz")

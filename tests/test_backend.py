"""The embedded world on the demo scene and on an analytic box room: loading, sensors, moving humans and
objects, randomization, state round trips, determinism and bad input."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import trimesh
from conftest import CONFIGS, ROOT
from scipy.spatial.transform import Rotation

from asset_converters.environment import write_environment_package
from core.assets.animation import load_animation
from core.assets.parts import Light, SceneMesh
from core.assets.skinning import posed_meshes
from core.config import ExperimentConfig, LidarConfig
from core.config_io import load_experiment
from core.errors import ConfigError, InputError
from core.formats.asset_meta import SourceInfo
from core.formats.placement import (
    EnvironmentRef,
    Placement,
    PlacementParameters,
    RobotStart,
    RobotVolume,
    animation_time,
    flying_pose,
    load_placement,
)
from core.geometry import quat_wxyz_to_matrix
from core.seeding import generator
from pipeline.prepare import prepare
from placement.compose import compose_scene
from simulation.backend import Robot, World
from simulation.backends import load_world
from simulation.embedded import EmbeddedWorld, kelvin_to_rgb, load_scene
from simulation.embedded.merge import Part, merge_parts
from simulation.embedded.randomization import LUMINANCE, XYZ_TO_LINEAR_SRGB
from simulation.embedded.sensors import predicted_pose
from simulation.physics import StartPose
from simulation.render import (
    Camera,
    PointLight,
    RenderMaterial,
    RenderMesh,
    RenderOptions,
    RenderScene,
    look_at,
    render_frame,
)
from simulation.robots.uav_model import SERVO_TIME_CONSTANT

W, H = 96, 72
DEMO_OVERRIDES = ["humans.count.min=2", "humans.count.max=2", f"robot.sensors.cameras.0.width={W}",
                  f"robot.sensors.cameras.0.height={H}"]
GRAVITY = 9.81
VIEW_DISTANCE = 2.0  # m from a human when looking for it
VIEW_HEIGHT = 1.2  # m
DIRECTIONS = 8
MIN_PERSON_PIXELS = 30

# The analytic box room: x in [0, ROOM[0]], y in [0, ROOM[1]], z in [0, ROOM[2]].
ROOM = (6.0, 4.0, 3.0)
ROOM_LIGHT = Light("lamp", (3.0, 2.0, 2.5), intensity=30000.0, color=(1.0, 0.9, 0.8), radius=0.05)
UAV_START = (2.0, 1.5, 1.2, 0.3)  # x, y, z, yaw
LIDAR_MOUNT = {"link": "base_link", "translation": [0.05, 0.02, 0.1], "rpy_deg": [10.0, -5.0, 30.0]}


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def demo(tmp_path_factory, asset_cache):
    config = load_experiment(CONFIGS / "demo.yaml", DEMO_OVERRIDES)
    return config, prepare(config, tmp_path_factory.mktemp("demo"), cache=asset_cache)


def box_room_meshes() -> list[SceneMesh]:
    sx, sy, sz = ROOM

    def quad(name, corners, label, floor=False):
        return SceneMesh(name, np.array(corners, float), [[0, 1, 2], [0, 2, 3]], label, "architecture", is_floor=floor)

    return [  # faces wound to face into the room
        quad("floor", [(0, 0, 0), (sx, 0, 0), (sx, sy, 0), (0, sy, 0)], "floor", floor=True),
        quad("ceiling", [(0, 0, sz), (0, sy, sz), (sx, sy, sz), (sx, 0, sz)], "ceiling"),
        quad("wall_east", [(sx, 0, 0), (sx, 0, sz), (sx, sy, sz), (sx, sy, 0)], "wall"),
        quad("wall_west", [(0, 0, 0), (0, sy, 0), (0, sy, sz), (0, 0, sz)], "wall"),
        quad("wall_south", [(0, 0, 0), (0, 0, sz), (sx, 0, sz), (sx, 0, 0)], "wall"),
        quad("wall_north", [(0, sy, 0), (sx, sy, 0), (sx, sy, sz), (0, sy, sz)], "wall"),
    ]


@pytest.fixture(scope="module")
def box_scene(tmp_path_factory):
    """scene.usda of the box room with a UAV start and nothing else, composed as the pipeline does."""
    folder = tmp_path_factory.mktemp("box")
    package = write_environment_package(box_room_meshes(), [ROOM_LIGHT], folder / "assets" / "room",
                                        SourceInfo(dataset="test"), "room")
    x, y, z, yaw = UAV_START
    placement = Placement(
        seed=0, environment=EnvironmentRef(id="room", path=str(package)),
        parameters=PlacementParameters(human_count_range=(0, 0), human_candidates=0, max_tries=1, contact_threshold=1,
                                       human_contact_threshold=1, flying_count_range=(0, 0), flying_candidates=0,
                                       flying_collision_check=False),
        humans=[], rejected_humans=[], flying_objects=[], rejected_flying_objects=[],
        robot=RobotStart(kind="uav", x=x, y=y, z=z, yaw=yaw, volume=RobotVolume(shape="box", extents=(0.6, 0.6, 0.3)),
                         heading_clearance=1.0, tries=1),
    )
    return compose_scene(placement, folder / "scene" / "scene.usda")


def box_config(seed: int = 0, **randomization) -> ExperimentConfig:
    return ExperimentConfig.model_validate({
        "seed": seed,
        "robot": {"kind": "uav", "sensors": {
            "cameras": [{"name": "cam", "width": W, "height": H, "mount": {"link": "camera_link"}}],
            "lidar": {"name": "lidar", "mount": LIDAR_MOUNT, "channels": 4, "vertical_fov_deg": {"min": -20, "max": 20},
                      "horizontal_resolution_deg": 7.5, "min_range": 0.1, "max_range": 3.0},
        }},
        "simulation": {"randomization": randomization},
    })


# ---------------------------------------------------------------- helpers


def record_steps(world: EmbeddedWorld, config: ExperimentConfig, folder: Path, steps: int) -> None:
    """Record `steps` physics steps of `world` into `folder` as a run does: a sample before the first step, one
    after each."""
    from simulation.recording.recorder import Recorder

    recorder = Recorder(world, config, folder)
    recorder.sample(world)
    for _ in range(steps):
        world.step()
        recorder.sample(world)
    recorder.close()


def transform(rotation: np.ndarray, translation) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = rotation, translation
    return pose


def teleport_uav(world: EmbeddedWorld, x: float, y: float, z: float, yaw: float) -> None:
    state = world.get_state()
    model = world.physics.model
    for joint, value in zip(("uav_x", "uav_y", "uav_z", "uav_yaw"), (x, y, z, yaw)):
        state["physics.qpos"][model.joint(joint).qposadr[0]] = value
    world.set_state(state)


def human_frame(package, schedule, t: float) -> int:
    anim = load_animation(package)
    return int(np.clip(np.rint(animation_time(schedule, t) * anim.fps), 0, anim.frame_count - 1))


def posed_human(human, t: float) -> trimesh.Trimesh:
    """A placed human's world mesh at time t, straight from the numpy skinning of its package."""
    anim = load_animation(human.prim.package)
    meshes = posed_meshes(anim, human_frame(human.prim.package, human.prim.schedule, t))
    offsets = np.cumsum([0] + [len(v) for v, _ in meshes])
    local = np.concatenate([v for v, _ in meshes])
    pose = human.prim.pose
    return trimesh.Trimesh(local @ pose[:3, :3].T + pose[:3, 3],
                           np.concatenate([f + off for (_, f), off in zip(meshes, offsets)]), process=False)


def find_person_view(world: EmbeddedWorld):
    """Teleport the UAV around each human until the camera shows it; returns (human, instance id, frame)."""
    ids = {info.prim_path: i for i, info in world.instances().items()}
    for human in world.scene.humans:
        centre = human.prim.pose[:3, 3]
        for k in range(DIRECTIONS):
            angle = 2 * np.pi * k / DIRECTIONS
            eye = centre + VIEW_DISTANCE * np.array([np.cos(angle), np.sin(angle), 0.0])
            teleport_uav(world, eye[0], eye[1], VIEW_HEIGHT, angle + np.pi)
            frame = world.robot().render("camera")
            if np.count_nonzero(frame.instance == ids[human.name]) >= MIN_PERSON_PIXELS:
                return human, ids[human.name], frame
    raise AssertionError("no viewpoint shows a human")


# ---------------------------------------------------------------- loading


@pytest.mark.slow
def test_importing_physics_does_not_load_the_renderer():
    code = "import sys, simulation.physics, simulation; print('simulation.render' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


@pytest.mark.slow
def test_demo_scene_loads_with_instances_from_the_placement(demo):
    config, prepared = demo
    world = load_world(config, prepared.scene)
    assert isinstance(world, World) and isinstance(world, EmbeddedWorld) and isinstance(world.robot(), Robot)
    placement = load_placement(prepared.placement)
    instances = world.instances()
    assert sorted(instances) == list(range(1, len(instances) + 1))
    humans = [info for info in instances.values() if info.kind == "human"]
    objects = [info for info in instances.values() if info.kind == "object"]
    assert [h.asset_id for h in humans] == [h.asset_id for h in placement.humans]
    assert [o.asset_id for o in objects] == [o.asset_id for o in placement.flying_objects]
    classes = world.semantic_classes()
    assert {h.semantic_class for h in humans} == {"person"}
    assert all(info.semantic_id == classes.get(info.semantic_class, 0) for info in instances.values())
    assert {"wall", "floor"} <= {info.semantic_class for info in instances.values() if info.kind == "environment"}
    assert all(info.prim_path.startswith("/World/") for info in instances.values())
    robot = world.robot().pose()
    np.testing.assert_allclose(robot[:3, 3], [placement.robot.x, placement.robot.y, placement.robot.z], atol=1e-9)


# ---------------------------------------------------------------- cameras and humans


@pytest.mark.slow
def test_camera_pose_is_link_pose_times_mount_in_the_optical_frame(demo):
    config, prepared = demo
    config = config.model_copy(deep=True)
    mount = config.robot.sensors.cameras[0].mount
    mount.translation, mount.rpy_deg = (0.12, -0.03, 0.05), (5.0, 10.0, -20.0)
    world = EmbeddedWorld(config, prepared.scene)
    world.robot().set_command(np.array([0.2, -0.1, 0.05, 0.1, -0.05, 0.3]))
    world.step(24)
    mount_rotation = Rotation.from_euler("xyz", mount.rpy_deg, degrees=True).as_matrix()
    expected = world.physics.link_pose(mount.link) @ transform(mount_rotation, mount.translation)
    pose = world.robot().camera_pose("camera")
    # Optical frame: z along the mount's x (forward), x along its -y (right), y along its -z (down).
    np.testing.assert_allclose(pose[:3, 3], expected[:3, 3], atol=1e-12)
    np.testing.assert_allclose(pose[:3, 2], expected[:3, 0], atol=1e-12)
    np.testing.assert_allclose(pose[:3, 0], -expected[:3, 1], atol=1e-12)
    np.testing.assert_allclose(pose[:3, 1], -expected[:3, 2], atol=1e-12)
    frame = world.robot().render("camera")
    assert np.array_equal(frame.camera.pose, pose) and frame.rgb.shape == (H, W, 3)


@pytest.mark.slow
def test_a_person_in_view_carries_its_id_and_deforms_over_time(demo):
    config, prepared = demo
    config = config.model_copy(deep=True)
    config.robot.sensors.lidar = LidarConfig(name="lidar", channels=5, vertical_fov_deg={"min": -20, "max": 20},
                                             horizontal_fov_deg=40.0, horizontal_resolution_deg=2.0)
    world = EmbeddedWorld(config, prepared.scene)
    human, person_id, frame = find_person_view(world)
    mask = frame.instance == person_id
    assert np.all(frame.semantic[mask] == world.semantic_classes()["person"])
    # The person's tight box lies inside the projection of its posed vertices (numpy skinning).
    person = posed_human(human, world.time)
    camera, pose = world.robot().camera("camera").camera, frame.camera.pose
    local = (person.vertices - pose[:3, 3]) @ pose[:3, :3]
    pixels = (camera.K @ (local / local[:, 2:3]).T)[:2].T
    row = int(np.flatnonzero(frame.instance_ids == person_id)[0])
    box = frame.boxes_2d_tight[row]
    assert pixels[:, 0].min() - 1 <= box["x_min"] and box["x_max"] <= pixels[:, 0].max() + 1
    assert pixels[:, 1].min() - 1 <= box["y_min"] and box["y_max"] <= pixels[:, 1].max() + 1

    # LiDAR beams that meet the posed person (trimesh's own ray test) return its distance.
    scan = world.robot().lidar()
    e, a = np.meshgrid(scan.elevations, scan.azimuths, indexing="ij")
    beams = np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=-1).reshape(-1, 3)
    beams = beams @ scan.pose[:3, :3].T
    hits, rays, _ = person.ray.intersects_location(np.broadcast_to(scan.pose[:3, 3], beams.shape), beams,
                                                    multiple_hits=False)
    assert len(rays) > 3
    person_range = np.linalg.norm(hits - scan.pose[:3, 3], axis=1)
    ranges = scan.ranges.reshape(-1)[rays]
    assert np.all(ranges <= person_range + 1e-4)
    assert np.count_nonzero(np.abs(ranges - person_range) < 1e-4) >= len(rays) // 2

    start = world.scene.states(0.0)[human.name].vertices
    world.step(240)  # one second of hovering in place
    assert world.time == pytest.approx(1.0)
    later = world.scene.states(world.time)[human.name].vertices
    pose0 = human.prim.pose
    for t, vertices in ((0.0, start), (1.0, later)):
        np.testing.assert_allclose(vertices @ pose0[:3, :3].T + pose0[:3, 3], posed_human(human, t).vertices,
                                   atol=1e-9)
    assert np.abs(later - start).max() > 0.01
    assert not np.array_equal(world.robot().render("camera").instance == person_id, mask)


@pytest.mark.slow
def test_flying_objects_move_as_flying_pose_predicts(demo):
    config, prepared = demo
    world = EmbeddedWorld(config, prepared.scene)
    assert world.scene.objects
    world.step(60)
    t = world.time
    for obj in world.scene.objects:
        positions, quats = flying_pose(obj.prim.motion, t)
        rotation = quat_wxyz_to_matrix(quats[0])
        body = world.physics.body_pose(obj.body.body_name)
        np.testing.assert_allclose(body[:3, 3], positions[0], atol=1e-9)
        np.testing.assert_allclose(body[:3, :3], rotation, atol=1e-9)
        state = world.scene.states(t)[obj.name]
        np.testing.assert_allclose(state.pose, transform(rotation, positions[0]), atol=1e-9)
        start, _ = flying_pose(obj.prim.motion, 0.0)
        assert np.linalg.norm(positions[0] - start[0]) > 1e-3


@pytest.mark.slow
def test_hovering_uav_imu_reads_gravity_and_no_rotation(demo):
    config, prepared = demo
    world = EmbeddedWorld(config, prepared.scene)
    world.step(24)
    for name in ("imu_body", "imu_camera"):
        reading = world.robot().imu(name)
        np.testing.assert_allclose(reading.linear_acceleration, [0.0, 0.0, GRAVITY], atol=1e-6)
        np.testing.assert_allclose(reading.angular_velocity, 0.0, atol=1e-9)
        assert reading.time == pytest.approx(23 * world.timestep)


SETTLE_TIME_CONSTANTS = 20  # the velocity servos' residual acceleration falls as exp(-t / tau)


@pytest.mark.slow
def test_predicted_camera_pose_matches_the_pose_one_frame_later(demo):
    config, prepared = demo
    world = EmbeddedWorld(config, prepared.scene)
    world.robot().set_command(np.array([0.3, -0.2, 0.1, 0.0, 0.0, 0.0]))
    world.step(round(SETTLE_TIME_CONSTANTS * SERVO_TIME_CONSTANT / world.timestep))  # the servos settle
    steps = 8  # one 30 Hz frame at 240 Hz
    predicted = predicted_pose(world.physics, "camera", steps * world.timestep)
    world.step(steps)
    np.testing.assert_allclose(world.physics.sensor_pose("camera"), predicted, atol=1e-6)


# ---------------------------------------------------------------- LiDAR and randomization in the box room


def room_distance(origin: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Distance along each ray from inside the box room to its first wall, floor or ceiling."""
    bounds = np.array(ROOM)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(directions > 0, (bounds - origin) / directions, -origin / directions)
    return np.where(np.abs(directions) > 1e-12, t, np.inf).min(axis=1)


def test_lidar_ranges_equal_the_analytic_wall_distances(box_scene):
    world = EmbeddedWorld(box_config(), box_scene)
    scan = world.robot().lidar()
    x, y, z, yaw = UAV_START
    base = transform(Rotation.from_euler("z", yaw).as_matrix(), (x, y, z))
    mount = transform(Rotation.from_euler("xyz", LIDAR_MOUNT["rpy_deg"], degrees=True).as_matrix(),
                      LIDAR_MOUNT["translation"])
    sensor = base @ mount
    np.testing.assert_allclose(scan.pose, sensor, atol=1e-9)
    elevation = np.radians(np.linspace(-20.0, 20.0, 4))
    azimuth = np.radians(np.arange(-180.0, 180.0, 7.5))
    np.testing.assert_allclose(scan.elevations, elevation, atol=1e-12)
    np.testing.assert_allclose(scan.azimuths, azimuth, atol=1e-12)
    e, a = np.meshgrid(elevation, azimuth, indexing="ij")
    local = np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=-1).reshape(-1, 3)
    truth = room_distance(sensor[:3, 3], local @ sensor[:3, :3].T)
    expected = np.where(truth <= 3.0, truth, 0.0).reshape(4, -1)
    assert 0 < np.count_nonzero(expected) < expected.size  # some beams reach past max_range
    np.testing.assert_allclose(scan.ranges, expected, atol=1e-4)
    returned = expected.reshape(-1) > 0
    np.testing.assert_allclose(np.linalg.norm(scan.points, axis=1), truth[returned], atol=1e-4)
    np.testing.assert_allclose(scan.points, local[returned] * truth[returned, None], atol=1e-4)
    assert np.array_equal(scan.ring, np.repeat(np.arange(4), len(azimuth))[returned])
    assert np.all(scan.intensity == 0)


def test_kelvin_colours_sit_on_the_planckian_locus():
    # CIE illuminant A (a 2856 K black body) and the 6500 K black body, from CIE 15:2004 tables.
    for kelvin, (x, y) in ((2856.0, (0.44757, 0.40745)), (6500.0, (0.31352, 0.32363))):
        rgb = kelvin_to_rgb(kelvin)
        xyz = np.linalg.solve(XYZ_TO_LINEAR_SRGB, rgb)
        np.testing.assert_allclose(xyz[:2] / xyz.sum(), (x, y), atol=1e-3)
        assert LUMINANCE @ rgb == pytest.approx(1.0)
    assert kelvin_to_rgb(3000.0)[0] > kelvin_to_rgb(3000.0)[2] and kelvin_to_rgb(9000.0)[2] > kelvin_to_rgb(9000.0)[0]


def test_light_randomization_stays_in_range_and_follows_the_seed(box_scene):
    scale = {"min": 0.5, "max": 0.7}
    ranges = {"light_intensity_scale": scale, "during_run": True, "period": 0.05}
    world = EmbeddedWorld(box_config(seed=3, **ranges), box_scene)
    authored = world.scene.lights[0]
    assert authored.intensity == pytest.approx(np.pi * ROOM_LIGHT.radius**2 * ROOM_LIGHT.intensity * 0.03)
    first = world.lights()[0]
    assert scale["min"] <= first.intensity / authored.intensity <= scale["max"]
    twin = EmbeddedWorld(box_config(seed=3, **ranges), box_scene)
    other = EmbeddedWorld(box_config(seed=4, **ranges), box_scene)
    assert twin.lights() == world.lights() and other.lights() != world.lights()

    saved = world.get_state()
    world.step(13)  # past t = 0.05 s: a new draw of the lights
    second = world.lights()[0]
    assert second != first and scale["min"] <= second.intensity / authored.intensity <= scale["max"]
    twin.step(13)
    assert twin.lights() == world.lights()
    world.set_state(saved)
    assert world.lights()[0] == first


# ---------------------------------------------------------------- replay and determinism


def frame_bytes(frame) -> list[bytes]:
    arrays = (frame.rgb, frame.depth, frame.instance, frame.semantic, frame.normals, frame.instance_ids,
              frame.boxes_2d_tight, frame.boxes_2d_loose, frame.boxes_3d, frame.camera.pose)
    return [np.ascontiguousarray(a).tobytes() for a in arrays]


def imu_bytes(world: EmbeddedWorld) -> list[bytes]:
    readings = [world.robot().imu(name) for name in ("imu_body", "imu_camera")]
    return [np.array([r.time, *r.linear_acceleration, *r.angular_velocity]).tobytes() for r in readings]


COMMAND = np.array([0.3, 0.1, 0.05, 0.1, -0.1, 0.4])


@pytest.mark.slow
def test_get_set_state_reproduces_frames_and_imu_readings(demo):
    config, prepared = demo
    world = EmbeddedWorld(config, prepared.scene)
    world.robot().set_command(COMMAND)
    world.step(10)
    saved = world.get_state()
    at_save = frame_bytes(world.robot().render("camera")), imu_bytes(world)
    world.step(5)
    later = frame_bytes(world.robot().render("camera")), imu_bytes(world)
    assert later != at_save
    world.set_state(saved)
    assert (frame_bytes(world.robot().render("camera")), imu_bytes(world)) == at_save
    world.step(5)
    assert (frame_bytes(world.robot().render("camera")), imu_bytes(world)) == later


@pytest.mark.slow
def test_two_backends_from_the_same_inputs_are_byte_identical(demo):
    config, prepared = demo
    config = config.model_copy(deep=True)
    config.robot.sensors.cameras[0].outputs = [*config.robot.sensors.cameras[0].outputs, "flow"]
    runs = []
    for _ in range(2):
        world = EmbeddedWorld(config, prepared.scene)
        world.robot().set_command(COMMAND)
        stream = []
        for _ in range(3):
            world.step(8)
            frame = world.robot().render("camera")
            assert frame.flow is not None and np.isfinite(frame.flow).any()
            stream.append((frame_bytes(frame), frame.flow.tobytes(), imu_bytes(world)))
        runs.append(stream)
    assert runs[0] == runs[1]


# ---------------------------------------------------------------- merged meshes


def test_a_merged_human_renders_like_its_separate_parts():
    """Textured (tiled UVs) and plain parts merged into one atlas-textured mesh look the same."""
    texture = generator(0, "tests/merge-texture").integers(0, 256, (8, 6, 3), dtype=np.uint8)
    box = trimesh.creation.box(extents=(0.6, 0.6, 0.6))
    uvs = box.vertices[:, :2] * 3.0 + 0.4  # spans about 2 x 2 repeats
    plain = trimesh.creation.icosphere(subdivisions=2, radius=0.3)
    plain.apply_translation((0.0, 0.0, 0.6))
    parts = [Part("shirt", box.vertices, box.faces, (0.5, 0.5, 0.5), texture, uvs),
             Part("head", plain.vertices, plain.faces, (0.8, 0.4, 0.3))]
    separate = [RenderMesh("shirt", box.vertices, box.faces, 1, 1, RenderMaterial((0.5, 0.5, 0.5), texture), uvs),
                RenderMesh("head", plain.vertices, plain.faces, 2, 1, RenderMaterial((0.8, 0.4, 0.3)))]
    merged = merge_parts(parts)
    vertices = np.concatenate([p.vertices for p in parts])
    together = [RenderMesh("person", vertices, merged.faces, 1, 1, merged.material, merged.uvs)]
    camera = Camera.from_fov(64, 64, 60.0, near=0.05, far=10.0)
    pose = look_at(np.array([1.2, -1.5, 0.8]), np.array([0.0, 0.0, 0.3]))
    options = RenderOptions(shadows=False, boxes=False)
    light = [PointLight((1.0, -1.0, 2.0), 1.0)]
    a = render_frame(RenderScene(separate, lights=light), camera, pose, options=options)
    b = render_frame(RenderScene(together, lights=light), camera, pose, options=options)
    assert np.array_equal(a.depth, b.depth) and np.count_nonzero(a.depth) > 500
    assert np.abs(a.rgb.astype(int) - b.rgb.astype(int)).max() <= 1


# ---------------------------------------------------------------- bad input


def test_a_scene_breaking_its_invariants_is_refused_naming_the_file(box_scene):
    scene = load_scene(box_scene)
    first, second = scene.static_meshes[:2]
    assert set(scene.instances) == {m.instance_id for m in scene.static_meshes} and scene.robots[0].kind == "uav"
    broken = {
        "mesh names must be unique": {"static_meshes": (first, dataclasses.replace(second, name=first.name))},
        "have no mesh or no instance entry": {"instances": {**scene.instances, 99: scene.instances[first.instance_id]}},
        "does not match its mesh": {"instances": {**scene.instances,
                                                  first.instance_id: scene.instances[second.instance_id]}},
        "robot names must be unique": {"robots": scene.robots * 2},
        "is not finite": {"robots": (dataclasses.replace(scene.robots[0], start=StartPose(np.nan, 0.0, 1.0, 0.0)),)},
    }
    for message, change in broken.items():
        with pytest.raises(InputError, match=message) as info:
            dataclasses.replace(scene, **change)
        assert info.value.file == str(box_scene)


@pytest.mark.slow
def test_a_scene_referencing_a_missing_package_is_refused(demo):
    config, prepared = demo
    text = prepared.scene.read_text()
    placement = load_placement(prepared.placement)
    missing = text.replace(f"/{placement.humans[0].asset_id}/asset.usdc", "/no_such_human/asset.usdc", 1)
    broken = prepared.scene.with_name("broken.usda")
    broken.write_text(missing)
    with pytest.raises(InputError) as info:
        EmbeddedWorld(config, broken)
    message = str(info.value)
    assert "broken.usda" in message and "/World/humans/human_00_" in message and "no_such_human" in message


@pytest.mark.slow
def test_cameras_with_no_field_of_view_or_bad_intrinsics_are_refused(demo):
    config, prepared = demo
    with pytest.raises(ConfigError, match="fov_deg"):
        load_experiment(CONFIGS / "demo.yaml", [*DEMO_OVERRIDES, "robot.sensors.cameras.0.fov_deg=0"])
    with pytest.raises(InputError, match="focal"):
        Camera.from_intrinsics(np.array([[0.0, 0.0, 47.5], [0.0, 80.0, 35.5], [0.0, 0.0, 1.0]]), W, H)
    bad = config.model_copy(deep=True)
    camera = bad.robot.sensors.cameras[0]
    bad.robot.sensors.cameras = [camera.model_copy(update={"intrinsics": (0.0, 80.0, 47.5, 35.5)})]
    with pytest.raises(ConfigError, match=r"robot.sensors.cameras.0.*'camera'.*focal"):
        EmbeddedWorld(bad, prepared.scene)


@pytest.mark.slow
def test_a_sensor_on_a_missing_link_is_refused(demo):
    config, prepared = demo
    bad = config.model_copy(deep=True)
    bad.robot.sensors.cameras[0].mount.link = "gripper_link"
    with pytest.raises(ConfigError, match="'gripper_link'") as info:
        EmbeddedWorld(bad, prepared.scene)
    assert "base_link" in str(info.value) and "camera_link" in str(info.value)

"""Robots from descriptions (config kind `custom`): the real Clearpath Husky URDF of ../shared/realdata and a
quadrotor in MJCF written here, checked against the files themselves, the recorded bags and a replay."""

from __future__ import annotations

import hashlib
import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy.spatial.transform import Rotation

from core.config import RobotConfig
from core.config_io import load_experiment
from core.errors import ConfigError, InputError
from core.formats.bags.reader import read_messages, stamp_ns
from core.recording import Recording
from core.robot_catalogue import robot_body
from core.robot_description import load_description
from pipeline.generate import generate
from simulation.robots import robot_model
from simulation.robots.uav_model import SERVO_TIME_CONSTANT
from tests.conftest import CONFIGS, assert_refused, run_grade

QUADROTOR_MASS = 2.0
QUADROTOR_INERTIA = (0.02, 0.02, 0.04)
QUADROTOR = f"""<mujoco model="quad">
  <default><geom rgba="0.8 0.2 0.2 1"/></default>
  <worldbody>
    <body name="base_link">
      <freejoint/>
      <inertial pos="0 0 0" mass="{QUADROTOR_MASS}" diaginertia="{' '.join(map(str, QUADROTOR_INERTIA))}"/>
      <geom name="frame" type="box" size="0.2 0.2 0.04" mass="0"/>
      <body name="camera_mount" pos="0.15 0 -0.02"/>
    </body>
  </worldbody>
</mujoco>
"""


def husky_robot(realdata: Path, **extra: object) -> dict:
    return {"kind": "custom", "description": str(realdata / "robots/husky/husky.urdf"), "drive": "differential",
            "sensors": {"cameras": [{"name": "camera", "mount": {"link": "top_plate_link",
                                                                 "translation": [0.3, 0.0, 0.3]},
                                     "width": 96, "height": 72}],
                        "imus": [{"name": "imu", "mount": {"link": "imu_link"}}]}, **extra}


def write_config(folder: Path, robot: dict, *extra: str) -> Path:
    import yaml

    path = folder / "robot.yaml"
    path.write_text(yaml.safe_dump({"robot": robot}))
    base = load_experiment(CONFIGS / "demo.yaml").model_dump(mode="json", exclude={"robot"})
    base.update({"robot": robot, "name": "description-robot"})
    path.write_text(yaml.safe_dump(base))
    return path


# ---------------------------------------------------------------- the Husky's description


def test_the_husky_links_mass_and_wheels_are_those_of_its_urdf(realdata):
    urdf = realdata / "robots/husky/husky.urdf"
    root = ET.parse(urdf).getroot()
    description = load_description(urdf)
    assert set(description.links) == {link.get("name") for link in root.iter("link")}
    assert description.links[0] == "base_link"
    assert description.mass == pytest.approx(sum(float(m.get("value")) for m in root.iter("mass")), abs=1e-9)
    joints = {j.get("name"): j for j in root.iter("joint") if j.get("type") == "continuous"}
    assert {w.joint for w in description.wheels} == set(joints)
    for wheel in description.wheels:
        origin = [float(v) for v in joints[wheel.joint].find("origin").get("xyz").split()]
        collision = next(link for link in root.iter("link") if link.get("name") == f"{wheel.joint}_link")
        radius = float(collision.find("collision/geometry/cylinder").get("radius"))
        assert wheel.y == pytest.approx(origin[1]) and wheel.radius == pytest.approx(radius, abs=1e-6)
        # The wheels stand on the floor: base_link is a wheel radius above it, less the axle's offset.
        assert description.base_height == pytest.approx(radius - origin[2], abs=1e-6)
    body = robot_body(RobotConfig.model_validate(husky_robot(realdata)))
    assert not body.flies and not body.holonomic
    assert body.radius == pytest.approx(math.hypot(*np.max(np.abs([description.lower, description.upper]),
                                                             axis=0)[:2]))


def test_inspect_prints_the_facts_and_draws_three_views(realdata, tmp_path):
    png = tmp_path / "husky.png"
    result = run_grade("robot", "inspect", str(realdata / "robots/husky/husky.urdf"), "--out", str(png))
    assert result.returncode == 0, result.stderr
    assert "mass: 44.003 kg" in result.stdout and "links (11): base_link," in result.stdout
    assert "front_left_wheel (r 0.178 m, y +0.285 m)" in result.stdout
    width, height = Image.open(png).size
    assert width > 2 * height  # three views side by side


# ---------------------------------------------------------------- the Husky in the demo flat


@pytest.fixture(scope="module")
def husky_run(realdata, tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("husky")
    config = load_experiment(write_config(folder, husky_robot(realdata)), [
        "seed=3", "simulation.duration=3", "simulation.bootstrap=0.5", "humans.count={min: 1, max: 1}",
        "flying_objects.count={min: 0, max: 0}", "recording.bag_formats=[ros1]"])
    generate(config, folder / "run", cache=folder / "assets")
    return folder / "run"


def test_the_husky_drives_forward_only_and_its_wheels_roll_with_it(husky_run, realdata):
    recording = Recording.open(husky_run)
    path = recording.robot_path()
    yaw = Rotation.from_quat(path.quat_wxyz[:, [1, 2, 3, 0]]).as_euler("xyz")[:, 2]
    steps = np.diff(path.position[:, :2], axis=0)
    heading = np.stack([np.cos(yaw[:-1]), np.sin(yaw[:-1])], axis=1)
    forward = np.einsum("ij,ij->i", steps, heading)
    sideways = steps[:, 0] * -np.sin(yaw[:-1]) + steps[:, 1] * np.cos(yaw[:-1])
    turned = np.unwrap(yaw)
    assert abs(forward.sum()) > 0.2  # it drove somewhere (the tour sets off after a look around)
    assert np.abs(sideways).max() < 1e-3 * np.abs(forward).max() + 1e-9  # a differential base never slides
    # The wheels' angles in /joint_states, read back from the bag, against the base's own motion: each wheel
    # turns by (forward distance - yaw change * its y) / radius.
    description = load_description(realdata / "robots/husky/husky.urdf")
    positions: dict[str, list[float]] = {w.joint: [] for w in description.wheels}
    bag = next((husky_run / "bags").rglob("*.bag"))
    for _, _, message in read_messages(bag, ["/joint_states"]):
        for name, value in zip(message.name, message.position, strict=True):
            if name in positions:
                positions[name].append(value)
    for wheel in description.wheels:
        angles = np.unwrap(positions[wheel.joint])
        expected = (forward.sum() - (turned[-1] - turned[0]) * wheel.y) / wheel.radius
        assert angles[-1] - angles[0] == pytest.approx(expected, rel=0.03, abs=0.05)


def test_the_husky_odometry_twist_is_in_base_link(husky_run):
    """/odom's twist is base_link's velocity in its own frame (x forward), not in the principal axes of its
    inertia, into which the compiler turns a description's full inertia tensor: integrated over the run, its
    forward speed gives the distance the base drove along its heading."""
    recording = Recording.open(husky_run)
    path = recording.robot_path()
    yaw = Rotation.from_quat(path.quat_wxyz[:, [1, 2, 3, 0]]).as_euler("xyz")[:, 2]
    forward = np.einsum("ij,ij->i", np.diff(path.position[:, :2], axis=0),
                        np.stack([np.cos(yaw[:-1]), np.sin(yaw[:-1])], axis=1)).sum()
    bag = next((husky_run / "bags").rglob("*.bag"))
    stamps, linear, turn = [], [], []
    for _, _, message in read_messages(bag, ["/odom"]):
        stamps.append(stamp_ns(message.header) * 1e-9)
        twist = message.twist.twist
        linear.append([twist.linear.x, twist.linear.y, twist.linear.z])
        turn.append(twist.angular.z)
    linear = np.array(linear)
    assert forward > 0.5
    assert np.trapezoid(linear[:, 0], stamps) == pytest.approx(forward, rel=0.05)
    assert np.abs(linear[:, 1:]).max() < 0.05 * np.abs(linear[:, 0]).max()  # no sliding, no climbing
    assert np.trapezoid(turn, stamps) == pytest.approx(np.unwrap(yaw)[-1] - yaw[0], abs=0.05)


def test_a_husky_run_replays_byte_for_byte(husky_run, tmp_path):
    result = run_grade("replay", str(husky_run), "--out", str(tmp_path / "replay"))
    assert result.returncode == 0, result.stderr

    def hashes(root: Path) -> dict[str, str]:
        return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] in ("gt", "bags",
                                                                                                      "states.npz")}

    assert hashes(tmp_path / "replay") == hashes(husky_run)


# ---------------------------------------------------------------- a quadrotor in MJCF


def test_an_mjcf_quadrotor_flies_with_servos_sized_by_its_own_mass(tmp_path, asset_cache):
    (tmp_path / "quad.xml").write_text(QUADROTOR)
    robot = {"kind": "custom", "description": "quad.xml", "drive": "floating",
             "sensors": {"cameras": [{"name": "camera", "mount": {"link": "camera_mount"}, "width": 64,
                                      "height": 48}]}}
    config = load_experiment(write_config(tmp_path, robot), [
        "simulation.duration=3", "simulation.bootstrap=0.25", "humans.count={min: 0, max: 0}",
        "flying_objects.count={min: 0, max: 0}", "exploration.planner=waypoints",
        "exploration.waypoints=[[9, 9, 1.5]]", "recording.bag_formats=[ros1]"])
    model = robot_model(config.robot)
    gains = {a.get("joint"): float(a.get("kv")) for a in model.actuators}
    assert gains["uav_x"] == pytest.approx(QUADROTOR_MASS / SERVO_TIME_CONSTANT)
    assert gains["uav_yaw"] == pytest.approx(QUADROTOR_INERTIA[2] / SERVO_TIME_CONSTANT, rel=1e-6)
    generate(config, tmp_path / "run", cache=asset_cache)
    path = Recording.open(tmp_path / "run").robot_path()
    flown = np.linalg.norm(path.position[-1, :2] - path.position[0, :2])
    assert flown > 1.0  # it set off for the waypoint at its speed limit
    assert np.all(path.position[:, 2] > 0.3)  # gravity-compensated: it hovers, it does not drop


# ---------------------------------------------------------------- bad descriptions


URDF_HEAD = '<robot name="r">'
LINK = ('<link name="{name}"><inertial><mass value="{mass}"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" '
        'ixz="0" iyz="0"/></inertial>{visual}</link>')


def urdf(*parts: str) -> str:
    return URDF_HEAD + "".join(parts) + "</robot>"


def joint(name: str, parent: str, child: str) -> str:
    return f'<joint name="{name}" type="fixed"><parent link="{parent}"/><child link="{child}"/></joint>'


BAD_DESCRIPTIONS = {
    "malformed": ("<robot><link name='a'>", "malformed XML"),
    "missing_mesh": (urdf(LINK.format(name="base_link", mass=1, visual='<visual><geometry><mesh '
                                      'filename="meshes/gone.stl"/></geometry></visual>')), "gone.stl"),
    "unresolved_package": (urdf(LINK.format(name="base_link", mass=1, visual='<visual><geometry><mesh '
                                            'filename="package://husky_description/m.stl"/></geometry></visual>')),
                           "husky_description"),
    "loop": (urdf(LINK.format(name="base_link", mass=1, visual=""), LINK.format(name="a", mass=1, visual=""),
                  LINK.format(name="b", mass=1, visual=""), joint("j1", "base_link", "a"), joint("j2", "a", "b"),
                  joint("j3", "base_link", "b")), "kinematic loop"),
    "zero_mass": (urdf(LINK.format(name="base_link", mass=0, visual="")), "link base_link"),
    # finite numbers whose sum overflows: a link 1e308 m out on a link 1e308 m out
    "infinite_position": (urdf(LINK.format(name="base_link", mass=1, visual=""), LINK.format(name="a", mass=1, visual=""),
                               LINK.format(name="b", mass=1, visual=""),
                               joint("j1", "base_link", "a").replace("<parent", '<origin xyz="1e308 0 0"/><parent'),
                               joint("j2", "a", "b").replace("<parent", '<origin xyz="1e308 0 0"/><parent')),
                          "infinite or undefined"),
    "infinite_geometry": (urdf(LINK.format(name="base_link", mass=1, visual=""),
                               LINK.format(name="a", mass=1, visual='<collision><origin xyz="1e308 0 0"/><geometry>'
                                                                    '<box size="1 1 1"/></geometry></collision>'),
                               joint("j1", "base_link", "a").replace("<parent", '<origin xyz="1e308 0 0"/><parent')),
                          "collision geometry #0 of link 'a' is infinite"),
}


@pytest.mark.parametrize("case", sorted(BAD_DESCRIPTIONS))
def test_a_bad_description_is_refused_naming_the_file_and_element(case, tmp_path):
    text, mention = BAD_DESCRIPTIONS[case]
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    with pytest.raises(InputError, match=mention):
        load_description(path)
    assert_refused(run_grade("robot", "inspect", str(path), "--out", str(tmp_path / "r.png")), str(path), mention)
    assert not (tmp_path / "r.png").exists()


def test_a_sensor_on_a_missing_link_and_an_impossible_drive_are_refused_before_anything_is_written(
        realdata, tmp_path):
    robot = husky_robot(realdata)
    robot["sensors"]["imus"][0]["mount"]["link"] = "no_such_link"
    config = write_config(tmp_path, robot)
    out = tmp_path / "run"
    assert_refused(run_grade("generate", str(config), "--out", str(out)), "robot.sensors.imus.0.mount.link",
                   "top_plate_link")
    assert not out.exists()
    (tmp_path / "quad.xml").write_text(QUADROTOR)
    with pytest.raises(ConfigError, match="differential needs wheels"):
        robot_body(RobotConfig(kind="custom", description=tmp_path / "quad.xml", drive="differential"))
    with pytest.raises(ValueError, match="only robots of kind 'custom'"):
        RobotConfig(kind="uav", drive="floating")


# ---------------------------------------------------------------- seen by another robot


def test_the_husky_is_a_robot_in_a_uav_s_camera_and_in_its_coco_export(realdata, tmp_path, asset_cache):
    """A UAV flies at the Husky's start: the Husky's visual meshes are in its frames as an instance of class
    robot, and a COCO export of the UAV's camera labels it robot (read back with pycocotools)."""
    from pycocotools.coco import COCO

    from core.formats.class_map import DEFAULT_CLASSES
    from core.formats.placement import load_placement
    from pipeline.prepare import prepare

    husky = husky_robot(realdata, name="husky")
    husky["exploration"] = {"planner": "none"}
    camera = "{name: camera, mount: {link: camera_link}, width: 96, height: 72, fov_deg: 100, rate_hz: 30}"
    base = ["seed=5", "environment.rooms=1", "environment.furniture={min: 0, max: 0}", "humans.count={min: 0, max: 0}",
            "flying_objects.count={min: 0, max: 0}", "simulation.duration=2", "simulation.bootstrap=0.25",
            "recording.bag_formats=[ros1]", f"robots.0.sensors.cameras.0={camera}",
            "robots.0.sensors.imus=[]", f"robots.1={json.dumps(husky)}", f"assets_dir={tmp_path / 'assets'}"]
    placed = prepare(load_experiment(CONFIGS / "multi-robot.yaml", [*base, "robots.0.exploration.planner=none"]),
                     tmp_path / "place")
    start = {s.name: s for s in load_placement(placed.placement).robot_starts}["husky"]
    aim = f"robots.0.exploration={{planner: waypoints, waypoints: [[{start.x}, {start.y}, 1.2]], stop_distance: 1.5}}"
    run = tmp_path / "run"
    generate(load_experiment(CONFIGS / "multi-robot.yaml", [*base, aim]), run)
    view = Recording.open(run).robot("uav").camera("camera")
    ids = {e.prim_path: i for i, e in view.instances.instances.items()}
    entry = view.instances.instances[ids["/World/robots/husky"]]
    assert entry.semantic_class == "robot" and entry.semantic_id == DEFAULT_CLASSES["robot"]
    seen = max(np.count_nonzero(frame.instance() == ids["/World/robots/husky"]) for frame in view)
    assert seen > 50
    result = run_grade("export", "coco", str(run), "--out", str(tmp_path / "coco"), "--robot", "uav",
                        "--categories", "nyu40")
    assert result.returncode == 0, result.stderr
    coco = COCO(str(next((tmp_path / "coco").rglob("instances_*.json"))))
    robot = coco.getCatIds(catNms=["robot"])
    assert robot and coco.getAnnIds(catIds=robot)


def test_a_collada_mesh_is_converted_once_into_the_mesh_cache(tmp_path, monkeypatch):
    import trimesh

    import core.robot_description as descriptions

    monkeypatch.setattr(descriptions, "MESH_CACHE", tmp_path / "cache")
    (tmp_path / "meshes").mkdir()
    trimesh.creation.box(extents=(0.6, 0.4, 0.2)).export(tmp_path / "meshes" / "body.dae")
    collision = '<collision><geometry><mesh filename="meshes/body.dae"/></geometry></collision>'
    (tmp_path / "robot.urdf").write_text(urdf(LINK.format(name="base_link", mass=3, visual=collision)))
    description = load_description(tmp_path / "robot.urdf")
    assert np.allclose(description.lower, (-0.3, -0.2, -0.1), atol=1e-6)
    assert np.allclose(description.upper, (0.3, 0.2, 0.1), atol=1e-6)
    converted = sorted((tmp_path / "cache").iterdir())
    assert len(converted) == 1 and converted[0].suffix == ".stl"
    assert trimesh.load(converted[0]).volume == pytest.approx(0.6 * 0.4 * 0.2, rel=1e-6)


def test_the_shipped_rover_example_validates_and_its_wheels_are_found():
    """configs/rover.yaml and its MJCF: what a new user runs first."""
    result = run_grade("config", "validate", str(CONFIGS / "rover.yaml"))
    assert result.returncode == 0, result.stderr
    config = load_experiment(CONFIGS / "rover.yaml")
    body = robot_body(config.robot)
    assert body.drive == "differential" and not body.flies
    root = ET.parse(CONFIGS / "robots" / "rover.xml").getroot()
    wheels = {b.get("name"): [float(v) for v in b.get("pos").split()] for b in root.iter("body")
              if b.find("joint") is not None}
    description = load_description(CONFIGS / "robots" / "rover.xml")
    assert {w.joint for w in description.wheels} == {"left_wheel", "right_wheel"}
    for wheel in description.wheels:
        assert wheel.y == pytest.approx(wheels[f"{wheel.joint}_link"][1])
        assert wheel.radius == pytest.approx(0.08) and description.base_height == pytest.approx(0.08)


def test_the_base_link_becomes_the_root_and_the_links_above_it_hang_below_it(realdata):
    """The Husky's URDF root is base_footprint, base_link 0.14493 m above it on a fixed joint: re-rooted, the
    footprint hangs 0.14493 m below base_link, which is where the floor is when the wheels stand on it."""
    import mujoco

    description = load_description(realdata / "robots/husky/husky.urdf")
    model = mujoco.MjModel.from_xml_string(description.mjcf)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    assert model.body(1).name == "base_link" and np.allclose(data.xpos[1], 0.0)
    assert data.xpos[model.body("base_footprint").id] == pytest.approx([0.0, 0.0, -0.14493], abs=1e-9)
    assert description.base_height == pytest.approx(0.14493, abs=1e-6)
    imu = next(j for j in ET.parse(realdata / "robots/husky/husky.urdf").getroot().iter("joint")
               if j.get("name") == "imu_joint")
    assert "optenv" in imu.find("origin").get("xyz")  # a real xacro leftover: its default is used
    assert data.xpos[model.body("imu_link").id] == pytest.approx([0.19, 0.0, 0.149], abs=1e-9)


def test_package_uris_resolve_through_the_packages_map(tmp_path):
    import trimesh

    (tmp_path / "my_robot_description" / "meshes").mkdir(parents=True)
    trimesh.creation.box(extents=(0.4, 0.3, 0.2)).export(tmp_path / "my_robot_description" / "meshes" / "body.stl")
    collision = ('<collision><geometry><mesh filename="package://my_robot_description/meshes/body.stl"/>'
                 '</geometry></collision>')
    (tmp_path / "robot.urdf").write_text(urdf(LINK.format(name="base_link", mass=2, visual=collision)))
    with pytest.raises(InputError, match="my_robot_description"):
        load_description(tmp_path / "robot.urdf")
    packages = {"my_robot_description": tmp_path / "my_robot_description"}
    description = load_description(tmp_path / "robot.urdf", packages)
    assert np.allclose(description.upper, (0.2, 0.15, 0.1), atol=1e-6)


@pytest.mark.parametrize("drive, sideways", [("holonomic", 0.3), ("differential", 0.0)])
def test_a_ground_base_moves_sideways_only_when_holonomic(drive, sideways):
    """The rover on planar joints, commanded (vx, vy, wz) = (0.2, 0.3, 0) for 1 s: a holonomic base goes both
    ways, a differential one only forward, and its wheels turn by the distance over their radius."""
    from simulation.physics import build_world

    model = robot_model(RobotConfig(kind="custom", description=CONFIGS / "robots" / "rover.xml", drive=drive))
    world = build_world(model, imus=[])
    world.set_base_twist(np.array([0.2, 0.3, 0.0]))
    world.step(240)
    assert world.base_pose()[:3, 3] == pytest.approx([0.2, sideways, 0.08], abs=1e-9)
    joints = world.joint_states()
    assert joints["left_wheel"][0] == pytest.approx(0.2 / 0.08)
    assert joints["right_wheel"][0] == pytest.approx(0.2 / 0.08)

"""Two robots in one run (config `robots:`): a UAV and a TIAGo++ Omni in an empty procedural room drive at each
other along one line (their waypoints are each other's starts), each stopping for what its camera shows in its
way. Read back independently: both robots' namespaced topics at their rates in the ROS 1 bag (rosbags), one
/clock and one TF tree, both robots' states, each robot an instance of class `robot` in the other's camera and
never in its own, no contact between them although their paths cross, and the same seed gives the same bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from core.config import RobotConfig
from core.config_io import load_experiment
from core.formats.class_map import DEFAULT_CLASSES
from core.formats.placement import load_placement
from core.recording import Recording
from core.robot_catalogue import robot_body
from pipeline.generate import generate
from pipeline.prepare import prepare
from placement.robot_start import bounding_cylinder, robot_volume
from tests.conftest import CONFIGS

pytestmark = pytest.mark.slow

DURATION, BOOTSTRAP, PHYSICS_HZ = 4.5, 0.5, 240
UAV_ALTITUDE = 1.0  # m: the TIAGo's torso height, so that flying straight on would hit it
STOP_DISTANCE = 1.2  # m: beyond the braking distance of either robot at 1 m/s
BODY_CENTRE_HEIGHT = {"uav": 0.0, "tiago": 0.55}  # m above base_link: the UAV's frame centre, the TIAGo's torso
CAMERA = {"width": 48, "height": 36, "fov_deg": 90, "rate_hz": 30, "outputs": ["rgb", "depth", "instance"]}
BASE = [
    "seed=5", "robots.0.uav.max_speed=1.0", "environment.rooms=1", "environment.furniture={min: 0, max: 0}", "humans.count={min: 0, max: 0}",
    "flying_objects.count={min: 0, max: 0}", f"simulation.duration={DURATION}", f"simulation.bootstrap={BOOTSTRAP}",
    "recording.bag_formats=[ros1]",
    "robots.0.sensors.cameras.0={name: camera, mount: {link: camera_link, translation: [0.1, 0, 0]}, "
    + ", ".join(f"{k}: {json.dumps(v)}" for k, v in CAMERA.items()) + "}",
    "robots.1.sensors.cameras.0={name: head_camera, mount: {link: head_2_link, translation: [0.1, 0, 0.1]}, "
    + ", ".join(f"{k}: {json.dumps(v)}" for k, v in CAMERA.items()) + "}",
    "robots.0.sensors.imus=[{name: imu_body, mount: {link: base_link}}]",
    "robots.1.sensors.imus=[{name: imu_base, mount: {link: base_link}}]",
]


def config(run: Path, assets: Path, extra: list[str]):
    return load_experiment(CONFIGS / "multi-robot.yaml", [*BASE, *extra, f"assets_dir={assets}", f"output_dir={run}"])


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path, dict]:
    """The run and its repeat, and where the robots started."""
    root = tmp_path_factory.mktemp("multi")
    assets = root / "assets"
    # The starts depend on the seed only: place once without planners to aim each robot at the other's start.
    placed = prepare(config(root / "place", assets, ["robots.0.exploration.planner=none",
                                                     "robots.1.exploration.planner=none"]))
    starts = {s.name: s for s in load_placement(placed.placement).robot_starts}
    uav, tiago = starts["uav"], starts["tiago"]
    stop = f"stop_distance: {STOP_DISTANCE}"
    aim = [f"robots.0.exploration={{planner: waypoints, waypoints: [[{tiago.x}, {tiago.y}, {UAV_ALTITUDE}]], {stop}}}",
           f"robots.1.exploration={{planner: waypoints, waypoints: [[{uav.x}, {uav.y}, 0]], {stop}}}"]
    first, second = root / "run", root / "again"
    for folder in (first, second):
        generate(config(folder, assets, aim), folder)
    return first, second, starts


def test_both_robots_topics_at_their_rates_with_one_clock_and_one_tf_tree(runs):
    run, _, _ = runs
    (bag,) = sorted((run / "bags").glob("*.bag"))
    steps = round((DURATION + BOOTSTRAP) * PHYSICS_HZ)

    def samples(rate_hz: float) -> int:
        return steps // round(PHYSICS_HZ / rate_hz) + 1

    with AnyReader([bag]) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
        child_frames = set()
        tf = [c for c in reader.connections if c.topic == "/tf"]
        for connection, _, raw in reader.messages(connections=tf[:1]):
            message = reader.deserialize(raw, connection.msgtype)
            child_frames |= {(t.header.frame_id, t.child_frame_id) for t in message.transforms}
            break
    assert counts["/clock"] == samples(240) and counts["/tf"] == samples(120)
    assert not [t for t in counts if t.startswith("/camera") or t == "/odom"]  # nothing left un-namespaced
    for name, camera in (("uav", "camera"), ("tiago", "head_camera")):
        assert counts[f"/{name}/{camera}/rgb/image_raw"] == samples(30)
        assert counts[f"/{name}/{camera}/depth/image_raw"] == samples(30)
        assert counts[f"/{name}/odom"] == samples(60) and counts[f"/{name}/joint_states"] == samples(120)
        assert counts[f"/{name}/{camera}/pose"] == samples(60)
        assert ("world", f"{name}/base_link") in child_frames  # both robots in one TF tree
    assert counts["/uav/imu_body"] == counts["/tiago/imu_base"] == steps  # 240 Hz, stamped at each step's start


def test_both_states_and_no_contact_although_their_paths_cross(runs):
    run, _, starts = runs
    recording = Recording.open(run)
    assert recording.robots == ["uav", "tiago"]
    uav, tiago = recording.robot("uav").robot_path(), recording.robot("tiago").robot_path()
    assert len(uav.time) == len(tiago.time) == round((DURATION + BOOTSTRAP) * PHYSICS_HZ) + 1
    np.testing.assert_allclose(uav.position[0, :2], [starts["uav"].x, starts["uav"].y], atol=1e-9)
    np.testing.assert_allclose(tiago.position[0, :2], [starts["tiago"].x, starts["tiago"].y], atol=1e-9)
    # Each drove at the other along the line between their starts (their paths cross) and closed in ...
    start_gap = np.hypot(starts["uav"].x - starts["tiago"].x, starts["uav"].y - starts["tiago"].y)
    gaps = np.linalg.norm(uav.position[:, :2] - tiago.position[:, :2], axis=1)
    assert gaps.min() < start_gap - 2.0
    # ... but their bodies never met: the UAV flew within the TIAGo's height, so it is their horizontal distance
    # that must stay above the sum of their bounding cylinders' radii (flying straight on, they touch at ~0.3 m).
    _, tiago_height = bounding_cylinder(robot_volume(robot_body(RobotConfig(kind="tiago_omni"))))
    assert np.all((uav.position[:, 2] > 0) & (uav.position[:, 2] < tiago_height))
    radii = sum(bounding_cylinder(robot_volume(robot_body(RobotConfig(kind=kind))))[0] for kind in ("uav", "tiago_omni"))
    assert gaps.min() > radii


def test_each_robot_is_an_instance_of_class_robot_in_the_others_camera_only(runs):
    run, _, _ = runs
    recording = Recording.open(run)
    for me, camera, other in (("uav", "camera", "tiago"), ("tiago", "head_camera", "uav")):
        view = recording.robot(me).camera(camera)
        ids = {e.prim_path: i for i, e in view.instances.instances.items() if e.semantic_class == "robot"}
        assert set(ids) == {"/World/robots/uav", "/World/robots/tiago"}
        entry = view.instances.instances[ids[f"/World/robots/{other}"]]
        assert entry.semantic_class == "robot" and entry.semantic_id == DEFAULT_CLASSES["robot"]
        seen = [np.count_nonzero(frame.instance() == ids[f"/World/robots/{other}"]) for frame in view]
        assert not any(np.isin(frame.instance(), [ids[f"/World/robots/{me}"]]).any() for frame in view)
        # Where it is seen most, its pixels surround where its body centre projects (from the logged states).
        frame = view[int(np.argmax(seen))]
        assert seen[frame.index] > 0
        path = recording.robot(other).robot_path()
        centre = path.position[round(frame.time * PHYSICS_HZ)] + [0.0, 0.0, BODY_CENTRE_HEIGHT[other]]
        local = np.linalg.inv(frame.pose) @ np.append(centre, 1.0)
        u, v, _ = frame.K @ (local[:3] / local[2])
        rows, cols = np.nonzero(frame.instance() == ids[f"/World/robots/{other}"])
        assert cols.min() - 1 <= u <= cols.max() + 2 and rows.min() - 1 <= v <= rows.max() + 2


def test_same_seed_same_bytes(runs):
    first, second, _ = runs

    def hashes(root: Path) -> dict[str, str]:
        return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] in
                ("gt", "bags", "states.npz")}

    first_hashes = hashes(first)
    assert any(name.startswith("gt/tiago/") for name in first_hashes)
    assert first_hashes == hashes(second)

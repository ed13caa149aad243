"""Live ROS 1 (`grade generate --live ros1`, simulation.live): a real roscore per module on a free port with its own
ROS_HOME and log folder, GRADE's bridge under Debian's rospy, and the shipped example node (examples/ros1) driving
the robot in lockstep as a separate process. The robot must reach the node's waypoints (checked on the recorded
poses, not on what the node says), the same node and seed must give the same run byte for byte, `grade replay`
must repeat it without ROS, ROS 1's own `rostopic hz` must read the configured rates and `rosbag record` the same
messages as the run's bag.

Skips with the reason where ROS 1 (ros-core, python3-rospy) is not installed; fails instead under
GRADE_REQUIRE_ROS1=1 (CI, whose .ci/run installs it).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from rosbags.rosbag1 import Reader

from core.formats.bags import messages as m
from core.formats.commands import read_command_log
from core.formats.run_info import read_run_info
from core.recording import Recording
from simulation.live.commands import JOINT_TRAJECTORY, POSE_STAMPED, TWIST, Refused, Trajectory, check_joints, decode
from tests.conftest import CONFIGS, ROOT, assert_refused

pytestmark = pytest.mark.slow

REQUIRE_ROS1 = os.environ.get("GRADE_REQUIRE_ROS1", "") == "1"
SYSTEM_PYTHON = "/usr/bin/python3"
EXAMPLES = ROOT / "examples" / "ros1"
WAYPOINTS = ["0.5,0", "0.5,0.5", "0,0.5"]  # m, the start frame
REACHED_WITHIN = 0.2  # m
SMALL = ["humans.count={min: 0, max: 0}", "flying_objects.count={min: 0, max: 0}",
         "robot.sensors.cameras.0.width=64", "robot.sensors.cameras.0.height=48", "simulation.bootstrap=0.25",
         "recording.bag_formats=[ros1]", "exploration.planner=external"]
TIAGO = [*SMALL, "simulation.duration=6"]
UAV = [*SMALL, "simulation.duration=5"]


def _ros1_missing() -> str | None:
    if shutil.which("roscore") is None or shutil.which("rostopic") is None:
        return "ROS 1's roscore is not installed (on Debian: apt-get install ros-core python3-rospy)"
    if subprocess.run([SYSTEM_PYTHON, "-c", "import rospy"], capture_output=True, check=False).returncode != 0:
        return f"{SYSTEM_PYTHON} has no rospy (on Debian: apt-get install python3-rospy)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def master(tmp_path_factory) -> dict[str, str]:
    """A roscore of this module's own: the environment that reaches it."""
    missing = _ros1_missing()
    if missing:
        if REQUIRE_ROS1:
            pytest.fail(f"{missing}; GRADE_REQUIRE_ROS1=1 requires it", pytrace=False)
        pytest.skip(missing)
    from simulation.live.ros1 import check_master

    home = tmp_path_factory.mktemp("ros")
    port = _free_port()
    env = {**os.environ, "ROS_MASTER_URI": f"http://127.0.0.1:{port}", "ROS_HOME": str(home),
           "ROS_LOG_DIR": str(home / "log"), "ROS_HOSTNAME": "127.0.0.1", "PYTHONDONTWRITEBYTECODE": "1"}
    core = subprocess.Popen(["roscore", "-p", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    # The master is up once it answers: a daemon's start-up, bounded; nothing is timed.
    for _ in range(600):
        try:
            os.environ["ROS_MASTER_URI"], saved = env["ROS_MASTER_URI"], os.environ.get("ROS_MASTER_URI")
            check_master(env["ROS_MASTER_URI"])
            break
        except Exception:  # noqa: BLE001 - not up yet
            assert core.poll() is None, "roscore exited"
            time.sleep(0.1)
        finally:
            if saved is None:
                os.environ.pop("ROS_MASTER_URI", None)
            else:
                os.environ["ROS_MASTER_URI"] = saved
    else:
        pytest.fail("roscore did not answer")
    yield env
    os.killpg(core.pid, signal.SIGINT)
    core.wait(timeout=30)


def _generate(env: dict[str, str], config: str, out: Path, overrides: list[str]) -> subprocess.Popen:
    args = [sys.executable, "-m", "pipeline.cli", "generate", str(CONFIGS / config), "--out", str(out), "--live",
            "ros1"]
    for override in overrides:
        args += ["--set", override]
    return subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _node(env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen([SYSTEM_PYTHON, str(EXAMPLES / "waypoints_node.py"), *args], cwd=EXAMPLES, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def drive(env: dict[str, str], config: str, out: Path, overrides: list[str], node_args: list[str],
          asset_cache: Path) -> str:
    """Record `config` live while the waypoints node drives; the node's output."""
    grade = _generate(env, config, out, [*overrides, f"assets_dir={asset_cache}"])
    node = _node(env, *node_args)
    _, err = grade.communicate(timeout=600)
    assert grade.returncode == 0, err
    node_out, node_err = node.communicate(timeout=60)  # it stops on /grade/finished
    assert node.returncode == 0, node_err
    return node_out


def hashes(run: Path) -> dict[str, str]:
    return {p.relative_to(run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file()
            and p.relative_to(run).parts[0] in ("gt", "bags", "states.npz", "humans", "commands.json")}


def assert_reached(run: Path, waypoints: list[str]) -> None:
    """The recorded base passed within REACHED_WITHIN of every waypoint, in the start frame of its first pose."""
    path = Recording.open(run).robot_path()
    start = path.position[0]
    w, x, y, z = path.quat_wxyz[0]
    yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
    c, s = math.cos(yaw), math.sin(yaw)
    xy = path.position[:, :2]
    last = 0
    for text in waypoints:
        wx, wy = map(float, text.split(",")[:2])
        goal = start[:2] + (c * wx - s * wy, s * wx + c * wy)
        distance = np.linalg.norm(xy[last:] - goal, axis=1)
        assert distance.min() < REACHED_WITHIN, (text, distance.min())
        last += int(distance.argmin())


def test_commands_are_decoded_and_refused_by_rosbags():

    store = m.ros1_typestore()
    Twist, Vector3 = store.types[TWIST], store.types["geometry_msgs/msg/Vector3"]
    twist = Twist(linear=Vector3(x=0.3, y=-0.1, z=0.0), angular=Vector3(x=0.0, y=0.0, z=0.5))
    command = decode(TWIST, bytes(store.serialize_ros1(twist, TWIST)), store.deserialize_ros1)
    assert np.allclose(command.linear, [0.3, -0.1]) and command.yaw_rate == 0.5
    nan = Twist(linear=Vector3(x=float("nan"), y=0.0, z=0.0), angular=Vector3(x=0.0, y=0.0, z=0.0))
    with pytest.raises(Refused, match="linear is not finite"):
        decode(TWIST, bytes(store.serialize_ros1(nan, TWIST)), store.deserialize_ros1)
    with pytest.raises(Refused, match="malformed"):
        decode(POSE_STAMPED, b"\x01\x02", store.deserialize_ros1)
    trajectory = Trajectory([(0.0, "a"), (1.0, "b"), (2.0, "c")])
    assert [trajectory.at(t) for t in (0.0, 0.99, 1.0, 5.0)] == ["a", "a", "b", "c"]

    # Joint trajectories: positions per joint, times increasing; linear from where the joints were.
    Trajectory_ = store.types[JOINT_TRAJECTORY]
    Point, Duration = store.types["trajectory_msgs/msg/JointTrajectoryPoint"], store.types["builtin_interfaces/msg/Duration"]
    Header = store.types["std_msgs/msg/Header"]

    def joint_trajectory(names, points):
        message = Trajectory_(header=Header(seq=0, stamp=store.types["builtin_interfaces/msg/Time"](sec=0, nanosec=0),
                                            frame_id=""), joint_names=names,
                              points=[Point(positions=np.array(p, float), velocities=np.zeros(0),
                                            accelerations=np.zeros(0), effort=np.zeros(0),
                                            time_from_start=Duration(sec=int(t), nanosec=int(t % 1 * 1e9)))
                                      for t, p in points])
        return decode(JOINT_TRAJECTORY, bytes(store.serialize_ros1(message, JOINT_TRAJECTORY)),
                      store.deserialize_ros1)

    look = joint_trajectory(["head_1_joint", "head_2_joint"], [(1.0, [0.5, 0.0]), (2.0, [0.5, -0.5])])
    start = np.array([0.1, 0.2])
    assert np.allclose(look.at(0.0, start), start) and np.allclose(look.at(0.5, start), [0.3, 0.1])
    assert np.allclose(look.at(1.5, start), [0.5, -0.25]) and np.allclose(look.at(9.0, start), [0.5, -0.5])
    check_joints(look, ("head_1_joint", "head_2_joint"))
    with pytest.raises(Refused, match="head_2_joint not among this controller's joints"):
        check_joints(look, ("head_1_joint",))
    for names, points, reason in [([], [(1.0, [])], "names no joints"),
                                  (["a", "a"], [(1.0, [0, 0])], "lists a joint twice"),
                                  (["a"], [(1.0, [0, 0])], "point 0 has 2 positions for 1 joints"),
                                  (["a"], [(1.0, [float("inf")])], "point 0 positions is not finite"),
                                  (["a"], [(1.0, [0]), (1.0, [1])], "does not increase"),
                                  (["a"], [], "has no points")]:
        with pytest.raises(Refused, match=reason):
            joint_trajectory(names, points)


def test_tiago_follows_cmd_vel_in_lockstep_and_the_run_replays_without_ros(master, asset_cache, tmp_path):
    run = tmp_path / "tiago"
    env = {**master}
    # ROS 1's own tools beside the run: rostopic hz on simulated time, rosbag record of the live topics.
    subprocess.run(["rosparam", "set", "/use_sim_time", "true"], env=env, check=True, capture_output=True)
    hz = subprocess.Popen(["rostopic", "hz", "/odom"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, start_new_session=True)
    recorded = tmp_path / "live.bag"
    record = subprocess.Popen(["rosbag", "record", "-O", str(recorded), "/odom", "/clock"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        out = drive(env, "demo-tiago.yaml", run, TIAGO, ["--base", "ground", *WAYPOINTS], asset_cache)
    finally:
        os.killpg(hz.pid, signal.SIGINT)
        os.killpg(record.pid, signal.SIGINT)
        hz_out, _ = hz.communicate(timeout=30)
        record.wait(timeout=30)
        subprocess.run(["rosparam", "set", "/use_sim_time", "false"], env=env, check=False, capture_output=True)
    assert out.count("reached") == 3 and "done" in out, out
    assert_reached(run, WAYPOINTS)

    info = read_run_info(run)
    assert info.mission["planner"] == "external" and info.mission["reason"] == "time"
    assert info.live == {"pacing": "lockstep", "control_periods": math.floor(6.25 * 30) + 1}  # t = 0, 1/30 s, ...
    log = read_command_log(run)
    applied = [c for c in log.commands if c.status == "applied"]
    assert len(applied) == info.mission["commands_applied"] > 100
    assert all(c.topic == "/cmd_vel" and c.type == TWIST for c in applied)
    # Each took effect at the control period it answered (the 30 Hz grid), or when control began (the bootstrap's
    # end) for those sent before.
    times = np.array([c.time for c in applied])
    later = times[times > 0.25 + 1e-9]
    assert np.allclose(later * 30, np.round(later * 30)) and times.min() == pytest.approx(0.25)
    assert len(later) == math.floor((6.25 - 0.25) * 30) + 1 - 1  # one a period, but the last (after the end)

    # rostopic hz on simulated time reads the odometry's configured 60 Hz.
    rates = [float(r) for r in re.findall(r"average rate: ([0-9.]+)", hz_out)]
    assert rates and abs(rates[-1] - 60.0) / 60.0 < 0.02, hz_out
    # rosbag record got the run bag's own messages (those after it connected), byte for byte.
    run_bag = next((run / "bags").glob("*.bag"))
    with Reader(run_bag) as bag:
        ours = {(c.topic, t): data for c, t, data in bag.messages() if c.topic in ("/odom", "/clock")}
    with Reader(recorded) as bag:
        live = [(c.topic, data) for c, _, data in bag.messages()]
    odom = [data for topic, data in live if topic == "/odom"]
    assert len(odom) > 100
    # /clock as it came over ROS: strictly increasing simulated time.
    store = m.ros1_typestore()
    clock = [store.deserialize_ros1(data, m.CLOCK).clock for topic, data in live if topic == "/clock"]
    clock_ns = np.array([c.sec * 1_000_000_000 + c.nanosec for c in clock])
    assert len(clock_ns) > 100 and np.all(np.diff(clock_ns) > 0)
    assert set(odom) <= {data for (topic, _), data in ours.items() if topic == "/odom"}
    info_out = subprocess.run(["rosbag", "info", str(recorded)], env=env, capture_output=True, text=True,
                              check=True).stdout
    assert "nav_msgs/Odometry" in info_out and "rosgraph_msgs/Clock" in info_out

    # grade replay repeats the live run, with no ROS.
    replayed = tmp_path / "replayed"
    result = subprocess.run([sys.executable, "-m", "pipeline.cli", "replay", str(run), "--out", str(replayed)],
                            cwd=ROOT, env={k: v for k, v in os.environ.items() if not k.startswith("ROS")},
                            capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr
    original = {k: v for k, v in hashes(run).items() if k != "commands.json"}
    assert hashes(replayed) == original


def test_uav_flies_pose_setpoints_and_the_same_node_gives_the_same_run(master, asset_cache, tmp_path):
    waypoints = ["0.6,0", "0.6,0.6", "0,0.6"]
    runs = [tmp_path / "first", tmp_path / "second"]
    for run in runs:
        out = drive(master, "demo.yaml", run, UAV, ["--base", "flying", "--tolerance", "0.15", *waypoints],
                    asset_cache)
        assert out.count("reached") == 3, out
    assert_reached(runs[0], waypoints)
    log = read_command_log(runs[0])
    assert {c.topic for c in log.commands} == {"/command/pose"} and len(log.commands) == 3
    assert hashes(runs[0]) == hashes(runs[1])


def test_a_node_that_stops_answering_ends_the_run_cleanly(master, asset_cache, tmp_path):
    run = tmp_path / "run"
    grade = _generate(master, "demo.yaml", run, [*UAV, "live.timeout=2", f"assets_dir={asset_cache}"])
    node = _node(master, "--base", "flying", "0.6,0", "0.6,0.6")
    for line in node.stdout:  # killed once it has driven the UAV to its first waypoint
        if line.startswith("reached 0"):
            break
    node.kill()
    node.communicate(timeout=30)
    _, err = grade.communicate(timeout=600)
    assert grade.returncode == 0, err
    info = read_run_info(run)
    assert info.status == "complete" and info.mission["reason"] == "timeout"
    assert 0.25 < info.sim_time_end < 5.25
    assert read_command_log(run).timeouts == [pytest.approx(info.sim_time_end)]
    assert json.loads((run / "MANIFEST.json").read_text())["files"]
    assert Recording.open(run).robot_path().position.shape[0] > 1


def test_without_a_master_or_rospy_the_run_is_refused(master, tmp_path):
    env = {**master, "ROS_MASTER_URI": f"http://127.0.0.1:{_free_port()}"}
    grade = _generate(env, "demo.yaml", tmp_path / "no-master", UAV)
    _, err = grade.communicate(timeout=120)
    assert_refused(subprocess.CompletedProcess([], grade.returncode, "", err), "no ROS master", "roscore")
    grade = _generate(master, "demo.yaml", tmp_path / "no-rospy", [*UAV, f"live.ros_python={sys.executable}"])
    _, err = grade.communicate(timeout=120)
    assert_refused(subprocess.CompletedProcess([], grade.returncode, "", err), "cannot import rospy",
                   "live.ros_python")
    assert not (tmp_path / "no-master").exists() and not (tmp_path / "no-rospy").exists()


def test_uav_flies_a_trajectory_point_by_point(master, asset_cache, tmp_path):
    """One MultiDOFJointTrajectory (RotorS' convention) of three points 1 s apart: the UAV flies to each point from
    its time_from_start on (to the first at once)."""
    waypoints = ["0.6,0", "0.6,0.6", "0,0.6"]
    run = tmp_path / "run"
    out = drive(master, "demo.yaml", run, UAV, ["--base", "flying", "--tolerance", "0.15", "--trajectory", "1",
                                                  *waypoints], asset_cache)
    assert out.count("reached") == 3, out
    assert_reached(run, waypoints)
    [command] = read_command_log(run).commands
    assert (command.topic, command.status) == ("/command/trajectory", "applied")
    assert [point["t"] for point in command.values] == [1.0, 2.0, 3.0]
    # The second and third waypoints are reached only after their points' times have come.
    reached = [float(line.split()[4]) for line in out.splitlines() if line.startswith("reached")]
    assert reached[1] > command.time + 2.0 and reached[2] > command.time + 3.0, (command.time, reached)


def test_rviz_loads_the_shipped_config_and_subscribes_to_the_live_topics(master, tmp_path):
    """Debian's RViz, headless under Xvfb, opens examples/ros1/grade.rviz: every display subscribes to its topic
    (the UAV demo's camera `camera`, a LiDAR `lidar`, the humans) with the type GRADE publishes there."""
    from core.formats.bags.ros1_definitions import ros1_name
    from core.formats.bags.topics import TF, TF_STATIC, BagTopics
    from simulation.live.session import HUMANS

    topics = BagTopics("")
    expected = {TF: ros1_name(m.TF), TF_STATIC: ros1_name(m.TF), topics.rgb("camera"): ros1_name(m.IMAGE),
                topics.depth("camera"): ros1_name(m.IMAGE), topics.points("lidar"): ros1_name(m.POINT_CLOUD2),
                topics.odometry: ros1_name(m.ODOMETRY), HUMANS: ros1_name(m.POINT_CLOUD2)}
    missing = [tool for tool in ("rviz", "xvfb-run") if shutil.which(tool) is None]
    if missing:
        reason = f"{' and '.join(missing)} not installed (on Debian: apt-get install rviz xvfb xauth)"
        if REQUIRE_ROS1:
            pytest.fail(f"{reason}; GRADE_REQUIRE_ROS1=1 requires it", pytrace=False)
        pytest.skip(reason)
    rviz = subprocess.Popen(["xvfb-run", "-a", "rviz", "-d", str(EXAMPLES / "grade.rviz")], env=master,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    subscribed: dict[str, str] = {}
    try:
        for _ in range(1200):  # RViz's start-up, bounded; nothing is timed
            listing = subprocess.run(["rostopic", "list", "-v"], env=master, capture_output=True, text=True,
                                     check=False).stdout
            section = listing.partition("Subscribed topics:")[2]
            subscribed = dict(re.findall(r"\* (\S+) \[(\S+)\]", section))
            if set(expected) <= set(subscribed):
                break
            assert rviz.poll() is None, rviz.stderr.read()
            time.sleep(0.1)
    finally:
        os.killpg(rviz.pid, signal.SIGTERM)
        rviz.communicate(timeout=30)
    assert {topic: subscribed.get(topic) for topic in expected} == expected


# A rospy node commanding two robots of a multi-robot run, paced by the wall clock (no handshake): the TIAGo a
# constant twist on /tiago/cmd_vel at 20 Hz, the UAV once, on its first odometry, to a point 0.5 m ahead of where it
# starts (world x), on /uav/command/pose. It prints the UAV's goal and stops on /grade/finished.
TWO_ROBOTS_NODE = """
import rospy
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rosgraph_msgs.msg import Clock

rospy.init_node("two_robots")
drive = rospy.Publisher("/tiago/cmd_vel", Twist, queue_size=10)
fly = rospy.Publisher("/uav/command/pose", PoseStamped, queue_size=10)
sent = []

def on_uav(odom):
    if sent:
        return
    goal = PoseStamped()
    goal.header.frame_id = "world"
    goal.pose.position = odom.pose.pose.position
    goal.pose.position.x += 0.5
    goal.pose.orientation = odom.pose.pose.orientation
    while fly.get_num_connections() == 0 and not rospy.is_shutdown():
        rospy.sleep(0.01)
    fly.publish(goal)
    sent.append(goal)
    print("goal", goal.pose.position.x, goal.pose.position.y, goal.pose.position.z, flush=True)

rospy.Subscriber("/uav/odom", Odometry, on_uav)
rospy.Subscriber("/grade/finished", Clock, lambda _: rospy.signal_shutdown("finished"))
twist = Twist()
twist.linear.x = 0.3
rate = rospy.Rate(20)
while not rospy.is_shutdown():
    drive.publish(twist)
    rate.sleep()
"""


def test_realtime_pacing_routes_each_robots_commands_in_a_multi_robot_run(master, asset_cache, tmp_path):
    run = tmp_path / "run"
    small = [f"robots.{i}.sensors.cameras.0.{key}={value}" for i in (0, 1)
             for key, value in (("width", 64), ("height", 48))]
    overrides = ["humans.count={min: 0, max: 0}", "flying_objects.count={min: 0, max: 0}", *small,
                 "robots.0.exploration.planner=external", "robots.1.exploration.planner=external",
                 "simulation.bootstrap=0.25", "simulation.duration=5", "live.pacing=realtime",
                 "live.rate_factor=2", f"assets_dir={asset_cache}"]
    node = subprocess.Popen([SYSTEM_PYTHON, "-c", TWO_ROBOTS_NODE], env=master, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    grade = _generate(master, "multi-robot.yaml", run, overrides)
    _, err = grade.communicate(timeout=600)
    assert grade.returncode == 0, err
    node_out, node_err = node.communicate(timeout=60)
    assert node.returncode == 0, node_err
    goal = np.array([float(v) for v in node_out.split()[1:4]])

    log = read_command_log(run)
    assert (log.pacing, log.timeouts) == ("realtime", [])
    by_robot = {name: [c for c in log.commands if c.robot == name] for name in ("tiago", "uav")}
    assert {c.topic for c in by_robot["tiago"]} == {"/tiago/cmd_vel"} and len(by_robot["tiago"]) > 20
    assert [c.topic for c in by_robot["uav"]] == ["/uav/command/pose"]
    assert all(c.status == "applied" for c in log.commands)
    later = np.array([c.time for c in log.commands if c.time > 0.25 + 1e-9])
    assert np.allclose(later * 30, np.round(later * 30))  # each at a control period
    recording = Recording.open(run)
    tiago = recording.robot("tiago").robot_path().position
    assert np.linalg.norm(tiago[-1, :2] - tiago[0, :2]) > 0.5  # 0.3 m/s for most of 5 s
    uav = recording.robot("uav").robot_path().position
    assert np.linalg.norm(uav[-1] - goal) < 0.1, (uav[-1], goal)
    info = read_run_info(run)
    assert info.live["pacing"] == "realtime" and set(info.live["clock_jitter_ms"]) == {"mean", "p99", "max"}


# A rospy node sending the TIAGo's head and torso one trajectory each, once its publishers are connected (realtime
# pacing): the head pans to 0.5 rad in 1 s and then tilts beyond its range (-2 rad, cut to -60 deg); the torso
# lifts to 0.3 m in 1 s, faster than its 0.07 m/s allow.
JOINTS_NODE = """
import rospy
from rosgraph_msgs.msg import Clock
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

rospy.init_node("joints")
head = rospy.Publisher("/head_controller/command", JointTrajectory, queue_size=10)
torso = rospy.Publisher("/torso_controller/command", JointTrajectory, queue_size=10)
rospy.Subscriber("/grade/finished", Clock, lambda _: rospy.signal_shutdown("finished"))
while (head.get_num_connections() == 0 or torso.get_num_connections() == 0) and not rospy.is_shutdown():
    rospy.sleep(0.01)
look = JointTrajectory(joint_names=["head_1_joint", "head_2_joint"])
look.points = [JointTrajectoryPoint(positions=[0.5, 0.0], time_from_start=rospy.Duration(1.0)),
               JointTrajectoryPoint(positions=[0.5, -2.0], time_from_start=rospy.Duration(2.0))]
lift = JointTrajectory(joint_names=["torso_lift_joint"])
lift.points = [JointTrajectoryPoint(positions=[0.3], time_from_start=rospy.Duration(1.0))]
head.publish(look)
torso.publish(lift)
rospy.spin()
"""


def test_the_tiago_head_and_torso_follow_joint_trajectories(master, asset_cache, tmp_path):
    run = tmp_path / "run"
    node = subprocess.Popen([SYSTEM_PYTHON, "-c", JOINTS_NODE], env=master, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    grade = _generate(master, "demo-tiago.yaml", run, [*SMALL, "simulation.duration=4", "live.pacing=realtime",
                                                       "live.rate_factor=2", f"assets_dir={asset_cache}"])
    _, err = grade.communicate(timeout=600)
    assert grade.returncode == 0, err
    _, node_err = node.communicate(timeout=60)
    assert node.returncode == 0, node_err

    commands = {c.topic: c for c in read_command_log(run).commands}
    look, lift = commands["/head_controller/command"], commands["/torso_controller/command"]
    assert (look.status, look.clipped, lift.status) == ("clipped", ["points.1.head_2_joint"], "applied")
    tilt_min = math.radians(-60.0)
    assert look.values["points"][1]["positions"] == [0.5, pytest.approx(tilt_min)]
    # The joints as the ROS 1 bag's /joint_states has them, against the time since each trajectory took effect.
    with Reader(next((run / "bags").glob("*.bag"))) as bag:
    
        store = m.ros1_typestore()
        states = [store.deserialize_ros1(data, m.JOINT_STATE) for c, _, data in bag.messages()
                  if c.topic == "/joint_states"]
    times = np.array([s.header.stamp.sec + s.header.stamp.nanosec * 1e-9 for s in states])
    names = list(states[0].name)
    position = {name: np.array([s.position[names.index(name)] for s in states]) for name in
                ("head_1_joint", "head_2_joint", "torso_lift_joint")}

    def at(name: str, t: float) -> float:
        return float(np.interp(t, times, position[name]))

    period = 1.0 / 30.0  # targets change at control periods: within one period of the line
    t0 = look.time
    assert at("head_1_joint", t0) == pytest.approx(0.0, abs=1e-9)
    assert at("head_1_joint", t0 + 0.5) == pytest.approx(0.25, abs=0.5 * period + 1e-6)
    assert at("head_1_joint", t0 + 1.0 + period) == pytest.approx(0.5, abs=1e-9)
    assert at("head_2_joint", t0 + 1.0) == pytest.approx(0.0, abs=1e-9)
    assert position["head_2_joint"][-1] == pytest.approx(tilt_min, abs=1e-9)
    # The torso asked for 0.125 m in 1 s moves at its 0.07 m/s, from mid travel (0.175 m), and stops at 0.3 m.
    t0 = lift.time
    assert at("torso_lift_joint", t0 + 1.0) == pytest.approx(0.175 + 0.07, abs=0.07 * period)
    assert position["torso_lift_joint"][-1] == pytest.approx(0.3, abs=1e-9)

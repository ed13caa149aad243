"""Live ROS 1 (`grade generate --live ros1`, simulation.live): a real roscore per module on a free port with its own
ROS_HOME and log folder, GRADE's bridge under Debian's rospy, and the shipped example node (examples/ros1) driving
the robot in lockstep as a separate process. The robot must reach the node's waypoints (checked on the recorded
poses, not on what the node says), the same node and seed must give the same run byte for byte, `grade replay`
must repeat it without ROS, ROS 1's own `rostopic hz` must read the configured rates and `rosbag record` the same
messages as the run's bag.

Skips with the reason where ROS 1 (ros-core, python3-rospy) is not installed; fails instead under
GRADE_REQUIRE_ROS1=1 (CI, whose .ci/run installs it). Realtime pacing, multi-robot runs, joint trajectories and RViz
are in test_live_ros1_realtime.py, a module of its own so that the two run on two workers.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import signal
import subprocess
import sys
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
from tests.ros1_master import SYSTEM_PYTHON, free_port

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

EXAMPLES = ROOT / "examples" / "ros1"
WAYPOINTS = ["0.5,0", "0.5,0.5", "0,0.5"]  # m, the start frame
REACHED_WITHIN = 0.2  # m
SMALL = ["humans.count={min: 0, max: 0}", "flying_objects.count={min: 0, max: 0}",
         "robot.sensors.cameras.0.width=64", "robot.sensors.cameras.0.height=48", "simulation.bootstrap=0.25",
         "recording.bag_formats=[ros1]", "exploration.planner=external"]
TIAGO = [*SMALL, "simulation.duration=6"]
UAV = [*SMALL, "simulation.duration=5"]


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


def test_tiago_follows_cmd_vel_in_lockstep_and_the_run_replays_without_ros(roscore, asset_cache, tmp_path):
    run = tmp_path / "tiago"
    env = {**roscore}
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


def test_uav_flies_pose_setpoints_and_the_same_node_gives_the_same_run(roscore, asset_cache, tmp_path):
    waypoints = ["0.6,0", "0.6,0.6", "0,0.6"]
    runs = [tmp_path / "first", tmp_path / "second"]
    for run in runs:
        out = drive(roscore, "demo.yaml", run, UAV, ["--base", "flying", "--tolerance", "0.15", *waypoints],
                    asset_cache)
        assert out.count("reached") == 3, out
    assert_reached(runs[0], waypoints)
    log = read_command_log(runs[0])
    assert {c.topic for c in log.commands} == {"/command/pose"} and len(log.commands) == 3
    assert hashes(runs[0]) == hashes(runs[1])


def test_a_node_that_stops_answering_ends_the_run_cleanly(roscore, asset_cache, tmp_path):
    run = tmp_path / "run"
    grade = _generate(roscore, "demo.yaml", run, [*UAV, "live.timeout=2", f"assets_dir={asset_cache}"])
    node = _node(roscore, "--base", "flying", "0.6,0", "0.6,0.6")
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


def test_without_a_master_or_rospy_the_run_is_refused(roscore, tmp_path):
    env = {**roscore, "ROS_MASTER_URI": f"http://127.0.0.1:{free_port()}"}
    grade = _generate(env, "demo.yaml", tmp_path / "no-master", UAV)
    _, err = grade.communicate(timeout=120)
    assert_refused(subprocess.CompletedProcess([], grade.returncode, "", err), "no ROS master", "roscore")
    grade = _generate(roscore, "demo.yaml", tmp_path / "no-rospy", [*UAV, f"live.ros_python={sys.executable}"])
    _, err = grade.communicate(timeout=120)
    assert_refused(subprocess.CompletedProcess([], grade.returncode, "", err), "cannot import rospy",
                   "live.ros_python")
    assert not (tmp_path / "no-master").exists() and not (tmp_path / "no-rospy").exists()


def test_uav_flies_a_trajectory_point_by_point(roscore, asset_cache, tmp_path):
    """One MultiDOFJointTrajectory (RotorS' convention) of three points 1 s apart: the UAV flies to each point from
    its time_from_start on (to the first at once)."""
    waypoints = ["0.6,0", "0.6,0.6", "0,0.6"]
    run = tmp_path / "run"
    out = drive(roscore, "demo.yaml", run, UAV, ["--base", "flying", "--tolerance", "0.15", "--trajectory", "1",
                                                  *waypoints], asset_cache)
    assert out.count("reached") == 3, out
    assert_reached(run, waypoints)
    [command] = read_command_log(run).commands
    assert (command.topic, command.status) == ("/command/trajectory", "applied")
    assert [point["t"] for point in command.values] == [1.0, 2.0, 3.0]
    # The second and third waypoints are reached only after their points' times have come.
    reached = [float(line.split()[4]) for line in out.splitlines() if line.startswith("reached")]
    assert reached[1] > command.time + 2.0 and reached[2] > command.time + 3.0, (command.time, reached)

"""Live ROS 1 in realtime pacing and with ROS 1's tools (the module beside test_live_ros1.py, with a roscore of its
own, so that the two run on two workers): a multi-robot run takes each robot's commands from a rospy node, the
TIAGo's head and torso follow joint trajectories, and Debian's RViz opens the shipped config.

Skips with the reason where ROS 1 (ros-core, python3-rospy, rviz, xvfb) is not installed; fails instead under
GRADE_REQUIRE_ROS1=1 (CI, whose .ci/run installs them).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import subprocess
import time

import numpy as np
import pytest
from rosbags.rosbag1 import Reader

from core.formats.bags import messages as m
from core.formats.commands import read_command_log
from core.formats.run_info import read_run_info
from core.recording import Recording
from tests.ros1_master import SYSTEM_PYTHON, require
from tests.test_live_ros1 import EXAMPLES, SMALL, _generate

pytestmark = [pytest.mark.slow, pytest.mark.heavy]


def test_rviz_loads_the_shipped_config_and_subscribes_to_the_live_topics(roscore, tmp_path):
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
    require(f"{' and '.join(missing)} not installed (on Debian: apt-get install rviz xvfb xauth)" if missing else None)
    rviz = subprocess.Popen(["xvfb-run", "-a", "rviz", "-d", str(EXAMPLES / "grade.rviz")], env=roscore,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    subscribed: dict[str, str] = {}
    try:
        for _ in range(1200):  # RViz's start-up, bounded; nothing is timed
            listing = subprocess.run(["rostopic", "list", "-v"], env=roscore, capture_output=True, text=True,
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
    try:
        drive.publish(twist)
    except rospy.ROSException:  # /grade/finished shut the node down between the check and the publish
        if rospy.is_shutdown():
            break
        raise
    rate.sleep()
"""


def test_realtime_pacing_routes_each_robots_commands_in_a_multi_robot_run(roscore, asset_cache, tmp_path):
    run = tmp_path / "run"
    small = [f"robots.{i}.sensors.cameras.0.{key}={value}" for i in (0, 1)
             for key, value in (("width", 64), ("height", 48))]
    overrides = ["humans.count={min: 0, max: 0}", "flying_objects.count={min: 0, max: 0}", *small,
                 "robots.0.exploration.planner=external", "robots.1.exploration.planner=external",
                 "simulation.bootstrap=0.25", "simulation.duration=5", "live.pacing=realtime",
                 "live.rate_factor=2", f"assets_dir={asset_cache}"]
    node = subprocess.Popen([SYSTEM_PYTHON, "-c", TWO_ROBOTS_NODE], env=roscore, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    grade = _generate(roscore, "multi-robot.yaml", run, overrides)
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


def test_the_tiago_head_and_torso_follow_joint_trajectories(roscore, asset_cache, tmp_path):
    run = tmp_path / "run"
    node = subprocess.Popen([SYSTEM_PYTHON, "-c", JOINTS_NODE], env=roscore, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    grade = _generate(roscore, "demo-tiago.yaml", run, [*SMALL, "simulation.duration=4", "live.pacing=realtime",
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

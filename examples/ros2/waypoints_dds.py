#!/usr/bin/env python3
"""Drive a GRADE robot through waypoints over ROS 2's DDS, in lockstep, without a ROS 2 install
(docs/guides/live-ros.md). A ROS 2 node does the same with rclpy; this one speaks DDS directly with Eclipse Cyclone
DDS's Python binding (`pip install cyclonedds`, GRADE's `live` extra), with the message types written out below
from ROS 2's IDL, so it also shows what goes over the wire:

    grade generate configs/demo-tiago.yaml --live ros2 --set exploration.planner=external &
    python examples/ros2/waypoints_dds.py --base ground 0.5,0 0.5,0.5 0,0.5

The handshake, as on ROS 1 but for the count: GRADE publishes the time t it waits at on the latched
rt/grade/step_request (rosgraph_msgs/Clock); the node answers on rt/grade/step_done (std_msgs/Header) with
stamp = t and frame_id = how many command messages it has published in all, in decimal (ROS 2's Header has no
seq). A ground base gets a P-controlled twist on <ns>/cmd_vel, a flying base each waypoint once on
<ns>/command/pose. The waypoints and what the node prints: examples/waypoints.py. It exits when GRADE publishes its
end time on rt/grade/finished.
"""

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from cyclonedds.core import InstanceState, ReadCondition, SampleState, ViewState, WaitSet
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import array, float64, int32, uint32
from cyclonedds.pub import DataWriter
from cyclonedds.qos import Policy, Qos
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from waypoints import Course, namespace, parser, yaw_of

CONNECT_TIMEOUT_S = 60.0


# ROS 2's types as its DDS RMWs name them (package::msg::dds_::Name_), fields in the .msg files' order.
@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32 = 0
    nanosec: uint32 = 0


@dataclass
class Clock_(IdlStruct, typename="rosgraph_msgs::msg::dds_::Clock_"):
    clock: Time_ = field(default_factory=Time_)


@dataclass
class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time_ = field(default_factory=Time_)
    frame_id: str = ""


@dataclass
class Vector3_(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Point_(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@dataclass
class Quaternion_(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0
    w: float64 = 1.0


@dataclass
class Pose_(IdlStruct, typename="geometry_msgs::msg::dds_::Pose_"):
    position: Point_ = field(default_factory=Point_)
    orientation: Quaternion_ = field(default_factory=Quaternion_)


@dataclass
class PoseStamped_(IdlStruct, typename="geometry_msgs::msg::dds_::PoseStamped_"):
    header: Header_ = field(default_factory=Header_)
    pose: Pose_ = field(default_factory=Pose_)


@dataclass
class Twist_(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    linear: Vector3_ = field(default_factory=Vector3_)
    angular: Vector3_ = field(default_factory=Vector3_)


@dataclass
class PoseWithCovariance_(IdlStruct, typename="geometry_msgs::msg::dds_::PoseWithCovariance_"):
    pose: Pose_ = field(default_factory=Pose_)
    covariance: array[float64, 36] = field(default_factory=lambda: [0.0] * 36)


@dataclass
class TwistWithCovariance_(IdlStruct, typename="geometry_msgs::msg::dds_::TwistWithCovariance_"):
    twist: Twist_ = field(default_factory=Twist_)
    covariance: array[float64, 36] = field(default_factory=lambda: [0.0] * 36)


@dataclass
class Odometry_(IdlStruct, typename="nav_msgs::msg::dds_::Odometry_"):
    header: Header_ = field(default_factory=Header_)
    child_frame_id: str = ""
    pose: PoseWithCovariance_ = field(default_factory=PoseWithCovariance_)
    twist: TwistWithCovariance_ = field(default_factory=TwistWithCovariance_)


def qos(latched=False):
    """rclcpp's default QoS, or tf2/latched topics' (transient local, keep last 1); XCDR1, as rmw_cyclonedds."""
    return Qos(Policy.Reliability.Reliable(duration(milliseconds=100)),
               Policy.Durability.TransientLocal if latched else Policy.Durability.Volatile,
               Policy.History.KeepLast(1 if latched else 10), Policy.DataRepresentation(use_cdrv0_representation=True))


def stamp(t):
    return (t.sec, t.nanosec)


class Waypoints:
    def __init__(self, args, participant):
        self.args = args
        self.course = Course(args.waypoints, args.tolerance)
        self.sent_goal = None
        self.sent = 0  # command messages published in all: every answer says it
        ns = namespace(args.namespace)

        def topic(name, kind):  # ROS 2's DDS topic of ROS topic /a/b is rt/a/b
            return Topic(participant, "rt" + name, kind)

        self.requests = DataReader(participant, topic("/grade/step_request", Clock_), qos=qos(latched=True))
        self.finished = DataReader(participant, topic("/grade/finished", Clock_), qos=qos(latched=True))
        self.odometry = DataReader(participant, topic(ns + "/odom", Odometry_), qos=qos())
        self.answers = DataWriter(participant, topic("/grade/step_done", Header_), qos=qos())
        if args.base == "ground":
            self.command = DataWriter(participant, topic(ns + "/cmd_vel", Twist_), qos=qos())
        else:
            self.command = DataWriter(participant, topic(ns + "/command/pose", PoseStamped_), qos=qos())
        self.waitset = WaitSet(participant)
        any_sample = SampleState.Any | ViewState.Any | InstanceState.Any
        for reader in (self.requests, self.finished, self.odometry):
            self.waitset.attach(ReadCondition(reader, any_sample))
        self.odom = None
        self.answered = None

    def connected(self):
        """GRADE reads our answers and commands, and we read its odometry: before that, messages would be lost."""
        return (self.answers.get_publication_matched_status().current_count > 0
                and self.command.get_publication_matched_status().current_count > 0
                and self.odometry.get_subscription_matched_status().current_count > 0)

    def run(self):
        request = None
        while True:
            self.waitset.wait(duration(milliseconds=100))
            if any(s.sample_info.valid_data for s in self.finished.take(N=10)):
                return
            for sample in self.odometry.take(N=100):
                if sample.sample_info.valid_data:
                    self.odom = sample
            for sample in self.requests.take(N=10):
                if sample.sample_info.valid_data and stamp(sample.clock) != self.answered:
                    request = sample.clock
            if request is None:
                continue
            if self.answered is None:
                # The first request: what GRADE published before we connected is lost, so it is answered without
                # commands once every topic is connected; from the next one on nothing is missed.
                start = time.monotonic()
                while not self.connected() and time.monotonic() - start < CONNECT_TIMEOUT_S:
                    time.sleep(0.01)
            elif self.odom is None or stamp(self.odom.header.stamp) < stamp(request):
                continue  # wait for the odometry of time t: the node acts on the same data every run
            else:
                self.on_step(request)
            self.answers.write(Header_(stamp=request, frame_id=str(self.sent)))
            self.answered, request = stamp(request), None

    def on_step(self, t):
        p = self.odom.pose.pose.position
        yaw = yaw_of(self.odom.pose.pose.orientation)
        self.course.update(p, yaw, t.sec + t.nanosec * 1e-9)
        if self.args.base == "ground":
            twist = Twist_()
            twist.linear.x, twist.linear.y = self.course.twist(p, yaw)
            self.command.write(twist)
            self.sent += 1
        elif self.course.goal != self.sent_goal:
            goal = self.course.goal
            pose = PoseStamped_(header=Header_(frame_id="world"))
            pose.pose.position = Point_(*goal)
            pose.pose.orientation = Quaternion_(0.0, 0.0, *self.course.orientation())
            self.command.write(pose)
            self.sent += 1
            self.sent_goal = goal


def main():
    args = parser(__doc__.split("\n")[0]).parse_args()
    domain = int(os.environ.get("ROS_DOMAIN_ID", "0") or 0)
    Waypoints(args, DomainParticipant(domain)).run()


if __name__ == "__main__":
    sys.exit(main())

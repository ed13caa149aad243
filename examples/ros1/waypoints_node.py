#!/usr/bin/env python3
"""Drive a GRADE robot through waypoints from ROS 1, in lockstep (docs/guides/live-ros.md).

    grade generate configs/demo-tiago.yaml --live ros1 --set exploration.planner=external &
    python3 examples/ros1/waypoints_node.py --base ground 0.5,0 0.5,0.5 0,0.5

Waypoints are x,y (m) in the robot's start frame (x forward, y left; a UAV keeps its start altitude, or give
x,y,z). A ground base gets a P-controlled twist on <ns>/cmd_vel; a flying base gets each waypoint once on
<ns>/command/pose (its own position controller flies there) or, with --trajectory T, all of them at once as one
trajectory on <ns>/command/trajectory, waypoint i due (i + 1) * T s after it takes effect. A waypoint counts as reached within --tolerance m;
the node prints `reached i x y t` per waypoint (simulation time) and `done` after the last.
"""

import argparse
import math
import sys

import rospy
from geometry_msgs.msg import PoseStamped, Transform, Twist
from grade_lockstep import Lockstep
from nav_msgs.msg import Odometry
from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

GAIN = 1.2  # 1/s: speed per metre to go
MAX_SPEED = 0.4  # m/s


def yaw_of(q):
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


class Waypoints:
    def __init__(self, args):
        self.args = args
        self.goals, self.index, self.start = None, 0, None
        ns = "/" + args.namespace.strip("/") if args.namespace.strip("/") else ""
        self.odom_topic = ns + "/odom"
        self.lockstep = Lockstep(self.on_step, observe=[(self.odom_topic, Odometry)])
        if args.base == "ground":
            self.command = self.lockstep.publisher(ns + "/cmd_vel", Twist)
        elif args.trajectory:
            self.command = self.lockstep.publisher(ns + "/command/trajectory", MultiDOFJointTrajectory)
        else:
            self.command = self.lockstep.publisher(ns + "/command/pose", PoseStamped)
        self.sent_goal = None

    def on_step(self, t):
        odom = self.lockstep.latest[self.odom_topic]
        p = odom.pose.pose.position
        yaw = yaw_of(odom.pose.pose.orientation)
        if self.goals is None:  # the start frame: waypoints relative to where the robot begins
            c, s = math.cos(yaw), math.sin(yaw)
            self.goals = [(p.x + c * w[0] - s * w[1], p.y + s * w[0] + c * w[1], w[2] if len(w) > 2 else p.z)
                          for w in self.args.waypoints]
            self.heading = yaw
        if self.index < len(self.goals):
            gx, gy, _ = self.goals[self.index]
            if math.hypot(gx - p.x, gy - p.y) < self.args.tolerance:
                print(f"reached {self.index} {p.x:.3f} {p.y:.3f} {t.to_sec():.4f}", flush=True)
                self.index += 1
                if self.index == len(self.goals):
                    print("done", flush=True)
        if self.args.base == "ground":
            self.drive(p, yaw)
        elif self.args.trajectory:
            self.fly_trajectory()
        else:
            self.fly()

    def drive(self, p, yaw):
        twist = Twist()
        if self.index < len(self.goals):
            gx, gy, _ = self.goals[self.index]
            vx, vy = GAIN * (gx - p.x), GAIN * (gy - p.y)
            speed = math.hypot(vx, vy)
            if speed > MAX_SPEED:
                vx, vy = vx * MAX_SPEED / speed, vy * MAX_SPEED / speed
            c, s = math.cos(yaw), math.sin(yaw)
            twist.linear.x, twist.linear.y = c * vx + s * vy, -s * vx + c * vy
        self.lockstep.publish(self.command, twist)

    def fly_trajectory(self):
        if self.sent_goal is not None:
            return
        trajectory = MultiDOFJointTrajectory()
        trajectory.header.frame_id = "world"
        for i, (x, y, z) in enumerate(self.goals):
            transform = Transform()
            transform.translation.x, transform.translation.y, transform.translation.z = x, y, z
            transform.rotation.z, transform.rotation.w = math.sin(self.heading / 2), math.cos(self.heading / 2)
            point = MultiDOFJointTrajectoryPoint(transforms=[transform])
            point.time_from_start = rospy.Duration.from_sec((i + 1) * self.args.trajectory)
            trajectory.points.append(point)
        self.lockstep.publish(self.command, trajectory)
        self.sent_goal = self.goals

    def fly(self):
        goal = self.goals[min(self.index, len(self.goals) - 1)]
        if goal == self.sent_goal:
            return
        pose = PoseStamped()
        pose.header.frame_id = "world"
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = goal
        pose.pose.orientation.z, pose.pose.orientation.w = math.sin(self.heading / 2), math.cos(self.heading / 2)
        self.lockstep.publish(self.command, pose)
        self.sent_goal = goal


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("waypoints", nargs="+", type=lambda text: [float(v) for v in text.split(",")],
                        help="x,y or x,y,z in the start frame (m)")
    parser.add_argument("--base", choices=("ground", "flying"), default="ground")
    parser.add_argument("--namespace", default="", help="the run's recording.namespace")
    parser.add_argument("--tolerance", type=float, default=0.1, help="m")
    parser.add_argument("--trajectory", type=float, default=0.0, metavar="T",
                        help="flying base: send the waypoints as one trajectory, one every T s")
    args = parser.parse_args(rospy.myargv(sys.argv)[1:])
    rospy.init_node("grade_waypoints")
    Waypoints(args)
    rospy.spin()


if __name__ == "__main__":
    main()

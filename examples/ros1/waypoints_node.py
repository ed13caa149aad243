#!/usr/bin/env python3
"""Drive a GRADE robot through waypoints from ROS 1, in lockstep (docs/guides/live-ros.md).

    grade generate configs/demo-tiago.yaml --live ros1 --set exploration.planner=external &
    python3 examples/ros1/waypoints_node.py --base ground 0.5,0 0.5,0.5 0,0.5

A ground base gets a P-controlled twist on <ns>/cmd_vel; a flying base gets each waypoint once on
<ns>/command/pose (its own position controller flies there) or, with --trajectory T, all of them at once as one
trajectory on <ns>/command/trajectory, waypoint i due (i + 1) * T s after it takes effect. The waypoints and
what the node prints: examples/waypoints.py.
"""

import sys
from pathlib import Path

import rospy
from geometry_msgs.msg import PoseStamped, Transform, Twist
from grade_lockstep import Lockstep
from nav_msgs.msg import Odometry
from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from waypoints import Course, namespace, parser, yaw_of


class Waypoints:
    def __init__(self, args):
        self.args = args
        self.course = Course(args.waypoints, args.tolerance)
        ns = namespace(args.namespace)
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
        self.course.update(p, yaw, t.to_sec())
        if self.args.base == "ground":
            twist = Twist()
            twist.linear.x, twist.linear.y = self.course.twist(p, yaw)
            self.lockstep.publish(self.command, twist)
        elif self.args.trajectory:
            self.fly_trajectory()
        else:
            self.fly()

    def fly_trajectory(self):
        if self.sent_goal is not None:
            return
        trajectory = MultiDOFJointTrajectory()
        trajectory.header.frame_id = "world"
        for i, (x, y, z) in enumerate(self.course.goals):
            transform = Transform()
            transform.translation.x, transform.translation.y, transform.translation.z = x, y, z
            transform.rotation.z, transform.rotation.w = self.course.orientation()
            point = MultiDOFJointTrajectoryPoint(transforms=[transform])
            point.time_from_start = rospy.Duration.from_sec((i + 1) * self.args.trajectory)
            trajectory.points.append(point)
        self.lockstep.publish(self.command, trajectory)
        self.sent_goal = self.course.goals

    def fly(self):
        goal = self.course.goal
        if goal == self.sent_goal:
            return
        pose = PoseStamped()
        pose.header.frame_id = "world"
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = goal
        pose.pose.orientation.z, pose.pose.orientation.w = self.course.orientation()
        self.lockstep.publish(self.command, pose)
        self.sent_goal = goal


def main():
    arguments = parser(__doc__.split("\n")[0])
    arguments.add_argument("--trajectory", type=float, default=0.0, metavar="T",
                           help="flying base: send the waypoints as one trajectory, one every T s")
    args = arguments.parse_args(rospy.myargv(sys.argv)[1:])
    rospy.init_node("grade_waypoints")
    Waypoints(args)
    rospy.spin()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Pace a GRADE run in lockstep without commanding it (docs/guides/live-ros.md): every control period is answered
as soon as the odometry stamped with it has arrived. Put your own processing (a SLAM node's step) in `on_step` to
make the simulation wait for it.

    python3 examples/ros1/pace_node.py [--namespace NS]
"""

import argparse
import sys

import rospy
from grade_lockstep import Lockstep
from nav_msgs.msg import Odometry


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--namespace", default="", help="the run's recording.namespace")
    args = parser.parse_args(rospy.myargv(sys.argv)[1:])
    ns = "/" + args.namespace.strip("/") if args.namespace.strip("/") else ""
    rospy.init_node("grade_pace")
    Lockstep(lambda t: None, observe=[(ns + "/odom", Odometry)])
    rospy.spin()


if __name__ == "__main__":
    main()

"""Following waypoints, with no middleware: what examples/ros1/waypoints_node.py and examples/ros2/waypoints_dds.py
share (plain Python 3.8+, so that it runs under ROS 1's own Python too).

Waypoints are x,y or x,y,z (m) in the robot's start frame (x forward, y left); a waypoint without z keeps the
start altitude. A waypoint counts as reached within `tolerance` m; `update` prints `reached i x y t` per waypoint
(simulation time) and `done` after the last.
"""

import argparse
import math

GAIN = 1.2  # 1/s: speed per metre to go
MAX_SPEED = 0.4  # m/s


def parser(description):
    """The command line both nodes take."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("waypoints", nargs="+", type=lambda text: [float(v) for v in text.split(",")],
                        help="x,y or x,y,z in the start frame (m)")
    parser.add_argument("--base", choices=("ground", "flying"), default="ground")
    parser.add_argument("--namespace", default="", help="the run's recording.namespace")
    parser.add_argument("--tolerance", type=float, default=0.1, help="m")
    return parser


def namespace(text):
    """The topic prefix of a recording.namespace: "" or "/ns"."""
    return "/" + text.strip("/") if text.strip("/") else ""


def yaw_of(q):
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


class Course:
    def __init__(self, waypoints, tolerance):
        self.waypoints, self.tolerance = waypoints, tolerance
        self.goals, self.index, self.heading = None, 0, 0.0

    def update(self, p, yaw, t):
        """The robot is at point `p` (x, y, z attributes) with `yaw` at `t` s: fix the goals in its start frame at
        the first call, and move on past a waypoint reached."""
        if self.goals is None:
            c, s = math.cos(yaw), math.sin(yaw)
            self.goals = [(p.x + c * w[0] - s * w[1], p.y + s * w[0] + c * w[1], w[2] if len(w) > 2 else p.z)
                          for w in self.waypoints]
            self.heading = yaw
        if self.index < len(self.goals):
            gx, gy, _ = self.goals[self.index]
            if math.hypot(gx - p.x, gy - p.y) < self.tolerance:
                print(f"reached {self.index} {p.x:.3f} {p.y:.3f} {t:.4f}", flush=True)
                self.index += 1
                if self.index == len(self.goals):
                    print("done", flush=True)

    @property
    def goal(self):
        """The waypoint to go to (the last once every one is reached)."""
        return self.goals[min(self.index, len(self.goals) - 1)]

    def twist(self, p, yaw):
        """(vx, vy) in the base frame towards the current waypoint, P-controlled and capped; zero once done."""
        if self.index >= len(self.goals):
            return 0.0, 0.0
        gx, gy, _ = self.goals[self.index]
        vx, vy = GAIN * (gx - p.x), GAIN * (gy - p.y)
        speed = math.hypot(vx, vy)
        if speed > MAX_SPEED:
            vx, vy = vx * MAX_SPEED / speed, vy * MAX_SPEED / speed
        c, s = math.cos(yaw), math.sin(yaw)
        return c * vx + s * vy, -s * vx + c * vy

    def orientation(self):
        """(z, w) of the start heading's quaternion: the UAV keeps it."""
        return math.sin(self.heading / 2), math.cos(self.heading / 2)

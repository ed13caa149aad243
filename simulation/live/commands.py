"""The commands a live run takes (ROS conventions), decoded from the bytes the node received (with rosbags' ROS 1 or
ROS 2 deserialiser: the node's), and refused when they cannot be applied:

    ground base   <ns>/cmd_vel               geometry_msgs/Twist: linear.x, linear.y (m/s), angular.z (rad/s),
                                             base frame; holds until the next one
    flying base   <ns>/command/pose          geometry_msgs/PoseStamped in `world`: fly to the position, turn to
                                             the yaw
                  <ns>/command/trajectory    trajectory_msgs/MultiDOFJointTrajectory (RotorS' convention): each
                                             point's first transform (world) and velocity (fed forward) becomes the
                                             position controller's target at its time_from_start after the command
                                             takes effect (no interpolation between points)
    joints        <ns>/<controller>/command  trajectory_msgs/JointTrajectory, for each of the robot's ros_control
                                             controllers (the TIAGo's head_controller: head_1_joint, head_2_joint;
                                             torso_controller: torso_lift_joint): positions, interpolated linearly
                                             from where the joints are when it takes effect to each point at its
                                             time_from_start; a new trajectory replaces the last, joints it does
                                             not name hold
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.formats.bags.topics import WORLD_FRAME, BagTopics
from core.robot_catalogue import RobotBody

TWIST = "geometry_msgs/msg/Twist"
POSE_STAMPED = "geometry_msgs/msg/PoseStamped"
MULTI_DOF_TRAJECTORY = "trajectory_msgs/msg/MultiDOFJointTrajectory"
JOINT_TRAJECTORY = "trajectory_msgs/msg/JointTrajectory"


class Refused(ValueError):
    """A command that cannot be applied; its message says why."""


@dataclass(frozen=True)
class Twist:
    linear: np.ndarray  # vx, vy (m/s, base frame)
    yaw_rate: float  # rad/s

    def values(self) -> dict:
        return {"vx": float(self.linear[0]), "vy": float(self.linear[1]), "wz": self.yaw_rate}


@dataclass(frozen=True)
class Target:
    position: np.ndarray  # x, y, z (m, world)
    yaw: float  # rad
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))  # fed forward, m/s (world)

    def values(self) -> dict:
        x, y, z = (float(v) for v in self.position)
        vx, vy, vz = (float(v) for v in self.velocity)
        return {"x": x, "y": y, "z": z, "yaw": self.yaw, "vx": vx, "vy": vy, "vz": vz}


@dataclass(frozen=True)
class Trajectory:
    points: list[tuple[float, Target]]  # (s after the command takes effect, target), in time order

    def values(self) -> list[dict]:
        return [{"t": t, **target.values()} for t, target in self.points]

    def at(self, elapsed: float) -> Target:
        """The point to fly for `elapsed` s after the command took effect: the last one whose time has come."""
        current = self.points[0][1]
        for t, target in self.points:
            if t > elapsed + 1e-9:
                break
            current = target
        return current


@dataclass(frozen=True)
class JointTrajectory:
    joints: tuple[str, ...]
    points: list[tuple[float, np.ndarray]]  # (s after the command takes effect, a position per joint), in time order

    def values(self) -> dict:
        return {"joints": list(self.joints),
                "points": [{"t": t, "positions": [float(p) for p in positions]} for t, positions in self.points]}

    def at(self, elapsed: float, start: np.ndarray) -> np.ndarray:
        """The positions `elapsed` s after the command took effect, the joints having been at `start` then."""
        times = np.array([0.0] + [t for t, _ in self.points])
        positions = np.stack([start] + [p for _, p in self.points])
        if elapsed >= times[-1]:
            return positions[-1]
        after = int(np.searchsorted(times, elapsed, side="right"))  # the first point still ahead
        t0, t1 = times[after - 1], times[after]
        share = (elapsed - t0) / (t1 - t0)  # t1 > t0: times[after] > elapsed >= times[after - 1]
        return positions[after - 1] + share * (positions[after] - positions[after - 1])


Command = Twist | Target | Trajectory | JointTrajectory


def command_topics(topics: BagTopics, body: RobotBody) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The command topics of one robot (under its namespace): their types and, for a joint controller's, its
    joints."""
    if body.flies:
        routes = {topics.topic("command", "pose"): (POSE_STAMPED, ()),
                  topics.topic("command", "trajectory"): (MULTI_DOF_TRAJECTORY, ())}
    else:
        routes = {topics.topic("cmd_vel"): (TWIST, ())}
    for controller, joints in body.joint_controllers:
        routes[topics.topic(controller, "command")] = (JOINT_TRAJECTORY, joints)
    return routes


def _finite(values: list[float], what: str) -> np.ndarray:
    array = np.array(values, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise Refused(f"{what} is not finite ({', '.join(f'{v:g}' for v in array)})")
    return array


def _yaw(q: object, what: str) -> float:
    x, y, z, w = _finite([q.x, q.y, q.z, q.w], what)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if norm < 1e-6:
        raise Refused(f"{what} is the zero quaternion")
    x, y, z, w = x / norm, y / norm, z / norm, w / norm
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _world_frame(frame_id: str, what: str) -> None:
    if frame_id not in ("", WORLD_FRAME):
        raise Refused(f"{what} is in frame {frame_id!r}; give it in {WORLD_FRAME!r}")


def decode(msgtype: str, data: bytes, deserialize: Callable[[bytes, str], Any]) -> Command:
    """The command in `data` of `msgtype` (read with the node's `deserialize`); Refused when it cannot be
    applied."""
    try:
        message = deserialize(data, msgtype)
    except Exception as exc:  # noqa: BLE001 - rosbags raises several types on malformed bytes
        raise Refused(f"malformed {msgtype} ({exc})") from None
    if msgtype == TWIST:  # every field finite, the unused ones too: a NaN anywhere means the sender is broken
        linear = _finite([message.linear.x, message.linear.y, message.linear.z], "linear")[:2]
        return Twist(linear, float(_finite([message.angular.x, message.angular.y, message.angular.z], "angular")[2]))
    if msgtype == POSE_STAMPED:
        _world_frame(message.header.frame_id, "the pose")
        p = message.pose.position
        return Target(_finite([p.x, p.y, p.z], "pose.position"), _yaw(message.pose.orientation, "pose.orientation"))
    if msgtype == MULTI_DOF_TRAJECTORY:
        _world_frame(message.header.frame_id, "the trajectory")
        points = []
        for index, point in enumerate(message.points):
            if not point.transforms:
                raise Refused(f"point {index} has no transform")
            transform = point.transforms[0]
            t = transform.translation
            velocity = point.velocities[0].linear if point.velocities else None
            feed = np.zeros(3) if velocity is None else _finite([velocity.x, velocity.y, velocity.z],
                                                                 f"point {index} velocity")
            at = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
            points.append((at, Target(_finite([t.x, t.y, t.z], f"point {index} translation"),
                                      _yaw(transform.rotation, f"point {index} rotation"), feed)))
        if not points:
            raise Refused("the trajectory has no points")
        if any(b[0] < a[0] for a, b in itertools.pairwise(points)):
            raise Refused("the points' time_from_start goes backwards")
        return Trajectory(points)
    if msgtype == JOINT_TRAJECTORY:
        return _joint_trajectory(message)
    raise Refused(f"{msgtype} is not a command type")


def _joint_trajectory(message: object) -> JointTrajectory:
    names = tuple(message.joint_names)
    if not names:
        raise Refused("the trajectory names no joints")
    if len(set(names)) != len(names):
        raise Refused(f"joint_names lists a joint twice ({', '.join(names)})")
    points = []
    for index, point in enumerate(message.points):
        if len(point.positions) != len(names):
            raise Refused(f"point {index} has {len(point.positions)} positions for {len(names)} joints")
        at = point.time_from_start.sec + point.time_from_start.nanosec * 1e-9
        points.append((at, _finite(list(point.positions), f"point {index} positions")))
    if not points:
        raise Refused("the trajectory has no points")
    if any(b[0] <= a[0] for a, b in itertools.pairwise(points)):
        raise Refused("the points' time_from_start does not increase")
    if points[0][0] < 0.0:
        raise Refused("the first point's time_from_start is negative")
    return JointTrajectory(names, points)


def check_joints(command: Command, joints: tuple[str, ...]) -> None:
    """Refused unless a joint trajectory names only `joints` (its controller's)."""
    if isinstance(command, JointTrajectory):
        unknown = [name for name in command.joints if name not in joints]
        if unknown:
            raise Refused(f"{', '.join(unknown)} not among this controller's joints ({', '.join(joints)})")

"""Trajectories to evaluate: poses over time from a TUM file, a recording folder or a ROS bag.

A SLAM method's output and the ground truth come in different containers; everything downstream (association,
alignment, errors, plots) works on one in-memory form, `Trajectory`, so each container is read once, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.formats.bags.layout import ROS1_SUFFIX, ROS2_METADATA
from core.formats.bags.messages import ODOMETRY, POSE_STAMPED
from core.formats.bags.reader import open_bag, pose_matrix, stamp_ns
from core.formats.tum import read_tum, write_tum_file
from core.recording import Recording

NS_PER_S = 1e9


@dataclass(frozen=True)
class Trajectory:
    """Poses world <- sensor at increasing times. `source` says where they came from, so that errors and
    reports can name it."""

    times: np.ndarray  # (N,) float64 s, increasing
    poses: np.ndarray  # (N, 4, 4) world <- sensor
    source: str = ""

    def __post_init__(self) -> None:
        times = np.asarray(self.times, dtype=np.float64)
        poses = np.asarray(self.poses, dtype=np.float64)
        if times.ndim != 1 or poses.shape != (len(times), 4, 4):
            raise InputError(f"expected times (N,) and poses (N, 4, 4), got {times.shape} and {poses.shape}",
                             self.source or None, "poses")
        if not np.all(np.isfinite(times)) or not np.all(np.isfinite(poses)):
            raise InputError("times and poses must be finite", self.source or None, "poses")
        backwards = np.flatnonzero(np.diff(times) <= 0)
        if len(backwards):
            i = int(backwards[0])
            raise InputError(f"timestamps must increase, but pose {i + 1} at {times[i + 1]:.6f} s follows pose {i} "
                             f"at {times[i]:.6f} s", self.source or None, "timestamp")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "poses", poses)

    def __len__(self) -> int:
        return len(self.times)

    @property
    def positions(self) -> np.ndarray:
        """(N, 3) sensor positions in the world."""
        return self.poses[:, :3, 3]


def load_trajectory(path: Path, camera: str | None = None, topic: str | None = None,
                    robot: str | None = None) -> Trajectory:
    """The trajectory at `path`: a ROS 1 .bag file or ROS 2 bag folder (`topic`: a geometry_msgs/PoseStamped
    or nav_msgs/Odometry topic, default the first PoseStamped topic, else the first Odometry topic, by name),
    a recording folder (`camera`: a camera's optical-frame poses, default the first camera, or a LiDAR's sweep
    poses; in a multi-robot run robot `robot`'s, default the first robot's), or else a TUM text file
    (`time tx ty tz qx qy qz qw`, `#` comments)."""
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path)
    if path.suffix == ROS1_SUFFIX or (path / ROS2_METADATA).is_file():
        return _bag_trajectory(path, topic)
    if path.is_dir():
        return _recording_trajectory(path, camera, robot)
    times, poses = read_tum(path)
    return Trajectory(times, poses, str(path))


def write_tum(path: Path, trajectory: Trajectory) -> Path:
    """`trajectory` as a TUM text file, written atomically (e.g. an aligned estimate, for other tools)."""
    return write_tum_file(path, trajectory.times, trajectory.poses)


def _recording_trajectory(path: Path, camera: str | None, robot: str | None = None) -> Trajectory:
    recording = Recording.open(path).robot(robot)
    if camera is not None and camera in recording.lidars:
        sweeps = list(recording.lidar(camera))
        times = np.array([sweep.time for sweep in sweeps], dtype=np.float64)
        poses = np.array([sweep.pose for sweep in sweeps], dtype=np.float64).reshape(-1, 4, 4)
        return Trajectory(times, poses, f"{path} (LiDAR {camera})")
    if camera is None:
        if not recording.cameras:
            raise InputError("the recording has no camera ground truth (gt/<camera>/); name a LiDAR with --camera",
                             path, "camera")
        camera = recording.cameras[0]
    elif camera not in recording.cameras:
        raise InputError(f"no camera or LiDAR {camera!r} in this recording; cameras: "
                         f"{', '.join(recording.cameras) or 'none'}, LiDARs: {', '.join(recording.lidars) or 'none'}",
                         path, "camera")
    times, poses = recording.camera(camera).poses()
    return Trajectory(times, poses, f"{path} (camera {camera})")


def _bag_trajectory(path: Path, topic: str | None) -> Trajectory:
    with open_bag(path) as reader:
        types = {name: info.msgtype for name, info in reader.topics.items()}
        if topic is None:
            candidates = sorted(t for t, kind in types.items() if kind == POSE_STAMPED) or sorted(
                t for t, kind in types.items() if kind == ODOMETRY)
            if not candidates:
                raise InputError(f"no {POSE_STAMPED} or {ODOMETRY} topic in the bag; it has {sorted(types)}", path,
                                 "topic")
            topic = candidates[0]
        if topic not in types:
            raise InputError(f"topic {topic!r} not in the bag; it has {sorted(types)}", path, "topic")
        if types[topic] not in (POSE_STAMPED, ODOMETRY):
            raise InputError(f"topic {topic!r} carries {types[topic]}, expected {POSE_STAMPED} or {ODOMETRY}", path,
                             "topic")
        stamps, poses = [], []
        connections = [c for c in reader.connections if c.topic == topic]
        for connection, _, raw in reader.messages(connections=connections):
            message = reader.deserialize(raw, connection.msgtype)
            stamps.append(stamp_ns(message.header))
            # Odometry nests a PoseWithCovariance; PoseStamped holds the Pose itself.
            pose = message.pose.pose if connection.msgtype == ODOMETRY else message.pose
            poses.append(pose_matrix(pose))
    order = np.argsort(stamps, kind="stable")  # bag order is record time; the header stamps are the pose times
    times = np.asarray(stamps, dtype=np.int64)[order] / NS_PER_S
    return Trajectory(times, np.array(poses, dtype=np.float64).reshape(-1, 4, 4)[order], f"{path} (topic {topic})")

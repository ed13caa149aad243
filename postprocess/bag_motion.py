"""The camera's motion around each image of a bag, from the camera IMU and the odometry, for motion blur and
rolling shutter of bags (GRADE blurs bags this way: a bag has no camera poses, only its sensors).

Only the motion relative to the frame matters, so each image gets its own pose curve (blur.PoseCurve) in the
frame of the camera at the image stamp t_end: pose(t_end) = identity and pose(t) = camera(t_end) <- camera(t)
for earlier t, integrated backwards from t_end.

Rotation: the gyro of the camera IMU, rotated into the camera's optical frame by the fixed TF between the two
frames (/tf_static, or the first /tf value of each edge: the IMU is assumed rigidly mounted on the camera's
link), linearly interpolated between IMU samples; each interval between consecutive samples (and the ends
of the window) is integrated with the exact exponential map of the interval's mean rate (the exact integral of
the interpolated rate over the interval): R(a) = R(b) exp(-[w] (b - a)).
Translation: the linear velocity of the camera's optical centre in the optical frame, from the nearest
nav_msgs/Odometry message (twist in its child frame: v_cam = R^T (v + w x t), [R | t] = child <- optical),
integrated as p(a) = p(b) - R(midpoint) v (b - a); zero when the bag has no odometry.

Topics: the IMU and odometry topics are looked up as given; one the bag lacks is found under the bag's robot
namespace (`/imu_camera` is `/my_robot_0/imu_camera` in a bag recorded with recording.namespace my_robot_0) when
exactly one topic of the bag ends with it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from core.errors import InputError
from core.formats.bags.reader import open_bag, stamp_ns
from core.formats.bags.topics import TF, TF_STATIC
from postprocess.blur import PoseCurve, interpolate_pose

CAMERA_IMU_TOPIC = "/imu_camera"
ODOMETRY_TOPIC = "/odom"
TF_TOPICS = (TF_STATIC, TF)  # static first: it wins over a dynamic value of the same edge


def namespaced_topic(topic: str, available: Iterable[str]) -> str:
    """`topic` if the bag has it, else the one topic of the bag under a namespace that ends with it (`/odom` ->
    `/my_robot_0/odom`); `topic` itself when there is none or more than one."""
    names = set(available)
    if topic in names:
        return topic
    under = [name for name in names if name.endswith(topic if topic.startswith("/") else "/" + topic)]
    return under[0] if len(under) == 1 else topic


def exp_so3(rotvecs: np.ndarray) -> np.ndarray:
    """(N, 3, 3) exp([v]x) of rotation vectors (N, 3)."""
    return Rotation.from_rotvec(np.asarray(rotvecs, np.float64).reshape(-1, 3)).as_matrix()


def integrate_backwards(times: np.ndarray, gyro: np.ndarray, t_start: float, t_end: float,
                        velocity: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(knots (K,), poses (K, 4, 4)) over [t_start, t_end]: pose(t) = camera(t_end) <- camera(t), identity at
    t_end. `times` (N,) increasing sample times, `gyro` (N, 3) rad/s in the camera frame (interpolated linearly,
    constant beyond the ends), `velocity` (K - 1, 3) m/s of the camera in its own frame per knot interval (None:
    no translation). The knots are t_start, the sample times inside (t_start, t_end) and t_end."""
    times = np.asarray(times, np.float64)
    gyro = np.asarray(gyro, np.float64).reshape(-1, 3)
    if t_end <= t_start:
        raise ValueError(f"need t_start < t_end, got {t_start} and {t_end}")
    knots = knot_times(times, t_start, t_end)
    rates = np.stack([np.interp(knots, times, gyro[:, axis]) for axis in range(3)], axis=1)
    mean = (rates[:-1] + rates[1:]) / 2  # exact mean of the linear interpolation over each interval
    steps = np.diff(knots)
    poses = np.zeros((len(knots), 4, 4))
    poses[:, 3, 3] = 1
    poses[-1, :3, :3] = np.eye(3)
    backward = exp_so3(-mean * steps[:, None])
    half = exp_so3(-mean * steps[:, None] / 2)
    for i in range(len(knots) - 2, -1, -1):
        rotation = poses[i + 1, :3, :3]
        poses[i, :3, :3] = rotation @ backward[i]
        poses[i, :3, 3] = poses[i + 1, :3, 3]
        if velocity is not None:
            poses[i, :3, 3] -= rotation @ half[i] @ velocity[i] * steps[i]
    return knots, poses


def knot_times(times: np.ndarray, t_start: float, t_end: float) -> np.ndarray:
    inside = times[(times > t_start) & (times < t_end)]
    return np.concatenate([[t_start], inside, [t_end]])


def _matrix(translation: object, rotation: object) -> np.ndarray:
    out = np.eye(4)
    out[:3, :3] = Rotation.from_quat([rotation.x, rotation.y, rotation.z, rotation.w]).as_matrix()
    out[:3, 3] = [translation.x, translation.y, translation.z]
    return out


def _ancestors(frame: str, parents: dict[str, tuple[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Every ancestor of `frame` (itself included) -> ancestor <- frame."""
    out, transform, seen = {frame: np.eye(4)}, np.eye(4), {frame}
    while frame in parents:
        frame, step = parents[frame]
        if frame in seen:
            break
        seen.add(frame)
        transform = step @ transform
        out[frame] = transform
    return out


def frame_transform(parents: dict[str, tuple[str, np.ndarray]], target: str, source: str) -> np.ndarray | None:
    """target <- source through their nearest common ancestor in the TF tree (None: not connected)."""
    up_target, up_source = _ancestors(target, parents), _ancestors(source, parents)
    for frame, source_to in up_source.items():  # nearest first
        if frame in up_target:
            return np.linalg.inv(up_target[frame]) @ source_to
    return None


@dataclass
class BagMotion:
    """What a bag says about its cameras' motion: the camera IMU, odometry and the TF tree."""

    bag: Path
    imu_frame: str
    imu_time: np.ndarray  # (N,) s
    imu_gyro: np.ndarray  # (N, 3) rad/s in the IMU frame
    odom_frame: str | None
    odom_time: np.ndarray  # (M,) s
    odom_linear: np.ndarray  # (M, 3) m/s in odom_frame
    odom_angular: np.ndarray  # (M, 3) rad/s in odom_frame
    parents: dict[str, tuple[str, np.ndarray]]  # child -> (parent, parent <- child)

    @classmethod
    def read(cls, bag: Path, imu_topic: str = CAMERA_IMU_TOPIC, odom_topic: str = ODOMETRY_TOPIC,
             source: Path | None = None) -> BagMotion:
        """Read `bag`; errors name `source` (the bag the user gave, when `bag` is a staged copy of it)."""
        named = source if source is not None else bag
        imu_rows: list[tuple[float, list[float]]] = []
        odom_rows: list[tuple[float, list[float], list[float]]] = []
        imu_frame, odom_frame = "", None
        edges: dict[str, dict[str, tuple[str, np.ndarray]]] = defaultdict(dict)
        with open_bag(bag) as reader:
            imu_topic, odom_topic = (namespaced_topic(topic, reader.topics) for topic in (imu_topic, odom_topic))
            wanted = [c for c in reader.connections if c.topic in (imu_topic, odom_topic, *TF_TOPICS)]
            if not any(c.topic == imu_topic for c in wanted):
                raise InputError(f"motion blur of a bag needs the camera IMU topic {imu_topic} (sensor_msgs/Imu) "
                                 "to integrate the camera's rotation; the bag has none", named, "blur")
            for connection, _, raw in reader.messages(connections=wanted):
                msg = reader.deserialize(raw, connection.msgtype)
                if connection.topic == imu_topic:
                    w = msg.angular_velocity
                    imu_rows.append((stamp_ns(msg.header) * 1e-9, [w.x, w.y, w.z]))
                    imu_frame = imu_frame or msg.header.frame_id
                elif connection.topic == odom_topic:
                    twist = msg.twist.twist
                    odom_rows.append((stamp_ns(msg.header) * 1e-9, [twist.linear.x, twist.linear.y, twist.linear.z],
                                      [twist.angular.x, twist.angular.y, twist.angular.z]))
                    odom_frame = odom_frame or msg.child_frame_id
                else:
                    known = edges[connection.topic]
                    for item in msg.transforms:
                        if item.child_frame_id not in known:
                            known[item.child_frame_id] = (item.header.frame_id,
                                                          _matrix(item.transform.translation, item.transform.rotation))
        if len(imu_rows) < 2:
            raise InputError(f"motion blur of a bag needs at least two messages on {imu_topic}", named, "blur")
        parents = {**edges[TF], **edges[TF_STATIC]}
        imu_rows.sort(key=lambda row: row[0])
        odom_rows.sort(key=lambda row: row[0])
        return cls(named, imu_frame, np.array([r[0] for r in imu_rows]), np.array([r[1] for r in imu_rows]),
                   odom_frame if odom_rows else None, np.array([r[0] for r in odom_rows]).reshape(-1),
                   np.array([r[1] for r in odom_rows]).reshape(-1, 3), np.array([r[2] for r in odom_rows]).reshape(-1, 3),
                   parents)

    def _transform(self, target: str, source: str, what: str) -> np.ndarray:
        found = frame_transform(self.parents, target, source)
        if found is None:
            raise InputError(f"motion blur of a bag needs the TF from {source!r} to {target!r} ({what}) in "
                             f"/tf_static or /tf; the bag's TF tree does not connect them", self.bag, "blur")
        return found

    def camera(self, optical_frame: str) -> CameraMotion:
        """The motion of the camera whose images are stamped in `optical_frame`."""
        imu_to_camera = self._transform(optical_frame, self.imu_frame, "the camera IMU's mounting")
        gyro = self.imu_gyro @ imu_to_camera[:3, :3].T  # the same angular velocity, in the optical frame
        velocity = None
        if self.odom_frame is not None:
            mount = self._transform(self.odom_frame, optical_frame, "the odometry's child frame")
            rotation, offset = mount[:3, :3], mount[:3, 3]
            velocity = (self.odom_linear + np.cross(self.odom_angular, offset)) @ rotation  # R^T (v + w x t)
        return CameraMotion(self.imu_time, gyro, self.odom_time, velocity)


@dataclass
class CameraMotion:
    """One camera's angular velocity (IMU samples) and linear velocity (odometry samples), in its optical frame."""

    gyro_time: np.ndarray
    gyro: np.ndarray
    velocity_time: np.ndarray
    velocity: np.ndarray | None

    def pose_curve(self, t_end: float, span: float) -> PoseCurve:
        """pose(t) = camera(t_end) <- camera(t) over [t_end - span, t_end] (the end poses beyond it)."""
        span = max(span, 1e-9)
        knots = knot_times(self.gyro_time, t_end - span, t_end)
        velocity = None
        if self.velocity is not None:
            middles = (knots[:-1] + knots[1:]) / 2
            nearest = np.clip(np.searchsorted(self.velocity_time, middles), 1, len(self.velocity_time) - 1)
            earlier = np.abs(middles - self.velocity_time[nearest - 1]) <= np.abs(self.velocity_time[nearest] - middles)
            index = np.where(earlier, nearest - 1, nearest) if len(self.velocity_time) > 1 else np.zeros_like(nearest)
            velocity = self.velocity[index]
        knots, poses = integrate_backwards(self.gyro_time, self.gyro, t_end - span, t_end, velocity)
        return interpolate_pose(knots, poses)

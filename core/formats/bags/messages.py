"""Building ROS messages (rosbags message objects) from numpy data, for ROS 1 and ROS 2.

The two dialects differ only where ROS differs: ROS 1 headers carry `seq` and ROS 1 CameraInfo names
its matrices `D K R P` where ROS 2 uses `d k r p`. Everything else (quaternion order x, y, z, w, the
depth encodings, the point-cloud layout) is shared. Validation of caller data lives here too, so the
writer raises one clear ValueError before anything reaches a bag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore
from scipy.spatial.transform import Rotation

from core.formats.images import depth_millimetres

# Message type names as rosbags spells them (for ROS 1 bags too).
CLOCK = "rosgraph_msgs/msg/Clock"
IMU = "sensor_msgs/msg/Imu"
TF = "tf2_msgs/msg/TFMessage"
JOINT_STATE = "sensor_msgs/msg/JointState"
POSE_STAMPED = "geometry_msgs/msg/PoseStamped"
ODOMETRY = "nav_msgs/msg/Odometry"
IMAGE = "sensor_msgs/msg/Image"
CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
POINT_CLOUD2 = "sensor_msgs/msg/PointCloud2"
STRING = "std_msgs/msg/String"
HEADER = "std_msgs/msg/Header"
EVENT_ARRAY = "dvs_msgs/msg/EventArray"
EVENT = "dvs_msgs/msg/Event"

ROS1_STORE = Stores.ROS1_NOETIC
# Jazzy matches the rosbag2 metadata version rosbags writes (9); the hashes of every type written here
# are the same in Humble.
ROS2_STORE = Stores.ROS2_JAZZY
# tf2_msgs is not in rosbags' noetic store; this is the noetic definition (md5 94810edda583a504dfda3829e70d7eec).
ROS1_TF_MESSAGE_DEFINITION = "geometry_msgs/TransformStamped[] transforms"
# dvs_msgs, the event cameras' messages of rpg_dvs_ros (uzh-rpg), in neither store: its .msg files without their
# comments (ROS 1 MD5 of EventArray 5e8beee5a6c107e504c2e78903c224b8, Event 40d339b261445b8ce9a6fef01267cd5d). ROS 1's
# `time` is builtin_interfaces/Time in ROS 2, as in the ROS 2 ports of the package.
DVS_MESSAGE_DEFINITIONS = {
    EVENT: "uint16 x\nuint16 y\ntime ts\nbool polarity",
    EVENT_ARRAY: "Header header\nuint32 height\nuint32 width\nEvent[] events",
}

NS_PER_S = 1_000_000_000
UINT16_MAX = np.iinfo(np.uint16).max
ROTATION_TOLERANCE = 1e-6
# REP 104 / ROS Imu: a -1 in the first element says "this estimate is not provided".
COVARIANCE_UNKNOWN = -1.0
PLUMB_BOB = "plumb_bob"  # sensor_msgs/CameraInfo.distortion_model of OpenCV's radial-tangential model
PLUMB_BOB_COEFFICIENTS = 5

DepthEncoding = Literal["32FC1", "16UC1"]
DEPTH_ENCODINGS = ("32FC1", "16UC1")

# PointField datatypes (sensor_msgs/PointField constants).
POINT_FIELD_FLOAT32 = 7
POINT_FIELD_UINT16 = 4
# x y z intensity float32, ring uint16, padded to 20 bytes so every float in the stream stays 4-byte aligned.
POINT_DTYPE = np.dtype({
    "names": ["x", "y", "z", "intensity", "ring"],
    "formats": ["<f4", "<f4", "<f4", "<f4", "<u2"],
    "offsets": [0, 4, 8, 12, 16],
    "itemsize": 20,
})
POINT_FIELD_TYPES = {"x": POINT_FIELD_FLOAT32, "y": POINT_FIELD_FLOAT32, "z": POINT_FIELD_FLOAT32,
                     "intensity": POINT_FIELD_FLOAT32, "ring": POINT_FIELD_UINT16}


# ---------------------------------------------------------------- typestores


def _register_dvs_messages(store: Typestore) -> Typestore:
    """Adds dvs_msgs: registering a type changes no other type's definition or hash, so no other bytes."""
    types = {}
    for name, text in DVS_MESSAGE_DEFINITIONS.items():
        types |= get_types_from_msg(text, name)
    store.register(types)
    return store


def ros1_typestore() -> Typestore:
    """The ROS 1 (noetic) typestore, with tf2_msgs/TFMessage registered when rosbags lacks it, and dvs_msgs."""
    store = get_typestore(ROS1_STORE)
    if TF not in store.fielddefs:
        store.register(get_types_from_msg(ROS1_TF_MESSAGE_DEFINITION, TF))
    return _register_dvs_messages(store)


def ros2_typestore() -> Typestore:
    """The ROS 2 (jazzy) typestore, with dvs_msgs."""
    return _register_dvs_messages(get_typestore(ROS2_STORE))


# ---------------------------------------------------------------- validation of caller data


def stamp_from_seconds(t: float, topic: str) -> int:
    """Simulation time in seconds -> integer nanoseconds (round(t * 1e9))."""
    if not np.isfinite(t) or t < 0:
        raise ValueError(f"{topic}: time must be finite and >= 0, got {t!r}")
    return round(float(t) * NS_PER_S)


def vector3(value: np.ndarray, topic: str, name: str) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64)
    if array.shape != (3,) or not np.all(np.isfinite(array)):
        raise ValueError(f"{topic}: {name} must be 3 finite numbers, got shape {array.shape}")
    return array


def split_transforms(matrices: np.ndarray, topic: str, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Rigid 4x4s (N, 4, 4) -> translations (N, 3) and quaternions (N, 4: x, y, z, w, w >= 0), in one
    vectorised pass (a /tf message carries a dozen transforms, 120 times a second)."""
    m = np.asarray(matrices, dtype=np.float64)
    if m.ndim != 3 or m.shape[1:] != (4, 4) or len(m) != len(names):
        raise ValueError(f"{topic}: expected {len(names)} 4x4 matrices, got shape {m.shape}")
    rotation = m[:, :3, :3]
    bottom_ok = np.all(np.abs(m[:, 3] - (0.0, 0.0, 0.0, 1.0)) <= ROTATION_TOLERANCE, axis=1)
    orthonormal = np.all(np.abs(np.swapaxes(rotation, 1, 2) @ rotation - np.eye(3)) <= ROTATION_TOLERANCE, axis=(1, 2))
    good = np.all(np.isfinite(m), axis=(1, 2)) & bottom_ok & orthonormal
    good[good] &= np.linalg.det(rotation[good]) > 0
    if not good.all():
        name = names[int(np.flatnonzero(~good)[0])]
        raise ValueError(f"{topic}: {name} is not a finite rigid transform (rotation not orthonormal or bottom "
                         "row not 0 0 0 1)")
    if not len(m):
        return np.zeros((0, 3)), np.zeros((0, 4))
    # canonical=True picks w >= 0, so the same pose always gives the same bytes.
    return m[:, :3, 3].copy(), Rotation.from_matrix(rotation).as_quat(canonical=True)


def split_transform(matrix: np.ndarray, topic: str, name: str = "transform") -> tuple[np.ndarray, np.ndarray]:
    """A rigid 4x4 -> (translation (3,), quaternion (x, y, z, w) with w >= 0)."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (4, 4):
        raise ValueError(f"{topic}: {name} must be a finite 4x4 matrix, got shape {m.shape}")
    translations, quats = split_transforms(m[None], topic, [name])
    return translations[0], quats[0]


def rgb_image(rgb: np.ndarray, topic: str) -> np.ndarray:
    array = np.asarray(rgb)
    if array.ndim != 3 or array.shape[2] != 3 or array.dtype != np.uint8 or 0 in array.shape:
        raise ValueError(f"{topic}: rgb must be a non-empty (H, W, 3) uint8 array, got {array.dtype} {array.shape}")
    return np.ascontiguousarray(array)


def encode_depth(depth: np.ndarray, encoding: str, topic: str) -> np.ndarray:
    """Float32 metres (0 = no return) -> the (H, W) array to store: 32FC1 NaN for no return (REP 118),
    16UC1 millimetres as in the depth PNGs (core.formats.images.depth_millimetres: the nearest millimetre, 0 for
    no return, clipped to 65535)."""
    array = np.asarray(depth)
    if array.ndim != 2 or 0 in array.shape or not np.issubdtype(array.dtype, np.floating):
        raise ValueError(f"{topic}: depth must be a non-empty (H, W) float array, got {array.dtype} {array.shape}")
    if encoding not in DEPTH_ENCODINGS:
        raise ValueError(f"{topic}: depth encoding must be one of {DEPTH_ENCODINGS}, got {encoding!r}")
    if not np.all(array >= 0):  # also false for NaN
        raise ValueError(f"{topic}: depth must be >= 0 metres with 0 for no return (found negative or NaN values)")
    if encoding == "32FC1":
        return np.where(array > 0, array, np.float32(np.nan)).astype("<f4", copy=False)
    return depth_millimetres(array).astype("<u2", copy=False)


def intrinsics(K: np.ndarray, width: int, height: int, topic: str) -> np.ndarray:
    matrix = np.asarray(K, dtype=np.float64)
    if matrix.shape != (3, 3) or not np.all(np.isfinite(matrix)):
        raise ValueError(f"{topic}: K must be a finite 3x3 matrix, got shape {matrix.shape}")
    if int(width) < 1 or int(height) < 1:
        raise ValueError(f"{topic}: resolution must be positive, got {width}x{height}")
    return matrix


def point_records(points: np.ndarray, intensity: np.ndarray, ring: np.ndarray, topic: str) -> np.ndarray:
    """(N, 3) points, (N,) intensity and (N,) ring -> N little-endian records of POINT_DTYPE."""
    xyz = np.asarray(points, dtype=np.float64)
    values = np.asarray(intensity, dtype=np.float64)
    rings = np.asarray(ring)
    if xyz.ndim != 2 or xyz.shape[1] != 3:
        raise ValueError(f"{topic}: points must be (N, 3), got {xyz.shape}")
    n = xyz.shape[0]
    if values.shape != (n,) or rings.shape != (n,):
        raise ValueError(f"{topic}: intensity and ring must be ({n},), got {values.shape} and {rings.shape}")
    # The cloud is published dense (no invalid points), so it must not carry any.
    if not (np.all(np.isfinite(xyz)) and np.all(np.isfinite(values))):
        raise ValueError(f"{topic}: points and intensity must be finite (the cloud is published dense)")
    if n and (not np.issubdtype(rings.dtype, np.integer) or rings.min() < 0 or rings.max() > UINT16_MAX):
        raise ValueError(f"{topic}: ring must be integers in [0, {UINT16_MAX}]")
    records = np.zeros(n, dtype=POINT_DTYPE)
    records["x"], records["y"], records["z"] = xyz[:, 0], xyz[:, 1], xyz[:, 2]
    records["intensity"] = values
    records["ring"] = rings
    return records


def joint_arrays(names: Sequence[str], positions: np.ndarray, velocities: np.ndarray,
                 topic: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    joint_names = [str(name) for name in names]
    pos = np.asarray(positions, dtype=np.float64)
    vel = np.asarray(velocities, dtype=np.float64)
    shape = (len(joint_names),)
    if pos.shape != shape or vel.shape != shape:
        raise ValueError(f"{topic}: positions and velocities must be {shape} like names, got {pos.shape} and {vel.shape}")
    return joint_names, pos, vel


def event_records(events: np.ndarray, width: int, height: int, topic: str) -> np.ndarray:
    """Events as core.formats.events.EVENT_DTYPE records (x, y, t ns, p 0/1), checked to lie in the image."""
    array = np.asarray(events)
    names = ("x", "y", "t", "p")
    if array.ndim != 1 or array.dtype.names is None or not set(names) <= set(array.dtype.names):
        raise ValueError(f"{topic}: events must be a 1D structured array with fields {names}, got {array.dtype}")
    if int(width) < 1 or int(height) < 1:
        raise ValueError(f"{topic}: resolution must be positive, got {width}x{height}")
    if len(array) and (array["x"].min() < 0 or array["x"].max() >= width or array["y"].min() < 0
                       or array["y"].max() >= height or array["t"].min() < 0 or not np.isin(array["p"], (0, 1)).all()):
        raise ValueError(f"{topic}: events must lie in the {width}x{height} image, at t >= 0, with polarity 0 or 1")
    return array


# ---------------------------------------------------------------- message construction


class MessageBuilder:
    """Builds message objects of one typestore; `ros1` selects the ROS 1 field names."""

    def __init__(self, typestore: Typestore, ros1: bool):
        self.types = typestore.types
        self.ros1 = ros1

    def _t(self, name: str) -> type:
        return self.types[name]

    def time(self, stamp_ns: int) -> object:
        sec, nanosec = divmod(stamp_ns, NS_PER_S)
        return self._t("builtin_interfaces/msg/Time")(sec=sec, nanosec=nanosec)

    def header(self, stamp_ns: int, frame_id: str, seq: int) -> object:
        header = self._t("std_msgs/msg/Header")
        if self.ros1:
            return header(seq=seq, stamp=self.time(stamp_ns), frame_id=frame_id)
        return header(stamp=self.time(stamp_ns), frame_id=frame_id)

    def vector3(self, v: np.ndarray) -> object:
        return self._t("geometry_msgs/msg/Vector3")(x=float(v[0]), y=float(v[1]), z=float(v[2]))

    def quaternion(self, q: np.ndarray) -> object:
        return self._t("geometry_msgs/msg/Quaternion")(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3]))

    def pose(self, translation: np.ndarray, quat: np.ndarray) -> object:
        point = self._t("geometry_msgs/msg/Point")(x=float(translation[0]), y=float(translation[1]),
                                                   z=float(translation[2]))
        return self._t("geometry_msgs/msg/Pose")(position=point, orientation=self.quaternion(quat))

    def clock(self, stamp_ns: int) -> object:
        return self._t(CLOCK)(clock=self.time(stamp_ns))

    def imu(self, header: object, linear_acceleration: np.ndarray, angular_velocity: np.ndarray) -> object:
        orientation_covariance = np.zeros(9)
        orientation_covariance[0] = COVARIANCE_UNKNOWN
        return self._t(IMU)(
            header=header,
            orientation=self.quaternion(np.zeros(4)),
            orientation_covariance=orientation_covariance,
            angular_velocity=self.vector3(angular_velocity),
            angular_velocity_covariance=np.zeros(9),
            linear_acceleration=self.vector3(linear_acceleration),
            linear_acceleration_covariance=np.zeros(9),
        )

    def tf(self, stamp_ns: int, seq: int, transforms: Sequence[tuple[str, str, np.ndarray, np.ndarray]]) -> object:
        stamped = self._t("geometry_msgs/msg/TransformStamped")
        transform = self._t("geometry_msgs/msg/Transform")
        return self._t(TF)(transforms=[
            stamped(header=self.header(stamp_ns, parent, seq), child_frame_id=child,
                    transform=transform(translation=self.vector3(translation), rotation=self.quaternion(quat)))
            for parent, child, translation, quat in transforms
        ])

    def joint_state(self, header: object, names: list[str], positions: np.ndarray, velocities: np.ndarray) -> object:
        return self._t(JOINT_STATE)(header=header, name=names, position=positions, velocity=velocities,
                                    effort=np.zeros(0))

    def pose_stamped(self, header: object, translation: np.ndarray, quat: np.ndarray) -> object:
        return self._t(POSE_STAMPED)(header=header, pose=self.pose(translation, quat))

    def odometry(self, header: object, child_frame_id: str, translation: np.ndarray, quat: np.ndarray,
                 linear_velocity: np.ndarray, angular_velocity: np.ndarray) -> object:
        twist = self._t("geometry_msgs/msg/Twist")(linear=self.vector3(linear_velocity),
                                                   angular=self.vector3(angular_velocity))
        return self._t(ODOMETRY)(
            header=header,
            child_frame_id=child_frame_id,
            pose=self._t("geometry_msgs/msg/PoseWithCovariance")(pose=self.pose(translation, quat),
                                                                 covariance=np.zeros(36)),
            twist=self._t("geometry_msgs/msg/TwistWithCovariance")(twist=twist, covariance=np.zeros(36)),
        )

    def image(self, header: object, pixels: np.ndarray, encoding: str) -> object:
        """`pixels` is (H, W) or (H, W, C) in its final little-endian dtype; stored row by row, no padding."""
        height, width = pixels.shape[:2]
        data = pixels.reshape(-1).view(np.uint8)
        return self._t(IMAGE)(header=header, height=height, width=width, encoding=encoding, is_bigendian=0,
                              step=data.size // height, data=data)

    def camera_info(self, header: object, K: np.ndarray, width: int, height: int, distortion_model: str = PLUMB_BOB,
                    D: np.ndarray | None = None, tx: float = 0.0) -> object:
        """`D` in the order of `distortion_model` (plumb_bob: k1, k2, p1, p2, k3; equidistant: k1..k4); None: an
        ideal pinhole's five zeros. `tx`: P[0, 3], -fx * baseline for the right camera of a stereo pair."""
        projection = np.hstack([K, np.zeros((3, 1))])
        projection[0, 3] = tx
        roi = self._t("sensor_msgs/msg/RegionOfInterest")(x_offset=0, y_offset=0, height=0, width=0, do_rectify=False)
        d = np.zeros(PLUMB_BOB_COEFFICIENTS) if D is None else np.asarray(D, dtype=np.float64)
        matrices = {"d": d, "k": K.reshape(-1), "r": np.eye(3).reshape(-1), "p": projection.reshape(-1)}
        if self.ros1:
            matrices = {name.upper(): value for name, value in matrices.items()}
        return self._t(CAMERA_INFO)(header=header, height=int(height), width=int(width),
                                    distortion_model=distortion_model, binning_x=0, binning_y=0, roi=roi, **matrices)

    def point_cloud(self, header: object, records: np.ndarray) -> object:
        field = self._t("sensor_msgs/msg/PointField")
        fields = [field(name=name, offset=POINT_DTYPE.fields[name][1], datatype=datatype, count=1)
                  for name, datatype in POINT_FIELD_TYPES.items()]
        data = records.view(np.uint8).reshape(-1) if records.size else np.zeros(0, np.uint8)
        return self._t(POINT_CLOUD2)(header=header, height=1, width=records.shape[0], fields=fields,
                                     is_bigendian=False, point_step=POINT_DTYPE.itemsize, row_step=data.size,
                                     data=data, is_dense=True)

    def event_array(self, header: object, records: np.ndarray, width: int, height: int) -> object:
        event = self._t(EVENT)
        events = [event(x=int(x), y=int(y), ts=self.time(int(t)), polarity=bool(p))
                  for x, y, t, p in zip(records["x"].tolist(), records["y"].tolist(), records["t"].tolist(),
                                        records["p"].tolist())]
        return self._t(EVENT_ARRAY)(header=header, height=int(height), width=int(width), events=events)

    def string(self, text: str) -> object:
        return self._t(STRING)(data=text)

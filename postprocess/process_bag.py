"""Post-process a ROS bag (ours or a third party's): bag tools, then IMU and depth noise, into a new bag.

Two passes over bag_tools.transform_bag: the first applies the crop/retime/rename options into a temporary
bag; the noise is then drawn on the series as they will be published (so dt is the output rate), and the
second pass writes them through a message hook. Every sensor_msgs/Imu topic gets IMU noise from its own
stream "postprocess/imu/<topic>", every depth image topic (32FC1 metres or 16UC1 millimetres) depth noise
from "postprocess/depth/<topic>" with the intrinsics of the camera_info beside it. With blur or rolling
shutter, every rgb8/bgr8 image topic is blurred with the camera's motion integrated from the camera IMU and
the odometry (postprocess.bag_motion), with one exposure and readout per topic drawn by blur.sequence_timing
from "postprocess/exposure/<topic>", K from the camera_info of its namespace and the (clean) depth image of
the same namespace whose stamp is nearest, within 1 ms; without one (no depth topic, or none close enough)
the image is blurred with the homography model's plane at blur.plane_distance instead.

A camera_info with a lens (`distortion_model` plumb_bob or equidistant and a non-zero D, as GRADE writes for
`model: radtan | equidistant`) is post-processed through it, as a run's camera is (process_run.py): blur
reprojects along the lens's rays; the homography model (also the fallback without a depth image) and, for an
equidistant lens, the realsense depth model have no meaning there and are refused naming the topic.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from core.config import PostprocessConfig
from core.config.lens import Lens
from core.errors import InputError
from core.formats.bags.layout import ROS1_SUFFIX
from core.formats.bags.messages import DEPTH_ENCODINGS, MessageBuilder
from core.formats.bags.reader import image_array, open_bag, stamp_ns
from core.formats.images import MM_PER_M, depth_millimetres
from core.rundir import partial_folder
from core.seeding import generator
from postprocess.bag_motion import CAMERA_IMU_TOPIC, ODOMETRY_TOPIC, BagMotion, CameraMotion
from postprocess.bag_tools import BagOptions, BagReport, check_new_output, transform_bag
from postprocess.blur import blur_and_shutter, sequence_timing
from postprocess.depth_noise import apply_depth_noise
from postprocess.imu_noise import apply_imu_noise

IMU_TYPE = "sensor_msgs/msg/Imu"
RGB_ENCODINGS = ("rgb8", "bgr8")
DEPTH_PAIR_NS = 1_000_000  # a depth image pairs with an RGB image within 1 ms
IMAGE_TYPE = "sensor_msgs/msg/Image"
CAMERA_INFO_TYPE = "sensor_msgs/msg/CameraInfo"


def _imu_noise(bag: Path, settings: PostprocessConfig, seed: int) -> dict[str, list[np.ndarray]]:
    """Per IMU topic, the noisy (acceleration, angular velocity) rows in message order."""
    series: dict[str, list[tuple[float, list[float], list[float]]]] = defaultdict(list)
    with open_bag(bag) as reader:
        imus = [c for c in reader.connections if c.msgtype == IMU_TYPE]
        for connection, _, raw in reader.messages(connections=imus):
            msg = reader.deserialize(raw, connection.msgtype)
            a, w = msg.linear_acceleration, msg.angular_velocity
            series[connection.topic].append((stamp_ns(msg.header) * 1e-9, [a.x, a.y, a.z], [w.x, w.y, w.z]))
    noisy = {}
    for topic, rows in sorted(series.items()):
        time = np.array([r[0] for r in rows])
        result = apply_imu_noise(time, np.array([r[1] for r in rows]), np.array([r[2] for r in rows]),
                                 settings.imu, generator(seed, f"postprocess/imu/{topic}"))
        noisy[topic] = [result.linear_acceleration, result.angular_velocity]
    return noisy


@dataclass(frozen=True)
class _CameraInfo:
    K: np.ndarray
    lens: Lens


def _intrinsics(bag: Path) -> dict[str, _CameraInfo]:
    """Camera namespace (the topic's parent, e.g. /camera) -> K and lens from the first camera_info there."""
    found: dict[str, _CameraInfo] = {}
    with open_bag(bag) as reader:
        infos = [c for c in reader.connections if c.msgtype == CAMERA_INFO_TYPE]
        for connection, _, raw in reader.messages(connections=infos):
            namespace = connection.topic.rsplit("/", 1)[0]
            if namespace not in found:
                msg = reader.deserialize(raw, connection.msgtype)
                K = np.asarray(msg.k if hasattr(msg, "k") else msg.K, dtype=np.float64).reshape(3, 3)
                found[namespace] = _CameraInfo(K, _lens(connection.topic, msg.distortion_model, list(msg.d if
                                                        hasattr(msg, "d") else msg.D)))
    return found


def _lens(topic: str, distortion_model: str, D: list[float]) -> Lens:
    """The lens a camera_info describes: a pinhole for plumb_bob with D all zeros (a rectified image; an
    equidistant lens without coefficients is still a fisheye); InputError naming the topic for a model GRADE has
    no lens for."""
    if distortion_model in ("", "plumb_bob") and not any(D):
        return Lens()
    try:
        return Lens.from_ros(distortion_model, D)
    except (ValueError, InputError) as exc:
        raise InputError(f"camera_info {topic!r} has a lens post-processing cannot follow ({exc}); GRADE's lenses "
                         "are plumb_bob (5 coefficients) and equidistant (4)", field=topic) from None


def _namespace_of(topic: str, intrinsics: dict[str, _CameraInfo], purpose: str) -> str:
    """The camera namespace an image topic belongs to: the camera_info's whose namespace is the longest prefix."""
    matches = [ns for ns in intrinsics if topic.startswith(ns + "/")]
    if not matches:
        raise InputError(f"no camera_info for image topic {topic!r}: {purpose} needs the intrinsics", field=topic)
    return max(matches, key=len)


def _refuse_through_lens(topic: str, lens: Lens, setting: str, why: str) -> None:
    raise InputError(f"image topic {topic!r} is from a camera with a {lens.model} lens: {why}", field=setting)


class _NoiseHook:
    """The message hook of the second pass: noisy IMU rows in order, depth noise per image."""

    def __init__(self, imu_rows: dict[str, list[np.ndarray]], intrinsics: dict[str, _CameraInfo],
                 settings: PostprocessConfig, seed: int, ros1: bool, typestore: object):
        self.imu_rows, self.intrinsics, self.settings, self.seed = imu_rows, intrinsics, settings, seed
        self.counts: dict[str, int] = defaultdict(int)
        self.depth_rngs: dict[str, np.random.Generator] = {}
        self.builder = MessageBuilder(typestore, ros1)
        self.blur: _Blur | None = None

    def __call__(self, topic: str, msgtype: str, msg: object, timestamp_ns: int) -> object:
        if msgtype == IMU_TYPE and topic in self.imu_rows:
            accel, gyro = (rows[self.counts[topic]] for rows in self.imu_rows[topic])
            self.counts[topic] += 1
            for vector, values in ((msg.linear_acceleration, accel), (msg.angular_velocity, gyro)):
                vector.x, vector.y, vector.z = (float(v) for v in values)
            return msg
        if msgtype == IMAGE_TYPE and self.settings.depth is not None and msg.encoding in DEPTH_ENCODINGS:
            rng = self.depth_rngs.setdefault(topic, generator(self.seed, f"postprocess/depth/{topic}"))
            pixels = image_array(msg)
            metres = pixels / MM_PER_M if msg.encoding == "16UC1" else pixels
            camera = self.intrinsics[_namespace_of(topic, self.intrinsics, "depth noise")]
            if self.settings.depth.model == "realsense" and camera.lens.range_depth:
                _refuse_through_lens(topic, camera.lens, "depth.model", "the realsense depth model is a rectified "
                                     "pinhole stereo pair's error (z^2 / (f b)), and this camera's depth is the range "
                                     "along each ray; use depth.model: kinect or gaussian")
            noisy = apply_depth_noise(metres.astype(np.float32), camera.K, self.settings.depth, rng)
            stored = depth_millimetres(noisy).astype("<u2") if msg.encoding == "16UC1" else noisy.astype("<f4")
            return self.builder.image(msg.header, stored, msg.encoding)
        if msgtype == IMAGE_TYPE and self.blur is not None and msg.encoding in RGB_ENCODINGS:
            return self.blur(topic, msg)
        return msg


class _Depths:
    """The depth images of one camera namespace, read in stamp order alongside the RGB images (a few kept)."""

    def __init__(self, reader: object, connections: list) -> None:
        self.reader = reader
        self.messages = iter(reader.messages(connections=connections)) if connections else iter(())
        self.window: list[tuple[int, object]] = []
        self.done = False

    def nearest(self, t_ns: int) -> object | None:
        while not self.done and (not self.window or self.window[-1][0] <= t_ns + DEPTH_PAIR_NS):
            item = next(self.messages, None)
            if item is None:
                self.done = True
                break
            connection, _, raw = item
            msg = self.reader.deserialize(raw, connection.msgtype)
            self.window.append((stamp_ns(msg.header), msg))
        self.window = [(t, m) for t, m in self.window if t >= t_ns - DEPTH_PAIR_NS]
        close = [(abs(t - t_ns), i) for i, (t, _) in enumerate(self.window) if abs(t - t_ns) <= DEPTH_PAIR_NS]
        return self.window[min(close)[1]][1] if close else None


class _Blur:
    """Blurs one RGB image message with the camera's motion from the bag's IMU and odometry."""

    def __init__(self, reader: object, motion: BagMotion, intrinsics: dict[str, _CameraInfo],
                 settings: PostprocessConfig, seed: int, builder: MessageBuilder) -> None:
        self.reader, self.motion, self.intrinsics, self.settings, self.seed = reader, motion, intrinsics, settings, seed
        self.builder = builder
        self.timing: dict[str, tuple[float, float]] = {}
        self.cameras: dict[str, CameraMotion] = {}
        self.depths: dict[str, _Depths] = {}

    def _depths(self, namespace: str) -> _Depths:
        if namespace not in self.depths:
            connections = [c for c in self.reader.connections if c.msgtype == IMAGE_TYPE
                           and c.topic.startswith(namespace + "/") and "depth" in c.topic]
            self.depths[namespace] = _Depths(self.reader, connections)
        return self.depths[namespace]

    def __call__(self, topic: str, msg: object) -> object:
        blur, shutter = self.settings.blur, self.settings.rolling_shutter
        if topic not in self.timing:
            self.timing[topic] = sequence_timing(blur, shutter, generator(self.seed, f"postprocess/exposure/{topic}"))
        exposure, readout = self.timing[topic]
        frame = msg.header.frame_id
        if frame not in self.cameras:
            self.cameras[frame] = self.motion.camera(frame)
        namespace = _namespace_of(topic, self.intrinsics, "blur")
        camera = self.intrinsics[namespace]
        t_ns = stamp_ns(msg.header)
        depth_msg = self._depths(namespace).nearest(t_ns)
        model = blur.model if blur is not None else "depth_aware"
        depth = None
        if depth_msg is not None:
            pixels = image_array(depth_msg)
            depth = (pixels / MM_PER_M if depth_msg.encoding == "16UC1" else pixels).astype(np.float32)
        else:
            model = "homography"
        if model == "homography" and not camera.lens.pinhole:
            _refuse_through_lens(topic, camera.lens, "blur.model", "the homography blur model warps a pinhole's "
                                 "image of a plane" + ("" if depth_msg is not None else ", and it is the fallback "
                                 "where no depth image lies within 1 ms of the frame") + "; use blur.model: "
                                 "depth_aware with the camera's depth images in the bag")
        t_end = t_ns * 1e-9
        curve = self.cameras[frame].pose_curve(t_end, exposure + readout)
        result = blur_and_shutter(image_array(msg), depth if model == "depth_aware" else None,
                                  camera.K, curve, t_end, exposure, readout,
                                  blur.sub_poses if blur is not None else 1, model,
                                  blur.plane_distance if blur is not None else 1.0, camera.lens)
        return self.builder.image(msg.header, np.ascontiguousarray(result.image, np.uint8), msg.encoding)


def process_bag(src: Path, dst: Path, settings: PostprocessConfig, options: BagOptions, seed: int,
                imu_topic: str = CAMERA_IMU_TOPIC, odom_topic: str = ODOMETRY_TOPIC) -> BagReport:
    """`src` cropped/retimed/renamed by `options`, with the noise `settings` name, written to the new bag `dst`;
    blur integrates the camera IMU `imu_topic` and the odometry `odom_topic` (names in the output bag)."""
    moving = settings.blur is not None or settings.rolling_shutter is not None
    ros1_out = options.output_format == "ros1" or (options.output_format is None and src.suffix == ROS1_SUFFIX)
    if ros1_out != (dst.suffix == ROS1_SUFFIX):  # readers tell the formats apart by the suffix
        raise InputError(f"a {'ROS 1' if ros1_out else 'ROS 2'} bag is written to "
                         f"{'a NAME.bag file' if ros1_out else 'a folder not named .bag'}", dst, "--out")
    if settings.imu is None and settings.depth is None and not moving:
        return transform_bag(src, dst, options)
    check_new_output(src, dst)  # before the partial folder beside `dst`, which would otherwise land in a bag folder
    with partial_folder(dst.parent, dst.name) as work:
        staged = work / (dst.name if dst.suffix == ROS1_SUFFIX else "staged")
        report = transform_bag(src, staged, options, label=f"{src.name}: window, rates, names")
        imu_rows = _imu_noise(staged, settings, seed) if settings.imu is not None else {}
        intrinsics = _intrinsics(staged) if settings.depth is not None or moving else {}
        motion = BagMotion.read(staged, imu_topic, odom_topic, source=src) if moving else None
        with open_bag(staged) as reader:
            hook = _NoiseHook(imu_rows, intrinsics, settings, seed, not reader.is2, reader.typestore)
            if motion is not None:
                hook.blur = _Blur(reader, motion, intrinsics, settings, seed, hook.builder)
            transform_bag(staged, dst, BagOptions(), hook, label=f"{src.name}: sensor noise")
        return replace(report, dst=dst)


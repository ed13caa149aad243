"""Sensors of the embedded backend: render cameras (for each sensor whose kind renders, core.config.sensor_kind) and
LiDARs mounted on robot links.

Frames. A mount (`core.config.Mount`: link, translation, roll/pitch/yaw in degrees, extrinsic
XYZ) places a sensor frame in its link. For IMUs and the LiDAR that frame is the sensor's own
(x forward, y left, z up). For a camera it is the camera's body frame (ROS `camera_link`: x forward,
y left, z up), and the image is rendered in the ROS optical frame (z forward, x right, y down) rotated
from it by `BODY_TO_OPTICAL`, as `camera_link` -> `camera_optical_frame` in ROS. So a camera with a zero
mount rotation looks along its link's +x with the image up along the link's +z.

LiDAR. `channels` beams evenly spread over the vertical FOV (lowest first), each swept over the
horizontal FOV at `horizontal_resolution_deg` (centred on +x; a full 360 deg sweep starts at -180 deg);
rays are cast against the render scene with Embree from the sensor origin. A beam returns the distance
to the first surface if it lies within [min_range, max_range], otherwise nothing (range 0). The robot
itself is not in the render scene, so it never blocks a beam.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from core.config import CameraConfig, LidarConfig, RenderConfig, SensorsConfig
from core.config.sensor_kinds import kind_of
from core.errors import ConfigError, InputError
from simulation.backend import LidarScan
from simulation.physics import PhysicsWorld
from simulation.physics.robot_handle import RobotHandle
from simulation.render import Camera, Exposure, RenderOptions
from simulation.render.quality import preset as quality_preset
from simulation.robots.spec import RobotModel

# Columns are the optical axes (x right, y down, z forward) in the camera body frame.
BODY_TO_OPTICAL = np.array([[0.0, 0.0, 1.0, 0.0], [-1.0, 0.0, 0.0, 0.0], [0.0, -1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
BOX_OUTPUTS = ("boxes2d", "boxes3d")
FULL_TURN_DEG = 360.0
_NO_HIT = -1
_STEPS_TOLERANCE = 1e-9


def check_mount_links(robot: RobotModel, sensors: SensorsConfig, robot_key: str = "robot") -> None:
    """Every sensor's link exists on the robot and no sensor is named after a link (sensors get TF frames of
    their own), else ConfigError naming the field and listing the links."""
    for key, name, mount in sensors.mounts():
        if name in robot.links:
            raise ConfigError(f"sensor {name!r} has the name of a link of the robot; sensors get their own TF frames, "
                              f"so name it differently (links: {sorted(robot.links)})",
                              field=f"{robot_key}.sensors.{key}.name")
        if mount.link not in robot.links:
            raise ConfigError(f"sensor {name!r} is mounted on link {mount.link!r}, which robot {robot.title()} does not "
                              f"have; valid links: {sorted(robot.links)}",
                              field=f"{robot_key}.sensors.{key}.mount.link")


@dataclass(frozen=True)
class CameraSensor:
    name: str
    camera: Camera
    options: RenderOptions
    rate_hz: float
    flow: bool  # optical flow to the next frame (1 / rate_hz later)
    renders: str = "display"  # what its kind renders (SensorKind.renders)

    @classmethod
    def for_sensor(cls, entry: Any, field: str, render: RenderConfig) -> CameraSensor:
        """The render camera of a sensor whose kind renders (SensorKind.renders): a camera's frame as its config
        asks ("display"), or the scene-linear light of its projection only ("linear")."""
        renders = kind_of(entry).renders
        if renders == "display":
            return cls.from_config(entry, field, render)
        return cls.linear(entry.projection(), field, render)

    @classmethod
    def from_config(cls, config: CameraConfig, field: str, render: RenderConfig) -> CameraSensor:
        """The camera of config key `field`, shaded and exposed as render.quality and render.exposure say."""
        try:
            if config.intrinsics is not None:
                fx, fy, cx, cy = config.intrinsics
                K = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
                camera = Camera.from_intrinsics(K, config.width, config.height, config.near, config.far, config.lens)
            elif config.fov_deg is not None:
                camera = Camera.from_fov(config.width, config.height, config.fov_deg, config.near, config.far,
                                         config.lens)
            else:
                raise InputError("give fov_deg or intrinsics", field=field)
        except InputError as exc:
            raise ConfigError(f"camera {config.name!r}: {exc.message}", field=field) from exc
        outputs = set(config.outputs)
        # Boxes (and their occlusion ratios, the costliest extra) only go to gt/ files: a bag-only camera skips them.
        options = RenderOptions(rgb="rgb" in outputs, boxes=config.to_gt and bool(outputs & set(BOX_OUTPUTS)),
                                supersample=config.supersampling, exposure=Exposure(**render.exposure.model_dump()),
                                quality=quality_preset(render.quality))
        return cls(config.name, camera, options, config.rate_hz, "flow" in outputs)

    @classmethod
    def linear(cls, config: CameraConfig, field: str, render: RenderConfig) -> CameraSensor:
        """A camera rendering scene-linear colour only (a sensor measuring light, e.g. an event camera: no exposure,
        tone curve or 8-bit rounding stands between; no boxes)."""
        camera = cls.from_config(config, field, render)
        options = RenderOptions(rgb=False, linear=True, boxes=False, quality=quality_preset(render.quality))
        return cls(camera.name, camera.camera, options, camera.rate_hz, flow=False, renders="linear")


def predicted_pose(robot: PhysicsWorld | RobotHandle, sensor: str, dt: float) -> np.ndarray:
    """World <- sensor pose `dt` seconds ahead at the sensor's current linear and angular velocity (a sensor of
    `robot`, or of a world's first robot)."""
    robot = robot.handles[0] if isinstance(robot, PhysicsWorld) else robot
    world = robot.world
    pose = robot.sensor_pose(sensor)  # also brings the world's kinematics up to date
    velocity = np.zeros(6)  # angular, linear; world axes, about the site's origin
    site = mujoco.mj_name2id(world.model, mujoco.mjtObj.mjOBJ_SITE, robot.site(sensor))
    mujoco.mj_objectVelocity(world.model, world.data, mujoco.mjtObj.mjOBJ_SITE, site, velocity, 0)
    ahead = pose.copy()
    ahead[:3, :3] = Rotation.from_rotvec(velocity[:3] * dt).as_matrix() @ pose[:3, :3]
    ahead[:3, 3] += velocity[3:] * dt
    return ahead


@dataclass(frozen=True)
class LidarSensor:
    name: str
    elevations: np.ndarray  # (C,) rad
    azimuths: np.ndarray  # (N,) rad
    directions: np.ndarray  # (C * N, 3) unit, sensor frame, row-major over (channel, column)
    min_range: float
    max_range: float

    @classmethod
    def from_config(cls, config: LidarConfig) -> LidarSensor:
        low, high = config.vertical_fov_deg.min, config.vertical_fov_deg.max
        elevations = np.radians(np.linspace(low, high, config.channels) if config.channels > 1 else [(low + high) / 2])
        fov, resolution = config.horizontal_fov_deg, config.horizontal_resolution_deg
        if fov >= FULL_TURN_DEG:
            columns = max(1, round(FULL_TURN_DEG / resolution))
            azimuths = -np.pi + np.arange(columns) * (2 * np.pi / columns)
        else:
            columns = math.floor(fov / resolution + _STEPS_TOLERANCE) + 1
            azimuths = np.radians(-fov / 2 + np.arange(columns) * resolution)
        e, a = np.meshgrid(elevations, azimuths, indexing="ij")
        directions = np.stack([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)], axis=-1).reshape(-1, 3)
        return cls(config.name, elevations, azimuths, directions, config.min_range, config.max_range)

    def scan(self, embree_scene, pose: np.ndarray, time: float) -> LidarScan:
        """Cast every beam from `pose` (world <- sensor) against an embreex scene holding this frame's geometry."""
        count = len(self.directions)
        directions = np.ascontiguousarray(self.directions @ pose[:3, :3].T, dtype=np.float32)
        origins = np.ascontiguousarray(np.broadcast_to(pose[:3, 3], (count, 3)), dtype=np.float32)
        hits = embree_scene.run(origins, directions, np.full(count, self.max_range, np.float32), "INTERSECT", 1)
        distance = np.asarray(hits["tfar"], dtype=np.float32)
        returned = (np.asarray(hits["primID"]) != _NO_HIT) & (distance >= self.min_range)
        ranges = np.where(returned, distance, np.float32(0.0)).astype(np.float32)
        points = (self.directions[returned] * ranges[returned, None]).astype(np.float32)
        ring = np.repeat(np.arange(len(self.elevations), dtype=np.uint16), len(self.azimuths))[returned]
        return LidarScan(time, pose, self.elevations, self.azimuths, ranges.reshape(len(self.elevations), -1),
                         points, ring, np.zeros(len(points), np.float32))

"""One robot of the embedded world: its body (a physics handle), sensors (render cameras, LiDARs, IMUs)
and drive (the command and, for a TIAGo with the S-curve, its velocity profile), behind `simulation.backend.Robot`.

A robot renders and scans through its world, which holds the scene, the render threads and the other robots.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from core.config import SENSOR_KINDS, RenderConfig, RobotConfig
from core.config.sensor_kinds import kind_of
from core.robot_catalogue import robot_body
from simulation.backend import ImuReading, LidarScan
from simulation.embedded.robot_meshes import RobotTrack
from simulation.embedded.sensors import BODY_TO_OPTICAL, CameraSensor, LidarSensor, check_mount_links
from simulation.physics import SensorMount
from simulation.physics.robot_handle import RobotHandle
from simulation.render import DepthImage, Frame
from simulation.robots import robot_model
from simulation.robots.mjcf import LinkEdge
from simulation.robots.s_curve import SCurveFollower, follower_for
from simulation.robots.spec import JointLimits, RobotModel

PROFILE_PREFIX = "velocity_profile."


class RobotWorld(Protocol):
    """What a robot asks of the world it is in (world.EmbeddedWorld): its cameras' frames, its LiDARs' scans and
    the time of the IMU readings."""

    @property
    def imu_time(self) -> float: ...

    def camera_frame(self, robot: EmbeddedRobot, name: str) -> tuple[Future[Frame], Future[DepthImage]]: ...

    def expect_depth(self, robot: EmbeddedRobot, name: str) -> None: ...

    def lidar_scan(self, robot: EmbeddedRobot, lidar: LidarSensor) -> LidarScan: ...


@dataclass(eq=False)
class EmbeddedRobot:
    """A robot's config and model, sensors, command and velocity profile; its world, physics handle and (in a
    multi-robot run) the mesh the others see are attached by the world that builds it."""

    name: str
    key: str  # its config key: "robot" or "robots.<i>"
    model: RobotModel
    # The render camera of each sensor whose kind renders (SensorKind.renders: cameras, event cameras), in config order.
    cameras: dict[str, CameraSensor]
    lidars: dict[str, LidarSensor]
    imu_mounts: list[SensorMount] | None
    mounts: list[SensorMount]  # the frames of the sensors the physics does not measure (all but the IMUs)
    profile: SCurveFollower | None
    profile_prefix: str  # its S-curve's keys in the world's state
    world: RobotWorld | None = field(default=None, repr=False)
    handle: RobotHandle | None = field(default=None, repr=False)
    track: RobotTrack | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._command = np.zeros(6 if self.flies else 3)

    @property
    def flies(self) -> bool:
        """Its commands are the six virtual joint velocities of a flying base; a ground base's are twists."""
        return self.model.drive == "joint_velocity"

    @classmethod
    def from_config(cls, name: str, key: str, robot: RobotConfig, render: RenderConfig) -> EmbeddedRobot:
        """The robot of config section `key`; ConfigError naming the field for unknown mount links or bad cameras."""
        model = robot_model(robot)
        sensors = robot.sensors
        check_mount_links(model, sensors, key)
        cameras = {s.name: CameraSensor.for_sensor(s, f"{key}.sensors.{at}", render) for at, s in sensors.keyed()
                   if kind_of(s).renders}
        lidars = {lidar.name: LidarSensor.from_config(lidar) for lidar in sensors.lidars}
        # MuJoCo sites by kind in KINDS' order (cameras, then LiDARs, then the kinds after them), in config order
        # within a kind: the order the earlier form gave them, so a robot of it compiles as it always did.
        order = list(SENSOR_KINDS)
        framed = sorted((s for s in sensors.root if kind_of(s).mount == "frame"), key=lambda s: order.index(s.type))
        inertial = [s for s in sensors.root if kind_of(s).mount == "inertial"]
        profile = follower_for(robot.tiago) if robot_body(robot).s_curve else None
        return cls(name, key, model, cameras, lidars,
                   [SensorMount.from_config(s.name, s.mount) for s in inertial] or None,
                   [SensorMount.from_config(s.name, s.mount) for s in framed], profile,
                   PROFILE_PREFIX if key == "robot" else f"{PROFILE_PREFIX}{name}/")

    # ------------------------------------------------------------ drive and body

    def set_command(self, command: np.ndarray) -> None:
        if self.flies:
            self.handle.set_joint_velocities(command)
        elif self.profile is not None:
            self.profile.command(command)  # the twist reaches the base through the S-curve, step by step
        else:
            self.handle.set_base_twist(command)
        self._command = np.array(command, dtype=np.float64)

    def command(self) -> np.ndarray:
        return self._command.copy()

    def commandable_joints(self) -> dict[str, JointLimits]:
        return self.handle.position_limits()

    def set_joint_positions(self, targets: Mapping[str, float]) -> None:
        self.handle.set_joint_targets(targets)

    def joint_targets(self) -> dict[str, float]:
        return self.handle.joint_targets()

    def pose(self) -> np.ndarray:
        return self.handle.base_pose()

    def velocity(self) -> tuple[np.ndarray, np.ndarray]:
        return self.handle.base_velocity()

    def link_tree(self) -> list[LinkEdge]:
        return self.model.link_edges()

    def link_pose(self, link: str) -> np.ndarray:
        return self.handle.link_pose(link)

    def sensor_pose(self, name: str) -> np.ndarray:
        return self.handle.sensor_pose(name)

    def joint_states(self) -> dict[str, tuple[float, float]]:
        return self.handle.joint_states()

    # ------------------------------------------------------------ sensors

    def camera_names(self) -> list[str]:
        """The cameras proper (rendering a display frame): those an explorer may look through."""
        return [name for name, sensor in self.cameras.items() if sensor.renders == "display"]

    def camera(self, name: str) -> CameraSensor:
        """A render camera: a camera's, or that of another kind that renders (an event camera's: the frame's
        `linear` is its light)."""
        sensor = self.cameras.get(name)
        if sensor is None:
            raise KeyError(f"no camera named {name!r}; cameras: {list(self.cameras)}")
        return sensor

    def camera_pose(self, name: str) -> np.ndarray:
        """World <- optical frame (z forward, x right, y down) of a camera."""
        self.camera(name)
        return self.handle.sensor_pose(name) @ BODY_TO_OPTICAL

    def render_async(self, name: str) -> Future[Frame]:
        """The camera's frame at the current time, rendered once per step on a render thread (the explorer and
        the recorder share the frame; treat it as read-only)."""
        return self.world.camera_frame(self, name)[0]

    def render(self, name: str) -> Frame:
        """The camera's frame at the current time, rendered once per step."""
        return self.render_async(name).result()

    def depth(self, name: str) -> DepthImage:
        """The camera's depth at the current time, as soon as its frame's ground truth is done."""
        return self.world.camera_frame(self, name)[1].result()

    def expect_depth(self, name: str) -> None:
        """The camera's next frame renders its depth first (render_frame's depth_first)."""
        self.camera(name)
        self.world.expect_depth(self, name)

    def imu(self, name: str) -> ImuReading:
        accel, gyro = self.handle.imu(name)
        return ImuReading(self.world.imu_time, accel, gyro)

    def lidar(self, name: str | None = None) -> LidarScan:
        if not self.lidars:
            raise KeyError(f"no LiDAR is configured ({self.key}.sensors)")
        if name is not None and name not in self.lidars:
            raise KeyError(f"no LiDAR named {name!r}; LiDARs: {list(self.lidars)}")
        return self.world.lidar_scan(self, self.lidars[name if name is not None else next(iter(self.lidars))])

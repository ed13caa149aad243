"""Sensor mounts as MuJoCo sites, IMUs as accelerometer + gyro sensors on them, and their read-out.

Every mount (camera, IMU, LiDAR) becomes a site `sensor/<name>` in its link, so its world pose can
be read after each step. An IMU adds `<name>/accelerometer` and `<name>/gyro` sensors on its site,
evaluated at every physics step. Readings are in the sensor frame; like a real IMU the
accelerometer measures specific force, so at rest it reads the gravity reaction (+9.81 m/s^2 along
the world's up direction).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass

import mujoco
import numpy as np

from core.config import Mount
from core.errors import ConfigError
from core.geometry import rpy_quat
from simulation.robots.mjcf import element, find_body


@dataclass(frozen=True)
class SensorMount:
    """A sensor frame on a robot link: translation (m) and roll/pitch/yaw (deg, extrinsic XYZ)."""

    name: str
    link: str
    translation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy_deg: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @classmethod
    def from_config(cls, name: str, mount: Mount) -> SensorMount:
        return cls(name, mount.link, tuple(mount.translation), tuple(mount.rpy_deg))


def site_name(sensor: str) -> str:
    return f"sensor/{sensor}"


def add_mount_sites(robot_body: ET.Element, links: tuple[str, ...], mounts: list[SensorMount]) -> None:
    """Add one site per mount to its link; an unknown link or a repeated name is a ConfigError."""
    seen: set[str] = set()
    for mount in mounts:
        if mount.name in seen:
            raise ConfigError(f"sensor name {mount.name!r} is used twice", field="robot.sensors")
        seen.add(mount.name)
        body = find_body(robot_body, mount.link) if mount.link in links else None
        if body is None:
            raise ConfigError(
                f"sensor {mount.name!r} is mounted on link {mount.link!r}, which this robot does not have; "
                f"its links are {sorted(links)}", field=f"robot.sensors.{mount.name}.mount.link",
            )
        element("site", body, name=site_name(mount.name), pos=mount.translation, quat=rpy_quat(mount.rpy_deg),
                size=0.01)


def imu_sensor_elements(imus: list[SensorMount]) -> list[ET.Element]:
    """<accelerometer> and <gyro> elements (for <sensor>) of each IMU, on its mount site."""
    sensors = []
    for imu in imus:
        sensors.append(element("accelerometer", name=f"{imu.name}/accelerometer", site=site_name(imu.name)))
        sensors.append(element("gyro", name=f"{imu.name}/gyro", site=site_name(imu.name)))
    return sensors


def read_imu(data: mujoco.MjData, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(linear acceleration m/s^2, angular velocity rad/s) of IMU `name`, in its own frame.

    After `mj_step` these are the values computed for the state at the start of that step.
    """
    try:
        accel = data.sensor(f"{name}/accelerometer").data
        gyro = data.sensor(f"{name}/gyro").data
    except KeyError:
        raise KeyError(f"no IMU named {name!r} in this world") from None
    return accel.copy(), gyro.copy()


def site_pose(model: mujoco.MjModel, data: mujoco.MjData, site: str) -> np.ndarray:
    """World <- site 4x4 transform (column vectors)."""
    index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
    if index < 0:
        raise KeyError(f"no site named {site!r} in this world")
    pose = np.eye(4)
    pose[:3, :3] = data.site_xmat[index].reshape(3, 3)
    pose[:3, 3] = data.site_xpos[index]
    return pose


def body_pose(model: mujoco.MjModel, data: mujoco.MjData, body: str) -> np.ndarray:
    """World <- body 4x4 transform (column vectors)."""
    index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, body)
    if index < 0:
        raise KeyError(f"no body named {body!r} in this world")
    pose = np.eye(4)
    pose[:3, :3] = data.xmat[index].reshape(3, 3)
    pose[:3, 3] = data.xpos[index]
    return pose

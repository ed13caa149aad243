"""One robot of a compiled world: where its joints, actuators, bodies and sensors sit in the MuJoCo model, and
the calls that command and read it.

A world holds one robot or several (a multi-robot run). Each robot's MJCF names carry its prefix
("<robot name>/", empty for a world's only robot), so its links, joints, sensor sites and IMUs are found by
the robot's own names here and several robots of one kind never clash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import mujoco
import numpy as np

from simulation.physics.sensors import body_pose, read_imu, site_name, site_pose
from simulation.robots.mecanum import ik_matrix
from simulation.robots.spec import RobotModel

ROLLER_PREFIX = "roller_"


class CompiledWorld(Protocol):
    """What a handle reads and writes of its world (a model.PhysicsWorld): the compiled model and its data,
    whose poses `update_kinematics` brings up to the current state."""

    model: mujoco.MjModel
    data: mujoco.MjData

    def update_kinematics(self) -> None: ...


@dataclass(frozen=True)
class StartPose:
    """Where the robot starts: position (m; z is ignored for ground robots) and heading (rad)."""

    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    yaw: float = 0.0


class RobotHandle:
    """A robot placed in `world` under MJCF name prefix `prefix`, its userdata from `userdata` on."""

    def __init__(self, world: CompiledWorld, robot: RobotModel, prefix: str, userdata: int):
        model = world.model
        self.world, self.robot, self.prefix = world, robot, prefix
        self._base_qpos = [model.jnt_qposadr[model.joint(prefix + j).id] for j in robot.base_joints]
        self._base_dof = [model.jnt_dofadr[model.joint(prefix + j).id] for j in robot.base_joints]
        self._wheels = _index([model.actuator(prefix + a).id for a in robot.wheel_actuators])
        self._actuators = _index([model.actuator(prefix + a.get("name")).id for a in robot.actuators])
        self._userdata = slice(userdata, userdata + robot.userdata_size)
        self._ik = ik_matrix()
        self._wheel_dofs = [model.jnt_dofadr[model.joint(prefix + w.joint).id] for w in robot.wheels]
        self._wheel_gains = np.array([[w.sign / w.radius, -w.sign * w.y / w.radius] for w in robot.wheels])
        self.base_body = model.body(prefix + "base_link").id
        self._joints = [
            (model.joint(j).name[len(prefix):], model.jnt_qposadr[j], model.jnt_dofadr[j]) for j in range(model.njnt)
            if model.jnt_type[j] in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
            and model.joint(j).name.startswith(prefix) and not model.joint(j).name[len(prefix):].startswith(
                ROLLER_PREFIX)
        ]

    # ------------------------------------------------------------ commands

    def set_base_twist(self, twist: np.ndarray) -> None:
        """A ground base: the twist (vx, vy, wz) in the base frame (m/s, rad/s)."""
        twist = np.asarray(twist, dtype=np.float64)
        if self.robot.drive == "joint_velocity":
            raise TypeError(f"set_base_twist drives a ground base; this robot ({self.robot.kind}) flies")
        if twist.shape != (3,) or not np.isfinite(twist).all():
            raise ValueError(f"a twist is 3 finite numbers (vx, vy, wz), got {twist}")
        if self.robot.drive == "wheels":
            self.world.data.ctrl[self._wheels] = self._ik @ twist
        else:
            self.world.data.userdata[self._userdata] = twist

    def set_joint_velocities(self, velocities: np.ndarray) -> None:
        """A flying base: the six virtual joint velocities (x, y, z m/s; roll, pitch, yaw rad/s)."""
        velocities = np.asarray(velocities, dtype=np.float64)
        if self.robot.drive != "joint_velocity":
            raise TypeError(f"set_joint_velocities drives a flying base; this robot ({self.robot.kind}) does not fly")
        if velocities.shape != (6,) or not np.isfinite(velocities).all():
            raise ValueError(f"a flying base takes 6 finite joint velocities, got {velocities}")
        self.world.data.ctrl[self._actuators] = velocities

    def write_planar_velocity(self) -> None:
        """A planar base (the lightweight TIAGo, a description robot on the ground): the commanded twist
        (userdata) as world-frame velocities of its planar joints, without vy unless it is holonomic; its wheels
        turn with it."""
        data = self.world.data
        vx, vy, wz = data.userdata[self._userdata]
        if not self.robot.holonomic:
            vy = 0.0
        yaw = data.qpos[self._base_qpos[2]]
        c, s = np.cos(yaw), np.sin(yaw)
        data.qvel[self._base_dof] = (c * vx - s * vy, s * vx + c * vy, wz)
        if self._wheel_dofs:
            data.qvel[self._wheel_dofs] = self._wheel_gains @ (vx, wz)

    def place(self, start: StartPose) -> None:
        qpos = self.world.data.qpos
        if self.robot.drive == "joint_velocity":
            qpos[self._base_qpos] = (start.x, start.y, start.z, 0.0, 0.0, start.yaw)
        elif self.robot.drive == "planar_velocity":
            qpos[self._base_qpos] = (start.x, start.y, start.yaw)
        else:
            adr = self._base_qpos[0]
            qpos[adr:adr + 2] = (start.x, start.y)  # z stays at the body's standing height
            qpos[adr + 3:adr + 7] = (np.cos(start.yaw / 2), 0.0, 0.0, np.sin(start.yaw / 2))

    # ------------------------------------------------------------ read-out

    def site(self, sensor: str) -> str:
        """The MuJoCo site of a mounted sensor."""
        return self.prefix + site_name(sensor)

    def link_pose(self, link: str) -> np.ndarray:
        """World <- link 4x4 transform."""
        if link not in self.robot.links:
            raise KeyError(f"link {link!r} is not a link of robot {self.robot.kind!r}; links: {list(self.robot.links)}")
        self.world.update_kinematics()
        return body_pose(self.world.model, self.world.data, self.prefix + link)

    def base_pose(self) -> np.ndarray:
        return self.link_pose("base_link")

    def sensor_pose(self, sensor: str) -> np.ndarray:
        """World <- sensor 4x4 transform of a mounted sensor (IMU, camera, LiDAR) by name."""
        self.world.update_kinematics()
        return site_pose(self.world.model, self.world.data, self.site(sensor))

    def base_velocity(self) -> tuple[np.ndarray, np.ndarray]:
        """(linear m/s, angular rad/s) velocity of base_link in its own frame (odometry twist)."""
        world = self.world
        world.update_kinematics()
        velocity = np.zeros(6)
        mujoco.mj_objectVelocity(world.model, world.data, mujoco.mjtObj.mjOBJ_BODY, self.base_body, velocity, 1)
        return velocity[3:].copy(), velocity[:3].copy()

    def joint_states(self) -> dict[str, tuple[float, float]]:
        """Position and velocity of each actuated or virtual joint (rollers and the free base joint excluded, as
        on the real robot's joint_states), by the robot's own joint names."""
        data = self.world.data
        return {name: (float(data.qpos[q]), float(data.qvel[v])) for name, q, v in self._joints}

    def imu(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(linear acceleration m/s^2, angular velocity rad/s) of an IMU in its own frame."""
        return read_imu(self.world.data, self.prefix + name)


def _index(ids: list[int]) -> slice | list[int]:
    """Actuator ids as a slice when contiguous: cheaper than a list index in the per-step command."""
    contiguous = ids == list(range(ids[0], ids[0] + len(ids))) if ids else True
    return slice(ids[0], ids[-1] + 1) if ids and contiguous else ids

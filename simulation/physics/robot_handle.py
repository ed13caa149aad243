"""One robot of a compiled world: where its joints, actuators, bodies and sensors sit in the MuJoCo model, and
the calls that command and read it.

Position joints (`RobotModel.position_joints`: the TIAGo's torso lift and head) are kinematic: before each step
a joint's velocity is set to cover the way to its target at no more than its speed limit, and after the step
its position is set to exactly where that velocity takes it, so it reaches a target in distance / speed limit,
rounded up to whole steps, whatever the solver did to it within the step. The targets live in MuJoCo's
userdata, so the state (and a replay) carries them.

A world holds one robot or several (a multi-robot run). Each robot's MJCF names carry its prefix
("<robot name>/", empty for a world's only robot), so its links, joints, sensor sites and IMUs are found by
the robot's own names here and several robots of one kind never clash.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import mujoco
import numpy as np

from simulation.physics.sensors import body_pose, read_imu, site_name, site_pose
from simulation.robots.mecanum import ik_matrix
from simulation.robots.spec import JointLimits, RobotModel

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
        self._targets = slice(userdata + robot.userdata_size, userdata + robot.userdata_length)
        self._position_joints = {joint.name: (index, joint) for index, joint in enumerate(robot.position_joints)}
        position_ids = [model.joint(prefix + joint.name).id for joint in robot.position_joints]
        self._position_qpos = model.jnt_qposadr[position_ids]
        self._position_dof = model.jnt_dofadr[position_ids]
        self._max_step = np.array([joint.limits.max_velocity for joint in robot.position_joints]) * model.opt.timestep
        # Where the step under way takes the position joints, and at what velocity.
        self._step_end, self._step_velocity = np.zeros(len(position_ids)), np.zeros(len(position_ids))
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

    def position_limits(self) -> dict[str, JointLimits]:
        """The limits of each position joint, by name (none for most robots)."""
        return {name: joint.limits for name, (_, joint) in self._position_joints.items()}

    def set_joint_targets(self, targets: Mapping[str, float]) -> None:
        """Send position joints to targets (rad or m); the others keep theirs. ValueError, and nothing set, for an
        unknown joint or a target that is not a finite number within the joint's limits."""
        checked = {}
        for name, target in targets.items():
            if name not in self._position_joints:
                raise ValueError(f"{name!r} is not a commandable joint of this robot ({self.robot.kind}); commandable: "
                                 f"{list(self._position_joints) or 'none'}")
            index, joint = self._position_joints[name]
            value = float(target)
            if not math.isfinite(value) or not joint.limits.lower <= value <= joint.limits.upper:
                raise ValueError(f"target {target} of {name!r} is not within its limits "
                                 f"[{joint.limits.lower}, {joint.limits.upper}]")
            checked[index] = value
        for index, value in checked.items():
            self.world.data.userdata[self._targets.start + index] = value

    def joint_targets(self) -> dict[str, float]:
        """Each position joint's target, by name."""
        targets = self.world.data.userdata[self._targets]
        return {name: float(targets[index]) for name, (index, _) in self._position_joints.items()}

    def start_joint_step(self) -> None:
        """Before a step: each position joint's velocity toward its target, at most its speed limit."""
        data, dt = self.world.data, self.world.model.opt.timestep
        position, target = data.qpos[self._position_qpos], data.userdata[self._targets]
        remaining = target - position
        reached = np.abs(remaining) <= self._max_step
        # The last step lands on the target itself (position + remaining need not round to it).
        self._step_end = np.where(reached, target, position + np.copysign(self._max_step, remaining))
        self._step_velocity = np.where(reached, remaining, np.copysign(self._max_step, remaining)) / dt
        data.qvel[self._position_dof] = self._step_velocity

    def finish_joint_step(self) -> None:
        """After a step: the position joints exactly where `start_joint_step` sent them, at the velocity it set."""
        data = self.world.data
        data.qpos[self._position_qpos] = self._step_end
        data.qvel[self._position_dof] = self._step_velocity

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
        """Put the base at `start`, and the position joints' targets where the joints start."""
        self.world.data.userdata[self._targets] = [joint.start for joint in self.robot.position_joints]
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
        # XBODY: base_link's own frame. BODY would be its inertial frame, which the compiler turns to the principal
        # axes of a description's full inertia tensor (the Husky's: forward along its z).
        mujoco.mj_objectVelocity(world.model, world.data, mujoco.mjtObj.mjOBJ_XBODY, self.base_body, velocity, 1)
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

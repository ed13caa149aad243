"""Assemble one MJCF world (environment, robot, kinematic bodies, sensors), compile it, and drive it.

`build_world` returns a `PhysicsWorld`: the compiled MjModel/MjData plus the calls the backend
needs each step (commands, kinematic poses, stepping, link and sensor poses, IMUs, state).
Physics runs at 240 Hz by default with MuJoCo's implicit-fast integrator (velocity servos are
integrated implicitly, so stiff wheel and joint servos stay stable) and the Newton solver.
"""

from __future__ import annotations

import copy
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import mujoco
import numpy as np

from core.errors import InputError
from simulation.physics.kinematic import KinematicBody, kinematic_elements, mocap_indices, set_kinematic_pose
from simulation.physics.sensors import (
    SensorMount,
    add_mount_sites,
    body_pose,
    imu_sensor_elements,
    read_imu,
    site_name,
    site_pose,
)
from simulation.physics.state import STEP_FIELDS, get_state, set_state, set_step_state
from simulation.physics.world import EnvironmentCollision, environment_elements
from simulation.robots.mecanum import ik_matrix
from simulation.robots.mjcf import CHASSIS_BIT, element, fmt
from simulation.robots.spec import RobotModel

DEFAULT_TIMESTEP = 1.0 / 240.0
# Newton converges in a few iterations on these contact sets; the caps bound the worst step.
SOLVER = {"solver": "Newton", "iterations": 20, "ls_iterations": 8, "tolerance": 1e-6, "cone": "pyramidal"}
# The lightweight TIAGo's velocity is rewritten before every step, so through a soft contact it
# would creep centimetres into a wall. Its chassis contacts use MuJoCo's direct solref form
# (-stiffness, -damping) with damping 1/timestep, which cancels the approach velocity within a step.
PLANAR_CONTACT_STIFFNESS = 20000.0  # 1/s^2
PLANAR_CONTACT_SOLIMP = (0.99, 0.999, 0.001, 0.5, 2.0)


@dataclass(frozen=True)
class StartPose:
    """Where the robot starts: position (m; z is ignored for ground robots) and heading (rad)."""

    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    yaw: float = 0.0


def build_mjcf(robot: RobotModel, environment: EnvironmentCollision | None = None,
               kinematic: list[KinematicBody] | None = None, imus: list[SensorMount] | None = None,
               frames: list[SensorMount] | None = None, timestep: float = DEFAULT_TIMESTEP) -> str:
    """The MJCF text of a world. `imus` default to the robot's body and camera IMUs; `frames` are
    other sensor mounts (cameras, LiDAR) whose poses are read back. Sensor links are checked here."""
    if not timestep > 0:
        raise ValueError(f"timestep must be > 0, got {timestep}")
    imus = [SensorMount(name, link) for name, link in robot.default_imus] if imus is None else list(imus)
    body = copy.deepcopy(robot.body)
    floor = environment.floor_height if environment is not None else 0.0
    body.set("pos", fmt((0.0, 0.0, floor + robot.base_height)))
    add_mount_sites(body, robot.links, imus + list(frames or []))
    if robot.drive == "planar_velocity":
        for geom in body.iter("geom"):
            if geom.get("contype") == str(CHASSIS_BIT):
                geom.set("solref", fmt((-PLANAR_CONTACT_STIFFNESS, -1.0 / timestep)))
                geom.set("solimp", fmt(PLANAR_CONTACT_SOLIMP))

    root = element("mujoco", model=f"grade_{robot.kind}_{robot.variant}")
    element("compiler", root, angle="radian", autolimits=True)
    element("option", root, timestep=timestep, integrator="implicitfast", **SOLVER)
    if robot.userdata_size:
        element("size", root, nuserdata=robot.userdata_size)
    asset = element("asset", root)
    worldbody = element("worldbody", root)
    env = environment if environment is not None else EnvironmentCollision(0.0, ())
    env_assets, env_geoms = environment_elements(env)
    mocap_assets, mocap_bodies = kinematic_elements(list(kinematic or []))
    asset.extend(env_assets + mocap_assets)
    worldbody.extend(env_geoms + [body] + mocap_bodies)
    if robot.actuators:
        element("actuator", root).extend(copy.deepcopy(robot.actuators))
    if imus:
        element("sensor", root).extend(imu_sensor_elements(imus))
    return ET.tostring(root, encoding="unicode")


def build_world(robot: RobotModel, start: StartPose = StartPose(), environment: EnvironmentCollision | None = None,
                kinematic: list[KinematicBody] | None = None, imus: list[SensorMount] | None = None,
                frames: list[SensorMount] | None = None, timestep: float = DEFAULT_TIMESTEP) -> PhysicsWorld:
    """Compile the world and place the robot at `start` (standing on the floor for ground robots)."""
    xml = build_mjcf(robot, environment, kinematic, imus, frames, timestep)
    try:
        model = mujoco.MjModel.from_xml_string(xml)
    except ValueError as exc:
        raise InputError(f"MuJoCo could not compile the world: {exc}", field="mjcf") from exc
    return PhysicsWorld(model, robot, start)


class PhysicsWorld:
    """A compiled world: MjModel + MjData, with the robot placed and its commands zeroed."""

    def __init__(self, model: mujoco.MjModel, robot: RobotModel, start: StartPose):
        self.model = model
        self.data = mujoco.MjData(model)
        self.robot = robot
        self.imu_names = tuple(
            model.sensor(i).name.removesuffix("/gyro") for i in range(model.nsensor)
            if model.sensor(i).type == mujoco.mjtSensor.mjSENS_GYRO
        )
        self._base_qpos = [model.jnt_qposadr[model.joint(j).id] for j in robot.base_joints]
        self._base_dof = [model.jnt_dofadr[model.joint(j).id] for j in robot.base_joints]
        wheels = [model.actuator(a).id for a in robot.wheel_actuators]
        contiguous = wheels == list(range(wheels[0], wheels[0] + len(wheels))) if wheels else True
        # A slice is cheaper than a list index in the per-step command.
        self._wheels = slice(wheels[0], wheels[-1] + 1) if wheels and contiguous else wheels
        self._ik = ik_matrix()
        self._mocap = mocap_indices(model)
        self._base_body = model.body("base_link").id
        self._joints = [
            (model.joint(j).name, model.jnt_qposadr[j], model.jnt_dofadr[j]) for j in range(model.njnt)
            if model.jnt_type[j] in (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
            and not model.joint(j).name.startswith("roller_")
        ]
        self._place(start)
        mujoco.mj_forward(model, self.data)
        self._sensor_time = float(self.data.time)
        self._kinematics_stale = False
        self.initial_state = self.get_state()

    # ------------------------------------------------------------ commands and stepping

    def set_base_twist(self, twist: np.ndarray) -> None:
        """TIAGo: command the base twist (vx, vy, wz) in the base frame (m/s, rad/s)."""
        twist = np.asarray(twist, dtype=np.float64)
        if self.robot.kind != "tiago_omni":
            raise TypeError(f"set_base_twist drives a TIAGo; this world's robot is {self.robot.kind!r}")
        if twist.shape != (3,) or not np.isfinite(twist).all():
            raise ValueError(f"a twist is 3 finite numbers (vx, vy, wz), got {twist}")
        if self.robot.drive == "wheels":
            self.data.ctrl[self._wheels] = self._ik @ twist
        else:
            self.data.userdata[:3] = twist

    def set_joint_velocities(self, velocities: np.ndarray) -> None:
        """UAV: command the six virtual joint velocities (x, y, z m/s; roll, pitch, yaw rad/s)."""
        velocities = np.asarray(velocities, dtype=np.float64)
        if self.robot.drive != "joint_velocity":
            raise TypeError(f"set_joint_velocities drives the UAV; this world's robot is {self.robot.kind!r}")
        if velocities.shape != (6,) or not np.isfinite(velocities).all():
            raise ValueError(f"the UAV takes 6 finite joint velocities, got {velocities}")
        self.data.ctrl[:6] = velocities

    def set_kinematic_pose(self, body_name: str, position: np.ndarray, quat_wxyz: np.ndarray) -> None:
        """Pose a human ("human/<name>") or flying object ("object/<name>") for the next step."""
        if body_name not in self._mocap:
            raise KeyError(f"no kinematic body named {body_name!r} in this world; have {sorted(self._mocap)}")
        set_kinematic_pose(self.data, self._mocap[body_name], position, quat_wxyz)

    def step(self, n: int = 1) -> None:
        """Advance n physics steps."""
        for _ in range(n):
            if self.robot.drive == "planar_velocity":
                self._write_planar_velocity()
            self._sensor_time = float(self.data.time)
            mujoco.mj_step(self.model, self.data)
        self._kinematics_stale = n > 0 or self._kinematics_stale

    @property
    def time(self) -> float:
        """Simulation time of the current state, s."""
        return float(self.data.time)

    @property
    def sensor_time(self) -> float:
        """The time IMU readings refer to: the start of the last step (MuJoCo evaluates sensors with
        the state and commands a step starts from), or the current time before any step."""
        return self._sensor_time

    # ------------------------------------------------------------ read-out

    def link_pose(self, link: str) -> np.ndarray:
        """World <- link 4x4 transform."""
        if link not in self.robot.links:
            raise KeyError(f"link {link!r} is not a link of robot {self.robot.kind!r}; links: {list(self.robot.links)}")
        self._update_kinematics()
        return body_pose(self.model, self.data, link)

    def body_pose(self, body: str) -> np.ndarray:
        """World <- body 4x4 transform of any body (a link, "human/<name>", "object/<name>")."""
        self._update_kinematics()
        return body_pose(self.model, self.data, body)

    def base_pose(self) -> np.ndarray:
        """World <- base_link 4x4 transform."""
        return self.link_pose("base_link")

    def sensor_pose(self, sensor: str) -> np.ndarray:
        """World <- sensor 4x4 transform of a mounted sensor (IMU, camera, LiDAR) by name."""
        self._update_kinematics()
        return site_pose(self.model, self.data, site_name(sensor))

    def base_velocity(self) -> tuple[np.ndarray, np.ndarray]:
        """(linear m/s, angular rad/s) velocity of base_link in its own frame (odometry twist)."""
        self._update_kinematics()
        velocity = np.zeros(6)
        mujoco.mj_objectVelocity(self.model, self.data, mujoco.mjtObj.mjOBJ_BODY, self._base_body, velocity, 1)
        return velocity[3:].copy(), velocity[:3].copy()

    def joint_states(self) -> dict[str, tuple[float, float]]:
        """Position and velocity of each actuated or virtual robot joint (rollers and the free base
        joint excluded, as on the real robot's joint_states)."""
        return {name: (float(self.data.qpos[q]), float(self.data.qvel[v])) for name, q, v in self._joints}

    def imu(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(linear acceleration m/s^2, angular velocity rad/s) of an IMU in its own frame, at
        `sensor_time`."""
        return read_imu(self.data, name)

    def get_state(self) -> dict[str, np.ndarray]:
        """The full integration state (see simulation.physics.state)."""
        return get_state(self.data)

    def step_state(self) -> dict[str, np.ndarray]:
        """The compact state logged at every step for teleport replay (simulation.physics.state.STEP_FIELDS);
        the kinematic bodies are left out: they follow from the time."""
        return {name: np.array(getattr(self.data, name), dtype=np.float64, copy=True) for name in STEP_FIELDS}

    def teleport(self, time: float, state: dict[str, np.ndarray], applied: dict[str, np.ndarray] | None = None,
                 source: str = "state") -> None:
        """Put the world in a logged step state at `time` without integrating. With `applied` (the ctrl and
        userdata a step started from `state` ran with, i.e. those logged with the state it led to), the
        sensors are evaluated as that step evaluated them (mj_step's forward pass), so IMU readings come
        out as recorded; without, only positions and velocities are updated (for rendering)."""
        set_step_state(self.data, state, applied, source)
        self.data.time = time
        if applied is not None:
            if self.robot.drive == "planar_velocity":
                self._write_planar_velocity()
            self._sensor_time = time
            mujoco.mj_forward(self.model, self.data)
            self._kinematics_stale = False
        else:
            self._kinematics_stale = True

    def set_state(self, state: dict[str, np.ndarray], source: str = "state") -> None:
        """Restore a state from get_state; `source` names it in errors (e.g. the states.npz path)."""
        set_state(self.model, self.data, state, source)
        self._sensor_time = float(self.data.time)
        self._kinematics_stale = False

    # ------------------------------------------------------------ internals

    def _place(self, start: StartPose) -> None:
        qpos = self.data.qpos
        if self.robot.variant == "uav":
            qpos[self._base_qpos] = (start.x, start.y, start.z, 0.0, 0.0, start.yaw)
        elif self.robot.variant == "lightweight":
            qpos[self._base_qpos] = (start.x, start.y, start.yaw)
        else:
            adr = self._base_qpos[0]
            qpos[adr:adr + 2] = (start.x, start.y)  # z stays at the body's standing height
            qpos[adr + 3:adr + 7] = (np.cos(start.yaw / 2), 0.0, 0.0, np.sin(start.yaw / 2))

    def _update_kinematics(self) -> None:
        # mj_step leaves poses and body velocities at the state the step started from; recompute
        # them for the current state (this does not change the simulation).
        if self._kinematics_stale:
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_comPos(self.model, self.data)
            mujoco.mj_comVel(self.model, self.data)
            self._kinematics_stale = False

    def _write_planar_velocity(self) -> None:
        vx, vy, wz = self.data.userdata[:3]
        yaw = self.data.qpos[self._base_qpos[2]]
        c, s = np.cos(yaw), np.sin(yaw)
        self.data.qvel[self._base_dof] = (c * vx - s * vy, s * vx + c * vy, wz)

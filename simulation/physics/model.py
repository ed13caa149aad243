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
from simulation.physics.environment import EnvironmentCollision, environment_elements
from simulation.physics.kinematic import KinematicBody, kinematic_elements, mocap_indices, set_kinematic_pose
from simulation.physics.robot_handle import RobotHandle, StartPose
from simulation.physics.sensors import SensorMount, add_mount_sites, body_pose, imu_sensor_elements
from simulation.physics.state import STEP_FIELDS, get_state, set_state, set_step_state
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
class PlacedRobot:
    """One robot of a world: its model and start, its sensor mounts (`imus` default to the robot's body and
    camera IMUs; `frames` are cameras and LiDARs whose poses are read back), and the prefix of its MJCF names
    ("<name>/"; empty for a world's only robot)."""

    model: RobotModel
    start: StartPose = StartPose()
    imus: list[SensorMount] | None = None
    frames: list[SensorMount] | None = None
    prefix: str = ""


# MJCF attributes that name an element or refer to one by name: what a robot's prefix goes in front of.
NAME_ATTRIBUTES = ("name", "joint", "site", "body", "mesh", "material", "texture", "class", "childclass")
# Robot i of a multi-robot world collides with the others through its own bit, 1 << (ROBOT_BIT_SHIFT + i), above
# the collision classes of simulation.robots.mjcf.COLLISION; its own parts keep not touching each other.
ROBOT_BIT_SHIFT = 5


def build_mjcf(robot: RobotModel, environment: EnvironmentCollision | None = None,
               kinematic: list[KinematicBody] | None = None, imus: list[SensorMount] | None = None,
               frames: list[SensorMount] | None = None, timestep: float = DEFAULT_TIMESTEP) -> str:
    """The MJCF text of a world. `imus` default to the robot's body and camera IMUs; `frames` are
    other sensor mounts (cameras, LiDAR) whose poses are read back. Sensor links are checked here."""
    return build_fleet_mjcf([PlacedRobot(robot, imus=imus, frames=frames)], environment, kinematic, timestep)


def build_fleet_mjcf(robots: list[PlacedRobot], environment: EnvironmentCollision | None = None,
                     kinematic: list[KinematicBody] | None = None, timestep: float = DEFAULT_TIMESTEP) -> str:
    """The MJCF text of a world with one or more robots (each robot's names under its prefix)."""
    if not timestep > 0:
        raise ValueError(f"timestep must be > 0, got {timestep}")
    floor = environment.floor_height if environment is not None else 0.0
    bodies, actuators, sensors, assets, defaults = [], [], [], [], []
    for index, placed in enumerate(robots):
        robot = placed.model
        imus = [SensorMount(name, link) for name, link in robot.default_imus] if placed.imus is None \
            else list(placed.imus)
        body = copy.deepcopy(robot.body)
        body.set("pos", fmt((0.0, 0.0, floor + robot.base_height)))
        add_mount_sites(body, robot.links, imus + list(placed.frames or []))
        if robot.drive == "planar_velocity":
            for geom in body.iter("geom"):
                if geom.get("contype") == str(CHASSIS_BIT):
                    geom.set("solref", fmt((-PLANAR_CONTACT_STIFFNESS, -1.0 / timestep)))
                    geom.set("solimp", fmt(PLANAR_CONTACT_SOLIMP))
        if len(robots) > 1:
            _collide_with_other_robots(body, index, len(robots))
        own = [body, *copy.deepcopy(robot.actuators), *imu_sensor_elements(imus)]
        shared = copy.deepcopy([*robot.assets, *robot.defaults])
        _prefix_names(own + shared, placed.prefix)
        assets += shared[:len(robot.assets)]
        defaults += shared[len(robot.assets):]
        bodies.append(body)
        actuators += own[1:1 + len(robot.actuators)]
        sensors += own[1 + len(robot.actuators):]

    first = robots[0].model
    root = element("mujoco", model=f"grade_{first.kind}_{first.variant}" if len(robots) == 1 else "grade_fleet")
    element("compiler", root, angle="radian", autolimits=True)
    element("option", root, timestep=timestep, integrator="implicitfast", **SOLVER)
    if defaults:
        element("default", root).extend(defaults)
    userdata = sum(placed.model.userdata_length for placed in robots)
    if userdata:
        element("size", root, nuserdata=userdata)
    asset = element("asset", root)
    worldbody = element("worldbody", root)
    env = environment if environment is not None else EnvironmentCollision(0.0, ())
    env_assets, env_geoms = environment_elements(env)
    mocap_assets, mocap_bodies = kinematic_elements(list(kinematic or []))
    asset.extend(env_assets + mocap_assets + assets)
    worldbody.extend(env_geoms + bodies + mocap_bodies)
    if actuators:
        element("actuator", root).extend(actuators)
    if sensors:
        element("sensor", root).extend(sensors)
    return ET.tostring(root, encoding="unicode")


def _prefix_names(elements: list[ET.Element], prefix: str) -> None:
    if not prefix:
        return
    for top in elements:
        for node in top.iter():
            for key in NAME_ATTRIBUTES:
                if node.get(key) is not None:
                    node.set(key, prefix + node.get(key))


def _collide_with_other_robots(body: ET.Element, index: int, count: int) -> None:
    """Robot `index` of `count`: its chassis geoms also touch the other robots' chassis."""
    own = 1 << (ROBOT_BIT_SHIFT + index)
    others = sum(1 << (ROBOT_BIT_SHIFT + i) for i in range(count) if i != index)
    for geom in body.iter("geom"):
        if geom.get("contype") == str(CHASSIS_BIT):
            geom.set("contype", fmt(CHASSIS_BIT | own))
            geom.set("conaffinity", fmt(int(geom.get("conaffinity")) | others))


def build_world(robot: RobotModel, start: StartPose = StartPose(), environment: EnvironmentCollision | None = None,
                kinematic: list[KinematicBody] | None = None, imus: list[SensorMount] | None = None,
                frames: list[SensorMount] | None = None, timestep: float = DEFAULT_TIMESTEP) -> PhysicsWorld:
    """Compile the world and place the robot at `start` (standing on the floor for ground robots)."""
    return build_fleet([PlacedRobot(robot, start, imus, frames)], environment, kinematic, timestep)


def build_fleet(robots: list[PlacedRobot], environment: EnvironmentCollision | None = None,
                kinematic: list[KinematicBody] | None = None, timestep: float = DEFAULT_TIMESTEP) -> PhysicsWorld:
    """Compile a world with one or more robots, each placed at its start."""
    xml = build_fleet_mjcf(robots, environment, kinematic, timestep)
    try:
        model = mujoco.MjModel.from_xml_string(xml)
    except ValueError as exc:
        raise InputError(f"MuJoCo could not compile the world: {exc}", field="mjcf") from exc
    return PhysicsWorld(model, robots)


class PhysicsWorld:
    """A compiled world: MjModel + MjData, with its robots placed and their commands zeroed. The robot calls
    (commands, link and sensor poses, IMUs) act on the first robot; `handles` holds every robot's."""

    def __init__(self, model: mujoco.MjModel, robots: list[PlacedRobot]):
        self.model = model
        self.data = mujoco.MjData(model)
        self.imu_names = tuple(
            model.sensor(i).name.removesuffix("/gyro") for i in range(model.nsensor)
            if model.sensor(i).type == mujoco.mjtSensor.mjSENS_GYRO
        )
        self._mocap = mocap_indices(model)
        offsets = np.cumsum([0] + [placed.model.userdata_length for placed in robots])
        self.handles = [RobotHandle(self, placed.model, placed.prefix, int(offset))
                        for placed, offset in zip(robots, offsets, strict=False)]
        self._planar = [handle for handle in self.handles if handle.robot.drive == "planar_velocity"]
        self._jointed = [handle for handle in self.handles if handle.robot.position_joints]
        self._first = self.handles[0]
        self.robot = self._first.robot
        for handle, placed in zip(self.handles, robots, strict=True):
            handle.place(placed.start)
        mujoco.mj_forward(model, self.data)
        self._sensor_time = float(self.data.time)
        self._kinematics_stale = False
        self._clock_table = np.zeros(0)
        self.initial_state = self.get_state()

    # ------------------------------------------------------------ commands and stepping

    def set_base_twist(self, twist: np.ndarray) -> None:
        """TIAGo: command the base twist (vx, vy, wz) in the base frame (m/s, rad/s)."""
        self._first.set_base_twist(twist)

    def set_joint_velocities(self, velocities: np.ndarray) -> None:
        """UAV: command the six virtual joint velocities (x, y, z m/s; roll, pitch, yaw rad/s)."""
        self._first.set_joint_velocities(velocities)

    def set_kinematic_pose(self, body_name: str, position: np.ndarray, quat_wxyz: np.ndarray) -> None:
        """Pose a human ("human/<name>") or flying object ("object/<name>") for the next step."""
        if body_name not in self._mocap:
            raise KeyError(f"no kinematic body named {body_name!r} in this world; have {sorted(self._mocap)}")
        set_kinematic_pose(self.data, self._mocap[body_name], position, quat_wxyz)

    def step(self, n: int = 1) -> None:
        """Advance n physics steps."""
        for _ in range(n):
            for handle in self._planar:
                handle.write_planar_velocity()
            for handle in self._jointed:
                handle.start_joint_step()
            self._sensor_time = float(self.data.time)
            mujoco.mj_step(self.model, self.data)
            for handle in self._jointed:
                handle.finish_joint_step()
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
        return self._first.link_pose(link)

    def body_pose(self, body: str) -> np.ndarray:
        """World <- body 4x4 transform of any body (a link, "human/<name>", "object/<name>")."""
        self.update_kinematics()
        return body_pose(self.model, self.data, body)

    def base_pose(self) -> np.ndarray:
        """World <- base_link 4x4 transform."""
        return self._first.base_pose()

    def sensor_pose(self, sensor: str) -> np.ndarray:
        """World <- sensor 4x4 transform of a mounted sensor (IMU, camera, LiDAR) by name."""
        return self._first.sensor_pose(sensor)

    def base_velocity(self) -> tuple[np.ndarray, np.ndarray]:
        """(linear m/s, angular rad/s) velocity of base_link in its own frame (odometry twist)."""
        return self._first.base_velocity()

    def joint_states(self) -> dict[str, tuple[float, float]]:
        """Position and velocity of each actuated or virtual robot joint (rollers and the free base
        joint excluded, as on the real robot's joint_states)."""
        return self._first.joint_states()

    def imu(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(linear acceleration m/s^2, angular velocity rad/s) of an IMU in its own frame, at
        `sensor_time`."""
        return self._first.imu(name)

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
        self.data.time = self._clock(round(time / self.model.opt.timestep))
        if applied is not None:
            for handle in self._planar:
                handle.write_planar_velocity()
            for handle in self._jointed:
                handle.start_joint_step()
            self._sensor_time = time
            mujoco.mj_forward(self.model, self.data)
            self._kinematics_stale = False
        else:
            self._kinematics_stale = True

    def _clock(self, step: int) -> float:
        """MuJoCo's own time after `step` steps: mj_step adds the timestep to it each step, so it drifts from
        step * timestep by rounding, and a checkpoint taken after a teleport must hold the same value."""
        if step >= len(self._clock_table):
            self._clock_table = np.add.accumulate(np.full(2 * step + 1, self.model.opt.timestep))
        return float(self._clock_table[step - 1]) if step > 0 else 0.0

    def set_state(self, state: dict[str, np.ndarray], source: str = "state") -> None:
        """Restore a state from get_state; `source` names it in errors (e.g. the states.npz path)."""
        set_state(self.model, self.data, state, source)
        self._sensor_time = float(self.data.time)
        self._kinematics_stale = False

    # ------------------------------------------------------------ internals

    def update_kinematics(self) -> None:
        # mj_step leaves poses and body velocities at the state the step started from; recompute
        # them for the current state (this does not change the simulation).
        if self._kinematics_stale:
            mujoco.mj_kinematics(self.model, self.data)
            mujoco.mj_comPos(self.model, self.data)
            mujoco.mj_comVel(self.model, self.data)
            self._kinematics_stale = False

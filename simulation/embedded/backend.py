"""The embedded backend: MuJoCo physics + the Embree ray-cast renderer behind `simulation.backend.Backend`.

Time is counted in physics steps (t = steps * timestep, so schedules never drift with float sums).
After each step the humans' capsules and the flying objects are posed for the new time, and, with
randomization during the run, the lights of the new epoch are applied; rendering and the LiDAR pose
the deforming and moving meshes for the current time. Everything else is a pure function of the step
count, so the state (`get_state`) is the MuJoCo state plus the step count and the light settings.

IMU readings, as on `PhysicsWorld`, refer to the state the last step started from (MuJoCo evaluates
sensors there), or to the start state before the first step; `set_state` restores them as recorded.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from asset_converters import joint_world_transforms
from core.config import ExperimentConfig, RenderConfig
from core.errors import ConfigError, InputError
from core.formats.class_map import read_class_map
from core.formats.placement import animation_time
from simulation.backend import ActorStates, HumanInfo, ImuReading, InstanceInfo, LidarScan
from simulation.cycles import renderer_for
from simulation.embedded.randomization import Randomizer
from simulation.embedded.scene_file import read_scene_file
from simulation.embedded.scene_loader import EmbeddedScene, load_scene
from simulation.embedded.sensors import (
    BODY_TO_OPTICAL,
    CameraSensor,
    LidarSensor,
    check_mount_links,
    predicted_pose,
)
from simulation.physics import PhysicsWorld, SensorMount, build_world
from simulation.physics.kinematic import mocap_indices
from simulation.render import EnvironmentMap, Frame, MeshState, PointLight, load_environment, render_frame
from simulation.robots import robot_model
from simulation.robots.mjcf import LinkEdge
from simulation.robots.scurve import follower_for

KINEMATIC_CHUNK = 240  # steps of human/object poses computed in one vectorised call
PHYSICS_PREFIX = "physics."
PROFILE_PREFIX = "velocity_profile."
STATE_KEYS = ("step", "imu_step", "sensors", "lights.intensity", "lights.color", "randomization.epoch")


class EmbeddedBackend:
    """A scene.usda loaded for one experiment config (robot, sensors, physics rate, randomization, seed).

    Bad input fails here, before any step: unknown sensor links and bad cameras (ConfigError naming the
    field), a scene placed for another robot, missing or incomplete packages (InputError naming the
    scene file and prim). `hidden` prim paths (humans, flying objects) are left out of the scene.
    """

    def __init__(self, config: ExperimentConfig, scene: str | Path, hidden: frozenset[str] = frozenset()):
        robot = robot_model(config.robot.kind, config.robot.tiago.model)
        sensors = config.robot.sensors
        check_mount_links(robot, sensors)
        exposure = config.render.exposure
        self._cameras = {c.name: CameraSensor.from_config(c, i, exposure) for i, c in enumerate(sensors.cameras)}
        self._lidar = LidarSensor.from_config(sensors.lidar) if sensors.lidar else None
        self._randomizer = Randomizer(config.simulation.randomization, config.seed)
        scene_file = read_scene_file(scene)
        if scene_file.robot_kind != config.robot.kind:
            raise ConfigError(f"the scene {scene_file.path} was placed for robot {scene_file.robot_kind!r}, "
                              f"not {config.robot.kind!r}", field="robot.kind")
        environment = _environment(config.render)  # before the scene, so that a bad image fails at once
        self.scene: EmbeddedScene = load_scene(scene_file, self._randomizer,
                                               read_class_map(config.recording.class_map), hidden)
        self.scene.render.background = np.asarray(config.render.background, dtype=np.float32)
        self.scene.render.environment = environment
        imus = [SensorMount.from_config(i.name, i.mount) for i in sensors.imus] or None
        frames = [SensorMount.from_config(c.name, c.mount) for c in sensors.cameras]
        frames += [SensorMount.from_config(sensors.lidar.name, sensors.lidar.mount)] if sensors.lidar else []
        self._timestep = 1.0 / config.simulation.physics_hz
        self.physics: PhysicsWorld = build_world(robot, scene_file.robot_start, self.scene.collision,
                                                 self.scene.kinematic_bodies(), imus, frames, self._timestep)
        mocap = mocap_indices(self.physics.model)
        self._mocap = np.array([mocap[b.body_name] for b in self.scene.kinematic_bodies()], dtype=np.int64)
        self._chunk_start, self._chunk = -1, (np.zeros((0, 0, 3)), np.zeros((0, 0, 4)))
        self._steps, self._imu_step = 0, 0
        self._command = np.zeros(6 if config.robot.kind == "uav" else 3)
        tiago = config.robot.tiago
        self._profile = (follower_for(tiago) if config.robot.kind == "tiago_omni" and tiago.velocity_profile == "s_curve"
                         else None)
        self._frames: dict[str, tuple[int, Frame]] = {}  # camera -> (step, frame): one render per step
        self._joint_world = {}  # id(HumanModel) -> (frames, J, 4, 4) joint transforms in the package frame
        self._epoch = self._randomizer.epoch(0.0)
        self.scene.render.lights = self._randomizer.lights(self.scene.lights, self._epoch)
        self._pose_kinematic_bodies()
        self.physics.set_state(self.physics.get_state())  # contacts and sensors of the posed start
        self._cycles = renderer_for(config.render, self.scene.render, config.seed)  # None: ray-cast RGB

    # ------------------------------------------------------------ time and stepping

    @property
    def time(self) -> float:
        return self._steps * self._timestep

    @property
    def timestep(self) -> float:
        return self._timestep

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            if self._profile is not None:
                self.physics.set_base_twist(self._profile.advance(self._timestep))
            self.physics.step()
            self._imu_step = self._steps
            self._steps += 1
            self._pose_kinematic_bodies()
            epoch = self._randomizer.epoch(self.time)
            if epoch != self._epoch:
                self._epoch = epoch
                self.scene.render.lights = self._randomizer.lights(self.scene.lights, epoch)

    def _kinematic_poses(self) -> tuple[np.ndarray, np.ndarray]:
        """Positions (B, 3) and orientations (B, 4 w x y z) of the kinematic bodies at the current step,
        from a chunk of steps computed in one vectorised call."""
        offset = self._steps - self._chunk_start
        if self._chunk_start < 0 or not 0 <= offset < KINEMATIC_CHUNK:
            self._chunk_start, offset = self._steps, 0
            times = (self._steps + np.arange(KINEMATIC_CHUNK)) * self._timestep
            self._chunk = self.scene.kinematic_poses(times)
        positions, quats = self._chunk
        return positions[offset], quats[offset]

    def _pose_kinematic_bodies(self) -> None:
        if not len(self._mocap):
            return
        positions, quats = self._kinematic_poses()
        self.physics.data.mocap_pos[self._mocap] = positions
        self.physics.data.mocap_quat[self._mocap] = quats

    # ------------------------------------------------------------ robot

    def set_robot_command(self, command: np.ndarray) -> None:
        if self.physics.robot.kind == "uav":
            self.physics.set_joint_velocities(command)
        elif self._profile is not None:
            self._profile.command(command)  # the twist reaches the base through the S-curve, step by step
        else:
            self.physics.set_base_twist(command)
        self._command = np.array(command, dtype=np.float64)

    def robot_command(self) -> np.ndarray:
        return self._command.copy()

    def robot_pose(self) -> np.ndarray:
        return self.physics.base_pose()

    def robot_velocity(self) -> tuple[np.ndarray, np.ndarray]:
        return self.physics.base_velocity()

    def link_tree(self) -> list[LinkEdge]:
        return self.physics.robot.link_edges()

    def link_pose(self, link: str) -> np.ndarray:
        return self.physics.link_pose(link)

    def sensor_pose(self, name: str) -> np.ndarray:
        return self.physics.sensor_pose(name)

    def joint_states(self) -> dict[str, tuple[float, float]]:
        return self.physics.joint_states()

    # ------------------------------------------------------------ sensors

    def camera_names(self) -> list[str]:
        return list(self._cameras)

    def camera(self, name: str) -> CameraSensor:
        if name not in self._cameras:
            raise KeyError(f"no camera named {name!r}; cameras: {list(self._cameras)}")
        return self._cameras[name]

    def camera_pose(self, name: str) -> np.ndarray:
        """World <- optical frame (z forward, x right, y down) of a camera."""
        self.camera(name)
        return self.physics.sensor_pose(name) @ BODY_TO_OPTICAL

    def render(self, name: str) -> Frame:
        """The camera's frame at the current time; asking twice in one step renders once (the explorer
        and the recorder share the frame; treat it as read-only)."""
        sensor = self.camera(name)
        cached = self._frames.get(name)
        if cached is not None and cached[0] == self._steps:
            return cached[1]
        t = self.time
        next_t = next_pose = None
        if sensor.flow:
            next_t = t + 1.0 / sensor.rate_hz
            next_pose = predicted_pose(self.physics, name, next_t - t) @ BODY_TO_OPTICAL
        states = self.scene.states(t, next_t)
        options = sensor.options if self._cycles is None else replace(sensor.options, rgb=False)
        frame = render_frame(self.scene.render, sensor.camera, self.camera_pose(name), states, options, next_pose)
        if self._cycles is not None and sensor.options.rgb:
            frame.rgb = self._cycles_rgb(name, sensor, frame.camera.pose, states)
        self._frames[name] = (self._steps, frame)
        return frame

    def _cycles_rgb(self, name: str, sensor: CameraSensor, pose: np.ndarray,
                    states: dict[str, MeshState]) -> np.ndarray:
        """The camera's RGB from Cycles. With motion blur the shutter closes render.cycles.motion_blur s later,
        with the camera moved at its current velocity and the humans and objects where they will be."""
        shutter = self._cycles.settings.motion_blur
        close = None
        if shutter > 0:
            close = (predicted_pose(self.physics, name, shutter) @ BODY_TO_OPTICAL,
                     self.scene.states(self.time + shutter))
        return self._cycles.render(sensor.camera, pose, states, sensor.options.exposure, close)

    def imu(self, name: str) -> ImuReading:
        accel, gyro = self.physics.imu(name)
        return ImuReading(self._imu_step * self._timestep, accel, gyro)

    def lidar(self) -> LidarScan:
        if self._lidar is None:
            raise KeyError("no LiDAR is configured (robot.sensors.lidar)")
        render = self.scene.render
        render.set_frame(self.scene.states(self.time))
        return self._lidar.scan(render.embree, self.physics.sensor_pose(self._lidar.name), self.time)

    # ------------------------------------------------------------ scene information

    def humans(self) -> list[HumanInfo]:
        return [HumanInfo(h.name, h.prim.asset_id, tuple(h.model.animation.joint_names)) for h in self.scene.humans]

    def human_joints(self) -> dict[str, np.ndarray]:
        joints = {}
        for human in self.scene.humans:
            world = self._joint_world.get(id(human.model))
            if world is None:
                world = self._joint_world[id(human.model)] = joint_world_transforms(human.model.animation)
            frame = int(human.model.frame(human.prim.schedule, self.time))
            local = world[frame, :, :3, 3]
            joints[human.name] = local @ human.prim.pose[:3, :3].T + human.prim.pose[:3, 3]
        return joints

    def human_vertices(self) -> dict[str, np.ndarray]:
        return {h.name: h.vertices(self.time) @ h.prim.pose[:3, :3].T + h.prim.pose[:3, 3] for h in self.scene.humans}

    def actor_states(self) -> ActorStates:
        t = self.time
        humans, objects = self.scene.humans, self.scene.objects
        # Kinematic bodies are ordered humans, then objects; an object's body pose is its package frame's.
        positions, quats = self._kinematic_poses()
        first = len(humans)
        return ActorStates(
            human_names=tuple(h.name for h in humans),
            animation_time=np.array([animation_time(h.prim.schedule, t) for h in humans], dtype=np.float64),
            object_names=tuple(o.name for o in objects),
            object_position=np.array(positions[first:], dtype=np.float64).reshape(-1, 3),
            object_quat_wxyz=np.array(quats[first:], dtype=np.float64).reshape(-1, 4),
        )

    def light_settings(self) -> tuple[np.ndarray, np.ndarray]:
        lights = self.scene.render.lights
        return (np.array([light.intensity for light in lights], dtype=np.float64).reshape(-1),
                np.array([light.color for light in lights], dtype=np.float64).reshape(-1, 3))

    def instances(self) -> dict[int, InstanceInfo]:
        return dict(self.scene.instances)

    def semantic_classes(self) -> dict[str, int]:
        return dict(self.scene.semantic_classes)

    def lights(self) -> list[PointLight]:
        """The lights as currently rendered (after randomization)."""
        return list(self.scene.render.lights)

    # ------------------------------------------------------------ state

    def get_state(self) -> dict[str, np.ndarray]:
        state = {PHYSICS_PREFIX + key: value for key, value in self.physics.get_state().items()}
        intensity, color = self.light_settings()
        state |= {
            "step": np.array(self._steps, dtype=np.int64), "imu_step": np.array(self._imu_step, dtype=np.int64),
            # MuJoCo's sensor values as last evaluated: set_state would recompute them for the restored state.
            "sensors": self.physics.data.sensordata.copy(),
            "lights.intensity": intensity,
            "lights.color": color,
            "randomization.epoch": np.array(self._epoch, dtype=np.int64),
        }
        if self._profile is not None:
            state |= {PROFILE_PREFIX + key: value for key, value in self._profile.get_state().items()}
        return state

    def set_state(self, state: dict[str, np.ndarray], source: str = "state") -> None:
        for key in STATE_KEYS:
            if key not in state:
                raise InputError("missing state field", source, key)
        sensors = np.asarray(state["sensors"], dtype=np.float64)
        if sensors.shape != self.physics.data.sensordata.shape:
            raise InputError(f"shape {sensors.shape} does not match this world's {self.physics.data.sensordata.shape}",
                             source, "sensors")
        count = len(self.scene.lights)
        intensity = np.asarray(state["lights.intensity"], dtype=np.float64)
        color = np.asarray(state["lights.color"], dtype=np.float64)
        if intensity.shape != (count,) or color.shape != (count, 3):
            raise InputError(f"light arrays have shapes {intensity.shape}, {color.shape}; this scene has {count} "
                             "lights", source, "lights")
        physics = {key[len(PHYSICS_PREFIX):]: value for key, value in state.items() if key.startswith(PHYSICS_PREFIX)}
        if self._profile is not None:
            profile = {key[len(PROFILE_PREFIX):]: value for key, value in state.items()
                       if key.startswith(PROFILE_PREFIX)}
            missing = sorted({"start", "target", "change", "params", "elapsed"} - set(profile))
            if missing:
                raise InputError(f"missing S-curve state {missing} (the run used robot.tiago.velocity_profile "
                                 "'s_curve')", source, PROFILE_PREFIX + missing[0])
            self._profile.set_state(profile)
        self.physics.set_state(physics, source)
        self._frames.clear()
        self.physics.data.sensordata[:] = sensors
        self._steps, self._imu_step = int(state["step"]), int(state["imu_step"])
        self._epoch = int(state["randomization.epoch"])
        self.set_lights(intensity, color)

    def step_state(self) -> dict[str, np.ndarray]:
        return self.physics.step_state()

    def teleport(self, step: int, state: dict[str, np.ndarray], previous: dict[str, np.ndarray] | None = None,
                 source: str = "state") -> None:
        if previous is not None and step > 0:
            # The step that led here: its forward pass, with the commands it ran with and the humans and
            # objects where they were, gives the IMU readings the recorder takes now.
            self._steps = step - 1
            self._pose_kinematic_bodies()
            self.physics.teleport(self.time, previous, applied=state, source=source)
        self._steps, self._imu_step = step, max(step - 1, 0)
        self._pose_kinematic_bodies()
        self.physics.teleport(self.time, state, source=source)
        self._frames.clear()
        epoch = self._randomizer.epoch(self.time)
        if epoch != self._epoch:
            self._epoch = epoch
            self.scene.render.lights = self._randomizer.lights(self.scene.lights, epoch)

    def set_lights(self, intensity: np.ndarray, color: np.ndarray) -> None:
        self.scene.render.lights = [replace(light, intensity=float(i), color=tuple(np.asarray(c, float).tolist()))
                                    for light, i, c in zip(self.scene.lights, intensity, color, strict=True)]


def _environment(config: RenderConfig) -> EnvironmentMap | None:
    """render.environment's image, or None; InputError naming the file and the key."""
    if config.environment is None:
        return None
    try:
        return load_environment(config.environment, config.environment_strength)
    except InputError as exc:
        raise InputError(exc.message, config.environment, "render.environment") from exc

"""The embedded backend: MuJoCo physics + the Embree ray-cast renderer behind `simulation.backend.Backend`.

Time is counted in physics steps (t = steps * timestep, so schedules never drift with float sums).
After each step the humans' capsules and the flying objects are posed for the new time, and, with
randomization during the run, the lights of the new epoch are applied; rendering and the LiDAR pose
the deforming and moving meshes for the current time. Everything else is a pure function of the step
count, so the state (`get_state`) is the MuJoCo state plus the step count and the light settings.

IMU readings, as on `PhysicsWorld`, refer to the state the last step started from (MuJoCo evaluates
sensors there), or to the start state before the first step; `set_state` restores them as recorded.

Frames render on render threads while the caller steps on (`render_async`): what a frame shows (poses, the
humans' meshes, the lights) is taken when it is asked for, and up to FRAMES_IN_FLIGHT frames render at once,
each posing its meshes in a render scene buffer of its own, so a frame's pixels never depend on when it ran.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from asset_converters import joint_world_transforms
from core.config import ExperimentConfig, RenderConfig, RobotConfig
from core.errors import ConfigError, InputError
from core.formats.class_map import read_class_map
from core.formats.placement import animation_time
from simulation.backend import ActorStates, HumanInfo, ImuReading, InstanceInfo, LidarScan
from simulation.cycles import renderer_for
from simulation.embedded.randomization import Randomizer
from simulation.embedded.robot_meshes import RobotTrack
from simulation.embedded.scene_file import SceneFile, read_scene_file
from simulation.embedded.scene_loader import EmbeddedScene, load_scene
from simulation.embedded.sensors import (
    BODY_TO_OPTICAL,
    CameraSensor,
    LidarSensor,
    check_mount_links,
    predicted_pose,
)
from simulation.physics import PhysicsWorld, PlacedRobot, SensorMount, StartPose, build_fleet
from simulation.physics.kinematic import mocap_indices
from simulation.physics.robot_handle import RobotHandle
from simulation.render import (
    DepthImage,
    EnvironmentMap,
    Frame,
    MeshState,
    PointLight,
    load_environment,
    render_frame,
)
from simulation.robots import RobotModel, robot_model
from simulation.robots.mjcf import LinkEdge
from simulation.robots.scurve import SCurveFollower, follower_for

KINEMATIC_CHUNK = 240  # steps of human/object poses computed in one vectorised call
# Frames rendering at once: while one traces its last tiles the next poses its meshes and queues its tiles, so the
# tile workers never wait for a frame's serial parts (and the robot steps on meanwhile).
FRAMES_IN_FLIGHT = 2
LIDAR_BUFFER = FRAMES_IN_FLIGHT  # the LiDAR poses the meshes in a buffer of its own, beside the frames in flight
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
        self._randomizer = Randomizer(config.simulation.randomization, config.seed)
        scene_file = read_scene_file(scene)
        placements = _robot_placements(config, scene_file)
        slots = [_RobotSlot.from_config(name, key, robot, config.render)
                 for name, key, robot, _ in config.robot_entries()]
        tracks = [RobotTrack(slot.name, slot.model) for slot in slots] if config.multi_robot else []
        environment = _environment(config.render)  # before the scene, so that a bad image fails at once
        self.scene: EmbeddedScene = load_scene(scene_file, self._randomizer,
                                               read_class_map(config.recording.class_map), hidden, tracks)
        self.scene.render.background = np.asarray(config.render.background, dtype=np.float32)
        self.scene.render.environment = environment
        self._timestep = 1.0 / config.simulation.physics_hz
        prefix = (lambda name: f"{name}/") if config.multi_robot else (lambda name: "")
        placed = [PlacedRobot(slot.model, start, slot.imus, slot.frames, prefix(slot.name))
                  for slot, start in zip(slots, placements, strict=True)]
        self.physics: PhysicsWorld = build_fleet(placed, self.scene.collision, self.scene.kinematic_bodies(),
                                                 self._timestep)
        for slot, handle, track in zip(slots, self.physics.handles, tracks or [None] * len(slots), strict=True):
            slot.handle, slot.track = handle, track
        self._views = {slot.name: RobotView(self, slot) for slot in slots}
        self._first = next(iter(self._views.values()))
        mocap = mocap_indices(self.physics.model)
        self._mocap = np.array([mocap[b.body_name] for b in self.scene.kinematic_bodies()], dtype=np.int64)
        self._chunk_start, self._chunk = -1, (np.zeros((0, 0, 3)), np.zeros((0, 0, 4)))
        self._steps, self._imu_step = 0, 0
        self._profiles = [slot for slot in slots if slot.profile is not None]
        # (robot, camera) -> (step, frame): one render per step, made on the render thread while the caller steps on
        self._frames: dict[tuple[str, str], tuple[int, Future[Frame], Future[DepthImage]]] = {}
        self._render_threads = ThreadPoolExecutor(FRAMES_IN_FLIGHT, thread_name_prefix="render")
        self._rendering: deque[Future[Frame]] = deque()  # oldest first
        self._rendered = 0
        self._depth_wanted: set[tuple[str, str]] = set()  # (robot, camera) whose next frame's depth is awaited
        self._joint_world = {}  # id(HumanModel) -> (frames, J, 4, 4) joint transforms in the package frame
        self._epoch = self._randomizer.epoch(0.0)
        self.scene.render.lights = self._randomizer.lights(self.scene.lights, self._epoch)
        self._pose_kinematic_bodies()
        self.physics.set_state(self.physics.get_state())  # contacts and sensors of the posed start
        self._cycles = renderer_for(config.render, self.scene.render, config.seed)  # None: ray-cast RGB

    # ------------------------------------------------------------ robots

    def robot_names(self) -> list[str]:
        """The robots of the run, in config order."""
        return list(self._views)

    def robot(self, name: str | None = None) -> RobotView:
        """Robot `name` (default: the first): the Backend calls with its robot calls acting on that robot."""
        if name is None:
            return self._first
        if name not in self._views:
            raise KeyError(f"no robot named {name!r}; robots: {list(self._views)}")
        return self._views[name]

    # ------------------------------------------------------------ time and stepping

    @property
    def time(self) -> float:
        return self._steps * self._timestep

    @property
    def timestep(self) -> float:
        return self._timestep

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            for slot in self._profiles:
                slot.handle.set_base_twist(slot.profile.advance(self._timestep))
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

    # ------------------------------------------------------------ the first robot (Backend protocol)

    def set_robot_command(self, command: np.ndarray) -> None:
        self._first.set_robot_command(command)

    def robot_command(self) -> np.ndarray:
        return self._first.robot_command()

    def robot_pose(self) -> np.ndarray:
        return self._first.robot_pose()

    def robot_velocity(self) -> tuple[np.ndarray, np.ndarray]:
        return self._first.robot_velocity()

    def link_tree(self) -> list[LinkEdge]:
        return self._first.link_tree()

    def link_pose(self, link: str) -> np.ndarray:
        return self._first.link_pose(link)

    def sensor_pose(self, name: str) -> np.ndarray:
        return self._first.sensor_pose(name)

    def joint_states(self) -> dict[str, tuple[float, float]]:
        return self._first.joint_states()

    def camera_names(self) -> list[str]:
        return self._first.camera_names()

    def camera(self, name: str) -> CameraSensor:
        return self._first.camera(name)

    def camera_pose(self, name: str) -> np.ndarray:
        """World <- optical frame (z forward, x right, y down) of a camera."""
        return self._first.camera_pose(name)

    def render_async(self, name: str) -> Future[Frame]:
        return self._first.render_async(name)

    def depth(self, name: str) -> DepthImage:
        return self._first.depth(name)

    def expect_depth(self, name: str) -> None:
        self._first.expect_depth(name)

    def render(self, name: str) -> Frame:
        """The camera's frame at the current time; asking twice in one step renders once (the explorer
        and the recorder share the frame; treat it as read-only)."""
        return self._first.render(name)

    def imu(self, name: str) -> ImuReading:
        return self._first.imu(name)

    def lidar(self) -> LidarScan:
        return self._first.lidar()

    # ------------------------------------------------------------ rendering for a robot

    def _render(self, slot: _RobotSlot, name: str) -> tuple[Future[Frame], Future[DepthImage]]:
        """The camera's frame at the current time and its depth (ready first), rendering on a render thread: what
        it depends on (poses, the humans' meshes, the lights) is taken now; a step renders a camera once, later
        requests share the frame."""
        sensor = slot.camera(name)
        cached = self._frames.get((slot.name, name))
        if cached is not None and cached[0] == self._steps:
            return cached[1], cached[2]
        t = self.time
        next_t = next_pose = None
        if sensor.flow:
            next_t = t + 1.0 / sensor.rate_hz
            next_pose = predicted_pose(slot.handle, name, next_t - t) @ BODY_TO_OPTICAL
        states = self._states(slot, t, next_t)
        pose = slot.handle.sensor_pose(name) @ BODY_TO_OPTICAL
        lights = self.scene.render.lights
        depth = Future()
        depth_first = (slot.name, name) in self._depth_wanted
        self._depth_wanted.discard((slot.name, name))
        if self._cycles is None:
            future = self._render_threads.submit(render_frame, self.scene.render, sensor.camera, pose, states,
                                                 sensor.options, next_pose, lights, self._next_buffer(), depth,
                                                 depth_first)
            self._rendering.append(future)
        else:  # Cycles poses its scene from the current state too: rendered here, before the caller steps on
            self.finish_rendering()
            frame = render_frame(self.scene.render, sensor.camera, pose, states, replace(sensor.options, rgb=False),
                                 next_pose, lights, depth_ready=depth)
            if sensor.options.rgb:
                frame.rgb = self._cycles_rgb(slot, name, sensor, frame.camera.pose, states)
            future = Future()
            future.set_result(frame)
        self._frames[(slot.name, name)] = (self._steps, future, depth)
        return future, depth

    def _next_buffer(self) -> int:
        """The render scene buffer of the next frame (each frame in flight poses its meshes in one of its own): the
        oldest frame in flight's, once that frame is done."""
        if len(self._rendering) == FRAMES_IN_FLIGHT:
            wait([self._rendering.popleft()])
        self._rendered += 1
        return (self._rendered - 1) % FRAMES_IN_FLIGHT

    def finish_rendering(self) -> None:
        """Wait for the frames on the render threads (their errors are their consumers' to raise)."""
        wait(self._rendering)
        self._rendering.clear()

    def _states(self, slot: _RobotSlot, t: float, next_t: float | None = None) -> dict[str, MeshState]:
        """Every dynamic mesh at `t` (and `next_t`) as robot `slot`'s sensors see them: the other robots where
        they are (moving on at their current velocity until `next_t`), its own body out of sight."""
        states = self.scene.states(t, next_t)
        for view in self._views.values() if slot.track is not None else ():
            other = view.slot
            if other is slot:
                states[other.track.name] = MeshState(pose=PARKED_POSE, next_pose=PARKED_POSE)
                continue
            pose = other.handle.base_pose()
            ahead = None if next_t is None else _moved(pose, *other.handle.base_velocity(), next_t - t)
            states[other.track.name] = MeshState(pose=pose, next_pose=ahead)
        return states

    def _cycles_rgb(self, slot: _RobotSlot, name: str, sensor: CameraSensor, pose: np.ndarray,
                    states: dict[str, MeshState]) -> np.ndarray:
        """The camera's RGB from Cycles. With motion blur the shutter closes render.cycles.motion_blur s later,
        with the camera moved at its current velocity and the humans and objects where they will be."""
        shutter = self._cycles.settings.motion_blur
        close = None
        if shutter > 0:
            close = (predicted_pose(slot.handle, name, shutter) @ BODY_TO_OPTICAL,
                     self._states(slot, self.time + shutter))
        return self._cycles.render(sensor.camera, pose, states, sensor.options.exposure, close)

    def _lidar(self, slot: _RobotSlot) -> LidarScan:
        if slot.lidar is None:
            raise KeyError(f"no LiDAR is configured ({slot.key}.sensors.lidar)")
        render = self.scene.render
        render.set_frame(self._states(slot, self.time), buffer=LIDAR_BUFFER)
        return slot.lidar.scan(render.embree_of(LIDAR_BUFFER), slot.handle.sensor_pose(slot.lidar.name), self.time)

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
        for slot in self._profiles:
            state |= {slot.profile_prefix + key: value for key, value in slot.profile.get_state().items()}
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
        for slot in self._profiles:
            prefix = slot.profile_prefix
            profile = {key[len(prefix):]: value for key, value in state.items()
                       if key.startswith(prefix) and "/" not in key[len(prefix):]}
            missing = sorted({"start", "target", "change", "params", "elapsed"} - set(profile))
            if missing:
                raise InputError(f"missing S-curve state {missing} (the run used {slot.key}.tiago.velocity_profile "
                                 "'s_curve')", source, prefix + missing[0])
            slot.profile.set_state(profile)
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


# Where a robot's own body is put for its own sensors: far beyond any camera's or LiDAR's range, below the world.
PARKED_POSE = np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, -1.0e4], [0.0, 0.0, 0.0, 1.0]])


def _moved(pose: np.ndarray, linear: np.ndarray, angular: np.ndarray, dt: float) -> np.ndarray:
    """`pose` moved on for `dt` s at a body-frame velocity (linear m/s, angular rad/s)."""
    ahead = pose.copy()
    ahead[:3, :3] = pose[:3, :3] @ Rotation.from_rotvec(angular * dt).as_matrix()
    ahead[:3, 3] += pose[:3, :3] @ linear * dt
    return ahead


@dataclass
class _RobotSlot:
    """One robot of the backend: its config and model, sensors, command, velocity profile, physics handle and (in
    a multi-robot run) the mesh the others see."""

    name: str
    key: str  # its config key: "robot" or "robots.<i>"
    model: RobotModel
    cameras: dict[str, CameraSensor]
    lidar: LidarSensor | None
    imus: list[SensorMount] | None
    frames: list[SensorMount]
    command: np.ndarray
    profile: SCurveFollower | None
    profile_prefix: str
    handle: RobotHandle | None = None
    track: RobotTrack | None = None

    @classmethod
    def from_config(cls, name: str, key: str, robot: RobotConfig, render: RenderConfig) -> _RobotSlot:
        model = robot_model(robot.kind, robot.tiago.model)
        sensors = robot.sensors
        check_mount_links(model, sensors)
        cameras = {c.name: CameraSensor.from_config(c, i, render) for i, c in enumerate(sensors.cameras)}
        frames = [SensorMount.from_config(c.name, c.mount) for c in sensors.cameras]
        frames += [SensorMount.from_config(sensors.lidar.name, sensors.lidar.mount)] if sensors.lidar else []
        tiago = robot.tiago
        profile = follower_for(tiago) if robot.kind == "tiago_omni" and tiago.velocity_profile == "s_curve" else None
        return cls(name, key, model, cameras, LidarSensor.from_config(sensors.lidar) if sensors.lidar else None,
                   [SensorMount.from_config(i.name, i.mount) for i in sensors.imus] or None, frames,
                   np.zeros(6 if robot.kind == "uav" else 3), profile,
                   PROFILE_PREFIX if key == "robot" else f"{PROFILE_PREFIX}{name}/")

    def camera(self, name: str) -> CameraSensor:
        if name not in self.cameras:
            raise KeyError(f"no camera named {name!r}; cameras: {list(self.cameras)}")
        return self.cameras[name]


class RobotView:
    """One robot of an `EmbeddedBackend`: the robot calls of the Backend protocol (commands, poses, cameras, IMUs,
    LiDAR) act on this robot; everything else (time, stepping, humans, state) is the backend's."""

    def __init__(self, backend: EmbeddedBackend, slot: _RobotSlot):
        self._backend, self.slot = backend, slot

    def __getattr__(self, name: str):
        return getattr(self._backend, name)

    @property
    def name(self) -> str:
        return self.slot.name

    @property
    def time(self) -> float:
        return self._backend.time

    @property
    def timestep(self) -> float:
        return self._backend.timestep

    def set_robot_command(self, command: np.ndarray) -> None:
        slot = self.slot
        if slot.model.kind == "uav":
            slot.handle.set_joint_velocities(command)
        elif slot.profile is not None:
            slot.profile.command(command)  # the twist reaches the base through the S-curve, step by step
        else:
            slot.handle.set_base_twist(command)
        slot.command = np.array(command, dtype=np.float64)

    def robot_command(self) -> np.ndarray:
        return self.slot.command.copy()

    def robot_pose(self) -> np.ndarray:
        return self.slot.handle.base_pose()

    def robot_velocity(self) -> tuple[np.ndarray, np.ndarray]:
        return self.slot.handle.base_velocity()

    def link_tree(self) -> list[LinkEdge]:
        return self.slot.model.link_edges()

    def link_pose(self, link: str) -> np.ndarray:
        return self.slot.handle.link_pose(link)

    def sensor_pose(self, name: str) -> np.ndarray:
        return self.slot.handle.sensor_pose(name)

    def joint_states(self) -> dict[str, tuple[float, float]]:
        return self.slot.handle.joint_states()

    def camera_names(self) -> list[str]:
        return list(self.slot.cameras)

    def camera(self, name: str) -> CameraSensor:
        return self.slot.camera(name)

    def camera_pose(self, name: str) -> np.ndarray:
        """World <- optical frame (z forward, x right, y down) of a camera."""
        self.slot.camera(name)
        return self.slot.handle.sensor_pose(name) @ BODY_TO_OPTICAL

    def render_async(self, name: str) -> Future[Frame]:
        """The camera's frame at the current time, rendered once per step on a render thread."""
        return self._backend._render(self.slot, name)[0]

    def render(self, name: str) -> Frame:
        """The camera's frame at the current time, rendered once per step."""
        return self.render_async(name).result()

    def depth(self, name: str) -> DepthImage:
        """The camera's depth at the current time, as soon as its frame's ground truth is done."""
        return self._backend._render(self.slot, name)[1].result()

    def expect_depth(self, name: str) -> None:
        """The camera's next frame renders its depth first (render_frame's depth_first)."""
        self.slot.camera(name)
        self._backend._depth_wanted.add((self.slot.name, name))

    def imu(self, name: str) -> ImuReading:
        accel, gyro = self.slot.handle.imu(name)
        backend = self._backend
        return ImuReading(backend._imu_step * backend.timestep, accel, gyro)

    def lidar(self) -> LidarScan:
        return self._backend._lidar(self.slot)

    def robot(self, name: str | None = None) -> RobotView:
        return self._backend.robot(name)


def _robot_placements(config: ExperimentConfig, scene: SceneFile) -> list[StartPose]:
    """Each configured robot's start from the scene, which must have been placed for the same robots."""
    entries = config.robot_entries()
    wanted = [(name if config.multi_robot else None, robot.kind) for name, _, robot, _ in entries]
    placed = [(robot.name, robot.kind) for robot in scene.robots]
    if wanted != placed:
        if not config.multi_robot and len(placed) == 1:
            raise ConfigError(f"the scene {scene.path} was placed for robot {placed[0][1]!r}, not "
                              f"{wanted[0][1]!r}", field="robot.kind")
        raise ConfigError(f"the scene {scene.path} was placed for robots {placed}, not {wanted}", field="robots")
    return [robot.start for robot in scene.robots]

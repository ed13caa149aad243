"""The embedded world: MuJoCo physics + the Embree ray-cast renderer behind `simulation.backend.World`, with its
robots (robot.py) behind `simulation.backend.Robot`.

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
from dataclasses import replace
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from core.assets.skinning import joint_world_transforms
from core.config import ExperimentConfig, RenderConfig
from core.errors import ConfigError, InputError
from core.formats.class_map import read_class_map
from core.formats.placement import animation_time
from simulation.backend import ActorStates, HumanInfo, InstanceInfo, LidarScan
from simulation.cycles import renderer_for
from simulation.embedded.randomization import Randomizer
from simulation.embedded.robot import EmbeddedRobot
from simulation.embedded.robot_meshes import RobotTrack
from simulation.embedded.scene import Scene, load_scene
from simulation.embedded.sensors import BODY_TO_OPTICAL, CameraSensor, LidarSensor, predicted_pose
from simulation.physics import PhysicsWorld, PlacedRobot, StartPose, build_fleet
from simulation.physics.kinematic import mocap_indices
from simulation.render import (
    DepthImage,
    EnvironmentMap,
    Frame,
    MeshState,
    PointLight,
    RenderScene,
    load_environment,
    render_frame,
)

KINEMATIC_CHUNK = 240  # steps of human/object poses computed in one vectorised call
# Frames rendering at once: while one traces its last tiles the next poses its meshes and queues its tiles, so the
# tile workers never wait for a frame's serial parts (and the robot steps on meanwhile).
FRAMES_IN_FLIGHT = 2
LIDAR_BUFFER = FRAMES_IN_FLIGHT  # the LiDAR poses the meshes in a buffer of its own, beside the frames in flight
PHYSICS_PREFIX = "physics."
STATE_KEYS = ("step", "imu_step", "sensors", "lights.intensity", "lights.color", "randomization.epoch")


class EmbeddedWorld:
    """A scene.usda loaded for one experiment config (robots, sensors, physics rate, randomization, seed), with
    its robots (`robots`, `robot(name)`): physics, time, the humans and flying objects, lights and state here,
    each robot's own calls on its `EmbeddedRobot`.

    Bad input fails here, before any step: unknown sensor links and bad cameras (ConfigError naming the
    field), a scene placed for another robot, missing or incomplete packages (InputError naming the
    scene file and prim). `hidden` prim paths (humans, flying objects) are left out of the scene.
    """

    def __init__(self, config: ExperimentConfig, scene: str | Path, hidden: frozenset[str] = frozenset()):
        self._randomizer = Randomizer(config.simulation.randomization, config.seed)
        robots = [EmbeddedRobot.from_config(name, key, robot, config.render)
                  for name, key, robot, _ in config.robot_entries()]
        tracks = [RobotTrack(robot.name, robot.model) for robot in robots] if config.multi_robot else []
        environment = _environment(config.render)  # before the scene, so that a bad image fails at once
        self.scene: Scene = load_scene(scene, self._randomizer, read_class_map(config.recording.class_map), hidden,
                                       tracks)
        placements = _robot_placements(config, self.scene)
        # The ray caster's acceleration structure; Cycles' Blender scene is made from its meshes (renderer_for).
        self.render_scene: RenderScene = self.scene.render_scene(config.render.background, environment)
        self._timestep = 1.0 / config.simulation.physics_hz
        prefix = (lambda name: f"{name}/") if config.multi_robot else (lambda name: "")
        placed = [PlacedRobot(robot.model, start, robot.imu_mounts, robot.mounts, prefix(robot.name))
                  for robot, start in zip(robots, placements, strict=True)]
        self.physics: PhysicsWorld = build_fleet(placed, self.scene.collision, self.scene.kinematic_bodies(),
                                                 self._timestep)
        for robot, handle, track in zip(robots, self.physics.handles, tracks or [None] * len(robots), strict=True):
            robot.world, robot.handle, robot.track = self, handle, track
        self.robots: dict[str, EmbeddedRobot] = {robot.name: robot for robot in robots}
        mocap = mocap_indices(self.physics.model)
        self._mocap = np.array([mocap[b.body_name] for b in self.scene.kinematic_bodies()], dtype=np.int64)
        self._chunk_start, self._chunk = -1, (np.zeros((0, 0, 3)), np.zeros((0, 0, 4)))
        self._steps, self._imu_step = 0, 0
        self._profiles = [robot for robot in robots if robot.profile is not None]
        # (robot, camera) -> (step, frame): one render per step, made on the render thread while the caller steps on
        self._frames: dict[tuple[str, str], tuple[int, Future[Frame], Future[DepthImage]]] = {}
        self._render_threads = ThreadPoolExecutor(FRAMES_IN_FLIGHT, thread_name_prefix="render")
        self._rendering: deque[Future[Frame]] = deque()  # oldest first
        self._rendered = 0
        self._depth_wanted: set[tuple[str, str]] = set()  # (robot, camera) whose next frame's depth is awaited
        self._joint_world = {}  # id(HumanModel) -> (frames, J, 4, 4) joint transforms in the package frame
        self._epoch = self._randomizer.epoch(0.0)
        self.render_scene.lights = self._randomizer.lights(self.scene.lights, self._epoch)
        self._pose_kinematic_bodies()
        self.physics.set_state(self.physics.get_state())  # contacts and sensors of the posed start
        self._cycles = renderer_for(config.render, self.render_scene, config.seed)  # None: ray-cast RGB

    # ------------------------------------------------------------ robots

    def robot_names(self) -> list[str]:
        """The robots of the run, in config order."""
        return list(self.robots)

    def robot(self, name: str | None = None) -> EmbeddedRobot:
        """Robot `name` (default: the first)."""
        if name is None:
            return next(iter(self.robots.values()))
        if name not in self.robots:
            raise KeyError(f"no robot named {name!r}; robots: {list(self.robots)}")
        return self.robots[name]

    # ------------------------------------------------------------ time and stepping

    @property
    def time(self) -> float:
        return self._steps * self._timestep

    @property
    def timestep(self) -> float:
        return self._timestep

    @property
    def imu_time(self) -> float:
        """The time the IMUs read: the state the last step started from (the start state before any step)."""
        return self._imu_step * self._timestep

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            for robot in self._profiles:
                robot.handle.set_base_twist(robot.profile.advance(self._timestep))
            self.physics.step()
            self._imu_step = self._steps
            self._steps += 1
            self._pose_kinematic_bodies()
            epoch = self._randomizer.epoch(self.time)
            if epoch != self._epoch:
                self._epoch = epoch
                self.render_scene.lights = self._randomizer.lights(self.scene.lights, epoch)

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

    # ------------------------------------------------------------ a robot's sensors (EmbeddedRobot calls these)

    def camera_frame(self, robot: EmbeddedRobot, name: str) -> tuple[Future[Frame], Future[DepthImage]]:
        """A camera's frame at the current time and its depth (ready first), rendering on a render thread: what
        it depends on (poses, the humans' meshes, the lights) is taken now; a step renders a camera once, later
        requests share the frame."""
        sensor = robot.camera(name)
        cached = self._frames.get((robot.name, name))
        if cached is not None and cached[0] == self._steps:
            return cached[1], cached[2]
        t = self.time
        next_t = next_pose = None
        if sensor.flow:
            next_t = t + 1.0 / sensor.rate_hz
            next_pose = predicted_pose(robot.handle, name, next_t - t) @ BODY_TO_OPTICAL
        states = self._states(robot, t, next_t)
        pose = robot.handle.sensor_pose(name) @ BODY_TO_OPTICAL
        lights = self.render_scene.lights
        depth = Future()
        depth_first = (robot.name, name) in self._depth_wanted
        self._depth_wanted.discard((robot.name, name))
        if self._cycles is None:
            future = self._render_threads.submit(render_frame, self.render_scene, sensor.camera, pose, states,
                                                 sensor.options, next_pose, lights, self._next_buffer(), depth,
                                                 depth_first)
            self._rendering.append(future)
        else:  # Cycles poses its scene from the current state too: rendered here, before the caller steps on
            self.finish_rendering()
            frame = render_frame(self.render_scene, sensor.camera, pose, states, replace(sensor.options, rgb=False),
                                 next_pose, lights, depth_ready=depth)
            if sensor.options.rgb:
                frame.rgb = self._cycles_rgb(robot, name, sensor, frame.camera.pose, states)
            future = Future()
            future.set_result(frame)
        self._frames[(robot.name, name)] = (self._steps, future, depth)
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

    def _states(self, robot: EmbeddedRobot, t: float, next_t: float | None = None) -> dict[str, MeshState]:
        """Every dynamic mesh at `t` (and `next_t`) as `robot`'s sensors see them: the other robots where
        they are (moving on at their current velocity until `next_t`), its own body out of sight."""
        states = self.scene.states(t, next_t)
        for other in self.robots.values() if robot.track is not None else ():
            if other is robot:
                states[other.track.name] = MeshState(pose=PARKED_POSE, next_pose=PARKED_POSE)
                continue
            pose = other.handle.base_pose()
            ahead = None if next_t is None else _moved(pose, *other.handle.base_velocity(), next_t - t)
            states[other.track.name] = MeshState(pose=pose, next_pose=ahead)
        return states

    def _cycles_rgb(self, robot: EmbeddedRobot, name: str, sensor: CameraSensor, pose: np.ndarray,
                    states: dict[str, MeshState]) -> np.ndarray:
        """The camera's RGB from Cycles. With motion blur the shutter closes render.cycles.motion_blur s later,
        with the camera moved at its current velocity and the humans and objects where they will be."""
        shutter = self._cycles.settings.motion_blur
        close = None
        if shutter > 0:
            close = (predicted_pose(robot.handle, name, shutter) @ BODY_TO_OPTICAL,
                     self._states(robot, self.time + shutter))
        return self._cycles.render(sensor.camera, pose, states, sensor.options.exposure, close)

    def expect_depth(self, robot: EmbeddedRobot, name: str) -> None:
        """The next frame of `robot`'s camera `name` renders its depth first (render_frame's depth_first)."""
        self._depth_wanted.add((robot.name, name))

    def lidar_scan(self, robot: EmbeddedRobot, lidar: LidarSensor) -> LidarScan:
        """A sweep of `robot`'s LiDAR `lidar` at the current time, seeing the other robots but not itself."""
        render = self.render_scene
        render.set_frame(self._states(robot, self.time), buffer=LIDAR_BUFFER)
        return lidar.scan(render.embree_of(LIDAR_BUFFER), robot.handle.sensor_pose(lidar.name), self.time)

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
        lights = self.render_scene.lights
        return (np.array([light.intensity for light in lights], dtype=np.float64).reshape(-1),
                np.array([light.color for light in lights], dtype=np.float64).reshape(-1, 3))

    def instances(self) -> dict[int, InstanceInfo]:
        return dict(self.scene.instances)

    def semantic_classes(self) -> dict[str, int]:
        return dict(self.scene.semantic_classes)

    def lights(self) -> list[PointLight]:
        """The lights as currently rendered (after randomization)."""
        return list(self.render_scene.lights)

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
        for robot in self._profiles:
            state |= {robot.profile_prefix + key: value for key, value in robot.profile.get_state().items()}
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
        for robot in self._profiles:
            prefix = robot.profile_prefix
            profile = {key[len(prefix):]: value for key, value in state.items()
                       if key.startswith(prefix) and "/" not in key[len(prefix):]}
            missing = sorted({"start", "target", "change", "params", "elapsed"} - set(profile))
            if missing:
                raise InputError(f"missing S-curve state {missing} (the run used {robot.key}.tiago.velocity_profile "
                                 "'s_curve')", source, prefix + missing[0])
            robot.profile.set_state(profile)
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
            self.render_scene.lights = self._randomizer.lights(self.scene.lights, epoch)

    def set_lights(self, intensity: np.ndarray, color: np.ndarray) -> None:
        self.render_scene.lights = [replace(light, intensity=float(i), color=tuple(np.asarray(c, float).tolist()))
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


def _robot_placements(config: ExperimentConfig, scene: Scene) -> list[StartPose]:
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

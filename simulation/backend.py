"""The backend protocol (architecture.md §5): what the recorder and replay ask of a simulator.

A backend loads a composed scene (`scene.usda` and the asset packages it references) for one
experiment config as a `World`, which steps physics at `simulation.physics_hz`, moves the humans and flying
objects, and gets/sets its complete state so a recorded run can be replayed; each of its robots is a `Robot`
(`world.robot(name)`), which takes the robot's commands, renders its cameras into `simulation.render.Frame`s
and reads its IMUs and LiDAR (in a multi-robot run the other robots are obstacles its sensors see). The
embedded backend (MuJoCo + the Embree ray caster) implements both; an Isaac Sim backend implements the same
calls.

Frames: camera poses are world <- optical frame (ROS: z forward, x right, y down); IMU readings and
LiDAR points are in their sensor's own frame (the mount's x forward, y left, z up).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from simulation.render import DepthImage, Frame
    from simulation.robots.mjcf import LinkEdge
    from simulation.robots.spec import JointLimits


@dataclass(frozen=True)
class ImuReading:
    """Specific force (m/s^2, +9.81 up at rest) and angular velocity (rad/s) in the IMU frame at `time` (s)."""

    time: float
    linear_acceleration: np.ndarray  # (3,)
    angular_velocity: np.ndarray  # (3,)


@dataclass(frozen=True)
class LidarScan:
    """One LiDAR sweep, taken at `time` (s) from the sensor pose `pose` (world <- sensor).

    `ranges` is (channels, columns) in metres, 0 where a beam returned nothing within
    [min_range, max_range]; rows go from the lowest to the highest beam, columns by increasing azimuth.
    `points` (N, 3) are the returns in the sensor frame, row-major over (channel, column); `ring` (N,)
    holds each point's channel and `intensity` (N,) is 0 (the ray caster has no reflectance model).
    """

    time: float
    pose: np.ndarray  # (4, 4)
    elevations: np.ndarray  # (channels,) rad
    azimuths: np.ndarray  # (columns,) rad, about the sensor's z from its x axis
    ranges: np.ndarray  # (channels, columns) float32
    points: np.ndarray  # (N, 3) float32
    ring: np.ndarray  # (N,) uint16
    intensity: np.ndarray  # (N,) float32


@dataclass(frozen=True)
class InstanceInfo:
    """One entry of instances.json: what an instance id in the instance images stands for."""

    prim_path: str  # in scene.usda
    semantic_class: str | None  # None: unlabelled (semantic id 0)
    semantic_id: int
    asset_id: str  # the asset package's id
    kind: str  # "environment" | "human" | "object"
    label: str | None = None  # the asset's own label, which the class map resolved to semantic_class

    def as_dict(self) -> dict:
        return {"prim_path": self.prim_path, "semantic_class": self.semantic_class, "semantic_id": self.semantic_id,
                "asset_id": self.asset_id, "kind": self.kind, "label": self.label}


@dataclass(frozen=True)
class HumanInfo:
    """A placed human: its prim in scene.usda, its asset package id and its skeleton's joint names."""

    prim_path: str
    asset_id: str
    joint_names: tuple[str, ...]


@dataclass(frozen=True)
class ActorStates:
    """Where the moving things are at one time: each human's animation clip time (s) and each flying
    object's pose, in `humans()` / object order (states.npz)."""

    human_names: tuple[str, ...]
    animation_time: np.ndarray  # (H,) s
    object_names: tuple[str, ...]
    object_position: np.ndarray  # (O, 3)
    object_quat_wxyz: np.ndarray  # (O, 4)


@runtime_checkable
class Robot(Protocol):
    """One robot of a `World`: its body, sensors and drive. See the module notes for frames and units."""

    @property
    def name(self) -> str:
        """Its name in a multi-robot run (config order), the robot kind's default name otherwise."""

    @property
    def world(self) -> World:
        """The world it lives in (time, stepping, humans, state)."""

    def set_command(self, command: np.ndarray) -> None:
        """UAV: six joint velocities (x, y, z m/s; roll, pitch, yaw rad/s). TIAGo: base twist (vx, vy, wz)."""

    def command(self) -> np.ndarray:
        """The command last set (zeros before any), applied by the next steps."""

    def commandable_joints(self) -> dict[str, JointLimits]:
        """The joints `set_joint_positions` moves, by name, with their limits: position range (rad or m) and the
        speed they move at (rad/s or m/s). The TIAGo's torso_lift_joint, head_1_joint (pan) and head_2_joint
        (tilt; positive looks up), with the real TIAGo++'s limits; none for the UAV and description robots."""

    def set_joint_positions(self, targets: Mapping[str, float]) -> None:
        """Send commandable joints to position targets (the others keep theirs): from the next step on, each moves
        straight to its target at its speed limit, reaching it after distance / speed, rounded up to whole physics
        steps, and holds it. The targets are part of the state (logged, replayed). ValueError, and nothing set,
        for an unknown joint name or a target that is not finite or not within the joint's range: the caller
        clips."""

    def joint_targets(self) -> dict[str, float]:
        """The commandable joints' targets, by name: the positions they move to or hold (where they start before
        any `set_joint_positions`)."""

    def pose(self) -> np.ndarray:
        """World <- base_link 4x4 transform."""

    def velocity(self) -> tuple[np.ndarray, np.ndarray]:
        """(linear m/s, angular rad/s) velocity of base_link in its own frame (the odometry twist)."""

    def link_tree(self) -> list[LinkEdge]:
        """The TF tree of the robot's links (the links sensors can mount on): (parent, child, fixed) of every link
        but base_link, fixed when no joint moves the child relative to its parent."""

    def link_pose(self, link: str) -> np.ndarray:
        """World <- link 4x4 transform."""

    def sensor_pose(self, name: str) -> np.ndarray:
        """World <- sensor frame of a mounted IMU, LiDAR or camera (its body frame: x forward, z up)."""

    def joint_states(self) -> dict[str, tuple[float, float]]:
        """Position and velocity of each robot joint, by name."""

    def camera_names(self) -> list[str]: ...

    def camera_pose(self, name: str) -> np.ndarray:
        """World <- optical frame 4x4 transform of a camera."""

    def render(self, name: str) -> Frame:
        """Render a camera at the current time into images, boxes and camera parameters."""

    def render_async(self, name: str) -> Future[Frame]:
        """`render`, finished while the caller goes on (steps, records): the frame shows the current time;
        `result()` waits for it. A step renders a camera once, however often it is asked for."""

    def depth(self, name: str) -> DepthImage:
        """The depth image (z in the optical frame, 0 = no return) and camera of the frame `render` makes now,
        as soon as it is ready (before the frame's colour, when announced by `expect_depth`): what a robot maps
        its surroundings with."""

    def expect_depth(self, name: str) -> None:
        """Say that `depth(name)` will be asked after the next step, so that the frame made then has its depth
        ready first (a hint: the frames are the same either way)."""

    def imu(self, name: str) -> ImuReading: ...

    def lidar(self, name: str | None = None) -> LidarScan:
        """A sweep of LiDAR `name` (default: the robot's first), all beams at the current time."""


@runtime_checkable
class World(Protocol):
    """A loaded scene with its robots, stepped: physics, time, the humans and flying objects, the lights, and the
    complete state. Each robot's own calls are on its `Robot`."""

    @property
    def time(self) -> float:
        """Simulation time of the current state, s (a whole number of physics steps)."""

    @property
    def timestep(self) -> float:
        """Physics step, s."""

    def step(self, n: int = 1) -> None:
        """Advance n physics steps (robots, humans, flying objects and scheduled light changes follow)."""

    def robot_names(self) -> list[str]:
        """The robots of the run, in config order (one, or several in a multi-robot run)."""

    def robot(self, name: str | None = None) -> Robot:
        """Robot `name` (default: the first); in a multi-robot run the others are obstacles its sensors see."""

    def humans(self) -> list[HumanInfo]: ...

    def human_joints(self) -> dict[str, np.ndarray]:
        """Each human's skeleton joint positions (J, 3) in the world at the current time, by prim path."""

    def human_vertices(self) -> dict[str, np.ndarray]:
        """Each human's posed mesh vertices (V, 3) in the world at the current time, by prim path."""

    def actor_states(self) -> ActorStates: ...

    def light_settings(self) -> tuple[np.ndarray, np.ndarray]:
        """The lights as rendered now (after randomization): intensities (L,) and linear RGB colours (L, 3)."""

    def instances(self) -> dict[int, InstanceInfo]:
        """Instance id -> what it is (instances.json)."""

    def semantic_classes(self) -> dict[str, int]:
        """Semantic class -> id used in semantic images and boxes (0 is background / unlabelled)."""

    def get_state(self) -> dict[str, np.ndarray]:
        """Everything needed to resume exactly: physics, time, randomization (arrays, for states.npz)."""

    def set_state(self, state: dict[str, np.ndarray], source: str = "state") -> None:
        """Restore a state from get_state; the next frames and IMU readings match the original run bit for bit."""

    def step_state(self) -> dict[str, np.ndarray]:
        """The compact state logged at every step (states.npz `step.<key>`) for teleport replay."""

    def teleport(self, step: int, state: dict[str, np.ndarray], previous: dict[str, np.ndarray] | None = None,
                 source: str = "state") -> None:
        """Put the scene at step `step` of a log: the robots in `state` (a step_state), humans and objects where
        they are at that time, lights as the randomization sets them then. With `previous` (step - 1's
        state) the IMUs are evaluated for the step that led here first, so imu() reads what was recorded."""

    def set_lights(self, intensity: np.ndarray, color: np.ndarray) -> None:
        """Render the lights, in scene order, with these intensities (L,) and linear RGB colours (L, 3)."""

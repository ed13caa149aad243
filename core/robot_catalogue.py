"""The robot kinds GRADE simulates: one object per kind says what every stage asks of a robot, from its config.

`robot_body(config)` is that answer, a `RobotBody`: how it moves (`drive`: floating bases fly with the UAV's
controller and limits, holonomic and differential bases drive on the floor with a planar twist), its links and
the link a camera and the default IMUs sit on, the collision volume placement keeps clear at its start, and the
disc and heights the planners keep clear around it. Placement, the config checks, the planners and the drivers
read the body and never compare kind names; how each kind's MuJoCo model is built lives beside this catalogue in
`simulation.robots` (its `MODELS` holds one builder per key of `KINDS`, a test checks they match).

Adding a kind: a `Kind` subclass here with one line in `KINDS`, and its model module in `simulation/robots` with
one line in `MODELS`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from core.errors import ConfigError

if TYPE_CHECKING:
    from core.config.robots import RobotConfig
    from core.robot_description import Description

# A robot kind (config `robot.kind`, placement.json `robot.kind`): the keys of KINDS.
RobotKind = Literal["uav", "tiago_omni", "custom"]
# How a base moves: floating flies (6-DOF set points), holonomic drives any planar twist (vx, vy, wz),
# differential drives forward and turns (vy = 0; a skid-steer base is differential).
Drive = Literal["floating", "holonomic", "differential"]
BASE_LINK = "base_link"

# The UAV: a frame box of these half sizes (arms and propellers), the camera's link ahead of it.
UAV_FRAME_HALF_SIZE = (0.235, 0.235, 0.055)
# m kept beyond a flying robot's disc: its disc fits its frame's corners exactly, its position loop lags the carrot
# point and cuts corners by about a decimetre, and a person's collision capsule reaches a little beyond the body
# the camera sees. A ground base's disc around its corners leaves room off its front and sides already.
FLYING_CLEARANCE = 0.15
# The TIAGo++ Omni's chassis half extents; the head tops out below TIAGO_HEIGHT even with the torso fully raised.
TIAGO_CHASSIS_HALF_XY = (0.33, 0.28)
TIAGO_HEIGHT = 1.5
# The diameter its chassis corners sweep turning on the spot: the volume placement keeps clear at its start, so
# that it can turn there (its camera has not seen what stands right behind it).
TIAGO_REACH = 2 * math.hypot(*TIAGO_CHASSIS_HALF_XY)
TIAGO_WHEEL_RADIUS = 0.0762  # base_link's origin is the centre of its wheel axles


@dataclass(frozen=True)
class RobotBody:
    """What a robot is to the stages around the physics (module notes)."""

    kind: RobotKind
    drive: Drive
    links: tuple[str, ...]  # its TF links, base_link first: where sensors may be mounted
    camera_link: str  # the link a camera sits on by default
    default_imus: tuple[tuple[str, str], ...]  # (name, link) of the IMUs it carries when none are configured
    # The collision volume placement keeps clear at its start, centred on the body, Z up: a box of these
    # extents, or a cylinder of diameter extents[0] and height extents[2].
    volume_shape: Literal["box", "cylinder"]
    volume_extents: tuple[float, float, float]
    radius: float  # m: the disc the planners keep clear around the robot's centre
    clearance: float  # m: a hard margin beyond the disc
    height: float  # m: flying, the frame's half height (its slab); on the ground, the top of what it must pass under
    max_speed: float  # m/s
    max_yaw_rate_deg: float  # deg/s
    base_height: float = 0.0  # m: base_link's origin above the floor when a ground robot stands
    s_curve: bool = False  # base commands reach the base through the TIAGo's learned S-curve
    # (controller, its joints): the ros_control controllers a live run takes trajectory_msgs/JointTrajectory
    # commands for, on <ns>/<controller>/command, as the real robot does (simulation.live.commands)
    joint_controllers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # m: a ground base's chassis half extents, where they are not its collision volume's (the TIAGo's volume is
    # the circle it sweeps turning)
    chassis_half_xy: tuple[float, float] | None = None

    @property
    def footprint(self) -> tuple[float, float]:
        """A ground base's footprint, half extents (m): its chassis box, else the box of its collision volume."""
        return self.chassis_half_xy or (self.volume_extents[0] / 2, self.volume_extents[1] / 2)

    @property
    def flies(self) -> bool:
        return self.drive == "floating"

    @property
    def holonomic(self) -> bool:
        return self.drive != "differential"


class Kind(ABC):
    """One robot kind: `body` answers for a config of it; `check` refuses settings it cannot apply."""

    built_in = True  # its body needs no file of the user's

    @abstractmethod
    def body(self, robot: RobotConfig) -> RobotBody:
        """Everything the other stages ask of a robot of this kind, for this config."""

    def links(self, robot: RobotConfig) -> tuple[str, ...] | None:
        """Its links, when the config alone tells them (None: only its description does, checked at load)."""
        return self.body(robot).links

    def check(self, robot: RobotConfig) -> None:
        """ValueError for settings of `robot` this kind has no use for (no setting without an effect)."""
        given = [key for key in CUSTOM_KEYS if key in robot.model_fields_set]
        if given:
            raise ValueError(f"{', '.join(given)}: only robots of kind 'custom' (from a description) take these")


CUSTOM_KEYS = ("description", "packages", "drive", "base_link", "ground")


class Uav(Kind):
    """The GRADE paper's UAV: a quadrotor on six virtual joints."""

    LINKS = (BASE_LINK, "camera_link")

    def body(self, robot: RobotConfig) -> RobotBody:
        half = UAV_FRAME_HALF_SIZE
        return RobotBody(
            "uav", "floating", self.LINKS, "camera_link", (("imu_body", BASE_LINK), ("imu_camera", "camera_link")),
            "box", (0.6, 0.6, 0.3), math.hypot(half[0], half[1]), FLYING_CLEARANCE, half[2], robot.uav.max_speed,
            robot.uav.yaw_rate_deg)


class TiagoOmni(Kind):
    """PAL's TIAGo++ Omni: a mecanum base (physical or lightweight model), the torso and head links."""

    LINKS = (BASE_LINK, "torso_lift_link", "head_1_link", "head_2_link", "base_laser_link")

    def body(self, robot: RobotConfig) -> RobotBody:
        tiago = robot.tiago
        return RobotBody(
            "tiago_omni", "holonomic", self.LINKS, "head_2_link",
            (("imu_body", BASE_LINK), ("imu_camera", "head_2_link")), "cylinder", (TIAGO_REACH, TIAGO_REACH, 1.2),
            math.hypot(*TIAGO_CHASSIS_HALF_XY), 0.0, TIAGO_HEIGHT, tiago.max_speed, tiago.max_yaw_rate_deg,
            TIAGO_WHEEL_RADIUS, s_curve=tiago.velocity_profile == "s_curve",
            joint_controllers=(("head_controller", ("head_1_joint", "head_2_joint")),
                               ("torso_controller", ("torso_lift_joint",))),
            chassis_half_xy=TIAGO_CHASSIS_HALF_XY)


class Custom(Kind):
    """A robot from the user's URDF or MJCF description (`robot.description`, core.robot_description)."""

    built_in = False

    def body(self, robot: RobotConfig) -> RobotBody:
        return custom_body(robot, self.description(robot))

    def links(self, robot: RobotConfig) -> tuple[str, ...] | None:
        return None

    def check(self, robot: RobotConfig) -> None:
        if robot.description is None:
            raise ValueError("a robot of kind 'custom' needs `description`: the path of its URDF or MJCF file")
        if robot.drive is None:
            raise ValueError("a robot of kind 'custom' needs `drive`: differential, holonomic or floating")

    @staticmethod
    def description(robot: RobotConfig) -> Description:
        from core.robot_description import load_description

        return load_description(robot.description, robot.packages, robot.base_link)


def custom_body(robot: RobotConfig, description: Description) -> RobotBody:
    """The body of a description robot: its volume and disc from its collision geometry at the zero pose."""
    sides = {wheel.y > 0 for wheel in description.wheels}
    if robot.drive == "differential" and sides != {True, False}:
        raise ConfigError(f"drive differential needs wheels on both sides: hinge joints about the base's y axis whose "
                          f"collision reaches the floor; {description.path.name} has "
                          f"{len(description.wheels)} (use holonomic for a base that moves otherwise)", field="drive")
    lower, upper = description.lower, description.upper
    half_x, half_y = max(-lower[0], upper[0]), max(-lower[1], upper[1])
    extents = (2.0 * half_x, 2.0 * half_y, upper[2] - lower[2])
    floating = robot.drive == "floating"
    return RobotBody(
        "custom", robot.drive, description.links, BASE_LINK, (("imu_body", BASE_LINK),), "box", extents,
        math.hypot(half_x, half_y), FLYING_CLEARANCE if floating else 0.0,
        extents[2] / 2.0 if floating else upper[2] - lower[2],
        robot.uav.max_speed if floating else robot.ground.max_speed,
        robot.uav.yaw_rate_deg if floating else robot.ground.max_yaw_rate_deg,
        0.0 if floating else description.base_height)


KINDS: dict[RobotKind, Kind] = {"uav": Uav(), "tiago_omni": TiagoOmni(), "custom": Custom()}


def robot_body(robot: RobotConfig) -> RobotBody:
    """What the robot of a config is (module notes)."""
    return KINDS[robot.kind].body(robot)

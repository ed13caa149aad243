"""What a robot model hands to the physics world: its MJCF pieces and how it is driven."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Literal

from core.robot_catalogue import RobotKind
from core.robot_description import Wheel
from simulation.robots.mjcf import LinkEdge, link_tree

Drive = Literal["joint_velocity", "wheels", "planar_velocity"]


@dataclass(frozen=True)
class JointLimits:
    """The range a commandable joint may be sent to (rad or m) and the speed it moves at (rad/s or m/s)."""

    lower: float
    upper: float
    max_velocity: float


@dataclass(frozen=True)
class PositionJoint:
    """A joint that follows position targets (the TIAGo's torso lift and head): its name, limits and the position
    the robot starts at, which is also its first target."""

    name: str
    limits: JointLimits
    start: float


@dataclass
class RobotModel:
    """One robot as MJCF fragments plus the names the world needs to drive and read it.

    `body` is the root <body> (named "base_link") to place under <worldbody>; `actuators` go under
    <actuator>. `base_joints` are the joints whose qpos give the base pose, in order. `drive` says how
    commands reach the model:
      - "joint_velocity": one velocity actuator per base joint (UAV), ctrl = joint velocity;
      - "wheels": velocity actuators on the four mecanum wheels, ctrl = wheel speed (TIAGo physical);
      - "planar_velocity": the base twist is written into qvel of (x, y, yaw) before every step
        (TIAGo lightweight, description robots on the ground); the command is kept in MuJoCo's userdata so it
        is part of the state. A base that is not `holonomic` drops the twist's vy; `wheels` turn with the base.
    `position_joints` move kinematically toward their targets at no more than their speed limit
    (simulation.physics.robot_handle); their targets follow the drive's `userdata_size` entries in userdata, so
    they too are part of the state.
    `assets` go under <asset> (a description's meshes) and `defaults` (its <default> classes) under <default>.
    """

    kind: RobotKind
    variant: Literal["uav", "physical", "lightweight", "description"]
    body: ET.Element
    actuators: list[ET.Element]
    links: tuple[str, ...]
    base_joints: tuple[str, ...]
    drive: Drive
    camera_link: str
    base_height: float = 0.0  # base_link origin above the floor when standing (ground robots)
    userdata_size: int = 0
    wheel_actuators: tuple[str, ...] = ()
    # (name, link) of the IMUs a robot carries when none are configured: body and camera.
    default_imus: tuple[tuple[str, str], ...] = field(default=())
    holonomic: bool = True
    wheels: tuple[Wheel, ...] = ()
    assets: tuple[ET.Element, ...] = ()
    defaults: tuple[ET.Element, ...] = ()
    position_joints: tuple[PositionJoint, ...] = ()
    # What the other robots' cameras see of it (simulation.embedded.robot_meshes): its physics shapes or its visual
    # geoms; and the label its instances carry in the ground truth (resolved through the class map).
    looks: Literal["shapes", "visuals"] = "shapes"
    label: str = ""
    source: str = ""  # where its model comes from, for messages: a description file's name

    def title(self) -> str:
        """The robot as messages name it: its kind and model variant, or its description file."""
        return f"{self.kind!r} ({self.source or self.variant})"

    def __post_init__(self) -> None:
        self.label = self.label or self.kind

    @property
    def userdata_length(self) -> int:
        """MuJoCo userdata entries the robot keeps: the drive's command, then each position joint's target."""
        return self.userdata_size + len(self.position_joints)

    def link_edges(self) -> list[LinkEdge]:
        """(parent, child, fixed) of every link but base_link, from the MJCF body tree: the TF tree of the links."""
        return link_tree(self.body, self.links)

"""A robot from its URDF or MJCF description (config kind `custom`): the description's link tree on the joints of
its drive.

- `floating`: the UAV's six virtual joints and velocity servos (simulation.robots.uav_model), sized by the
  description's mass and inertia, every link gravity-compensated: it flies with the UAV's controller and limits.
- `holonomic`, `differential`: planar joints (x, y, yaw) whose velocities are set from the commanded twist, as
  the lightweight TIAGo's; a differential base drops the twist's sideways part, and the wheels the description
  has (core.robot_description.Wheel) turn as the base moves, so `joint_states` shows them rolling.

Collision geoms become the robot's chassis class; a ground robot's never touch the floor plane, since its planar
joints hold it at its standing height. Visual geoms (URDF <visual>, MJCF geoms with contype and conaffinity 0)
are drawn only.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from core.config import RobotConfig
from core.robot_catalogue import Custom, custom_body
from simulation.robots.mjcf import CHASSIS_BIT, FLOOR_BIT, KINEMATIC_BIT, STATIC_BIT, element, fmt
from simulation.robots.spec import RobotModel
from simulation.robots.uav_model import add_virtual_joints, servos

DESCRIPTION_CLASS = "description"  # the <default> class the description's own defaults become
PLANAR_JOINTS = (("base_x", "slide", (1, 0, 0)), ("base_y", "slide", (0, 1, 0)), ("base_yaw", "hinge", (0, 0, 1)))


def description_model(robot: RobotConfig) -> RobotModel:
    """The model of a config's robot of kind custom (module notes); InputError naming the description."""
    description = Custom.description(robot)
    body = custom_body(robot, description)
    tree = ET.fromstring(description.mjcf)
    base = tree.find("worldbody/body")
    floating = body.flies
    for geom in base.iter("geom"):
        if geom.get("contype", "1") != "0" or geom.get("conaffinity", "1") != "0":
            geom.set("contype", fmt(CHASSIS_BIT))
            floor = FLOOR_BIT if floating else 0  # a flying body may land; a ground base rolls above the floor
            geom.set("conaffinity", fmt(STATIC_BIT | KINEMATIC_BIT | floor))
    defaults = tree.find("default")
    if defaults is not None:
        defaults.tag, defaults.attrib = "default", {"class": DESCRIPTION_CLASS}
        base.set("childclass", DESCRIPTION_CLASS)
    asset = tree.find("asset")
    assets = tuple(asset) if asset is not None else ()
    common = {"kind": "custom", "variant": "description", "links": description.links,
              "camera_link": body.camera_link, "default_imus": body.default_imus, "assets": assets,
              "defaults": (defaults,) if defaults is not None else (), "looks": "visuals", "label": "robot",
              "source": description.path.name}
    if floating:
        for link in base.iter("body"):
            link.set("gravcomp", "1")
        joints = add_virtual_joints(base)
        return RobotModel(body=base, actuators=servos(joints, description.mass, description.inertia),
                          base_joints=tuple(joints), drive="joint_velocity", **common)
    for name, kind, axis in PLANAR_JOINTS:
        element("joint", base, name=name, type=kind, axis=axis, limited=False)
    return RobotModel(body=base, actuators=[], base_joints=tuple(name for name, _, _ in PLANAR_JOINTS),
                      drive="planar_velocity", base_height=description.base_height, userdata_size=3,
                      holonomic=body.holonomic, wheels=description.wheels, **common)

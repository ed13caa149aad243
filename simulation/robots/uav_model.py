"""The UAV: a small quadrotor body on six virtual joints, as in GRADE.

The body `base_link` sits on joints nested in this order: slide x, slide y, slide z (world axes),
then hinge roll (x), pitch (y), yaw (z), each about the frame left by the previous ones, so the body
orientation is R = Rx(roll) @ Ry(pitch) @ Rz(yaw). Every joint has a velocity actuator (ctrl is the
joint velocity set point in m/s or rad/s); the body is gravity-compensated (a hovering UAV), so a
zero command holds it still while its IMU still reads the gravity reaction, +9.81 m/s^2 up.
`camera_link` is a fixed child 10 cm ahead of the centre.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from core.config import RobotConfig
from core.robot_catalogue import UAV_FRAME_HALF_SIZE, robot_body
from simulation.robots.mjcf import COLLISION, element
from simulation.robots.spec import RobotModel

UAV = robot_body(RobotConfig(kind="uav"))  # its links, camera link and default IMUs
# A 1.5 kg quadrotor (3DR Iris class): inertia about the body axes in kg m^2.
MASS = 1.5  # camera included: camera_link is massless, so the centre of mass stays on the axes
INERTIA = (0.029125, 0.029125, 0.055225)
FRAME_HALF_SIZE = UAV_FRAME_HALF_SIZE  # collision box around arms and props, m
CAMERA_OFFSET = (0.1, 0.0, -0.03)  # camera_link in base_link, m
# Velocity servo time constant: kv = inertia / tau. MuJoCo's implicit-fast step moves the body by
# (command - velocity) / (tau + dt) while its accelerometer reads (command - velocity) / tau, so IMU readings
# exceed the body's true acceleration by dt / tau: 42% at 10 ms, 8% at 50 ms (dt = 1/240 s). The controller
# leads its commands by tau (simulation.control.uav_controller), so the lag does not slow the UAV down.
SERVO_TIME_CONSTANT = 0.05  # s
JOINTS = (
    ("x", "slide", (1, 0, 0)), ("y", "slide", (0, 1, 0)), ("z", "slide", (0, 0, 1)),
    ("roll", "hinge", (1, 0, 0)), ("pitch", "hinge", (0, 1, 0)), ("yaw", "hinge", (0, 0, 1)),
)


def uav() -> RobotModel:
    """The UAV model; its start pose is set through the six joint positions."""
    body = element("body", name="base_link", gravcomp=1)
    joint_names = add_virtual_joints(body)
    element("inertial", body, pos=(0, 0, 0), mass=MASS, diaginertia=INERTIA)
    element("geom", body, name="uav_frame", type="box", size=FRAME_HALF_SIZE, mass=0, rgba=(0.2, 0.2, 0.2, 1),
            **COLLISION["chassis"])
    element("body", body, name=UAV.camera_link, pos=CAMERA_OFFSET)
    actuators = servos(joint_names, MASS, INERTIA)
    return RobotModel(
        kind="uav", variant="uav", body=body, actuators=actuators, links=UAV.links,
        base_joints=tuple(joint_names), drive="joint_velocity", camera_link=UAV.camera_link,
        default_imus=UAV.default_imus,
    )


def add_virtual_joints(body: ET.Element) -> list[str]:
    """The six virtual joints of a flying base (module notes), added to its root body; their names."""
    names = []
    for axis_name, kind, axis in JOINTS:
        name = f"uav_{axis_name}"
        element("joint", body, name=name, type=kind, axis=axis, limited=False, armature=0, damping=0)
        names.append(name)
    return names


def servos(joints: list[str], mass: float, inertia: tuple[float, float, float]) -> list[ET.Element]:
    """The velocity servos of the six virtual joints of a body of this mass and inertia (module notes)."""
    load = {"roll": inertia[0], "pitch": inertia[1], "yaw": inertia[2]}
    return [element("velocity", name=f"{joint}_vel", joint=joint, kv=load.get(axis_name, mass) / SERVO_TIME_CONSTANT,
                    ctrllimited=False)
            for joint, (axis_name, _, _) in zip(joints, JOINTS, strict=True)]

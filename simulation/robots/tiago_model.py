"""TIAGo++ Omni: the physical mecanum model and the lightweight velocity model.

Both share the links sensors mount on and their geometry. The links carry the real TIAGo++ URDF's names
and chain: base_link -> torso_lift_link -> head_1_link (pan) -> head_2_link (tilt), and base_link ->
base_laser_link; the arms are left out. The torso lift and head joints carry the URDF's names, limits and
signs (`POSITION_JOINTS`) and follow position targets (`RobotModel.position_joints`); they start at the mid
pose: torso at half its travel, head level and straight ahead. Unlike the URDF, whose head_2_link is rolled
+90 deg so that its z is the tilt axis, every link keeps base_link's axes at this pose (x forward, y left, z
up), so a sensor mount's roll/pitch/yaw reads in the robot's own axes; the tilt axis is therefore head_2_link's
-y, which keeps the URDF's sign (positive tilt looks up). base_link's origin is the centre of the four wheel
axles, r above the floor when standing.

The joints are kinematic: a joint's position is set each step, not driven by a force, so the moving links
carry no mass of their own (the torso's and head's mass rides on base_link) and a commanded head turn never
pushes the base. MuJoCo needs some inertia on every moving body: each gets the least it accepts
(`FRAME_MASS`), and its joint an armature that keeps a contact on the head or shoulders pushing the base
rather than the joint within a step.

Physical model: base_link on a free joint; four wheels on hinge joints (axis +y, so a positive speed
rolls forward) driven by velocity actuators; each wheel carries 15 free rollers at 45 deg whose
collision is 6 spheres along the roller axis, sized so their outer envelope is the wheel's circle of
radius r. Roller handedness follows `mecanum.ROLLER_HANDEDNESS`, which is what makes
`mecanum.wheel_speeds` the model's inverse kinematics. Rollers touch only the floor plane (see
`mjcf.COLLISION`). About 70 kg in all, most of it low in the base.

Lightweight model: base_link on planar joints (slide x, slide y in the world, hinge yaw) whose
velocities are set directly from the commanded twist; no wheels.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

from core.config import RobotConfig
from core.robot_catalogue import TIAGO_CHASSIS_HALF_XY, robot_body
from simulation.robots.mecanum import ROLLER_HANDEDNESS, WHEEL_NAMES, WHEEL_POSITIONS, WHEEL_RADIUS
from simulation.robots.mjcf import COLLISION, element, frame_quat
from simulation.robots.spec import JointLimits, PositionJoint, RobotModel

TIAGO = robot_body(RobotConfig(kind="tiago_omni"))  # its links, camera link and default IMUs

# Chassis: a box from 3 cm above the floor to 0.30 m, covering the wheels; a torso column on top.
GROUND_CLEARANCE = 0.03
CHASSIS_HALF_XY = TIAGO_CHASSIS_HALF_XY
CHASSIS_TOP = 0.30  # above the floor
TORSO_COLUMN = {"pos": (-0.06, 0.0, 0.50), "size": (0.12, 0.15, 0.21)}  # in base_link
TORSO_LIFT_POS = (-0.062, 0.0, 0.72)  # torso_lift_link in base_link (lift at mid travel)
# head_2_link sits in head_1_link as in the TIAGo URDF (head_2_joint); head_1_link where it puts the head_2_link
# origin 1.2 m above the floor.
HEAD_1_POS = (0.177, 0.0, 0.302)  # head_1_link in torso_lift_link
HEAD_2_POS = (0.005, 0.0, 0.098)  # head_2_link in head_1_link
LASER_POS = (0.25, 0.0, 0.02)  # base_laser_link in base_link

# The real TIAGo++'s limits: torso_lift_joint from PAL Robotics' tiago_dual_description (torso_dual.urdf.xacro),
# the head joints from tiago_description (head.urdf.xacro), which the TIAGo++ shares.
TORSO_LIFT = PositionJoint("torso_lift_joint", JointLimits(0.0, 0.35, 0.07), 0.175)  # m, m/s; starts mid travel
HEAD_PAN = PositionJoint("head_1_joint", JointLimits(math.radians(-75.0), math.radians(75.0), 3.0), 0.0)
HEAD_TILT = PositionJoint("head_2_joint", JointLimits(math.radians(-60.0), math.radians(45.0), 3.0), 0.0)
POSITION_JOINTS = (TORSO_LIFT, HEAD_PAN, HEAD_TILT)
# kg, and kg m^2 on each axis: MuJoCo's least for a moving body (mjMINVAL). The three together are below half a
# unit in the last place of the robot's mass, which keeps its value; they show only in the last bits of the IMUs'
# accelerations (about 1e-17 m/s^2).
FRAME_MASS = 1e-15
JOINT_ARMATURE = 1000.0  # kg (lift), kg m^2 (pan, tilt)

# Masses (kg) and inertias (kg m^2); base COM kept low as on the real robot.
BASE_MASS, BASE_COM, BASE_INERTIA = 47.0, (0.0, 0.0, 0.03), (1.51, 1.99, 2.93)
TORSO_MASS, TORSO_COM, TORSO_INERTIA = 12.0, (0.0, 0.0, 0.1), (0.35, 0.30, 0.15)
HEAD_MASS, HEAD_INERTIA = 2.5, (0.01, 0.01, 0.01)
LASER_MASS, LASER_INERTIA = 0.5, (4e-4, 4e-4, 4e-4)
WHEEL_MASS, WHEEL_INERTIA = 1.6, (0.0025, 0.0046, 0.0025)  # hub; axle along y
HUB_RADIUS, HUB_HALF_WIDTH = 0.05, 0.015

# Rollers: 15 per wheel, axis at 45 deg to the axle, centres r - ROLLER_MID_RADIUS from the axle.
ROLLERS_PER_WHEEL = 15
SPHERES_PER_ROLLER = 6
ROLLER_ANGLE = np.pi / 4
ROLLER_MID_RADIUS = 0.022  # sphere radius at the roller's middle, m
ROLLER_HALF_LENGTH = 0.02  # along its axis: a roller spans 29 deg of rim for a 24 deg pitch, so contact never drops
ROLLER_MASS = 0.025
ROLLER_ARMATURE = 1e-5  # reflected inertia (kg m^2), keeps the tiny roller DOFs well conditioned
ROLLER_DAMPING = 1e-5  # N m s/rad bearing friction
ROLLER_FRICTION = (1.0, 0.005, 0.0001)

# Wheel drives: velocity servos. No torque clamp: MuJoCo integrates a servo implicitly only while
# its force is unclamped, and a clamped stiff servo on a light wheel overshoots; accelerations are
# shaped upstream (S-curve controller) and bounded by friction.
WHEEL_KV = 30.0  # N m s/rad: a few ms to follow a speed change with the robot on the wheels
WHEEL_SPEED_LIMIT = 25.0  # rad/s (1.9 m/s at the rim)


def physical() -> RobotModel:
    """TIAGo++ Omni with mecanum wheels and free rollers."""
    base = _base_body(lumped=False)
    element("freejoint", base, name="base_free")
    for index, wheel in enumerate(WHEEL_NAMES):
        _wheel(base, index, wheel)
    actuators = [
        element("velocity", name=f"wheel_{wheel}_vel", joint=f"wheel_{wheel}_joint", kv=WHEEL_KV,
                ctrlrange=(-WHEEL_SPEED_LIMIT, WHEEL_SPEED_LIMIT))
        for wheel in WHEEL_NAMES
    ]
    return RobotModel(
        kind="tiago_omni", variant="physical", body=base, actuators=actuators, links=TIAGO.links,
        base_joints=("base_free",), drive="wheels", camera_link=TIAGO.camera_link, base_height=WHEEL_RADIUS,
        wheel_actuators=tuple(a.get("name") for a in actuators), default_imus=TIAGO.default_imus,
        position_joints=POSITION_JOINTS,
    )


def lightweight() -> RobotModel:
    """TIAGo++ Omni whose base velocity is set directly (planar joints x, y, yaw).

    Its whole mass sits in base_link with the centre of mass on the yaw axis, so turning adds no
    centrifugal or Coriolis terms and the base moves exactly with the commanded twist.
    """
    base = _base_body(lumped=True)
    for name, kind, axis in (("base_x", "slide", (1, 0, 0)), ("base_y", "slide", (0, 1, 0)),
                             ("base_yaw", "hinge", (0, 0, 1))):
        element("joint", base, name=name, type=kind, axis=axis, limited=False)
    return RobotModel(
        kind="tiago_omni", variant="lightweight", body=base, actuators=[], links=TIAGO.links,
        base_joints=("base_x", "base_y", "base_yaw"), drive="planar_velocity", camera_link=TIAGO.camera_link,
        base_height=WHEEL_RADIUS, userdata_size=3, default_imus=TIAGO.default_imus, position_joints=POSITION_JOINTS,
    )


def _base_body(lumped: bool) -> ET.Element:
    """base_link with chassis, torso column and the upper links on their joints.

    base_link carries the torso's and the head's mass (see the module notes); with `lumped`, the laser's too,
    all centred on its z axis.
    """
    base = element("body", name="base_link")
    if lumped:
        mass, com, inertia = _lumped_inertia()
        element("inertial", base, pos=com, mass=mass, diaginertia=inertia)
    else:
        mass, com, full = _rigid_inertia(_mass_parts()[:3])
        element("inertial", base, pos=com, mass=mass, fullinertia=full)
    bottom, top = GROUND_CLEARANCE - WHEEL_RADIUS, CHASSIS_TOP - WHEEL_RADIUS
    element("geom", base, name="chassis", type="box", pos=(0, 0, (bottom + top) / 2),
            size=(*CHASSIS_HALF_XY, (top - bottom) / 2), mass=0, rgba=(0.9, 0.9, 0.9, 1), **COLLISION["chassis"])
    element("geom", base, name="torso_column", type="box", mass=0, rgba=(0.9, 0.9, 0.9, 1), **TORSO_COLUMN,
            **COLLISION["chassis"])
    torso = element("body", base, name="torso_lift_link", pos=TORSO_LIFT_POS)
    _position_joint(torso, TORSO_LIFT, "slide", (0, 0, 1))
    element("geom", torso, name="torso_shoulders", type="box", pos=(0, 0, 0.12), size=(0.13, 0.22, 0.12), mass=0,
            rgba=(0.3, 0.3, 0.3, 1), **COLLISION["chassis"])
    pan = element("body", torso, name="head_1_link", pos=HEAD_1_POS)
    _position_joint(pan, HEAD_PAN, "hinge", (0, 0, 1))
    head = element("body", pan, name="head_2_link", pos=HEAD_2_POS)
    _position_joint(head, HEAD_TILT, "hinge", (0, -1, 0))
    element("geom", head, name="head", type="sphere", size=0.1, mass=0, rgba=(0.9, 0.9, 0.9, 1),
            **COLLISION["chassis"])
    laser = element("body", base, name="base_laser_link", pos=LASER_POS)
    if not lumped:
        element("inertial", laser, pos=(0, 0, 0), mass=LASER_MASS, diaginertia=LASER_INERTIA)
    return base


def _position_joint(body: ET.Element, joint: PositionJoint, kind: str, axis: tuple[float, float, float]) -> None:
    """`joint` moving `body` along or about `axis`, the body where it is now at the joint's start (`ref`).

    MuJoCo's own limits stay off: the targets are checked against the joint's limits before they are set."""
    element("joint", body, name=joint.name, type=kind, axis=axis, ref=joint.start, armature=JOINT_ARMATURE,
            limited=False)
    element("inertial", body, pos=(0, 0, 0), mass=FRAME_MASS, diaginertia=(FRAME_MASS,) * 3)


def _mass_parts() -> list[tuple[float, np.ndarray, tuple[float, float, float]]]:
    """(mass, centre in base_link, diagonal inertia about its own centre) of base, torso, head and laser, with the
    torso and head at the start pose (head_1_link is massless)."""
    torso_com = np.add(TORSO_LIFT_POS, TORSO_COM)
    return [
        (BASE_MASS, np.array(BASE_COM), BASE_INERTIA), (TORSO_MASS, torso_com, TORSO_INERTIA),
        (HEAD_MASS, torso_com - TORSO_COM + np.add(HEAD_1_POS, HEAD_2_POS), HEAD_INERTIA),
        (LASER_MASS, np.array(LASER_POS), LASER_INERTIA),
    ]


def _lumped_inertia() -> tuple[float, tuple[float, float, float], tuple[float, float, float]]:
    """Mass, centre (moved onto the z axis) and diagonal inertia of base, torso, head and laser."""
    parts = _mass_parts()
    mass = sum(m for m, _, _ in parts)
    centre = np.array([0.0, 0.0, sum(m * c[2] for m, c, _ in parts) / mass])
    inertia = np.zeros(3)
    for m, c, own in parts:
        d = c - centre
        inertia += np.asarray(own) + m * (d @ d - d**2)  # parallel axis theorem, diagonal terms
    return mass, tuple(centre), tuple(inertia)


def _rigid_inertia(parts: list[tuple[float, np.ndarray, tuple[float, float, float]]]) -> tuple[
        float, tuple[float, ...], tuple[float, ...]]:
    """Mass, centre and full inertia (MJCF's fullinertia: ixx iyy izz ixy ixz iyz) of `parts` as one rigid body."""
    mass = sum(m for m, _, _ in parts)
    centre = sum(m * c for m, c, _ in parts) / mass
    inertia = np.zeros((3, 3))
    for m, c, own in parts:
        d = c - centre
        inertia += np.diag(own) + m * ((d @ d) * np.eye(3) - np.outer(d, d))  # parallel axis theorem
    return mass, tuple(centre), (inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1], inertia[0, 2],
                                 inertia[1, 2])


def roller_layout(handedness: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """(centre, quaternion w,x,y,z) of each roller in its wheel's frame; the roller's z is its axis.

    Roller k sits at angle 2 pi k / 15 about the axle (wheel y). Its axis is cos45 * y + h * sin45 *
    t, with t the direction a rim point moves under positive wheel rotation, so at the bottom the axis
    is cos45 * y - h * sin45 * x (see mecanum.ROLLER_HANDEDNESS).
    """
    centre_distance = WHEEL_RADIUS - ROLLER_MID_RADIUS
    layout = []
    for k in range(ROLLERS_PER_WHEEL):
        theta = 2 * np.pi * k / ROLLERS_PER_WHEEL
        radial = np.array([np.cos(theta), 0.0, np.sin(theta)])
        tangent = np.cross([0.0, 1.0, 0.0], radial)
        axis = np.cos(ROLLER_ANGLE) * np.array([0.0, 1.0, 0.0]) + handedness * np.sin(ROLLER_ANGLE) * tangent
        layout.append((centre_distance * radial, frame_quat(radial, axis)))
    return layout


def roller_spheres() -> list[tuple[float, float]]:
    """(offset along the roller axis, radius) of its spheres; each touches the wheel's circle.

    A point at offset s on the axis lies sqrt(c^2 + (s sin45)^2) from the axle (c: roller centre
    distance), so a sphere of radius r minus that reaches exactly the rim.
    """
    centre_distance = WHEEL_RADIUS - ROLLER_MID_RADIUS
    offsets = np.linspace(-ROLLER_HALF_LENGTH, ROLLER_HALF_LENGTH, SPHERES_PER_ROLLER)
    radii = WHEEL_RADIUS - np.hypot(centre_distance, offsets * np.sin(ROLLER_ANGLE))
    return list(zip(offsets.tolist(), radii.tolist()))


def _wheel(base: ET.Element, index: int, name: str) -> None:
    x, y = WHEEL_POSITIONS[index]
    wheel = element("body", base, name=f"wheel_{name}", pos=(x, y, 0.0))
    element("joint", wheel, name=f"wheel_{name}_joint", type="hinge", axis=(0, 1, 0), limited=False)
    element("inertial", wheel, pos=(0, 0, 0), mass=WHEEL_MASS, diaginertia=WHEEL_INERTIA)
    # The hub is drawn only: the rollers carry all the wheel's contacts.
    element("geom", wheel, name=f"wheel_{name}_hub", type="cylinder", size=(HUB_RADIUS, HUB_HALF_WIDTH),
            quat=(np.sqrt(0.5), -np.sqrt(0.5), 0, 0), mass=0, rgba=(0.2, 0.2, 0.2, 1), **COLLISION["none"])
    spheres = roller_spheres()
    # Slender-cylinder inertia of a roller about its axis and across it.
    axial = ROLLER_MASS * ROLLER_MID_RADIUS**2 / 2
    across = ROLLER_MASS * (3 * ROLLER_MID_RADIUS**2 + (2 * ROLLER_HALF_LENGTH) ** 2) / 12
    for k, (centre, quat) in enumerate(roller_layout(ROLLER_HANDEDNESS[index])):
        roller = element("body", wheel, name=f"roller_{name}_{k:02d}", pos=centre, quat=quat)
        element("joint", roller, name=f"roller_{name}_{k:02d}_joint", type="hinge", axis=(0, 0, 1), limited=False,
                armature=ROLLER_ARMATURE, damping=ROLLER_DAMPING)
        element("inertial", roller, pos=(0, 0, 0), mass=ROLLER_MASS, diaginertia=(across, across, axial))
        for j, (offset, radius) in enumerate(spheres):
            element("geom", roller, name=f"roller_{name}_{k:02d}_s{j}", type="sphere", size=radius,
                    pos=(0, 0, offset), mass=0, friction=ROLLER_FRICTION, condim=3, rgba=(0.1, 0.1, 0.1, 1),
                    **COLLISION["roller"])

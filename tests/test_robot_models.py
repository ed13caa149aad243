"""Robot models in MuJoCo and the mecanum kinematics, checked against geometry and the physics."""

from __future__ import annotations

from typing import get_args

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.config import RobotConfig
from core.geometry import wxyz_to_xyzw
from core.robot_catalogue import KINDS, RobotKind, robot_body
from core.seeding import generator
from simulation.physics import StartPose, build_world
from simulation.robots import MODELS, robot_model
from simulation.robots.mecanum import (
    HALF_TRACK,
    HALF_WHEELBASE,
    ROLLER_HANDEDNESS,
    WHEEL_NAMES,
    WHEEL_POSITIONS,
    WHEEL_RADIUS,
    base_twist,
    ik_matrix,
    wheel_speeds,
)
from simulation.robots.mjcf import ROLLER_BIT
from simulation.robots.tiago_model import (
    ROLLERS_PER_WHEEL,
    SPHERES_PER_ROLLER,
    lightweight,
    physical,
    roller_layout,
    roller_spheres,
)
from simulation.robots.uav_model import SERVO_TIME_CONSTANT, uav

DT = 1.0 / 240.0


def yaw_of(pose: np.ndarray) -> float:
    return float(np.arctan2(pose[1, 0], pose[0, 0]))


@pytest.fixture(scope="module")
def tiago_physical():
    return build_world(physical())


# ---------------------------------------------------------------- kinematics


def test_ik_matrix_is_the_mecanum_x_layout():
    arm = HALF_WHEELBASE + HALF_TRACK
    expected = np.array([[1, -1, -arm], [1, 1, arm], [1, 1, -arm], [1, -1, arm]]) / WHEEL_RADIUS
    np.testing.assert_allclose(ik_matrix(), expected, rtol=0, atol=1e-12)
    assert WHEEL_NAMES == ("FL", "FR", "RL", "RR")


def test_ik_fk_round_trip_on_random_twists():
    twists = generator(0, "tests/mecanum").uniform(-1.0, 1.0, size=(200, 3))
    speeds = wheel_speeds(twists)
    assert speeds.shape == (200, 4)
    np.testing.assert_allclose(base_twist(speeds), twists, rtol=0, atol=1e-12)
    np.testing.assert_allclose(wheel_speeds(twists[7]), speeds[7], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="3 components"):
        wheel_speeds(np.zeros(4))
    with pytest.raises(ValueError, match="4 components"):
        base_twist(np.zeros(3))


def test_ik_keeps_every_bottom_roller_from_slipping_along_its_axis():
    """Independent of the IK formula: with IK wheel speeds, each wheel's ground point moves only
    across its bottom roller's axis (the one direction a free roller cannot absorb)."""
    bottom_axes = []
    for handedness in ROLLER_HANDEDNESS:
        # The roller closest to the ground, from the model's own layout (wheel frame = base axes).
        centres, quats = zip(*roller_layout(handedness))
        bottom = int(np.argmin([c[2] for c in centres]))
        axis = Rotation.from_quat(wxyz_to_xyzw(quats[bottom])).apply([0.0, 0.0, 1.0])
        # The lowest roller is up to 12 deg off the bottom; turn its axis there about the axle.
        angle = -np.pi / 2 - np.arctan2(centres[bottom][2], centres[bottom][0])
        bottom_axes.append(Rotation.from_rotvec([0.0, -angle, 0.0]).apply(axis))
    for twist in generator(0, "tests/mecanum-rollers").uniform(-1.0, 1.0, size=(20, 3)):
        speeds = wheel_speeds(twist)
        for i, (x, y) in enumerate(WHEEL_POSITIONS):
            centre_velocity = np.array([twist[0] - twist[2] * y, twist[1] + twist[2] * x, 0.0])
            ground_point = centre_velocity + np.cross([0.0, speeds[i], 0.0], [0.0, 0.0, -WHEEL_RADIUS])
            assert abs(bottom_axes[i] @ ground_point) < 1e-9


# ---------------------------------------------------------------- model structure


def test_the_catalogue_and_the_models_have_an_entry_for_every_robot_kind_the_schema_accepts():
    assert set(get_args(RobotKind)) == set(KINDS) == set(MODELS)


@pytest.mark.parametrize("kind, variant", [("uav", "uav"), ("tiago_omni", "physical"), ("tiago_omni", "lightweight")])
def test_links_match_the_config_schema_and_their_tree_the_compiled_bodies(kind, variant):
    config = RobotConfig(kind=kind, tiago={"model": variant} if kind == "tiago_omni" else {})
    robot = robot_model(config)
    assert robot.links == robot_body(config).links
    world = build_world(robot)
    model = world.model
    for link in robot.links:
        assert mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, link) >= 0
    assert world.model.opt.timestep == pytest.approx(DT)
    # The TF tree of the links, against MuJoCo's compiled body tree: each edge's parent is the first link up
    # the body parents, and it is fixed exactly when no body on the way (the child included) has a joint.
    edges = robot.link_edges()
    assert sorted(edge.child for edge in edges) == sorted(set(robot.links) - {"base_link"})
    for parent, child, fixed in edges:
        body, moved = model.body(child).id, False
        while True:
            moved |= bool(model.body_jntnum[body])
            body = int(model.body_parentid[body])
            if model.body(body).name in robot.links:
                break
        assert model.body(body).name == parent and fixed == (not moved), (parent, child)
    parents = {edge.child: edge.parent for edge in edges}
    if kind == "tiago_omni":  # the real TIAGo++ URDF's head chain, each edge moved by its joint
        chain = ["head_2_link"]
        while chain[-1] in parents:
            chain.append(parents[chain[-1]])
        assert chain == ["head_2_link", "head_1_link", "torso_lift_link", "base_link"]
        assert parents["base_laser_link"] == "base_link"
        assert {edge.child for edge in edges if not edge.fixed} == {"torso_lift_link", "head_1_link", "head_2_link"}
    else:
        assert edges == [("base_link", "camera_link", True)]


def test_rollers_are_free_45_degree_hinges_whose_spheres_reach_the_rim(tiago_physical):
    model, data = tiago_physical.model, tiago_physical.data
    rollers = [j for j in range(model.njnt) if model.joint(j).name.startswith("roller_")]
    assert len(rollers) == 4 * ROLLERS_PER_WHEEL
    roller_geoms = np.flatnonzero(model.geom_contype == ROLLER_BIT)
    assert len(roller_geoms) == 4 * ROLLERS_PER_WHEEL * SPHERES_PER_ROLLER
    for wheel in WHEEL_NAMES:
        wheel_id = model.body(f"wheel_{wheel}").id
        axle = data.xmat[wheel_id].reshape(3, 3)[:, 1]
        centre = data.xpos[wheel_id]
        for k in range(ROLLERS_PER_WHEEL):
            joint = model.joint(f"roller_{wheel}_{k:02d}_joint")
            assert joint.type[0] == mujoco.mjtJoint.mjJNT_HINGE and not joint.limited[0]
            body = model.jnt_bodyid[joint.id]
            axis = data.xmat[body].reshape(3, 3) @ model.jnt_axis[joint.id]
            assert np.degrees(np.arccos(abs(axis @ axle))) == pytest.approx(45.0, abs=1e-6)
            for g in np.flatnonzero(model.geom_bodyid == body):
                offset = data.geom_xpos[g] - centre
                radial = np.linalg.norm(offset - (offset @ axle) * axle)
                assert radial + model.geom_size[g, 0] == pytest.approx(WHEEL_RADIUS, abs=1e-9)
    assert len(roller_spheres()) == SPHERES_PER_ROLLER


def test_roller_envelope_is_round_at_every_wheel_angle():
    """However the wheel is turned, its lowest sphere point is r below the axle (no gaps between
    rollers, no bumps): the wheel rolls like a disc of radius r."""
    centres, radii = [], []
    for centre, quat in roller_layout(1.0):
        rotation = Rotation.from_quat(wxyz_to_xyzw(quat))
        for offset, radius in roller_spheres():
            centres.append(centre + rotation.apply([0.0, 0.0, offset]))
            radii.append(radius)
    centres, radii = np.array(centres), np.array(radii)
    pitch = 2 * np.pi / ROLLERS_PER_WHEEL
    for angle in np.linspace(0.0, pitch, 97):
        turned = Rotation.from_rotvec([0.0, angle, 0.0]).apply(centres)
        assert np.max(radii - turned[:, 2]) == pytest.approx(WHEEL_RADIUS, abs=1e-4)


def test_physical_mass_about_70kg_with_a_low_centre(tiago_physical):
    model, data = tiago_physical.model, tiago_physical.data
    base = model.body("base_link").id
    assert model.body_subtreemass[base] == pytest.approx(70.0, abs=2.0)
    assert data.subtree_com[base][2] < 0.3  # m above the floor


# ---------------------------------------------------------------- driving


def roller_contacts(model: mujoco.MjModel, data: mujoco.MjData) -> list[tuple[str, str]]:
    """Contacts in which a roller touches anything of its own robot."""
    robot_geoms = set(np.flatnonzero(model.geom_bodyid >= model.body("base_link").id).tolist())
    found = []
    for contact in data.contact[: data.ncon]:
        pair = {int(contact.geom1), int(contact.geom2)}
        if pair <= robot_geoms and any(model.geom_contype[g] == ROLLER_BIT for g in pair):
            found.append(tuple(model.geom(g).name for g in pair))
    return found


def predicted_pose(twist: np.ndarray, seconds: float) -> np.ndarray:
    """(x, y, yaw) after a constant body twist from the origin (exact arc)."""
    vx, vy, wz = twist
    yaw = wz * seconds
    if abs(wz) < 1e-12:
        return np.array([vx * seconds, vy * seconds, 0.0])
    s, c = np.sin(yaw), 1 - np.cos(yaw)
    return np.array([(vx * s - vy * c) / wz, (vx * c + vy * s) / wz, yaw])


# Measured errors after 2 s from standing (step command, no S-curve): pure x 0.036 m, pure y 0.050 m,
# rotation 0.020 rad, diagonal 0.037 m; steady-state speed low by 0.6 % (x), 2.0 % (y), 1.9 % (yaw),
# 0.6 % (diagonal).
# Most of the position error is the first 0.1 s of wheel slip while the robot accelerates.
DRIVE_POSITION_TOLERANCE = 0.08  # m
DRIVE_YAW_TOLERANCE = 0.04  # rad
STEADY_SPEED_TOLERANCE = 0.04  # relative


@pytest.mark.parametrize("twist", [(0.5, 0.0, 0.0), (0.0, 0.5, 0.0), (0.0, 0.0, 0.5), (0.3, 0.3, 0.0)],
                         ids=["x", "y", "rotation", "diagonal"])
def test_physical_drive_follows_the_kinematic_prediction(tiago_physical, twist):
    world = tiago_physical
    world.set_state(world.initial_state)
    twist = np.array(twist)
    world.set_base_twist(twist)
    bad_contacts = []
    for _ in range(240):
        world.step()
        bad_contacts += roller_contacts(world.model, world.data)
    middle = world.base_pose()
    for _ in range(240):
        world.step()
        bad_contacts += roller_contacts(world.model, world.data)
    end = world.base_pose()
    assert bad_contacts == []
    got = np.array([end[0, 3], end[1, 3], yaw_of(end)])
    expected = predicted_pose(twist, 2.0)
    assert np.linalg.norm(got[:2] - expected[:2]) < DRIVE_POSITION_TOLERANCE
    assert abs(got[2] - expected[2]) < DRIVE_YAW_TOLERANCE
    # Steady state over the second second, in the body frame of the middle pose (no rotation
    # in the translation cases, so this is the body-frame speed).
    moved = np.array([*(middle[:3, :3].T @ (end[:3, 3] - middle[:3, 3]))[:2], yaw_of(end) - yaw_of(middle)])
    main = int(np.argmax(np.abs(twist)))
    assert moved[main] / twist[main] == pytest.approx(1.0, abs=STEADY_SPEED_TOLERANCE)
    assert abs(end[2, 3] - WHEEL_RADIUS) < 0.002  # still on its wheels
    joints = world.joint_states()
    assert list(joints) == ["torso_lift_joint", "head_1_joint", "head_2_joint",
                            *(f"wheel_{w}_joint" for w in WHEEL_NAMES)]  # rollers are not published
    np.testing.assert_allclose([joints[f"wheel_{w}_joint"][1] for w in WHEEL_NAMES], wheel_speeds(twist), atol=0.2)


def test_lightweight_follows_the_command_exactly():
    world = build_world(lightweight(), StartPose(1.0, -2.0, 0.0, 0.3))
    twist = np.array([0.4, -0.2, 0.5])
    world.set_base_twist(twist)
    x, y, yaw = 1.0, -2.0, 0.3
    for _ in range(240):
        world.step()
        # Semi-implicit Euler of the commanded twist, rotated by the heading at the step start.
        c, s = np.cos(yaw), np.sin(yaw)
        x, y, yaw = x + DT * (c * twist[0] - s * twist[1]), y + DT * (s * twist[0] + c * twist[1]), yaw + DT * twist[2]
    pose = world.base_pose()
    np.testing.assert_allclose([pose[0, 3], pose[1, 3], yaw_of(pose)], [x, y, yaw], rtol=0, atol=1e-12)
    base_dofs = [world.model.joint(j).dofadr[0] for j in ("base_x", "base_y", "base_yaw")]
    c, s = np.cos(yaw - DT * twist[2]), np.sin(yaw - DT * twist[2])
    np.testing.assert_allclose(world.data.qvel[base_dofs], [c * 0.4 + s * 0.2, s * 0.4 - c * 0.2, 0.5], atol=1e-12)
    # And the exact arc, to first order in the step.
    arc = predicted_pose(twist, 1.0)
    rotated = np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]]) @ arc[:2]
    np.testing.assert_allclose([x - 1.0, y + 2.0], rotated, atol=2 * DT)
    assert pose[2, 3] == pytest.approx(WHEEL_RADIUS)
    # Body-frame velocity (odometry): the twist, seen from the heading one step later (the world
    # velocity is held through each step).
    linear, angular = world.base_velocity()
    c, s = np.cos(DT * twist[2]), np.sin(DT * twist[2])
    np.testing.assert_allclose(linear, [c * 0.4 + s * -0.2, -s * 0.4 + c * -0.2, 0.0], atol=1e-12)
    np.testing.assert_allclose(angular, [0.0, 0.0, 0.5], atol=1e-12)
    assert set(world.joint_states()) == {"base_x", "base_y", "base_yaw", "torso_lift_joint", "head_1_joint",
                                         "head_2_joint"}


def test_uav_hovers_and_tracks_joint_velocity_commands():
    world = build_world(uav(), StartPose(1.0, 2.0, 1.5, 0.0))
    world.step(240)
    np.testing.assert_allclose(world.base_pose()[:3, 3], [1.0, 2.0, 1.5], atol=1e-12)  # gravity compensated
    command = np.array([0.5, -0.2, 0.1, 0.0, 0.1, 0.5])
    world.set_joint_velocities(command)
    world.step(120)
    # Velocity servos: exact up to the gyroscopic torque of turning about two axes over their gain
    # (kv = inertia / SERVO_TIME_CONSTANT): an error of |w_pitch * w_yaw| * SERVO_TIME_CONSTANT times the
    # frame's inertia ratio, under 2.5 for this frame and its hinge chain.
    gyroscopic = abs(command[4] * command[5]) * SERVO_TIME_CONSTANT
    np.testing.assert_allclose(world.data.qvel[:6], command, atol=2.5 * gyroscopic)
    assert abs(world.data.qvel[3] - command[3]) > 0.5 * gyroscopic  # the coupling is there, of that size
    with pytest.raises(TypeError, match="flies"):
        world.set_base_twist(np.zeros(3))
    with pytest.raises(ValueError, match="6 finite"):
        world.set_joint_velocities(np.zeros(5))



"""What a robot looks like to the other robots' cameras and LiDARs in a multi-robot run.

A built-in robot shows its physics shapes: its geoms that touch the world (the chassis class) or are drawn only
(wheel hubs) become triangle meshes in the base_link frame, at the standing pose, in their MJCF colours
(mecanum rollers are left out: the chassis covers them), so what a camera sees of it is what the other robots
collide with. A description robot shows its visual geoms (URDF <visual>, MJCF geoms that collide with nothing)
in their colours, or its collision geoms if it has none. The mesh is rigid, posed at base_link: the links above
the TIAGo's base are fixed (simulation.robots.tiago_model), and wheels are round.
"""

from __future__ import annotations

import mujoco
import numpy as np

from core.formats.scene_layout import ROBOTS_PRIM
from simulation.embedded.merge import MergedMesh, Part, merge_parts
from simulation.physics import build_mjcf
from simulation.render import RenderMesh
from simulation.robots.geom_mesh import geom_mesh, geom_pose
from simulation.robots.mjcf import CHASSIS_BIT
from simulation.robots.spec import RobotModel

ROBOT_ROUGHNESS = 0.4


def robot_parts(robot: RobotModel) -> list[Part]:
    """The robot's visible shapes (module notes) as mesh parts in its base_link frame."""
    model = mujoco.MjModel.from_xml_string(build_mjcf(robot, imus=[]))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    base = model.body("base_link").id
    to_base = np.linalg.inv(_pose(data.xpos[base], data.xmat[base]))
    bodies = {base}
    for body in range(model.nbody):  # descendants of base_link (parents come before children)
        if model.body_parentid[body] in bodies:
            bodies.add(body)
    own = [geom for geom in range(model.ngeom) if model.geom_bodyid[geom] in bodies]
    visual = [geom for geom in own if model.geom_contype[geom] == 0 and model.geom_conaffinity[geom] == 0]
    if robot.looks == "visuals" and visual:
        drawn = visual
    else:
        drawn = [geom for geom in own if model.geom_contype[geom] in (0, CHASSIS_BIT)
                 and model.geom_type[geom] != mujoco.mjtGeom.mjGEOM_MESH]
    parts = []
    for geom in drawn:
        mesh = geom_mesh(model, geom)
        if mesh is None:
            continue
        mesh.apply_transform(to_base @ geom_pose(data, geom))
        color = tuple(float(c) for c in model.geom_rgba[geom][:3])
        parts.append(Part(model.geom(geom).name, np.asarray(mesh.vertices), np.asarray(mesh.faces), color,
                          roughness=ROBOT_ROUGHNESS))
    return parts


def _pose(position: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = np.asarray(matrix).reshape(3, 3), position
    return pose



class RobotTrack:
    """One robot of a multi-robot run as the others see it: a rigid mesh posed at its base_link every frame."""

    def __init__(self, name: str, robot: RobotModel):
        self.robot_name, self.kind, self.label = name, robot.kind, robot.label
        self.name = robot_prim_path(name)
        parts = robot_parts(robot)
        self.mesh: MergedMesh = merge_parts(parts)
        self.vertices = np.concatenate([p.vertices for p in parts])

    def render_mesh(self, instance_id: int, semantic_id: int) -> RenderMesh:
        return RenderMesh(self.name, self.vertices, self.mesh.faces, instance_id, semantic_id, self.mesh.material,
                          self.mesh.uvs)


def robot_prim_path(name: str) -> str:
    """The name robot `name` goes by in instances.json and the render scene."""
    return f"{ROBOTS_PRIM}/{name}"

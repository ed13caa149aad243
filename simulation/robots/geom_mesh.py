"""A compiled MuJoCo geom as a triangle mesh, and its pose: what the renderers draw of a
robot (simulation.embedded.robot_meshes) and what `grade robot inspect` plots."""

from __future__ import annotations

import mujoco
import numpy as np
import trimesh

SPHERE_SUBDIVISIONS = 2
CYLINDER_SECTIONS = 24


def geom_mesh(model: mujoco.MjModel, geom: int) -> trimesh.Trimesh | None:
    """Geom `geom` as a mesh in its own frame (boxes, spheres, cylinders, capsules and meshes; None for the other
    types: planes, ellipsoids, height fields)."""
    kind, size = model.geom_type[geom], model.geom_size[geom]
    if kind == mujoco.mjtGeom.mjGEOM_MESH:
        mesh_id = model.geom_dataid[geom]
        vertices = model.mesh_vert[model.mesh_vertadr[mesh_id]:][:model.mesh_vertnum[mesh_id]]
        faces = model.mesh_face[model.mesh_faceadr[mesh_id]:][:model.mesh_facenum[mesh_id]]
        mesh = trimesh.Trimesh(vertices.astype(np.float64), faces.copy(), process=False)
    elif kind == mujoco.mjtGeom.mjGEOM_BOX:
        mesh = trimesh.creation.box(extents=2.0 * size)
    elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
        mesh = trimesh.creation.icosphere(subdivisions=SPHERE_SUBDIVISIONS, radius=size[0])
    elif kind == mujoco.mjtGeom.mjGEOM_CYLINDER:
        mesh = trimesh.creation.cylinder(radius=size[0], height=2.0 * size[1], sections=CYLINDER_SECTIONS)
    elif kind == mujoco.mjtGeom.mjGEOM_CAPSULE:
        mesh = trimesh.creation.capsule(radius=size[0], height=2.0 * size[1], count=(CYLINDER_SECTIONS, 8))
    else:
        return None
    return mesh


def geom_pose(data: mujoco.MjData, geom: int) -> np.ndarray:
    """World <- geom 4x4 transform in `data`."""
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = data.geom_xmat[geom].reshape(3, 3), data.geom_xpos[geom]
    return pose

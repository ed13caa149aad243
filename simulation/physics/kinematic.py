"""Kinematic bodies (humans, flying objects) as MuJoCo mocap bodies posed by the caller each step.

Their collision only has to push or block the robot: a human is a vertical capsule standing on its
body origin (the caller gives the root's floor position and heading); a flying object is the convex
hull of its package's collision.stl, in the package's own frame. They do not collide with the
environment or each other (see simulation.robots.mjcf.COLLISION).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
import trimesh

from core.assets.layout import COLLISION_FILE
from core.errors import InputError
from simulation.robots.mjcf import COLLISION, element

HUMAN_RADIUS = 0.25  # m, shoulders-wide capsule
HUMAN_HEIGHT = 1.8  # m
# Until the caller poses them, kinematic bodies wait far below the floor, touching nothing.
PARKED_POSITION = (0.0, 0.0, -100.0)


@dataclass(frozen=True)
class KinematicBody:
    """A mocap body: a capsule (`radius`, `height`) or a convex hull of `vertices` (body frame)."""

    name: str
    kind: str  # "human" | "object"
    radius: float = 0.0
    height: float = 0.0
    vertices: np.ndarray | None = None

    @property
    def body_name(self) -> str:
        return f"{self.kind}/{self.name}"


def human_body(name: str, radius: float = HUMAN_RADIUS, height: float = HUMAN_HEIGHT) -> KinematicBody:
    """A human as a capsule from the floor (body origin) up to `height`."""
    if not 0 < 2 * radius <= height:
        raise ValueError(f"human {name!r}: need 0 < 2 * radius <= height, got radius {radius}, height {height}")
    return KinematicBody(name, "human", radius=radius, height=height)


def object_body(name: str, package: str | Path) -> KinematicBody:
    """A flying object from its package: the convex hull of collision.stl."""
    path = Path(package) / COLLISION_FILE
    if not path.is_file():
        raise InputError("collision mesh not found", path)
    try:
        mesh = trimesh.load(path, force="mesh")
    except ValueError as exc:
        raise InputError(f"unreadable STL ({exc})", path) from exc
    if len(mesh.vertices) < 4:
        raise InputError("fewer than 4 vertices", path, "vertices")
    hull = mesh.convex_hull
    if hull.volume <= 1e-12:
        raise InputError("degenerate mesh: its convex hull has no volume", path, "vertices")
    return KinematicBody(name, "object", vertices=np.asarray(hull.vertices, dtype=np.float64))


def kinematic_elements(bodies: list[KinematicBody]) -> tuple[list[ET.Element], list[ET.Element]]:
    """(mesh assets, mocap bodies) for the MJCF <asset> and <worldbody>."""
    assets, elements = [], []
    names = [b.body_name for b in bodies]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"kinematic body names must be unique, repeated: {repeated}")
    for body in bodies:
        node = element("body", name=body.body_name, mocap=True, pos=PARKED_POSITION)
        if body.vertices is None:
            element("geom", node, name=f"{body.body_name}/capsule", type="capsule", size=body.radius,
                    fromto=(0, 0, body.radius, 0, 0, body.height - body.radius), rgba=(0.8, 0.5, 0.4, 1),
                    **COLLISION["kinematic"])
        else:
            mesh_name = f"{body.body_name}/hull"
            assets.append(element("mesh", name=mesh_name, vertex=body.vertices))
            element("geom", node, name=mesh_name, type="mesh", mesh=mesh_name, rgba=(0.4, 0.6, 0.8, 1),
                    **COLLISION["kinematic"])
        elements.append(node)
    return assets, elements


def mocap_indices(model: mujoco.MjModel) -> dict[str, int]:
    """Mocap index of every kinematic body, by body name ("human/<name>", "object/<name>")."""
    return {model.body(b).name: int(model.body_mocapid[b]) for b in range(model.nbody) if model.body_mocapid[b] >= 0}


def set_kinematic_pose(data: mujoco.MjData, mocap: int, position: np.ndarray, quat_wxyz: np.ndarray) -> None:
    """Place mocap body number `mocap` at a world pose (quaternion w, x, y, z; normalised here)."""
    quat = np.asarray(quat_wxyz, dtype=np.float64)
    norm = np.linalg.norm(quat)
    if quat.shape != (4,) or not norm > 0:
        raise ValueError(f"a pose needs a non-zero quaternion (w, x, y, z), got {quat_wxyz}")
    data.mocap_pos[mocap] = position
    data.mocap_quat[mocap] = quat / norm

"""Small helpers to build MJCF (MuJoCo XML) with ElementTree, and the collision classes.

Collision classes (MuJoCo contype / conaffinity bits). Two geoms touch when
`(contype_a & conaffinity_b) | (contype_b & conaffinity_a)` is non-zero, so with the values below
the floor, the static environment and kinematic (mocap) bodies collide only with the robot, and the
robot's own parts (chassis, rollers) never collide with each other.

Mecanum rollers touch only the floor plane: the TIAGo chassis covers the wheels from above and on
every side with 3 cm of ground clearance, so it meets walls, furniture and people first. Keeping the
60 roller bodies out of the environment's pairs is what lets the physical model run fast in a
furnished house (they would otherwise be tested against every nearby piece each step).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy.spatial.transform import Rotation

from core.geometry import xyzw_to_wxyz

JOINT_TAGS = ("joint", "freejoint")

STATIC_BIT = 1  # environment pieces
CHASSIS_BIT = 2  # robot bodies that touch the world (chassis, UAV frame)
ROLLER_BIT = 4  # mecanum rollers
KINEMATIC_BIT = 8  # humans and flying objects (mocap bodies)
FLOOR_BIT = 16  # the floor plane

COLLISION = {
    "floor": {"contype": FLOOR_BIT, "conaffinity": 0},
    "static": {"contype": STATIC_BIT, "conaffinity": 0},
    "kinematic": {"contype": KINEMATIC_BIT, "conaffinity": 0},
    "chassis": {"contype": CHASSIS_BIT, "conaffinity": FLOOR_BIT | STATIC_BIT | KINEMATIC_BIT},
    "roller": {"contype": ROLLER_BIT, "conaffinity": FLOOR_BIT},
    "none": {"contype": 0, "conaffinity": 0},
}


def fmt(value: object) -> str:
    """An MJCF attribute string: numbers with 12 significant digits, sequences space-separated."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    array = np.asarray(value)
    if array.ndim == 0:
        return f"{array.item():.12g}" if array.dtype.kind == "f" else str(array.item())
    return " ".join(f"{v:.12g}" for v in array.astype(np.float64).ravel())


def element(tag: str, parent: ET.Element | None = None, **attrs: object) -> ET.Element:
    """An MJCF element with formatted attributes, appended to `parent` when given.

    Attribute names ending in an underscore drop it (`class_` -> `class`); None values are skipped.
    """
    clean = {key.rstrip("_"): fmt(value) for key, value in attrs.items() if value is not None}
    return ET.Element(tag, clean) if parent is None else ET.SubElement(parent, tag, clean)


def frame_quat(x_axis: np.ndarray, z_axis: np.ndarray) -> np.ndarray:
    """Quaternion (w, x, y, z) of the frame with the given orthonormal x and z axes."""
    x_axis = np.asarray(x_axis, dtype=np.float64)
    z_axis = np.asarray(z_axis, dtype=np.float64)
    matrix = np.stack([x_axis, np.cross(z_axis, x_axis), z_axis], axis=1)
    return xyzw_to_wxyz(Rotation.from_matrix(matrix).as_quat())


def find_body(root: ET.Element, name: str) -> ET.Element | None:
    """The <body> named `name` in the tree under `root` (root included)."""
    if root.tag == "body" and root.get("name") == name:
        return root
    return root.find(f".//body[@name='{name}']")


class LinkEdge(NamedTuple):
    """One edge of a robot's link tree: `child` hangs under `parent`; `fixed` when no joint moves it there."""

    parent: str
    child: str
    fixed: bool


def link_tree(root: ET.Element, links: Sequence[str]) -> list[LinkEdge]:
    """The link tree under `root` (a link itself), depth first: each link's parent is its nearest ancestor
    <body> that is a link, and the edge is fixed when neither the link's body nor a body between the two has a
    joint. Bodies that are not links (wheels, rollers) are passed through, never listed."""
    names = set(links)
    edges: list[LinkEdge] = []

    def walk(body: ET.Element, link: str, moved: bool) -> None:
        for child in body.iterfind("body"):
            moves = moved or any(child.find(tag) is not None for tag in JOINT_TAGS)
            name = child.get("name")
            if name in names:
                edges.append(LinkEdge(link, name, not moves))
                walk(child, name, False)
            else:
                walk(child, link, moves)

    walk(root, root.get("name"), False)
    return edges

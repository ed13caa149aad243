"""A robot description (URDF or MJCF) as MuJoCo compiles it: its link tree re-rooted at the base link, and the
facts placement, planning and `grade robot inspect` need (links, joints, mass, collision footprint, wheels).

MuJoCo is the parser and compiler of both formats. Before it sees a URDF this module resolves what MuJoCo does
not: `package://` URIs (through the user's `packages` map), xacro `$(optenv NAME default)` left in a generated
file (the default is taken, never the environment, so a run does not depend on the shell it started from),
mesh paths made absolute; and it checks what MuJoCo would accept silently or report without naming the element:
a link with two parents (a kinematic loop), a mass or inertia that is zero or negative, a mesh file that is
missing or in a format MuJoCo cannot read. Fixed links are kept (URDF `fusestatic` off) so that sensors mount
on any link by name, and visual geoms are kept (`discardvisual` off) for the renderers.

The base link becomes the root body, named `base_link` (TF's base frame): links above it must hang on fixed
joints, and are re-hung below it with the inverse transform (the Husky's `base_footprint`); its own joints (an
MJCF robot's free joint) are dropped, since the drive's joints replace them.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from core.errors import InputError
from core.rundir import read_utf8

BASE_LINK = "base_link"
# Mesh formats MuJoCo reads itself, and those trimesh converts for it (to STL, in MESH_CACHE).
MESH_SUFFIXES = (".stl", ".obj", ".msh")
CONVERTED_SUFFIXES = (".dae", ".gltf", ".glb", ".ply", ".off")
MESH_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "grade" / "meshes"
XACRO_OPTENV = re.compile(r"\$\(optenv\s+\S+\s*([^)]*)\)")
XACRO_OTHER = re.compile(r"\$\((env|find|arg|eval)\b[^)]*\)")
# A wheel: a hinge whose axis lies within this cosine of the base's y axis, whose collision reaches this close
# (m) to the robot's lowest point.
WHEEL_AXIS_COS = 0.95
WHEEL_GROUND_TOLERANCE = 0.02


@dataclass(frozen=True)
class Joint:
    name: str
    type: str  # hinge | slide | ball | free
    parent: str  # the link it moves
    axis: tuple[float, float, float]  # in base_link at the zero pose


@dataclass(frozen=True)
class Wheel:
    """A wheel of a ground robot: its joint turns at (forward speed - yaw rate * y) / radius * sign."""

    joint: str
    y: float  # lateral offset of its axle in base_link, m
    radius: float
    sign: float  # +1 when the joint axis is base_link's +y


@dataclass(frozen=True)
class Description:
    """A compiled description (module notes). `mjcf` is MJCF text whose worldbody holds one body, the base link,
    named base_link, at the origin; its meshes are referenced by absolute path."""

    path: Path
    format: str  # urdf | mjcf
    mjcf: str
    links: tuple[str, ...]  # base_link first
    joints: tuple[Joint, ...]
    mass: float  # kg
    inertia: tuple[float, float, float]  # about the base's axes through the centre of mass, kg m^2
    lower: tuple[float, float, float]  # collision bounding box in base_link at the zero pose, m
    upper: tuple[float, float, float]
    wheels: tuple[Wheel, ...]
    digest: str  # content hash of the description and its meshes

    @property
    def base_height(self) -> float:
        """How high base_link's origin stands above the floor: the collision box's bottom below it."""
        return -self.lower[2]


def load_description(path: str | Path, packages: dict[str, Path] | None = None,
                     base_link: str | None = None) -> Description:
    """The description at `path` (.urdf, or .xml / .mjcf for MJCF); InputError naming the file and element for
    anything MuJoCo cannot compile or this module refuses (module notes)."""
    path = Path(path).resolve()
    packages = {name: Path(folder).resolve() for name, folder in (packages or {}).items()}
    return _load(path, read_utf8(path, "robot description"), tuple(sorted(packages.items())), base_link)


@functools.lru_cache(maxsize=8)
def _load(path: Path, text: str, packages: tuple[tuple[str, Path], ...], base_link: str | None) -> Description:
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise InputError(f"malformed XML: {exc}", path) from None
    if root.tag == "robot":
        fmt, mjcf = "urdf", _urdf_to_mjcf(path, root, dict(packages))
    elif root.tag == "mujoco":
        fmt = "mjcf"
        _mjcf_meshes(path, root)
        mjcf = _compile_xml(path, ET.tostring(root, encoding="unicode"))
    else:
        raise InputError(f"the root element is <{root.tag}>; a robot description is a URDF (<robot>) or an MJCF "
                         "(<mujoco>)", path)
    tree = ET.fromstring(mjcf)
    rooted = _reroot(path, tree, base_link)
    model = _compile(path, ET.tostring(rooted, encoding="unicode"))
    return _describe(path, fmt, ET.tostring(rooted, encoding="unicode"), model, _digest(path, text, rooted))


# ------------------------------------------------------------ URDF

def _urdf_to_mjcf(path: Path, robot: ET.Element, packages: dict[str, Path]) -> str:
    """The URDF as MuJoCo's MJCF, after the pre-pass of the module notes."""
    parents: dict[str, str] = {}
    for joint in robot.iter("joint"):
        if joint.find("parent") is None or joint.find("child") is None:
            continue  # a <transmission>'s <joint> reference
        child = joint.find("child").get("link")
        if child in parents:
            raise InputError(f"link {child!r} is the child of joints {parents[child]!r} and {joint.get('name')!r}: "
                             "a kinematic loop, which URDF cannot describe", path, f"joint {joint.get('name')}")
        parents[child] = joint.get("name")
    for link in robot.iter("link"):
        _check_inertial(path, link)
    for node in robot.iter():
        for key, value in node.attrib.items():
            node.set(key, _substitute(path, node, key, value))
    for mesh in robot.iter("mesh"):
        mesh.set("filename", str(_mesh_file(path, mesh.get("filename", ""), packages, "mesh")))
    robot.attrib.pop("{http://ros.org/wiki/xacro}xacro", None)
    for old in robot.findall("mujoco"):
        robot.remove(old)
    extension = ET.SubElement(robot, "mujoco")
    ET.SubElement(extension, "compiler", discardvisual="false", fusestatic="false", strippath="false",
                  balanceinertia="true")
    return _compile_xml(path, ET.tostring(robot, encoding="unicode"))


def _check_inertial(path: Path, link: ET.Element) -> None:
    inertial = link.find("inertial")
    if inertial is None:
        return
    where = f"link {link.get('name')} <inertial>"
    mass = inertial.find("mass")
    value = _number(path, where, mass.get("value") if mass is not None else None, "mass")
    if not value > 0:
        raise InputError(f"mass {value:g} kg: a link's mass must be > 0 (leave <inertial> out of a massless "
                         "link)", path, where)
    inertia = inertial.find("inertia")
    if inertia is None:
        raise InputError("no <inertia>", path, where)
    diagonal = [_number(path, where, inertia.get(key), key) for key in ("ixx", "iyy", "izz")]
    if min(diagonal) <= 0:
        raise InputError(f"inertia diagonal {diagonal}: every moment of inertia must be > 0", path, where)


def _number(path: Path, where: str, text: str | None, name: str) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        raise InputError(f"{name} is {text!r}, not a number", path, where) from None


def _substitute(path: Path, node: ET.Element, key: str, value: str) -> str:
    value = XACRO_OPTENV.sub(lambda match: match[1].strip(), value)
    other = XACRO_OTHER.search(value)
    if other:
        raise InputError(f"{key}={value!r} holds the xacro substitution {other[0]!r}; run xacro on the file first "
                         "(`xacro robot.urdf.xacro > robot.urdf`)", path, f"<{node.tag} {node.get('name') or ''}>")
    return value


def _mesh_file(path: Path, uri: str, packages: dict[str, Path], where: str) -> Path:
    """The mesh file a URDF or MJCF names: package:// through `packages`, file:// or relative to the description."""
    if uri.startswith("package://"):
        package, _, rest = uri.removeprefix("package://").partition("/")
        if package not in packages:
            known = ", ".join(sorted(packages)) or "none given"
            raise InputError(f"{uri!r} names ROS package {package!r}, which robot.packages does not map to a folder "
                             f"(packages: {known})", path, where)
        file = packages[package] / rest
    else:
        file = path.parent / uri.removeprefix("file://")
    file = file.resolve()
    if not file.is_file():
        raise InputError(f"mesh {uri!r} is missing (looked for {file})", path, where)
    suffix = file.suffix.lower()
    if suffix in CONVERTED_SUFFIXES:
        return _converted(path, file, where)
    if suffix not in MESH_SUFFIXES:
        raise InputError(f"mesh {uri!r} is a {file.suffix or 'suffix-less'} file; GRADE reads "
                         f"{', '.join(MESH_SUFFIXES + CONVERTED_SUFFIXES)}", path, where)
    return file


def _converted(path: Path, file: Path, where: str) -> Path:
    """A mesh MuJoCo cannot read, as the STL trimesh makes of it: kept in MESH_CACHE under its content hash, so
    each file is converted once and an edited one again."""
    import trimesh

    from core.rundir import atomic_write_bytes

    data = file.read_bytes()
    target = MESH_CACHE / f"{hashlib.sha256(data).hexdigest()[:24]}.stl"
    if target.is_file():
        return target
    try:
        mesh = trimesh.load(file, force="mesh")
    except Exception as exc:  # noqa: BLE001 (trimesh raises what its format readers raise)
        raise InputError(f"mesh {file.name} cannot be read: {exc}", path, where) from None
    if not isinstance(mesh, trimesh.Trimesh) or not len(mesh.faces):
        raise InputError(f"mesh {file.name} holds no triangles", path, where)
    return atomic_write_bytes(target, mesh.export(file_type="stl"))


# ------------------------------------------------------------ MJCF

def _mjcf_meshes(path: Path, root: ET.Element) -> None:
    """Make an MJCF's mesh files absolute (relative to its compiler meshdir and folder) and check them."""
    compiler = root.find("compiler")
    meshdir = compiler.get("meshdir", "") if compiler is not None else ""
    for mesh in root.iter("mesh"):
        if mesh.get("file"):
            file = _mesh_file(path, str(Path(meshdir) / mesh.get("file")), {}, f"<mesh {mesh.get('name') or ''}>")
            mesh.set("file", str(file))
    if compiler is not None:
        compiler.attrib.pop("meshdir", None)


def _compile_xml(path: Path, text: str) -> str:
    """MuJoCo's own MJCF of `text` (URDF or MJCF), checked by compiling it."""
    import mujoco

    try:
        spec = mujoco.MjSpec.from_string(text)
        spec.compile()
        return spec.to_xml()
    except ValueError as exc:
        raise InputError(f"MuJoCo cannot compile the robot description: {str(exc).strip()}", path) from None


def _compile(path: Path, text: str):
    import mujoco

    try:
        return mujoco.MjModel.from_xml_string(text)
    except ValueError as exc:
        raise InputError(f"MuJoCo cannot compile the robot description: {str(exc).strip()}", path) from None


def _reroot(path: Path, mjcf: ET.Element, base_link: str | None) -> ET.Element:
    """The MJCF with the base link as the one body of its worldbody, at the origin, named base_link."""
    worldbody = mjcf.find("worldbody")
    roots = worldbody.findall("body") if worldbody is not None else []
    if len(roots) != 1:
        raise InputError(f"the description has {len(roots)} root links; a robot is one tree of links", path)
    names = [body.get("name") for body in roots[0].iter("body")]
    if base_link is None:
        base_link = BASE_LINK if BASE_LINK in names else roots[0].get("name")
    if base_link not in names:
        raise InputError(f"base_link {base_link!r} is not a link of the description; links: {sorted(names)}", path,
                         "base_link")
    if base_link != BASE_LINK and BASE_LINK in names:
        raise InputError(f"base_link {base_link!r} is chosen but another link is named {BASE_LINK!r}, the name the "
                         "base gets in TF; rename that link", path, "base_link")
    chain = _chain(roots[0], base_link)
    for body in chain[:-1]:
        moving = [child.tag for child in body if child.tag in ("joint", "freejoint")]
        if moving:
            raise InputError(f"link {body.get('name')!r} between the description's root and base_link {base_link!r} "
                             f"moves on a {moving[0]}; the base must be fixed to the links above it", path, "base_link")
    # Re-hang each body of the chain below the next one, innermost first: the base becomes the root.
    for parent, child in reversed(list(itertools.pairwise(chain))):
        parent_in_child = np.linalg.inv(_local(child))
        parent.remove(child)
        _set_local(parent, parent_in_child)
        child.append(parent)
    base = chain[-1]
    for joint in [child for child in base if child.tag in ("joint", "freejoint")]:
        base.remove(joint)  # the drive's joints replace the base's own (an MJCF robot's free joint)
    _set_local(base, np.eye(4))
    base.set("name", BASE_LINK)
    worldbody.remove(roots[0])
    worldbody.append(base)
    return mjcf


def _chain(root: ET.Element, name: str) -> list[ET.Element]:
    if root.get("name") == name:
        return [root]
    for child in root.findall("body"):
        chain = _chain(child, name)
        if chain:
            return [root, *chain]
    return []


def _local(body: ET.Element) -> np.ndarray:
    """A body's pose in its parent (MuJoCo's saved MJCF writes pos and quat)."""
    pose = np.eye(4)
    pose[:3, 3] = [float(v) for v in body.get("pos", "0 0 0").split()]
    w, x, y, z = (float(v) for v in body.get("quat", "1 0 0 0").split())
    pose[:3, :3] = Rotation.from_quat([x, y, z, w]).as_matrix()
    return pose


def _set_local(body: ET.Element, pose: np.ndarray) -> None:
    x, y, z, w = Rotation.from_matrix(pose[:3, :3]).as_quat()
    for key in ("pos", "quat", "euler", "axisangle", "xyaxes", "zaxis"):
        body.attrib.pop(key, None)
    body.set("pos", " ".join(f"{v:.12g}" for v in pose[:3, 3]))
    body.set("quat", " ".join(f"{v:.12g}" for v in (w, x, y, z)))


# ------------------------------------------------------------ facts

def _describe(path: Path, fmt: str, mjcf: str, model, digest: str) -> Description:
    import mujoco

    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    links = tuple(model.body(i).name for i in range(1, model.nbody))
    for body in range(1, model.nbody):
        if model.body_mass[body] < 0:
            raise InputError(f"link {model.body(body).name!r} has a negative mass", path)
        # Finite numbers in the file can still compile to inf or NaN (a geom 1e308 m wide has an infinite mass).
        if not (np.isfinite(model.body_mass[body]) and np.all(np.isfinite(model.body_inertia[body]))
                and np.all(np.isfinite(data.xpos[body]))):
            raise InputError(f"link {model.body(body).name!r} compiles to an infinite or undefined mass, inertia or "
                             "position: a size, mass or offset in the description is too large", path)
    if not model.body_subtreemass[1] > 0:
        raise InputError("the robot has no mass: give its links <inertial> masses", path)
    joints = tuple(
        Joint(model.joint(j).name, ("free", "ball", "slide", "hinge")[model.jnt_type[j]],
              model.body(model.jnt_bodyid[j]).name,
              tuple(float(v) for v in data.xaxis[j]))
        for j in range(model.njnt))
    corners = []
    collision = [g for g in range(model.ngeom) if model.geom_contype[g] or model.geom_conaffinity[g]]
    for geom in collision or range(model.ngeom):
        corners.append(_geom_corners(model, data, geom))
        if not np.all(np.isfinite(corners[-1])):
            name = model.geom(geom).name or f"#{geom} of link {model.body(model.geom_bodyid[geom]).name!r}"
            raise InputError(f"collision geometry {name} is infinite or undefined: a size or offset in the "
                             "description is too large", path)
    points = np.concatenate(corners) if corners else np.zeros((1, 3))
    lower, upper = points.min(axis=0), points.max(axis=0)
    inertia = _inertia(model, data)
    wheels = _wheels(model, data, collision, float(lower[2]))
    return Description(path, fmt, mjcf, links, joints, float(model.body_subtreemass[1]), inertia,
                       tuple(float(v) for v in lower), tuple(float(v) for v in upper), wheels, digest)


def _geom_corners(model, data, geom: int) -> np.ndarray:
    center, half = model.geom_aabb[geom][:3], model.geom_aabb[geom][3:]
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float64)
    local = center + signs * half
    return data.geom_xpos[geom] + local @ data.geom_xmat[geom].reshape(3, 3).T


def _inertia(model, data) -> tuple[float, float, float]:
    """The whole robot's principal moments about base_link's axes through its centre of mass."""
    com = data.subtree_com[1]
    total = np.zeros((3, 3))
    for body in range(1, model.nbody):
        rotation = data.ximat[body].reshape(3, 3)
        local = rotation @ np.diag(model.body_inertia[body]) @ rotation.T
        offset = data.xipos[body] - com
        total += local + model.body_mass[body] * (offset @ offset * np.eye(3) - np.outer(offset, offset))
    return tuple(float(v) for v in np.maximum(np.diag(total), 1e-6))


def _wheels(model, data, collision: list[int], bottom: float) -> tuple[Wheel, ...]:
    wheels = []
    for j in range(model.njnt):
        axis = data.xaxis[j]
        if model.jnt_type[j] != 3 or abs(axis[1]) < WHEEL_AXIS_COS:  # 3: mjJNT_HINGE
            continue
        body = model.jnt_bodyid[j]
        geoms = [g for g in collision if model.geom_bodyid[g] == body]
        if not geoms:
            continue
        low = min(float(_geom_corners(model, data, g)[:, 2].min()) for g in geoms)
        if low - bottom > WHEEL_GROUND_TOLERANCE:
            continue
        anchor = data.xanchor[j]
        wheels.append(Wheel(model.joint(j).name, float(anchor[1]), float(anchor[2] - bottom),
                            1.0 if axis[1] > 0 else -1.0))
    return tuple(wheels)


def _digest(path: Path, text: str, mjcf: ET.Element) -> str:
    """The description's content hash: its text and every mesh file it uses."""
    digest = hashlib.sha256(text.encode())
    for mesh in mjcf.iter("mesh"):
        file = mesh.get("file")
        if file:
            digest.update(Path(file).read_bytes())
    return digest.hexdigest()[:16]

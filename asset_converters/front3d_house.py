"""Reading and validating a 3D-Front house JSON into plain data (still in 3D-Front's Y-up frame).

A house has architecture `mesh` entries (flat `xyz`, `faces`, `uv` arrays), `furniture` entries
(3D-FUTURE model `jid` and a `bbox` size), a `material` list, and `scene.room[]` whose `children`
place meshes and furniture by `ref` (a uid) with `pos`, `rot` (quaternion x, y, z, w) and `scale`.
Every problem raises InputError naming the file and the key path (e.g. `scene.room[2].children[5].ref`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.spatial.transform import Rotation

from core.errors import InputError
from core.rundir import read_json

# 3D-Front releases keep `furniture/...` children whose model was not published; those refs
# dangle in real houses (19 in the shared sample), so they are skipped and counted, not errors.
DANGLING_FURNITURE_PREFIX = "furniture/"
IDENTITY_POSE = {"pos": [0.0, 0.0, 0.0], "rot": [0.0, 0.0, 0.0, 1.0], "scale": [1.0, 1.0, 1.0]}


@dataclass
class ArchMesh:
    uid: str
    type: str
    vertices: np.ndarray  # (V, 3), Y up
    faces: np.ndarray  # (F, 3)
    uvs: np.ndarray | None  # (V, 2)
    material: str | None  # uid into House.materials
    where: str  # key path, e.g. mesh[4]


@dataclass
class FurnitureEntry:
    uid: str
    jid: str
    category: str | None  # the entry's own `category`, else its `title`
    size: np.ndarray | None  # (3,) bbox size in the model's local frame (Y up), unscaled
    valid: bool  # 3D-Front marks entries whose model is in 3D-FUTURE with "valid": true
    where: str


@dataclass
class HouseMaterial:
    uid: str
    jid: str
    texture_url: str
    color: tuple[float, float, float] | None  # 0..1
    content_type: str  # lower-case words of `contentType` (e.g. "material flooring - hardwood"), "" when absent


@dataclass
class Placement:
    """One room child: `ref` placed by `transform` (4x4, Y up, room and scene poses included)."""

    ref: str
    transform: np.ndarray
    where: str


@dataclass
class Room:
    instance_id: str
    type: str
    children: list[Placement]
    dangling: list[str]  # key paths of furniture children whose uid is in no list


@dataclass
class House:
    path: Path
    uid: str
    meshes: dict[str, ArchMesh]
    furniture: dict[str, FurnitureEntry]
    materials: dict[str, HouseMaterial]
    rooms: list[Room]


class _Reader:
    """Typed access to the parsed JSON that names the file and key path on every failure."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, message: str, where: str) -> InputError:
        return InputError(message, self.path, where)

    def key(self, obj: Any, key: str, where: str) -> Any:
        if not isinstance(obj, dict):
            raise self.fail(f"expected an object, got {type(obj).__name__}", where)
        if key not in obj:
            raise self.fail("missing key", f"{where}.{key}" if where else key)
        return obj[key]

    def list_(self, obj: Any, key: str, where: str) -> tuple[list, str]:
        here = f"{where}.{key}" if where else key
        value = self.key(obj, key, where)
        if not isinstance(value, list):
            raise self.fail(f"expected a list, got {type(value).__name__}", here)
        return value, here

    def text(self, obj: Any, key: str, where: str) -> str:
        value = self.key(obj, key, where)
        if not isinstance(value, str):
            raise self.fail(f"expected a string, got {type(value).__name__}", f"{where}.{key}")
        return value

    def numbers(self, value: Any, where: str, length: int | None = None, multiple_of: int = 1,
                integer: bool = False) -> np.ndarray:
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value):
            raise self.fail("expected a list of numbers", where)
        if length is not None and len(value) != length:
            raise self.fail(f"expected {length} numbers, got {len(value)}", where)
        if len(value) % multiple_of:
            raise self.fail(f"length {len(value)} is not a multiple of {multiple_of}", where)
        if integer and not all(isinstance(v, int) for v in value):
            raise self.fail("expected integer indices", where)
        array = np.asarray(value, dtype=np.int64 if integer else np.float64)
        if not integer and not np.isfinite(array).all():
            raise self.fail("non-finite number", where)
        return array

    def pose(self, obj: dict, where: str, optional: bool) -> np.ndarray:
        """4x4 = translate(pos) @ rotate(rot x, y, z, w) @ scale(scale)."""
        values = {}
        for key, length in (("pos", 3), ("rot", 4), ("scale", 3)):
            raw = obj.get(key, IDENTITY_POSE[key]) if optional else self.key(obj, key, where)
            values[key] = self.numbers(raw, f"{where}.{key}", length)
        if np.linalg.norm(values["rot"]) < 1e-9:
            raise self.fail("zero quaternion", f"{where}.rot")
        matrix = np.eye(4)
        matrix[:3, :3] = Rotation.from_quat(values["rot"]).as_matrix() * values["scale"]  # scipy: x, y, z, w
        matrix[:3, 3] = values["pos"]
        return matrix


def _load_json(path: Path) -> dict:
    data = read_json(path, "house JSON")
    if not isinstance(data, dict):
        raise InputError("expected a JSON object at the top level", path)
    return data


def _mesh(reader: _Reader, entry: Any, where: str) -> ArchMesh:
    vertices = reader.numbers(reader.key(entry, "xyz", where), f"{where}.xyz", multiple_of=3).reshape(-1, 3)
    faces = reader.numbers(reader.key(entry, "faces", where), f"{where}.faces", multiple_of=3, integer=True)
    bad = faces[(faces < 0) | (faces >= len(vertices))]
    if len(bad):
        raise reader.fail(f"face index {int(bad[0])} out of range for {len(vertices)} vertices", f"{where}.faces")
    raw_uv = entry.get("uv") or []
    uvs = None
    # A few real houses carry meshes without UVs (empty or null entries): they get no texture.
    if raw_uv and all(v is not None for v in raw_uv):
        uvs = reader.numbers(raw_uv, f"{where}.uv", length=2 * len(vertices)).reshape(-1, 2)
    material = entry.get("material")
    return ArchMesh(reader.text(entry, "uid", where), reader.text(entry, "type", where).strip(), vertices,
                    faces.reshape(-1, 3), uvs, material if isinstance(material, str) else None, where)


def _bbox_size(reader: _Reader, entry: dict, where: str) -> np.ndarray | None:
    for key in ("bbox", "size"):
        if key in entry:
            value = entry[key]
            # Some entries nest the size once ([[w, h, d]]); the shared sample has one.
            if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
                value = value[0]
            size = reader.numbers(value, f"{where}.{key}", length=3)
            return size if (size > 0).all() else None
    return None


def _furniture(reader: _Reader, entry: Any, where: str) -> FurnitureEntry:
    category = entry.get("category") or entry.get("title") or None
    return FurnitureEntry(reader.text(entry, "uid", where), reader.text(entry, "jid", where),
                          category if isinstance(category, str) else None, _bbox_size(reader, entry, where),
                          entry.get("valid") is True, where)


def _material(reader: _Reader, entry: Any, where: str) -> HouseMaterial:
    color = entry.get("color")
    rgb = None
    if isinstance(color, list) and len(color) >= 3:
        rgb = tuple(float(c) for c in np.clip(reader.numbers(color[:3], f"{where}.color") / 255.0, 0.0, 1.0))
    texture = entry.get("texture")
    jid = entry.get("jid")
    content = entry.get("contentType")
    content = " ".join(c for c in content if isinstance(c, str)) if isinstance(content, list) else ""
    return HouseMaterial(reader.text(entry, "uid", where), jid if isinstance(jid, str) else "",
                         texture if isinstance(texture, str) else "", rgb, content.lower())


def load_house(path: str | Path) -> House:
    """Parse and validate a 3D-Front house JSON; every child ref is resolved or counted as dangling."""
    path = Path(path)
    data = _load_json(path)
    reader = _Reader(path)
    mesh_list, mesh_where = reader.list_(data, "mesh", "")
    meshes = {}
    for i, entry in enumerate(mesh_list):
        mesh = _mesh(reader, entry, f"{mesh_where}[{i}]")
        meshes[mesh.uid] = mesh
    furniture_list, furniture_where = reader.list_(data, "furniture", "")
    furniture = {}
    for i, entry in enumerate(furniture_list):
        item = _furniture(reader, entry, f"{furniture_where}[{i}]")
        furniture[item.uid] = item
    material_list = data.get("material", [])
    if not isinstance(material_list, list):
        raise reader.fail("expected a list", "material")
    materials = {}
    for i, entry in enumerate(material_list):
        material = _material(reader, entry, f"material[{i}]")
        materials[material.uid] = material

    scene = reader.key(data, "scene", "")
    scene_pose = reader.pose(scene, "scene", optional=True)
    room_list, room_where = reader.list_(scene, "room", "scene")
    rooms = []
    for r, room in enumerate(room_list):
        where = f"{room_where}[{r}]"
        room_pose = scene_pose @ reader.pose(room, where, optional=True)
        children, children_where = reader.list_(room, "children", where)
        placements, dangling = [], []
        for c, child in enumerate(children):
            child_where = f"{children_where}[{c}]"
            ref = reader.text(child, "ref", child_where)
            transform = room_pose @ reader.pose(child, child_where, optional=False)
            if ref in meshes or ref in furniture:
                placements.append(Placement(ref, transform, child_where))
            elif str(child.get("instanceid", "")).startswith(DANGLING_FURNITURE_PREFIX):
                dangling.append(f"{child_where}.ref")
            else:
                raise reader.fail(f"unknown uid {ref!r}: no mesh or furniture entry has it", f"{child_where}.ref")
        rooms.append(Room(reader.text(room, "instanceid", where), str(room.get("type", "")), placements, dangling))
    uid = data.get("uid")
    return House(path, uid if isinstance(uid, str) else path.stem, meshes, furniture, materials, rooms)

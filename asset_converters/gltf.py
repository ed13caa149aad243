"""Skinned, animated glTF 2.0 (.glb / .gltf) -> Animation -> animated asset package.

The file is read with numpy, no glTF library: GLB chunks, or .gltf JSON with external or data-URI
buffers; accessors honour bufferView byteStride, `normalized` integers and sparse substitution, and
every size is checked against its buffer, so a damaged file raises InputError naming the field.

How glTF maps onto `Animation` (Z up, metres, quaternions w, x, y, z, column vectors):

- glTF is Y up (spec). A = s * Y_UP_TO_Z_UP, with s from `scale` or from `height` (the rest mesh's
  height in metres). glTF units are metres by spec, but many files are not (the Khronos Fox is
  ~79 units tall), so a rest height outside HEIGHT_WARN_RANGE is reported.
- glTF skinning is v' = sum_k w_k * world_k * inverseBind_k * v, ignoring the mesh node's own
  transform. With m the skeleton's uniform world scale (s times that of its non-joint ancestors), a
  joint's rigid world transform is H_k = A * world_k / m and its bind transform
  A * inverse(inverseBind_k) / m, so H_k * inverse(bind_k) * (A v) = A * world_k * inverseBind_k * v
  exactly, with pure rotations and every length scaled by m.
- A joint's parent is its nearest joint ancestor: non-joint ancestors of the skeleton root (and
  non-joint nodes between joints) are folded into the joint below them. Joints are reordered so
  parents come before children when the skin lists them otherwise; JOINTS_n indices follow.
- Frames: t_i = i / fps for i = 0 .. round(duration * fps) (so round(duration * fps) + 1 frames),
  the last clamped to the duration. LINEAR (slerp for rotations), STEP and CUBICSPLINE samplers are
  evaluated exactly at those times; morph-target `weights` channels are ignored.
- Scale: static or animated node scales that keep every joint's world scale uniform and equal are
  exact above. Anything else cannot be written as joint rotations and translations (the package's
  UsdSkel animation has unit scales), so the meshes are then baked per frame with exact glTF
  skinning (PointCacheMesh) and the skeleton keeps the rotation part of each joint (polar
  decomposition) for joint positions and the root trajectory.
- UVs: glTF's texture origin is the top left, USD's `st` the bottom left: st = (u, 1 - v).
"""

from __future__ import annotations

import base64
import json
import struct
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from asset_converters.animated import write_animated_package
from asset_converters.licences import user_file
from core.assets.parts import Animation, Material, PointCacheMesh, SkinnedMesh
from core.errors import InputError
from core.formats.asset_meta import Licence, SourceInfo
from core.formats.scene_layout import prim_name
from core.geometry import Y_UP_TO_Z_UP, matrix_to_quat_wxyz
from core.progress import get_logger
from core.rundir import sha256_file

log = get_logger("convert.gltf")

DEFAULT_FPS = 30.0
DEFAULT_LABEL = "animal"
HEIGHT_WARN_RANGE = (0.02, 10.0)  # m: outside it the file's units are probably not metres
RIGID_TOLERANCE = 1e-4  # max |R^T R - I| entry for a joint transform to count as a rotation
GLB_MAGIC = b"glTF"
GLB_HEADER = struct.Struct("<4sII")
GLB_CHUNK = struct.Struct("<II")
CHUNK_JSON, CHUNK_BIN = 0x4E4F534A, 0x004E4942
COMPONENT_DTYPES = {5120: "<i1", 5121: "<u1", 5122: "<i2", 5123: "<u2", 5125: "<u4", 5126: "<f4"}
NORMALIZED_DIVISORS = {5120: 127.0, 5121: 255.0, 5122: 32767.0, 5123: 65535.0}
TYPE_SIZES = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT2": 4, "MAT3": 9, "MAT4": 16}
MODE_TRIANGLES = 4
IMAGE_SUFFIXES = {"image/png": ".png", "image/jpeg": ".jpg"}


# ---------------------------------------------------------------- reading the file


@dataclass
class Gltf:
    """A parsed glTF: its JSON document and the bytes of each buffer."""

    path: Path
    doc: dict
    buffers: list[bytes]

    def item(self, key: str, index: object, field: str) -> dict:
        """`doc[key][index]`, or InputError naming `field` when it does not exist."""
        items = self.doc.get(key, [])
        if not isinstance(index, int) or not 0 <= index < len(items) or not isinstance(items[index], dict):
            raise InputError(f"refers to {key}[{index}], but the file has {len(items)} {key}", self.path, field)
        return items[index]


def _split_glb(data: bytes, path: Path) -> tuple[bytes, bytes | None]:
    """JSON and BIN chunks of a GLB, checking the header and chunk lengths against the file."""
    if len(data) < GLB_HEADER.size:
        raise InputError("truncated GLB header", path, "header")
    _, version, length = GLB_HEADER.unpack_from(data)
    if version != 2:
        raise InputError(f"GLB version {version}; only 2 is supported", path, "header.version")
    if length != len(data):
        raise InputError(f"the header says {length} bytes but the file has {len(data)} (truncated, or damaged by a "
                         "text-mode copy?)", path, "header.length")
    chunks, offset = [], GLB_HEADER.size
    while offset < length:
        if offset + GLB_CHUNK.size > length:
            raise InputError("truncated chunk header", path, f"chunks[{len(chunks)}]")
        size, kind = GLB_CHUNK.unpack_from(data, offset)
        start = offset + GLB_CHUNK.size
        if start + size > length:
            raise InputError(f"chunk of {size} bytes runs past the end of the file", path, f"chunks[{len(chunks)}].length")
        chunks.append((kind, data[start:start + size]))
        offset = start + size
    if not chunks or chunks[0][0] != CHUNK_JSON:
        raise InputError("the first chunk must be JSON", path, "chunks[0].type")
    binary = chunks[1][1] if len(chunks) > 1 and chunks[1][0] == CHUNK_BIN else None
    return chunks[0][1], binary


def _parse_json(text: bytes, path: Path) -> dict:
    try:
        doc = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"malformed glTF JSON ({exc})", path) from exc
    if not isinstance(doc, dict):
        raise InputError("the glTF JSON must be an object", path)
    if not str(doc.get("asset", {}).get("version", "")).startswith("2"):
        raise InputError("only glTF 2.0 is supported", path, "asset.version")
    return doc


def _document(path: Path) -> tuple[dict, bytes | None]:
    if not path.is_file():
        raise InputError("file not found", path)
    data = path.read_bytes()
    if data[:4] == GLB_MAGIC:
        text, binary = _split_glb(data, path)
        return _parse_json(text, path), binary
    return _parse_json(data, path), None


def _load_buffer(path: Path, doc: dict, index: int, binary: bytes | None) -> bytes:
    field = f"buffers[{index}]"
    spec = doc["buffers"][index]
    uri = spec.get("uri")
    if uri is None:
        if binary is None or index != 0:
            raise InputError("buffer without uri needs the GLB binary chunk", path, field)
        data = binary
    elif uri.startswith("data:"):
        try:
            data = base64.b64decode(uri.split(",", 1)[1], validate=True)
        except (IndexError, ValueError) as exc:
            raise InputError("malformed data URI", path, f"{field}.uri") from exc
    else:
        file = path.parent / urllib.parse.unquote(uri)
        if not file.is_file():
            raise InputError(f"buffer file {file} not found", path, f"{field}.uri")
        data = file.read_bytes()
    length = spec.get("byteLength")
    if not isinstance(length, int) or len(data) < length:
        raise InputError(f"byteLength {length} but {len(data)} bytes are available", path, f"{field}.byteLength")
    return data


def read_gltf(path: str | Path) -> Gltf:
    """Parse a .glb or .gltf file with all its buffers."""
    path = Path(path)
    doc, binary = _document(path)
    return Gltf(path, doc, [_load_buffer(path, doc, i, binary) for i in range(len(doc.get("buffers", [])))])


def animation_names(doc: dict) -> list[str]:
    return [a.get("name") or f"animation{i}" for i, a in enumerate(doc.get("animations", []))]


def has_skinned_animation(path: str | Path) -> bool:
    """Whether the file has a skin and at least one animation (reads the JSON only)."""
    doc, _ = _document(Path(path))
    return bool(doc.get("skins")) and bool(doc.get("animations"))


def input_files(path: str | Path) -> list[Path]:
    """The glTF file and the external buffers and images it references (for content hashing)."""
    path = Path(path)
    try:
        doc, _ = _document(path)
    except InputError:
        return [path]
    uris = [item.get("uri", "") for key in ("buffers", "images") for item in doc.get(key, [])]
    return [path] + [path.parent / urllib.parse.unquote(u) for u in uris if u and not u.startswith("data:")]


def _read_view(g: Gltf, view_index: object, byte_offset: int, dtype: np.dtype, ncomp: int, count: int,
               where: str) -> np.ndarray:
    """`count` elements of `ncomp` components from a bufferView, honouring its byteStride."""
    view = g.item("bufferViews", view_index, where)
    buffer_index = view.get("buffer")
    if not isinstance(buffer_index, int) or not 0 <= buffer_index < len(g.buffers):
        raise InputError(f"refers to buffer {buffer_index}, which does not exist", g.path, f"bufferViews[{view_index}]")
    buffer = g.buffers[buffer_index]
    start, length = view.get("byteOffset", 0), view.get("byteLength", 0)
    if start + length > len(buffer):
        raise InputError(f"ends at byte {start + length}, past the {len(buffer)} bytes of buffers[{buffer_index}]",
                         g.path, f"bufferViews[{view_index}]")
    element = dtype.itemsize * ncomp
    stride = view.get("byteStride") or element
    if stride < element:
        raise InputError(f"byteStride {stride} is smaller than one element ({element} bytes)", g.path,
                         f"bufferViews[{view_index}].byteStride")
    needed = byte_offset + stride * (count - 1) + element if count else 0
    if needed > length:
        raise InputError(f"{count} elements need {needed} bytes of bufferViews[{view_index}], which holds {length}",
                         g.path, where)
    raw = np.frombuffer(buffer, np.uint8, count=length, offset=start)[byte_offset:]
    rows = np.lib.stride_tricks.as_strided(raw, shape=(count, element), strides=(stride, 1))
    return np.ascontiguousarray(rows).view(dtype).reshape(count, ncomp)


def read_accessor(g: Gltf, index: object, field: str, types: tuple[str, ...], count: int | None = None) -> np.ndarray:
    """An accessor as float64 (count, components), MAT4 as (count, 4, 4) for column vectors.

    Raises InputError naming `field` when its type is not one of `types`, its count differs from
    `count`, or its data does not fit its bufferView.
    """
    where = f"{field} (accessors[{index}])"
    acc = g.item("accessors", index, field)
    ctype, atype, n = acc.get("componentType"), acc.get("type"), acc.get("count")
    if ctype not in COMPONENT_DTYPES or atype not in TYPE_SIZES or not isinstance(n, int) or n < 0:
        raise InputError(f"bad componentType/type/count {ctype}/{atype}/{n}", g.path, where)
    if atype not in types:
        raise InputError(f"type {atype}, expected {' or '.join(types)}", g.path, where)
    if count is not None and n != count:
        raise InputError(f"count {n}, expected {count}", g.path, where)
    dtype, ncomp = np.dtype(COMPONENT_DTYPES[ctype]), TYPE_SIZES[atype]
    if "bufferView" in acc:
        values = _read_view(g, acc["bufferView"], acc.get("byteOffset", 0), dtype, ncomp, n, where)
    else:
        values = np.zeros((n, ncomp), dtype)
    if "sparse" in acc:
        values = values.copy()
        sparse = acc["sparse"]
        k = sparse.get("count", 0)
        ids_spec, vals_spec = sparse.get("indices", {}), sparse.get("values", {})
        ids_dtype = np.dtype(COMPONENT_DTYPES.get(ids_spec.get("componentType"), "<u4"))
        ids = _read_view(g, ids_spec.get("bufferView"), ids_spec.get("byteOffset", 0), ids_dtype, 1, k, where)[:, 0]
        if k and ids.max() >= n:
            raise InputError(f"sparse index {ids.max()} >= count {n}", g.path, f"{where}.sparse.indices")
        values[ids] = _read_view(g, vals_spec.get("bufferView"), vals_spec.get("byteOffset", 0), dtype, ncomp, k, where)
    out = values.astype(np.float64)
    if acc.get("normalized") and ctype in NORMALIZED_DIVISORS:
        out = np.maximum(out / NORMALIZED_DIVISORS[ctype], -1.0)
    if not np.isfinite(out).all():
        raise InputError("non-finite values", g.path, where)
    return out.reshape(n, 4, 4).transpose(0, 2, 1) if atype == "MAT4" else out


# ---------------------------------------------------------------- node hierarchy and animation


def node_parents(g: Gltf) -> np.ndarray:
    """(nodes,) parent node index, -1 for roots; InputError on a node with two parents or a cycle."""
    nodes = g.doc.get("nodes", [])
    parents = np.full(len(nodes), -1, dtype=np.int64)
    for i, node in enumerate(nodes):
        for child in node.get("children", []):
            g.item("nodes", child, f"nodes[{i}].children")
            if parents[child] >= 0:
                raise InputError(f"node {child} has two parents", g.path, f"nodes[{i}].children")
            parents[child] = i
    for i in range(len(nodes)):
        seen, node = set(), i
        while node >= 0:
            if node in seen:
                raise InputError("the node hierarchy has a cycle", g.path, f"nodes[{i}]")
            seen.add(node)
            node = parents[node]
    return parents


def _depths(parents: np.ndarray) -> np.ndarray:
    depths = np.zeros(len(parents), dtype=np.int64)
    for i in range(len(parents)):
        node = parents[i]
        while node >= 0:
            depths[i] += 1
            node = parents[node]
    return depths


def _trs_matrices(t: np.ndarray, q_xyzw: np.ndarray, s: np.ndarray) -> np.ndarray:
    """(N, 4, 4) = T * R * S from (N, 3), (N, 4) x,y,z,w and (N, 3)."""
    out = np.zeros((len(t), 4, 4))
    out[:, :3, :3] = Rotation.from_quat(q_xyzw).as_matrix() * s[:, None, :]
    out[:, :3, 3] = t
    out[:, 3, 3] = 1.0
    return out


def _slerp(q0: np.ndarray, q1: np.ndarray, u: np.ndarray) -> np.ndarray:
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0, -q1, q1)  # the shorter arc
    theta = np.arccos(np.clip(np.abs(dot), 0.0, 1.0))
    sin = np.sin(theta)
    nearly_equal = sin < 1e-9
    safe = np.where(nearly_equal, 1.0, sin)
    w0 = np.where(nearly_equal, 1 - u, np.sin((1 - u) * theta) / safe)
    w1 = np.where(nearly_equal, u, np.sin(u * theta) / safe)
    return w0 * q0 + w1 * q1


def sample_sampler(keys: np.ndarray, values: np.ndarray, interpolation: str, times: np.ndarray,
                   rotation: bool) -> np.ndarray:
    """Evaluate one glTF animation sampler at `times` (before the first key: the first value, after the
    last key: the last value)."""
    cubic = interpolation == "CUBICSPLINE"
    points = values[1::3] if cubic else values
    i = np.clip(np.searchsorted(keys, times, side="right") - 1, 0, len(keys) - 1)
    j = np.minimum(i + 1, len(keys) - 1)
    span = keys[j] - keys[i]
    u = np.where(span > 0, np.clip((times - keys[i]) / np.where(span > 0, span, 1.0), 0.0, 1.0), 0.0)[:, None]
    if interpolation == "STEP":
        out = points[i]
    elif cubic:
        m0, m1 = values[2::3][i] * span[:, None], values[0::3][j] * span[:, None]
        u2, u3 = u * u, u * u * u
        out = ((2 * u3 - 3 * u2 + 1) * points[i] + (u3 - 2 * u2 + u) * m0 + (-2 * u3 + 3 * u2) * points[j]
               + (u3 - u2) * m1)
    elif rotation:
        out = _slerp(points[i], points[j], u)
    else:
        out = (1 - u) * points[i] + u * points[j]
    if rotation:
        out = out / np.linalg.norm(out, axis=-1, keepdims=True)
    return out


def _animation_tracks(g: Gltf, index: int, fps: float) -> tuple[np.ndarray, dict[tuple[int, str], np.ndarray]]:
    """Frame times and the sampled (node, path) -> (N, 3 or 4) values of animation `index`."""
    anim = g.doc["animations"][index]
    field = f"animations[{index}]"
    channels = []
    for c, channel in enumerate(anim.get("channels", [])):
        target, where = channel.get("target", {}), f"{field}.channels[{c}]"
        path = target.get("path")
        if path == "weights" or "node" not in target:
            continue  # morph weights and extension targets do not move the skeleton
        if path not in ("translation", "rotation", "scale"):
            raise InputError(f"unknown target path {path!r}", g.path, f"{where}.target.path")
        g.item("nodes", target["node"], f"{where}.target.node")
        sampler = anim.get("samplers", [])
        s = channel.get("sampler")
        if not isinstance(s, int) or not 0 <= s < len(sampler):
            raise InputError(f"refers to sampler {s}, which does not exist", g.path, f"{where}.sampler")
        interpolation = sampler[s].get("interpolation", "LINEAR")
        if interpolation not in ("LINEAR", "STEP", "CUBICSPLINE"):
            raise InputError(f"unknown interpolation {interpolation!r}", g.path, f"{field}.samplers[{s}].interpolation")
        keys = read_accessor(g, sampler[s].get("input"), f"{field}.samplers[{s}].input", ("SCALAR",))[:, 0]
        if len(keys) == 0 or np.any(np.diff(keys) < 0):
            raise InputError("keyframe times must be non-empty and increasing", g.path, f"{field}.samplers[{s}].input")
        per_key = 3 if interpolation == "CUBICSPLINE" else 1
        values = read_accessor(g, sampler[s].get("output"), f"{field}.samplers[{s}].output",
                               ("VEC4",) if path == "rotation" else ("VEC3",), count=per_key * len(keys))
        if path == "rotation" and (np.linalg.norm(values[per_key // 2::per_key], axis=1) < 1e-9).any():
            raise InputError("zero-length rotation quaternion", g.path, f"{field}.samplers[{s}].output")
        channels.append((target["node"], path, keys, values, interpolation))
    if not channels:
        raise InputError("the animation has no node channels", g.path, f"{field}.channels")
    duration = float(max(keys[-1] for _, _, keys, _, _ in channels))
    times = np.minimum(np.arange(round(duration * fps) + 1) / fps, duration)
    tracks = {(node, path): sample_sampler(keys, values, interp, times, path == "rotation")
              for node, path, keys, values, interp in channels}
    return times, tracks


def node_local_matrices(g: Gltf, frames: int, tracks: dict[tuple[int, str], np.ndarray]) -> np.ndarray:
    """(N, nodes, 4, 4) local transforms: each node's TRS or matrix, overridden by animation tracks."""
    nodes = g.doc.get("nodes", [])
    out = np.empty((frames, len(nodes), 4, 4))
    for i, node in enumerate(nodes):
        animated = [p for p in ("translation", "rotation", "scale") if (i, p) in tracks]
        if "matrix" in node:
            if animated:
                raise InputError("an animated node must use TRS, not a matrix", g.path, f"nodes[{i}].matrix")
            matrix = np.asarray(node["matrix"], dtype=np.float64)
            if matrix.shape != (16,):
                raise InputError("matrix must have 16 numbers", g.path, f"nodes[{i}].matrix")
            out[:, i] = matrix.reshape(4, 4).T  # glTF stores matrices column-major
            continue
        defaults = {"translation": [0.0, 0.0, 0.0], "rotation": [0.0, 0.0, 0.0, 1.0], "scale": [1.0, 1.0, 1.0]}
        trs = {}
        for key, default in defaults.items():
            if (i, key) in tracks:
                trs[key] = tracks[(i, key)]
            else:
                value = np.asarray(node.get(key, default), dtype=np.float64)
                if value.shape != (len(default),):
                    raise InputError(f"must have {len(default)} numbers", g.path, f"nodes[{i}].{key}")
                trs[key] = np.broadcast_to(value, (frames, len(default)))
        if np.any(np.linalg.norm(trs["rotation"], axis=-1) < 1e-9):
            raise InputError("zero-length rotation quaternion", g.path, f"nodes[{i}].rotation")
        out[:, i] = _trs_matrices(trs["translation"], trs["rotation"], trs["scale"])
    return out


def node_world_matrices(local: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """(N, nodes, 4, 4) world transforms from local ones, parents first."""
    world = np.empty_like(local)
    for node in np.argsort(_depths(parents), kind="stable"):
        parent = parents[node]
        world[:, node] = local[:, node] if parent < 0 else world[:, parent] @ local[:, node]
    return world


# ---------------------------------------------------------------- skeleton


@dataclass
class Skeleton:
    """A skin's joints in parent-first order."""

    nodes: list[int]  # node index of each joint
    names: list[str]
    parents: np.ndarray  # (J,) joint index, -1 for roots
    inverse_bind: np.ndarray  # (J, 4, 4), glTF units and axes
    skin_to_joint: np.ndarray  # skin joint index (as in JOINTS_n) -> our joint index


def read_skeleton(g: Gltf, skin_index: int, node_parent: np.ndarray) -> Skeleton:
    skin = g.item("skins", skin_index, "skins")
    field = f"skins[{skin_index}]"
    joints = skin.get("joints", [])
    if not joints or len(set(joints)) != len(joints):
        raise InputError("a skin needs distinct joints", g.path, f"{field}.joints")
    for j in joints:
        g.item("nodes", j, f"{field}.joints")
    if "inverseBindMatrices" in skin:
        ibm = read_accessor(g, skin["inverseBindMatrices"], f"{field}.inverseBindMatrices", ("MAT4",), len(joints))
    else:
        ibm = np.broadcast_to(np.eye(4), (len(joints), 4, 4)).copy()  # spec default: identity
    joint_of_node = {node: k for k, node in enumerate(joints)}

    def nearest_joint_ancestor(node: int) -> int:
        node = node_parent[node]
        while node >= 0 and node not in joint_of_node:
            node = node_parent[node]
        return joint_of_node.get(int(node), -1)

    skin_parents = np.array([nearest_joint_ancestor(n) for n in joints], dtype=np.int64)
    if all(p < k for k, p in enumerate(skin_parents)):
        order = np.arange(len(joints))
    else:
        order = np.argsort(_depths(node_parent)[joints], kind="stable")
    skin_to_joint = np.empty(len(joints), dtype=np.int64)
    skin_to_joint[order] = np.arange(len(joints))
    nodes = [joints[k] for k in order]
    names, seen = [], set()
    for node in nodes:
        name = g.doc["nodes"][node].get("name") or f"joint{node}"
        name = f"{name}_{node}" if name in seen else name  # UsdSkel joint paths must be unique
        seen.add(name)
        names.append(name)
    parents = np.array([-1 if skin_parents[k] < 0 else skin_to_joint[skin_parents[k]] for k in order], dtype=np.int64)
    return Skeleton(nodes, names, parents, ibm[order], skin_to_joint)


def _polar_rotation(m: np.ndarray) -> np.ndarray:
    """The rotation nearest to each (..., 3, 3) matrix."""
    u, _, vt = np.linalg.svd(m)
    d = np.sign(np.linalg.det(u @ vt))
    u[..., :, 2] *= d[..., None]
    return u @ vt


def _is_rotation(m: np.ndarray) -> bool:
    gram = np.swapaxes(m, -1, -2) @ m
    return bool(np.abs(gram - np.eye(3)).max() < RIGID_TOLERANCE and (np.linalg.det(m) > 0).all())


def rigid_skeleton(world: np.ndarray, bind: np.ndarray, path: Path) -> tuple[np.ndarray, np.ndarray, float, bool]:
    """Rigid joint world transforms (N, J, 4, 4) and bind transforms (J, 4, 4) from converted affine ones.

    Returns (H, bind_world, m, exact): m is the skeleton's uniform scale; `exact` is False when some
    joint's world transform is not a rotation times m (non-uniform or animated scale), in which case
    the rotations are the nearest ones and the meshes must be baked.
    """
    m = float(np.cbrt(abs(np.linalg.det(world[0, 0, :3, :3]))))
    if not m > 1e-12:
        raise InputError("the skeleton root has a degenerate (zero) scale", path, "nodes.scale")
    rigid_world, rigid_bind = world.copy(), bind.copy()
    rigid_world[..., :3, :3] /= m
    rigid_bind[..., :3, :3] /= m
    exact = _is_rotation(rigid_world[..., :3, :3]) and _is_rotation(rigid_bind[..., :3, :3])
    if not exact:
        rigid_world[..., :3, :3] = _polar_rotation(rigid_world[..., :3, :3])
        rigid_bind[..., :3, :3] = _polar_rotation(rigid_bind[..., :3, :3])
    return rigid_world, rigid_bind, m, exact


def local_from_world(world: np.ndarray, parents: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-frame local rotations (w, x, y, z) and translations relative to each joint's parent."""
    parent_world = np.where((parents < 0)[None, :, None, None], np.eye(4), world[:, np.maximum(parents, 0)])
    local = np.linalg.inv(parent_world) @ world
    return matrix_to_quat_wxyz(local[..., :3, :3]), local[..., :3, 3]


# ---------------------------------------------------------------- meshes


@dataclass
class Primitive:
    name: str
    vertices: np.ndarray  # (V, 3) glTF units and axes
    faces: np.ndarray
    joints: np.ndarray  # (V, K) skin joint indices
    weights: np.ndarray  # (V, K), rows sum to 1
    uvs: np.ndarray | None  # USD convention (origin bottom left)
    material: Material


def _material(g: Gltf, index: object, name: str, texture_dir: Path) -> tuple[Material, int | None]:
    """The primitive's material (texture written to `texture_dir`) and its base-colour UV set."""
    if index is None:
        return Material(name), None
    spec = g.item("materials", index, f"{name}.material")
    pbr = spec.get("pbrMetallicRoughness", {})
    factor = pbr.get("baseColorFactor", [1.0, 1.0, 1.0, 1.0])
    material = Material(name, tuple(float(c) for c in factor[:3]), None, float(pbr.get("roughnessFactor", 1.0)),
                        float(pbr.get("metallicFactor", 1.0)))
    info = pbr.get("baseColorTexture")
    if info is None:
        return material, None
    texture = g.item("textures", info.get("index"), f"materials[{index}].pbrMetallicRoughness.baseColorTexture")
    if "source" not in texture:
        log.warning("%s: texture %s has no PNG/JPEG source; using the base colour", g.path, info.get("index"))
        return material, None
    image = g.item("images", texture["source"], f"textures[{info.get('index')}].source")
    field = f"images[{texture['source']}]"
    if "bufferView" in image:
        suffix = IMAGE_SUFFIXES.get(image.get("mimeType", ""))
        if suffix is None:
            log.warning("%s: %s has mimeType %s; using the base colour", g.path, field, image.get("mimeType"))
            return material, None
        data = _read_view(g, image["bufferView"], 0, np.dtype("u1"), 1, g.item("bufferViews", image["bufferView"],
                          field).get("byteLength", 0), field).tobytes()
        material.texture = texture_dir / f"{prim_name(name)}{suffix}"
        material.texture.write_bytes(data)
    elif str(image.get("uri", "")).startswith("data:"):
        header, _, payload = image["uri"].partition(",")
        suffix = IMAGE_SUFFIXES.get(header[5:].split(";")[0], ".png")
        material.texture = texture_dir / f"{prim_name(name)}{suffix}"
        material.texture.write_bytes(base64.b64decode(payload))
    else:
        file = g.path.parent / urllib.parse.unquote(str(image.get("uri", "")))
        if not file.is_file():
            raise InputError(f"texture image {file} not found", g.path, f"{field}.uri")
        material.texture = file
    return material, int(info.get("texCoord", 0))


def read_primitives(g: Gltf, skin_index: int, texture_dir: Path) -> list[Primitive]:
    """Every triangle primitive of every mesh node skinned by `skin_index`."""
    out = []
    mesh_nodes = [(i, n) for i, n in enumerate(g.doc.get("nodes", [])) if n.get("skin") == skin_index and "mesh" in n]
    if not mesh_nodes:
        raise InputError(f"no mesh node uses skins[{skin_index}]", g.path, "nodes.skin")
    for node_index, node in mesh_nodes:
        mesh = g.item("meshes", node["mesh"], f"nodes[{node_index}].mesh")
        primitives = mesh.get("primitives", [])
        for p, prim in enumerate(primitives):
            field = f"meshes[{node['mesh']}].primitives[{p}]"
            base = node.get("name") or mesh.get("name") or f"mesh{node['mesh']}"
            name = base if len(primitives) == 1 else f"{base}_{p}"
            if prim.get("mode", MODE_TRIANGLES) != MODE_TRIANGLES:
                raise InputError(f"mode {prim.get('mode')}: only triangles are supported", g.path, f"{field}.mode")
            attributes = prim.get("attributes", {})
            if "POSITION" not in attributes or "JOINTS_0" not in attributes or "WEIGHTS_0" not in attributes:
                raise InputError("a skinned primitive needs POSITION, JOINTS_0 and WEIGHTS_0", g.path,
                                 f"{field}.attributes")
            vertices = read_accessor(g, attributes["POSITION"], f"{field}.attributes.POSITION", ("VEC3",))
            v = len(vertices)
            sets = sorted(int(k.split("_")[1]) for k in attributes if k.startswith("JOINTS_"))
            joints = np.concatenate([read_accessor(g, attributes[f"JOINTS_{s}"], f"{field}.attributes.JOINTS_{s}",
                                                   ("VEC4",), v) for s in sets], axis=1)
            weights = np.concatenate([read_accessor(g, attributes.get(f"WEIGHTS_{s}"),
                                                    f"{field}.attributes.WEIGHTS_{s}", ("VEC4",), v) for s in sets],
                                     axis=1)
            totals = weights.sum(axis=1, keepdims=True)
            if (totals <= 0).any() or (weights < 0).any():
                raise InputError("every vertex needs non-negative weights with a positive sum", g.path,
                                 f"{field}.attributes.WEIGHTS_0")
            if "indices" in prim:
                faces = read_accessor(g, prim["indices"], f"{field}.indices", ("SCALAR",))[:, 0]
            else:
                faces = np.arange(v, dtype=np.float64)
            if len(faces) == 0 or len(faces) % 3 or faces.max() >= v:
                raise InputError(f"{len(faces)} indices for {v} vertices: not a triangle list", g.path,
                                 f"{field}.indices")
            material, uv_set = _material(g, prim.get("material"), name, texture_dir)
            uvs = None
            if uv_set is not None and f"TEXCOORD_{uv_set}" in attributes:
                uv = read_accessor(g, attributes[f"TEXCOORD_{uv_set}"], f"{field}.attributes.TEXCOORD_{uv_set}",
                                   ("VEC2",), v)
                uvs = np.stack([uv[:, 0], 1.0 - uv[:, 1]], axis=1)
            else:
                material.texture = None
            out.append(Primitive(name, vertices, faces.astype(np.int64).reshape(-1, 3), joints.astype(np.int64),
                                 weights / totals, uvs, material))
    return out


# ---------------------------------------------------------------- conversion


def _axis_scale(primitives: list[Primitive], scale: float | None, height: float | None, path: Path) -> float:
    """Metres per file unit, from `scale` or from the wanted rest height along the up axis."""
    if scale is not None and height is not None:
        raise InputError("give a scale or a height, not both", path, "scale")
    if scale is not None and not scale > 0:
        raise InputError(f"scale must be > 0, got {scale}", path, "scale")
    up = np.concatenate([p.vertices for p in primitives])[:, 1]  # glTF's Y is up
    extent = float(up.max() - up.min())
    if height is not None:
        if not height > 0 or extent <= 0:
            raise InputError(f"cannot scale a mesh {extent} units tall to {height} m", path, "height")
        return height / extent
    factor = 1.0 if scale is None else scale
    if not HEIGHT_WARN_RANGE[0] <= extent * factor <= HEIGHT_WARN_RANGE[1]:
        log.warning("%s: the rest mesh is %.3g m tall at scale %g; pass a scale or a height if the file is not in "
                    "metres", path, extent * factor, factor)
    return factor


def load_gltf_animation(path: str | Path, texture_dir: Path, animation: str | None = None, fps: float = DEFAULT_FPS,
                        scale: float | None = None, height: float | None = None,
                        label: str = DEFAULT_LABEL) -> Animation:
    """The skin of a glTF file driven by one of its animations, Z up and in metres.

    `animation` is a name (default: the first); embedded textures are written to `texture_dir`.
    """
    g = read_gltf(path)
    if not g.doc.get("skins"):
        raise InputError("the file has no skin, so it cannot be converted as an animated asset", g.path, "skins")
    names = animation_names(g.doc)
    if not names:
        raise InputError("the file has no animations", g.path, "animations")
    if animation is not None and animation not in names:
        raise InputError(f"no animation named {animation!r}; the file has: {', '.join(names)}", g.path, "animations")
    if not fps > 0:
        raise InputError(f"fps must be > 0, got {fps}", g.path, "fps")
    if len(g.doc["skins"]) > 1:
        log.warning("%s: %d skins; converting skins[0] and the meshes it drives", g.path, len(g.doc["skins"]))
    node_parent = node_parents(g)
    skeleton = read_skeleton(g, 0, node_parent)
    primitives = read_primitives(g, 0, texture_dir)
    for p in primitives:
        if p.joints.max() >= len(skeleton.nodes):
            raise InputError(f"joint index {int(p.joints.max())} but the skin has {len(skeleton.nodes)} joints",
                             g.path, f"{p.name}.JOINTS_0")

    s = _axis_scale(primitives, scale, height, g.path)
    axis = np.eye(4)
    axis[:3, :3] = s * Y_UP_TO_Z_UP
    chosen = names.index(animation) if animation is not None else 0
    times, tracks = _animation_tracks(g, chosen, fps)
    world_nodes = node_world_matrices(node_local_matrices(g, len(times), tracks), node_parent)
    world = axis @ world_nodes[:, skeleton.nodes]  # (N, J, 4, 4) affine, Z up, metres
    bind = axis @ np.linalg.inv(skeleton.inverse_bind)
    rigid_world, rigid_bind, m, exact = rigid_skeleton(world, bind, g.path)
    rotations, translations = local_from_world(rigid_world, skeleton.parents)

    skinned, caches = [], []
    for p in primitives:
        indices = skeleton.skin_to_joint[p.joints]
        rest = p.vertices @ axis[:3, :3].T
        if exact:
            skinned.append(SkinnedMesh(p.name, rest, p.faces, indices, p.weights, p.material, p.uvs))
            continue
        # Exact glTF skinning, frame by frame to bound memory: A * world_k * inverseBind_k * v.
        skinning = world @ (skeleton.inverse_bind @ np.linalg.inv(axis))
        points = np.empty((len(times), len(rest), 3))
        for f in range(len(times)):
            blended = np.einsum("vk,vkij->vij", p.weights, skinning[f, indices])
            points[f] = np.einsum("vij,vj->vi", blended[:, :3, :3], rest) + blended[:, :3, 3]
        caches.append(PointCacheMesh(p.name, points, p.faces, p.material, p.uvs))
    if not exact:
        log.warning("%s: joints have non-uniform or animated scale; meshes are baked to per-frame points", g.path)
    log.info("%s: %s, %d frames at %g fps, %d joints, %.3g m per unit (skeleton scale %.3g)", g.path, names[chosen],
             len(times), fps, len(skeleton.nodes), s, m)
    return Animation(
        name=g.path.stem, fps=float(fps), joint_names=skeleton.names, parents=skeleton.parents, bind_world=rigid_bind,
        local_rotations=rotations, local_translations=translations, skinned=skinned, point_caches=caches,
        semantic_label=label, motions={names[chosen]: (0, len(times) - 1)},
    )


def convert_animated_gltf(path: str | Path, out: str | Path, input_hash: str, animation: str | None = None,
                          fps: float = DEFAULT_FPS, scale: float | None = None, height: float | None = None,
                          label: str = DEFAULT_LABEL, licences: list[Licence] | None = None) -> Path:
    """A skinned glTF file -> animated asset package at `out`; `licences` are the file's terms when the caller
    knows them (default: unknown, the user's file)."""
    path = Path(path)
    options = {"animation": animation, "fps": fps, "scale": scale, "height": height, "label": label}
    files = {f.name: sha256_file(f) for f in input_files(path) if f.is_file()}
    with tempfile.TemporaryDirectory(prefix="grade-gltf-") as tmp:
        anim = load_gltf_animation(path, Path(tmp), animation, fps, scale, height, label)
        return write_animated_package(anim, out, SourceInfo(
            dataset="gltf", files=files, options=options, licences=licences or [user_file(f"glTF file {path.name}")]),
            input_hash)

"""Skinned animated glTF -> animated packages: a synthetic GLB with analytic truth, and the Khronos Fox.

The synthetic file is built here byte by byte (GLB chunks, interleaved bufferViews with byteStride,
normalized weights, an embedded PNG); the expected poses are computed with the glTF skinning
formula directly (world_k * inverseBind_k per vertex), independently of the converter's rigid
skeleton decomposition.
"""

from __future__ import annotations

import io
import json
import struct

import numpy as np
import pytest
import trimesh
from conftest import run_grade
from PIL import Image
from pxr import Usd, UsdSkel
from scipy.spatial.transform import Rotation

from asset_converters.animated import TRACE_TOLERANCE
from asset_converters.gltf import convert_animated_gltf, load_gltf_animation, read_gltf, sample_sampler
from asset_converters.mesh import MeshOptions, convert_mesh_file
from core.assets.skinning import joint_world_transforms, posed_meshes, skin_vertices
from core.assets.usd_read import read_meshes
from core.errors import InputError
from core.formats.asset_meta import load_meta
from core.geometry import Y_UP_TO_Z_UP

FLOAT, UBYTE, USHORT = 5126, 5121, 5123


class GlbBuilder:
    """Writes a GLB from numpy arrays: one buffer, one bufferView per accessor or interleaved group."""

    def __init__(self) -> None:
        self.binary = bytearray()
        self.doc: dict = {"asset": {"version": "2.0"}, "bufferViews": [], "accessors": []}

    def _view(self, data: bytes, stride: int | None = None) -> int:
        self.binary += b"\0" * (-len(self.binary) % 4)
        view = {"buffer": 0, "byteOffset": len(self.binary), "byteLength": len(data)}
        if stride:
            view["byteStride"] = stride
        self.binary += data
        self.doc["bufferViews"].append(view)
        return len(self.doc["bufferViews"]) - 1

    def _accessor(self, view: int, offset: int, ctype: int, type_: str, count: int, normalized: bool = False) -> int:
        acc = {"bufferView": view, "byteOffset": offset, "componentType": ctype, "type": type_, "count": count}
        if normalized:
            acc["normalized"] = True
        self.doc["accessors"].append(acc)
        return len(self.doc["accessors"]) - 1

    def add(self, array, type_: str, ctype: int = FLOAT, normalized: bool = False) -> int:
        dtype = {FLOAT: "<f4", UBYTE: "<u1", USHORT: "<u2"}[ctype]
        array = np.asarray(array)
        if type_ == "MAT4":
            array = array.transpose(0, 2, 1)  # glTF stores matrices column-major
        data = np.ascontiguousarray(array, dtype=dtype)
        return self._accessor(self._view(data.tobytes()), 0, ctype, type_, len(array), normalized)

    def add_interleaved(self, uvs, joints) -> tuple[int, int]:
        """TEXCOORD_0 (float VEC2) and JOINTS_0 (ushort VEC4) sharing one view, 16-byte stride."""
        rows = np.zeros(len(uvs), dtype=[("uv", "<f4", 2), ("joints", "<u2", 4)])
        rows["uv"], rows["joints"] = uvs, joints
        view = self._view(rows.tobytes(), stride=16)
        return (self._accessor(view, 0, FLOAT, "VEC2", len(uvs)), self._accessor(view, 8, USHORT, "VEC4", len(uvs)))

    def add_image(self, png: bytes) -> int:
        return self._view(png)

    def write(self, path) -> None:
        self.doc["buffers"] = [{"byteLength": len(self.binary)}]
        text = json.dumps(self.doc).encode()
        text += b" " * (-len(text) % 4)
        binary = bytes(self.binary) + b"\0" * (-len(self.binary) % 4)
        total = 12 + 8 + len(text) + 8 + len(binary)
        path.write_bytes(struct.pack("<4sII", b"glTF", 2, total) + struct.pack("<II", len(text), 0x4E4F534A) + text
                         + struct.pack("<II", len(binary), 0x004E4942) + binary)


def trs(t=(0, 0, 0), q=(0, 0, 0, 1), s=(1, 1, 1)) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = Rotation.from_quat(q).as_matrix() * np.asarray(s, float)
    m[:3, 3] = t
    return m


# The critter, in glTF's Y-up frame. Node 0 is a non-joint ancestor (moved, turned, scaled by 2)
# that must be folded into the skeleton root; the skin lists its joints child-first.
ROOT_T, ROOT_Q, ROOT_S = (1.0, 0.0, 0.0), tuple(Rotation.from_euler("y", 90, degrees=True).as_quat()), 2.0
HIP_T, TAIL_T = (0.0, 0.5, 0.0), (0.0, 0.0, -0.5)
QUARTER_X = tuple(Rotation.from_euler("x", 90, degrees=True).as_quat())
SKIN_JOINTS = [4, 2, 3]  # tail, _rootJoint, hip: children before parents on purpose


def default_worlds() -> dict[int, np.ndarray]:
    root = trs(ROOT_T, ROOT_Q, (ROOT_S,) * 3)
    hip = root @ trs(HIP_T)
    return {2: root, 3: hip, 4: hip @ trs(TAIL_T)}


def critter_mesh() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Bind-pose vertices (glTF world), faces, per-vertex skin joint (index into SKIN_JOINTS), weights."""
    worlds = default_worlds()
    cube = trimesh.creation.box(extents=(0.2, 0.2, 0.4))
    body = trimesh.transform_points(cube.vertices, worlds[3])
    tail = trimesh.transform_points(cube.vertices + [0, 0, -0.2], worlds[4])
    vertices = np.concatenate([body, tail])
    faces = np.concatenate([cube.faces, cube.faces + len(cube.vertices)])
    joints = np.zeros((len(vertices), 4), dtype=int)
    weights = np.zeros((len(vertices), 4))
    joints[: len(body), 0], joints[len(body):, 0] = 2, 0  # hip, tail
    weights[:, 0] = 1.0
    # One tail vertex blends with the hip; its normalized ubyte weights 128 + 126 do not sum to 255.
    joints[len(body), 1], weights[len(body), :2] = 2, (128 / 255, 126 / 255)
    return vertices, faces, joints, weights


TEXTURE_PNG = io.BytesIO()
Image.fromarray(np.arange(48, dtype=np.uint8).reshape(4, 4, 3)).save(TEXTURE_PNG, format="PNG")


def write_critter(path, skin: bool = True, position_count: int | None = None) -> dict:
    """A Fox-like GLB: animations Walk (hip moves LINEAR, tail turns STEP), Idle, Grow (tail scale)."""
    vertices, faces, joints, weights = critter_mesh()
    uvs = np.linspace(0, 1, 2 * len(vertices)).reshape(-1, 2)
    b = GlbBuilder()
    position = b.add(vertices, "VEC3")
    if position_count is not None:
        b.doc["accessors"][position]["count"] = position_count
    texcoord, joints_acc = b.add_interleaved(uvs, joints)
    weights_acc = b.add(np.round(weights * 255), "VEC4", UBYTE, normalized=True)
    indices = b.add(faces.reshape(-1), "SCALAR", USHORT)
    inverse_bind = b.add(np.stack([np.linalg.inv(default_worlds()[n]) for n in SKIN_JOINTS]), "MAT4")
    attributes = {"POSITION": position, "TEXCOORD_0": texcoord, "JOINTS_0": joints_acc, "WEIGHTS_0": weights_acc}
    b.doc["images"] = [{"bufferView": b.add_image(TEXTURE_PNG.getvalue()), "mimeType": "image/png"}]
    b.doc["textures"] = [{"source": 0}]
    b.doc["materials"] = [{"name": "fur", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}}]
    b.doc["meshes"] = [{"name": "critter", "primitives": [{"attributes": attributes, "indices": indices,
                                                            "material": 0}]}]
    body = {"name": "critter", "mesh": 0}
    if skin:
        body["skin"] = 0
        b.doc["skins"] = [{"joints": SKIN_JOINTS, "inverseBindMatrices": inverse_bind}]
    b.doc["nodes"] = [
        {"name": "root", "children": [2], "translation": list(ROOT_T), "rotation": list(ROOT_Q), "scale": [ROOT_S] * 3},
        body,
        {"name": "_rootJoint", "children": [3]},
        {"name": "hip", "children": [4], "translation": list(HIP_T)},
        {"name": "tail", "translation": list(TAIL_T)},
    ]
    walk_times = b.add([[0.0], [1.0]], "SCALAR")
    walk_hip = b.add([[0, 0.5, 0], [0, 0.5, 2.0]], "VEC3")
    step_times = b.add([[0.0], [0.5]], "SCALAR")
    step_tail = b.add([[0, 0, 0, 1], QUARTER_X], "VEC4")
    grow = b.add([[1, 1, 1], [2, 2, 2]], "VEC3")
    b.doc["animations"] = [
        {"name": "Walk", "samplers": [{"input": walk_times, "output": walk_hip},
                                      {"input": step_times, "output": step_tail, "interpolation": "STEP"}],
         "channels": [{"sampler": 0, "target": {"node": 3, "path": "translation"}},
                      {"sampler": 1, "target": {"node": 4, "path": "rotation"}}]},
        {"name": "Idle", "samplers": [{"input": step_times, "output": step_tail}],
         "channels": [{"sampler": 0, "target": {"node": 4, "path": "rotation"}}]},
        {"name": "Grow", "samplers": [{"input": walk_times, "output": grow}],
         "channels": [{"sampler": 0, "target": {"node": 4, "path": "scale"}}]},
    ]
    b.doc["scenes"], b.doc["scene"] = [{"nodes": [0, 1]}], 0
    b.write(path)
    return {"vertices": vertices, "faces": faces, "joints": joints, "weights": weights, "uvs": uvs}


AXIS = np.eye(4)
AXIS[:3, :3] = Y_UP_TO_Z_UP


def expected_walk(t: float, scale: float) -> np.ndarray:
    """glTF skinning at time t of Walk, by the spec formula, then Y up -> Z up and scaled."""
    vertices, _, joints, weights = critter_mesh()
    root = trs(ROOT_T, ROOT_Q, (ROOT_S,) * 3)
    hip = root @ trs((0.0, 0.5, 2.0 * min(t, 1.0)))
    tail = hip @ trs(TAIL_T, QUARTER_X if t >= 0.5 else (0, 0, 0, 1))
    world = {0: tail, 2: hip}
    inverse_bind = {k: np.linalg.inv(default_worlds()[n]) for k, n in enumerate(SKIN_JOINTS)}
    out = np.zeros((len(vertices), 3))
    for v, (js, ws) in enumerate(zip(joints, weights)):
        total = sum(ws)
        for j, w in zip(js, ws):
            if w > 0:
                out[v] += w / total * (world[j] @ inverse_bind[j] @ np.append(vertices[v], 1.0))[:3]
    return out @ (scale * Y_UP_TO_Z_UP).T


def test_sampler_interpolations():
    keys = np.array([0.0, 1.0])
    times = np.array([-1.0, 0.0, 0.25, 0.5, 1.0, 2.0])
    linear = sample_sampler(keys, np.array([[0.0, 0, 0], [4.0, 0, 0]]), "LINEAR", times, False)
    np.testing.assert_allclose(linear[:, 0], [0, 0, 1, 2, 4, 4])
    step = sample_sampler(keys, np.array([[0.0, 0, 0], [4.0, 0, 0]]), "STEP", times, False)
    np.testing.assert_allclose(step[:, 0], [0, 0, 0, 0, 4, 4])
    quarter = np.array([[0, 0, 0, 1.0], Rotation.from_euler("z", 90, degrees=True).as_quat()])
    half = sample_sampler(keys, quarter, "LINEAR", np.array([0.5]), True)
    assert Rotation.from_quat(half[0]).magnitude() == pytest.approx(np.pi / 4)  # slerp, not a chord
    # Cubic spline with zero tangents is smoothstep: 0.5 -> 0.5, 0.25 -> 0.15625.
    cubic = np.array([[0.0, 0, 0], [0.0, 0, 0], [0, 0, 0], [0, 0, 0], [1.0, 0, 0], [0, 0, 0]])
    np.testing.assert_allclose(sample_sampler(keys, cubic, "CUBICSPLINE", np.array([0.25, 0.5]), False)[:, 0],
                               [0.15625, 0.5])


def test_synthetic_skinned_glb_matches_gltf_skinning(tmp_path):
    path = tmp_path / "critter.glb"
    truth = write_critter(path)
    anim = load_gltf_animation(path, tmp_path, animation="Walk", fps=10, scale=0.5)
    # Parents before children; the non-joint root's transform folded into _rootJoint.
    assert anim.joint_names == ["_rootJoint", "hip", "tail"]
    assert anim.parents.tolist() == [-1, 0, 1]
    assert anim.frame_count == 11 and anim.motions == {"Walk": (0, 10)}  # 1 s at 10 fps, both ends
    np.testing.assert_allclose(np.linalg.det(anim.bind_world[:, :3, :3]), 1.0, atol=1e-9)  # rigid bind
    world = joint_world_transforms(anim)
    for frame in range(anim.frame_count):
        posed = posed_meshes(anim, frame, world)[0][0]
        np.testing.assert_allclose(posed, expected_walk(frame / 10, 0.5), atol=1e-6)  # float32 data
    [mesh] = anim.skinned
    np.testing.assert_allclose(mesh.rest_vertices, truth["vertices"] @ (0.5 * Y_UP_TO_Z_UP).T, atol=1e-12)
    np.testing.assert_allclose(skin_vertices(mesh, anim.bind_world, anim.bind_world), mesh.rest_vertices, atol=1e-12)
    np.testing.assert_allclose(mesh.uvs[:, 0], truth["uvs"][:, 0], atol=1e-7)
    np.testing.assert_allclose(mesh.uvs[:, 1], 1 - truth["uvs"][:, 1], atol=1e-7)  # top-left -> bottom-left
    assert mesh.material.texture.read_bytes() == TEXTURE_PNG.getvalue()
    blended = mesh.joint_weights[len(truth["vertices"]) // 2]
    np.testing.assert_allclose(blended[:2], [128 / 254, 126 / 254], atol=1e-12)  # renormalized


def test_height_option_and_scale_animation_baked_exactly(tmp_path):
    path = tmp_path / "critter.glb"
    write_critter(path)
    anim = load_gltf_animation(path, tmp_path, animation="Idle", height=1.5)
    rest = anim.skinned[0].rest_vertices
    assert np.ptp(rest[:, 2]) == pytest.approx(1.5)  # glTF's Y extent became the Z extent
    grow = load_gltf_animation(path, tmp_path, animation="Grow", fps=4, scale=1.0)
    assert not grow.skinned and len(grow.point_caches) == 1  # scale animation -> exact baked points
    vertices, _, joints, weights = critter_mesh()
    tail = [v for v in range(len(vertices)) if weights[v, 0] == 1 and joints[v, 0] == 0]
    tail_world = default_worlds()[4] @ trs(s=(2, 2, 2))  # t = 1: tail scaled 2x about its joint
    expected = trimesh.transform_points(vertices[tail], tail_world @ np.linalg.inv(default_worlds()[4]))
    np.testing.assert_allclose(grow.point_caches[0].points[-1][tail], expected @ Y_UP_TO_Z_UP.T, atol=1e-9)


@pytest.mark.slow
def test_animated_package_usd_equals_numpy_and_cli_autodetects(tmp_path):
    path = tmp_path / "critter.glb"
    write_critter(path)
    out = convert_animated_gltf(path, tmp_path / "pkg", "h", animation="Walk", fps=10, scale=0.5, label="dog")
    meta = load_meta(out)
    assert meta.kind == "animated" and meta.animation.frame_count == 11 and meta.source.dataset == "gltf"
    assert set(meta.semantic_labels.values()) == {"dog"}
    anim = load_gltf_animation(path, tmp_path, animation="Walk", fps=10, scale=0.5)
    for frame in (0, 4, 10):
        [usd] = read_meshes(out / "asset.usdc", time=frame)
        np.testing.assert_allclose(usd.vertices, posed_meshes(anim, frame)[0][0], atol=1e-5)
    [usd] = read_meshes(out / "asset.usdc", time=0)
    np.testing.assert_allclose(usd.uvs, anim.skinned[0].uvs, atol=1e-6)
    assert usd.texture.read_bytes() == TEXTURE_PNG.getvalue()
    result = run_grade("convert", "mesh", str(path), "--out", str(tmp_path / "cli"), "--scale", "0.5", "--fps", "10")
    assert result.returncode == 0, result.stderr
    assert load_meta(tmp_path / "cli" / "critter").animation.frame_count == 11  # first animation: Walk


def test_bad_gltf_inputs_raise_and_write_nothing(tmp_path):
    plain = tmp_path / "plain.glb"
    write_critter(plain, skin=False)
    with pytest.raises(InputError, match="no skin") as info:
        convert_mesh_file(plain, tmp_path / "out" / "a", "h", MeshOptions(kind="animated"))
    assert info.value.field == "skins" and str(plain) in str(info.value)
    good = tmp_path / "critter.glb"
    write_critter(good)
    with pytest.raises(InputError, match="no animation named 'Trot'; the file has: Walk, Idle, Grow"):
        convert_animated_gltf(good, tmp_path / "out" / "b", "h", animation="Trot")
    too_many = tmp_path / "too_many.glb"
    write_critter(too_many, position_count=10_000)
    with pytest.raises(InputError, match="10000 elements need") as info:
        convert_animated_gltf(too_many, tmp_path / "out" / "c", "h")
    assert "POSITION" in info.value.field
    short = tmp_path / "short.glb"
    write_critter(short, position_count=8)  # fits its view, but JOINTS_0 then has the wrong count
    with pytest.raises(InputError, match="count 16, expected 8") as info:
        convert_animated_gltf(short, tmp_path / "out" / "d", "h")
    assert "JOINTS_0" in info.value.field
    mangled = tmp_path / "mangled.glb"  # what a text-mode copy does to a binary file
    mangled.write_bytes(good.read_bytes().decode("utf-8", "replace").encode("utf-8"))
    with pytest.raises(InputError, match="header says") as info:
        read_gltf(mangled)
    assert info.value.field == "header.length"
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- the Khronos Fox (real data)


@pytest.fixture
def fox(realdata):
    path = realdata / "gltf" / "Fox.glb"
    data = path.read_bytes()
    declared = struct.unpack_from("<I", data, 8)[0]
    if declared != len(data):
        pytest.skip(f"{path} is damaged (header says {declared} bytes, file has {len(data)}; binary chunk "
                    "mangled by a text-mode copy): replace it with the Khronos original")
    return path


@pytest.mark.realdata
def test_fox_converts_to_z_up_skinned_package(fox, tmp_path):
    doc = read_gltf(fox).doc
    assert [a["name"] for a in doc["animations"]] == ["Survey", "Walk", "Run"]
    with pytest.raises(InputError, match="Survey, Walk, Run"):
        load_gltf_animation(fox, tmp_path, animation="Sleep")
    fps, height = 30.0, 0.6
    out = convert_animated_gltf(fox, tmp_path / "fox", "h", animation="Walk", fps=fps, height=height)
    anim = load_gltf_animation(fox, tmp_path, animation="Walk", fps=fps, height=height)
    assert len(anim.joint_names) == 24 and anim.skinned and not anim.point_caches
    duration = max(read_gltf(fox).doc["accessors"][s["input"]]["max"][0] for s in doc["animations"][1]["samplers"])
    frames = round(duration * fps) + 1
    assert anim.frame_count == frames
    stage = Usd.Stage.Open(str(out / "asset.usdc"))
    skel_anim = next(UsdSkel.Animation(p) for p in stage.Traverse() if p.IsA(UsdSkel.Animation))
    assert len(skel_anim.GetRotationsAttr().GetTimeSamples()) == frames
    world = joint_world_transforms(anim)
    for frame in (0, frames // 2, frames - 1):
        [usd] = read_meshes(out / "asset.usdc", time=frame)
        np.testing.assert_allclose(usd.vertices, posed_meshes(anim, frame, world)[0][0], atol=1e-5)

    # Rest pose: skinning with the bind transforms gives the file's static mesh, Y up -> Z up, scaled.
    static = trimesh.load(fox, force="mesh", process=False).vertices
    scale = height / np.ptp(static[:, 1])
    [mesh] = anim.skinned
    np.testing.assert_allclose(skin_vertices(mesh, anim.bind_world, anim.bind_world), static @ (scale * Y_UP_TO_Z_UP).T,
                               atol=1e-6)
    extents = np.ptp(mesh.rest_vertices, axis=0)
    assert extents[2] == pytest.approx(height) and extents[1] > extents[2]  # Z up; the fox is longer than tall

    hip = anim.joint_names.index("b_Hip_01")
    hip_path = world[:, hip, :3, 3]
    assert np.ptp(hip_path, axis=0).max() > 1e-3  # walking moves the skeleton's root joint
    trace = trimesh.load(out / "trace.stl")
    assert trace.is_watertight
    points = np.concatenate([posed_meshes(anim, frame, world)[0][0] for frame in range(frames)])
    outside = points[~trace.contains(points)]  # ray test; points on the surface may land either way
    assert (trace.nearest.signed_distance(outside) > -TRACE_TOLERANCE - 1e-9).all()

"""Synthetic SMPL-family models and CLOTH3D samples for tests and benchmarks.

No SMPL model file may be shipped (licence), so tests build one with the real files' keys, shapes and
dtypes: a closed body surface (a sphere stretched to a T-pose-sized ellipsoid, Y-up like the SMPL
template), joints at roughly SMPL's rest positions, smooth skinning weights on each vertex's 4 nearest
joints, J_regressor rows that are convex combinations of the vertices nearest each joint, and seeded
random shape and pose blend shapes. The pickle writer mimics the official `.pkl` files: chumpy arrays
(class `chumpy.ch.Ch`, array kept in the state's `x`) and a scipy.sparse `J_regressor`.
"""

from __future__ import annotations

import hashlib
import pickle
import struct
import sys
import types
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse

from core.seeding import generator

# Approximate SMPL rest joint positions (Y up, +x is the body's left), metres.
SMPL_REST_JOINTS = np.array([
    [0.00, -0.24, 0.03], [0.06, -0.33, 0.01], [-0.06, -0.33, 0.02], [0.00, -0.12, 0.00], [0.10, -0.70, 0.02],
    [-0.10, -0.71, 0.01], [0.01, 0.02, 0.03], [0.09, -1.12, -0.02], [-0.09, -1.12, -0.03], [0.01, 0.08, 0.03],
    [0.12, -1.18, 0.09], [-0.12, -1.18, 0.10], [0.00, 0.29, -0.01], [0.08, 0.19, 0.00], [-0.08, 0.19, -0.01],
    [0.01, 0.38, 0.04], [0.17, 0.23, -0.02], [-0.17, 0.22, -0.02], [0.43, 0.21, -0.04], [-0.43, 0.21, -0.04],
    [0.69, 0.22, -0.04], [-0.68, 0.22, -0.05], [0.77, 0.21, -0.06], [-0.77, 0.21, -0.06],
])
SMPL_PARENTS = [-1, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 12, 13, 14, 16, 17, 18, 19, 20, 21]
UNSIGNED_ROOT = 4294967295  # how the official files store the root's parent (-1 as uint32)
SKINNING_JOINTS = 4
REGRESSOR_VERTICES = 8
SHAPE_COMPONENTS = 10
MIN_WEIGHT = 1e-3


def _smplh_joints() -> tuple[np.ndarray, list[int]]:
    """52 joints: SMPL's 22 body joints plus 3-joint chains for 5 fingers per hand (SMPL-H order)."""
    joints, parents = list(SMPL_REST_JOINTS[:22]), list(SMPL_PARENTS[:22])
    for side, wrist in ((1.0, 20), (-1.0, 21)):
        for finger in range(5):
            for link in range(3):
                joints.append([side * (0.72 + 0.03 * link), 0.22, -0.08 + 0.035 * finger])
                parents.append(wrist if link == 0 else len(joints) - 2)
    return np.array(joints), parents


def body_surface(rings: int, segments: int) -> tuple[np.ndarray, np.ndarray]:
    """A closed genus-0 mesh with rings * segments + 2 vertices and 2 * rings * segments faces,
    shaped like a T-posed body's bounding ellipsoid (Y up)."""
    theta = np.linspace(0, np.pi, rings + 2)[1:-1]
    phi = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    unit = np.stack([np.sin(t) * np.cos(p), np.cos(t), np.sin(t) * np.sin(p)], axis=-1).reshape(-1, 3)
    unit = np.vstack([[0, 1, 0], unit, [0, -1, 0]])
    center, half = np.array([0.0, -0.38, 0.0]), np.array([0.8, 0.82, 0.14])
    vertices = center + unit * half
    faces = []

    def ring(r: int, s: int) -> int:
        return 1 + r * segments + s % segments
    for s in range(segments):
        faces.append([0, ring(0, s + 1), ring(0, s)])
        for r in range(rings - 1):
            faces.append([ring(r, s), ring(r, s + 1), ring(r + 1, s)])
            faces.append([ring(r, s + 1), ring(r + 1, s + 1), ring(r + 1, s)])
        faces.append([len(vertices) - 1, ring(rings - 1, s), ring(rings - 1, s + 1)])
    return vertices, np.array(faces, dtype=np.uint32)


def build_model(rings: int = 12, segments: int = 16, joints: int = 24, seed: int = 7,
                shape_components: int = SHAPE_COMPONENTS, pose_scale: float = 2e-3) -> dict[str, np.ndarray]:
    """Arrays of a synthetic SMPL (24 joints) or SMPL-H (52 joints) model in the official layout."""
    rng = generator(seed, "tests/smpl/model")
    v_template, faces = body_surface(rings, segments)
    rest, parents = (SMPL_REST_JOINTS, SMPL_PARENTS) if joints == 24 else _smplh_joints()
    v = len(v_template)
    dist = np.linalg.norm(v_template[:, None] - rest[None], axis=2)  # (V, J)
    nearest = np.argsort(dist, axis=1)[:, :SKINNING_JOINTS]
    near_d = np.take_along_axis(dist, nearest, axis=1)
    w = np.exp(-((near_d - near_d[:, :1]) / 0.08) ** 2)
    w[w < MIN_WEIGHT] = 0.0  # like SMPL's, the weights are sparse: far joints get exactly zero
    weights = np.zeros((v, joints))
    np.put_along_axis(weights, nearest, w / w.sum(axis=1, keepdims=True), axis=1)
    regressor = np.zeros((joints, v))
    for j in range(joints):
        ids = np.argsort(dist[:, j])[:REGRESSOR_VERTICES]
        inv = 1.0 / (dist[ids, j] + 1e-3)
        regressor[j, ids] = inv / inv.sum()
    return _model_arrays(rng, v_template, faces, weights, regressor, parents, shape_components, pose_scale)


def _model_arrays(rng: np.random.Generator, v_template: np.ndarray, faces: np.ndarray, weights: np.ndarray,
                  regressor: np.ndarray, parents: list[int], shape_components: int,
                  pose_scale: float) -> dict[str, np.ndarray]:
    """The official layout, with seeded shape and pose blend shapes added."""
    v, joints = weights.shape
    # Shape components are smooth (a small linear map of the position each) plus a little noise.
    linear = rng.normal(0.0, 0.02, size=(shape_components, 3, 3))
    shapedirs = np.einsum("kab,vb->vak", linear, v_template) + rng.normal(0.0, 1e-4, size=(v, 3, shape_components))
    posedirs = rng.normal(0.0, pose_scale, size=(v, 3, 9 * (joints - 1)))
    kintree = np.array([[UNSIGNED_ROOT] + parents[1:], list(range(joints))], dtype=np.int64)
    return {"v_template": v_template, "f": faces, "shapedirs": shapedirs, "posedirs": posedirs,
            "J_regressor": regressor, "weights": weights, "kintree_table": kintree,
            "J": regressor @ v_template, "bs_style": np.array("lbs"), "bs_type": np.array("lrotmin")}


# Limb radii of the body-shaped model, m, per bone (named by its child joint); torso bones are wider.
BONE_RADII = {"left_hip": 0.08, "right_hip": 0.08, "spine1": 0.12, "left_knee": 0.07, "right_knee": 0.07,
              "spine2": 0.12, "left_ankle": 0.05, "right_ankle": 0.05, "spine3": 0.13, "left_foot": 0.04,
              "right_foot": 0.04, "neck": 0.05, "left_collar": 0.06, "right_collar": 0.06, "head": 0.09,
              "left_shoulder": 0.06, "right_shoulder": 0.06, "left_elbow": 0.045, "right_elbow": 0.045,
              "left_wrist": 0.035, "right_wrist": 0.035, "left_hand": 0.03, "right_hand": 0.03}
BLEND_START = 0.75  # along a bone, where its vertices start blending into the child joint


def build_body_model(rings: int = 4, segments: int = 8, seed: int = 7) -> dict[str, np.ndarray]:
    """A 24-joint model shaped like a T-posed person: one closed tube around each bone of SMPL's tree,
    skinned to the bone's parent joint and blended into the child near its end, as SMPL's limbs are. Posed
    by real mocap it stands, walks and swings its arms with a person's footprint (about 0.6 m across with
    the arms down), where `build_model`'s ellipsoid stays 1.6 m wide."""
    from asset_converters.smpl.body_model import SMPL_JOINT_NAMES

    rng = generator(seed, "tests/smpl/body_model")
    rest, parents = SMPL_REST_JOINTS, SMPL_PARENTS
    unit, unit_faces = body_surface(rings, segments)
    unit = (unit - np.array([0.0, -0.38, 0.0])) / np.array([0.8, 0.82, 0.14])  # back to the unit sphere
    vertices, faces, weights = [], [], []
    for child in range(1, len(rest)):
        parent = parents[child]
        start, end = rest[parent], rest[child]
        axis = end - start
        length = float(np.linalg.norm(axis))
        radius = BONE_RADII[SMPL_JOINT_NAMES[child]]
        # The unit sphere stretched along Y to a capsule-like tube from start to end, then turned onto the bone.
        t = (unit[:, 1] + 1.0) / 2.0  # 0 at the start, 1 at the end
        local = np.stack([unit[:, 0] * radius, t * length, unit[:, 2] * radius], axis=1)
        y = axis / length
        helper = np.array([0.0, 0.0, 1.0]) if abs(y[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
        x = np.cross(y, helper)
        x /= np.linalg.norm(x)
        frame = np.stack([x, y, np.cross(x, y)], axis=1)
        faces.append(unit_faces + sum(len(v) for v in vertices))
        vertices.append(start + local @ frame.T)
        blend = np.clip((t - BLEND_START) / (1.0 - BLEND_START), 0.0, 1.0) * 0.5
        w = np.zeros((len(unit), len(rest)))
        w[:, parent], w[:, child] = 1.0 - blend, blend
        weights.append(w)
    v_template, weights = np.concatenate(vertices), np.concatenate(weights)
    dist = np.linalg.norm(v_template[:, None] - rest[None], axis=2)
    regressor = np.zeros((len(rest), len(v_template)))
    for j in range(len(rest)):
        ids = np.argsort(dist[:, j])[:REGRESSOR_VERTICES]
        inv = 1.0 / (dist[ids, j] + 1e-3)
        regressor[j, ids] = inv / inv.sum()
    return _model_arrays(rng, v_template, np.concatenate(faces).astype(np.uint32), weights, regressor, parents,
                         SHAPE_COMPONENTS, 2e-3)


def model_digest(model: dict[str, np.ndarray]) -> str:
    """sha256 over every array's name, dtype, shape and bytes: says whether a stored reference was computed
    from the model `build_model` makes today."""
    digest = hashlib.sha256()
    for key in sorted(model):
        array = np.ascontiguousarray(model[key])
        digest.update(f"{key}|{array.dtype.str}|{array.shape}|".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def save_npz(model: dict[str, np.ndarray], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez(path, **model)
    return path


class _FakeChumpyArray:
    """Pickles exactly like a plain `chumpy.ch.Ch`: class chumpy.ch.Ch, state {'x': array, ...}."""

    def __init__(self, x: np.ndarray):
        self.x = x
        self._dirty_vars = set()


@contextmanager
def _fake_chumpy_module():
    """Register a throwaway `chumpy.ch` module so pickle can name the class, and remove it afterwards."""
    saved = {name: sys.modules.get(name) for name in ("chumpy", "chumpy.ch")}
    package, module = types.ModuleType("chumpy"), types.ModuleType("chumpy.ch")
    module.Ch = _FakeChumpyArray
    package.ch = module
    original = (_FakeChumpyArray.__module__, _FakeChumpyArray.__qualname__)
    _FakeChumpyArray.__module__, _FakeChumpyArray.__qualname__ = "chumpy.ch", "Ch"
    sys.modules.update({"chumpy": package, "chumpy.ch": module})
    try:
        yield
    finally:
        _FakeChumpyArray.__module__, _FakeChumpyArray.__qualname__ = original
        for name, value in saved.items():
            if value is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = value


def save_chumpy_pickle(model: dict[str, np.ndarray], path: Path) -> Path:
    """Write the model like the official SMPL .pkl: chumpy arrays, sparse J_regressor, protocol 2."""
    data = dict(model)
    for key in ("v_template", "shapedirs", "posedirs", "J"):
        data[key] = _FakeChumpyArray(np.asarray(model[key]))
    data["J_regressor"] = scipy.sparse.csc_matrix(model["J_regressor"])
    data["bs_style"], data["bs_type"] = "lbs", "lrotmin"
    path.parent.mkdir(parents=True, exist_ok=True)
    with _fake_chumpy_module():
        path.write_bytes(pickle.dumps(data, protocol=2))
    return path


# ---------------------------------------------------------------- CLOTH3D


def write_pc2(path: Path, points: np.ndarray, float16: bool, start_frame: float = 0.0,
              sample_rate: float = 1.0) -> None:
    """PC2 / CLOTH3D pc16 as documented: 'POINTCACHE2\\0', int32 version 1, int32 numPoints, float32
    startFrame, float32 sampleRate, int32 numSamples, then the little-endian float data."""
    header = struct.pack("<12siiffi", b"POINTCACHE2\0", 1, points.shape[1], start_frame, sample_rate, points.shape[0])
    path.write_bytes(header + np.asarray(points, dtype="<f2" if float16 else "<f4").tobytes())


def skirt(rings: int = 4, segments: int = 12, top: float = -0.25,
          bottom: float = -0.6) -> tuple[np.ndarray, np.ndarray]:
    """An open tube around the hips (Z up, root-relative), as quads: a small garment."""
    z = np.linspace(top, bottom, rings)
    phi = np.linspace(0, 2 * np.pi, segments, endpoint=False)
    radius = np.linspace(0.16, 0.24, rings)
    vertices = np.array([[r * np.cos(a), r * np.sin(a), h] for h, r in zip(z, radius) for a in phi])
    quads = [[r * segments + s, r * segments + (s + 1) % segments, (r + 1) * segments + (s + 1) % segments,
              (r + 1) * segments + s] for r in range(rings - 1) for s in range(segments)]
    return vertices, np.array(quads)


def write_obj(path: Path, vertices: np.ndarray, quads: np.ndarray) -> None:
    lines = [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in vertices]
    lines += ["f " + " ".join(str(i + 1) for i in q) for q in quads]
    path.write_text("\n".join(lines) + "\n")


def write_cloth3d_sample(folder: Path, frames: int = 6, seed: int = 3) -> dict:
    """A CLOTH3D-style sample: info.mat, Skirt.obj, Skirt.pc16 (the skirt swaying, root-relative)."""
    rng = generator(seed, "tests/cloth3d/sample")
    folder.mkdir(parents=True, exist_ok=True)
    poses = rng.normal(0.0, 0.15, size=(72, frames))
    poses[:3] = np.array([[np.pi / 2], [0.0], [0.0]])  # root: SMPL's Y-up body stood up in CLOTH3D's Z-up world
    trans = np.stack([np.linspace(0, 0.5, frames), np.zeros(frames), np.full(frames, 1.0)])
    info = {"poses": poses, "shape": rng.normal(0.0, 1.0, 10), "trans": trans, "gender": 1, "zrot": 0.4,
            "outfit": {"Skirt": {"texture": {"type": "color", "data": np.array([0.2, 0.4, 0.6])},
                                 "fabric": "cotton"}}}
    scipy.io.savemat(folder / "info.mat", info)
    rest, quads = skirt()
    sway = np.sin(np.linspace(0, np.pi, frames))[:, None, None] * np.array([0.05, 0.0, 0.0])
    points = rest[None] + sway * (rest[None, :, 2:3] < -0.4)
    write_obj(folder / "Skirt.obj", rest, quads)
    write_pc2(folder / "Skirt.pc16", points, float16=True)
    return {"info": info, "rest": rest, "quads": quads, "points": points}

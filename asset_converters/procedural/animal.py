"""A procedural quadruped (zebra-like: striped coat, mane-less) as a skinned, animated GLB file.

The animal is built in the Z-up world frame (x forward, y left), metres, from rigid parts (an ellipsoid
body, four legs with hooves, a neck, a head, a tail), each skinned with weight 1 to one joint: `body` (the
root, at the body's centre), `leg_<fl|fr|rl|rr>` at the hips and shoulders, `neck`, `head` and `tail`.
The file is Y up as glTF requires (the Z-up frame turned by the inverse of core.geometry.Y_UP_TO_Z_UP),
so it goes through the same converter as a user's glTF animal. Motions loop over one period and stay in
place (the body never travels): `walk` swings diagonal leg pairs together with a bob of the body, `graze`
lowers the head to the ground and lifts it again while the legs stand.

Texture: stripes across the body's length and around the legs (the UV u axis runs along the body and up
the legs), dark on a light coat.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh
from PIL import Image
from scipy.spatial.transform import Rotation

from asset_converters.procedural.glb import UNSIGNED_SHORT, GlbWriter
from core.geometry import Y_UP_TO_Z_UP

ANIMAL_LABEL = "zebra"  # the class map's keyword rules resolve it to the animal class
ANIMAL_MOTIONS = ("walk", "graze")
KEYS_PER_PERIOD = 24
PERIOD = {"walk": 1.2, "graze": 4.0}  # s per loop
LEG_SWING_DEG = 22.0
BOB = 0.03  # m, the body's rise twice per walk period
GRAZE_NECK_DEG = 70.0  # how far the neck bows down
TAIL_SWISH_DEG = 20.0
TEXTURE_SIZE = 64  # px
STRIPES_PER_METRE = (5.0, 8.0)
COAT = ((0.9, 0.88, 0.82), (0.05, 0.05, 0.06))  # light and dark, linear-ish sRGB fractions
HOOF = (0.1, 0.1, 0.1)
JOINTS = ("body", "leg_fl", "leg_fr", "leg_rl", "leg_rr", "neck", "head", "tail")
PARENTS = (-1, 0, 0, 0, 0, 0, 5, 0)
LEGS = {"leg_fl": (1, 1, 0.0), "leg_fr": (1, -1, 0.5), "leg_rl": (-1, 1, 0.5), "leg_rr": (-1, -1, 0.0)}  # phase
SECTIONS = 12
TO_GLTF = Y_UP_TO_Z_UP.T  # Z-up world -> glTF's Y-up frame


@dataclass(frozen=True)
class Body:
    """Proportions of one animal, m."""

    leg: float  # hip height
    length: float  # body ellipsoid semi-axis along x
    width: float
    depth: float
    neck: float
    stripes: float  # per metre


def make_body(rng: np.random.Generator) -> Body:
    scale = rng.uniform(0.85, 1.1)
    return Body(leg=0.75 * scale, length=0.7 * scale, width=0.24 * scale, depth=0.3 * scale,
                neck=0.55 * scale, stripes=float(rng.uniform(*STRIPES_PER_METRE)))


def _joint_positions(body: Body) -> np.ndarray:
    """(J, 3) bind-pose joint positions in the Z-up frame."""
    centre = body.leg + 0.6 * body.depth
    positions = {"body": (0.0, 0.0, centre), "tail": (-body.length, 0.0, centre + 0.4 * body.depth)}
    for name, (front, left, _) in LEGS.items():
        positions[name] = (front * 0.6 * body.length, left * 0.6 * body.width, body.leg)
    neck = np.array([0.8 * body.length, 0.0, centre + 0.4 * body.depth])
    positions["neck"] = tuple(neck)
    positions["head"] = tuple(neck + body.neck * np.array([np.cos(np.radians(55)), 0.0, np.sin(np.radians(55))]))
    return np.array([positions[name] for name in JOINTS])


def _parts(body: Body, joints: np.ndarray) -> list[tuple[int, trimesh.Trimesh, int, bool]]:
    """(joint, closed mesh in the Z-up frame, UV axis (0: along x, 2: along z), hoof?) per part."""
    j = {name: joints[i] for i, name in enumerate(JOINTS)}
    torso = trimesh.creation.icosphere(subdivisions=3)
    torso.vertices *= (body.length, body.width, body.depth)
    torso.apply_translation(j["body"])
    parts = [(0, torso, 0, False)]
    radius = 0.22 * body.width
    for name in LEGS:
        index = JOINTS.index(name)
        hoof = 0.08
        leg = trimesh.creation.cylinder(radius, body.leg - hoof, sections=SECTIONS)
        leg.apply_translation(j[name] + (0.0, 0.0, -(body.leg - hoof) / 2))
        foot = trimesh.creation.cylinder(radius * 1.15, hoof, sections=SECTIONS)
        foot.apply_translation((j[name][0], j[name][1], hoof / 2))
        parts += [(index, leg, 2, False), (index, foot, 2, True)]
    pitch = np.radians(55)
    neck = trimesh.creation.box((body.neck, 0.6 * body.width, 0.35 * body.depth))
    neck.apply_translation((body.neck / 2, 0.0, 0.0))
    neck.apply_transform(trimesh.transformations.rotation_matrix(-pitch, (0, 1, 0)))
    neck.apply_translation(j["neck"])
    head = trimesh.creation.box((0.5 * body.neck, 0.45 * body.width, 0.3 * body.depth))
    head.apply_translation((0.2 * body.neck, 0.0, 0.0))
    head.apply_transform(trimesh.transformations.rotation_matrix(np.radians(30), (0, 1, 0)))
    head.apply_translation(j["head"])
    tail = trimesh.creation.cylinder(0.025, 0.5 * body.leg, sections=SECTIONS)
    tail.apply_translation((0.0, 0.0, -0.25 * body.leg))
    tail.apply_transform(trimesh.transformations.rotation_matrix(np.radians(20), (0, 1, 0)))
    tail.apply_translation(j["tail"])
    parts += [(JOINTS.index("neck"), neck, 0, False), (JOINTS.index("head"), head, 0, False),
              (JOINTS.index("tail"), tail, 2, False)]
    return parts


def _rotation(axis: tuple[float, float, float], degrees: np.ndarray) -> np.ndarray:
    """(K, 4) glTF quaternions (x, y, z, w) of turns by `degrees` about a Z-up frame axis."""
    return Rotation.from_rotvec(np.radians(degrees)[:, None] * (TO_GLTF @ np.asarray(axis, float))).as_quat()


def _channels(motion: str, times: np.ndarray, joints: np.ndarray) -> dict[int, dict[str, np.ndarray]]:
    """Per joint, its animated local translation and/or rotation at `times` (glTF frame)."""
    phase = 2.0 * np.pi * times / PERIOD[motion]
    zero = np.zeros_like(times)
    out: dict[int, dict[str, np.ndarray]] = {}
    tail = _rotation((1.0, 0.0, 0.0), TAIL_SWISH_DEG * np.sin(phase))
    out[JOINTS.index("tail")] = {"rotation": tail}
    if motion == "walk":
        for name, (_, _, offset) in LEGS.items():
            swing = LEG_SWING_DEG * np.sin(phase + 2.0 * np.pi * offset)
            out[JOINTS.index(name)] = {"rotation": _rotation((0.0, 1.0, 0.0), swing)}
        rise = BOB * (1.0 - np.cos(2.0 * phase)) / 2.0
        out[0] = {"translation": (joints[0] + np.column_stack([zero, zero, rise])) @ TO_GLTF.T}
        out[JOINTS.index("neck")] = {"rotation": _rotation((0.0, 1.0, 0.0), 6.0 * np.sin(2.0 * phase))}
    else:
        bow = GRAZE_NECK_DEG * (1.0 - np.cos(phase)) / 2.0
        out[JOINTS.index("neck")] = {"rotation": _rotation((0.0, 1.0, 0.0), bow)}
    return out


def coat_texture(body: Body) -> bytes:
    """A PNG of dark stripes on a light coat along u, each stripe's width wavering along v."""
    u, v = np.meshgrid(np.arange(TEXTURE_SIZE) / TEXTURE_SIZE, np.arange(TEXTURE_SIZE) / TEXTURE_SIZE)
    stripe = np.sin(2.0 * np.pi * (u + 0.04 * np.sin(2.0 * np.pi * v))) > 0.1
    light, dark = (np.asarray(c) for c in COAT)
    image = np.where(stripe[..., None], dark, light)
    buffer = io.BytesIO()
    Image.fromarray(np.round(image * 255).astype(np.uint8)).save(buffer, format="PNG", optimize=False)
    return buffer.getvalue()


def write_animal_glb(rng: np.random.Generator, motion: str, path: Path) -> Path:
    """One animal with its own proportions playing `motion`, as a GLB file at `path`."""
    if motion not in ANIMAL_MOTIONS:
        raise ValueError(f"motion must be one of {ANIMAL_MOTIONS}, got {motion!r}")
    body = make_body(rng)
    joints = _joint_positions(body)
    vertices, faces, joint_of, uvs, hoof = [], [], [], [], []
    count = 0
    for joint, mesh, axis, is_hoof in _parts(body, joints):
        vertices.append(mesh.vertices)
        faces.append(mesh.faces + count)
        joint_of.append(np.full(len(mesh.vertices), joint))
        side = np.arctan2(mesh.vertices[:, 1], mesh.vertices[:, 2 - axis]) / (2.0 * np.pi)
        uvs.append(np.column_stack([mesh.vertices[:, axis] * body.stripes, side]))
        hoof.append(np.full(len(mesh.vertices), is_hoof))
        count += len(mesh.vertices)
    vertices, faces = np.concatenate(vertices), np.concatenate(faces)
    is_hoof = np.concatenate(hoof)
    g = GlbWriter()
    texture = g.image(coat_texture(body))
    g.doc["materials"] = [{"name": "coat", "pbrMetallicRoughness": {"baseColorTexture": {"index": texture},
                                                                   "roughnessFactor": 0.9, "metallicFactor": 0.0}},
                          {"name": "hoof", "pbrMetallicRoughness": {"baseColorFactor": [*HOOF, 1.0],
                                                                   "roughnessFactor": 0.7, "metallicFactor": 0.0}}]
    primitives = []
    for material, keep in enumerate((~is_hoof, is_hoof)):
        used = np.flatnonzero(keep)
        local = np.full(len(vertices), -1)
        local[used] = np.arange(len(used))
        part_faces = local[faces[keep[faces].all(axis=1)]]
        joint_rows = np.zeros((len(used), 4))
        joint_rows[:, 0] = np.concatenate(joint_of)[used]
        weights = np.zeros((len(used), 4))
        weights[:, 0] = 1.0
        attributes = {"POSITION": g.accessor(vertices[used] @ TO_GLTF.T, "VEC3", bounds=True),
                      "JOINTS_0": g.accessor(joint_rows, "VEC4", UNSIGNED_SHORT),
                      "WEIGHTS_0": g.accessor(weights, "VEC4")}
        if material == 0:
            attributes["TEXCOORD_0"] = g.accessor(np.concatenate(uvs)[used], "VEC2")
        primitives.append({"attributes": attributes, "indices": g.accessor(part_faces.reshape(-1), "SCALAR",
                                                                           UNSIGNED_SHORT), "material": material})
    g.doc["meshes"] = [{"name": "animal", "primitives": primitives}]
    bind = np.tile(np.eye(4), (len(JOINTS), 1, 1))
    bind[:, :3, 3] = joints @ TO_GLTF.T
    nodes = [{"name": "animal", "mesh": 0, "skin": 0}]
    for i, name in enumerate(JOINTS):
        parent = PARENTS[i]
        local = joints[i] - (joints[parent] if parent >= 0 else 0.0)
        children = [1 + k for k, p in enumerate(PARENTS) if p == i]
        nodes.append({"name": name, "translation": (TO_GLTF @ local).tolist(), **({"children": children}
                                                                                   if children else {})})
    g.doc["nodes"] = nodes
    g.doc["skins"] = [{"joints": [1 + i for i in range(len(JOINTS))],
                       "inverseBindMatrices": g.accessor(np.linalg.inv(bind), "MAT4"), "skeleton": 1}]
    times = np.linspace(0.0, PERIOD[motion], KEYS_PER_PERIOD + 1)
    samplers, channels = [], []
    time_accessor = g.accessor(times[:, None], "SCALAR", bounds=True)
    for joint, paths in _channels(motion, times, joints).items():
        for target, values in paths.items():
            samplers.append({"input": time_accessor, "output": g.accessor(values, "VEC4" if target == "rotation"
                                                                         else "VEC3")})
            channels.append({"sampler": len(samplers) - 1, "target": {"node": 1 + joint, "path": target}})
    g.doc["animations"] = [{"name": motion, "samplers": samplers, "channels": channels}]
    g.doc["scenes"], g.doc["scene"] = [{"nodes": [0, 1]}], 0
    return g.write(path)

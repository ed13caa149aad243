"""A low-poly skinned humanoid: a 17-joint skeleton and tube-shaped body parts with smooth weights.

The body is built in its rest pose standing on z = 0, facing +x with its left side towards +y,
arms hanging. Every body part is a tube through a list of stations; each station carries skinning
weights, which are interpolated between stations, so the surface bends smoothly at the joints
(a station on a joint is weighted half to each side of it). Proportions are fractions of the height,
varied per body: leg and arm length, shoulder width, head size; clothes (short or long sleeves, shorts
or trousers) and the hair style vary too. Skin, face, hair, clothes and shoes are textured from a seeded
look (human_looks.py): the head is a mesh of its own, whose texture carries the face.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from asset_converters.procedural import human_looks as looks
from asset_converters.procedural.shapes import box, triplanar
from asset_converters.procedural.textures import save_png
from core.assets.parts import Material, SkinnedMesh
from core.color import srgb_to_linear

JOINTS = ["pelvis", "spine", "chest", "neck", "head",
          "l_shoulder", "l_elbow", "l_wrist", "r_shoulder", "r_elbow", "r_wrist",
          "l_hip", "l_knee", "l_ankle", "r_hip", "r_knee", "r_ankle"]
PARENTS = np.array([-1, 0, 1, 2, 3, 2, 5, 6, 2, 8, 9, 0, 11, 12, 0, 14, 15])
J = {name: i for i, name in enumerate(JOINTS)}

HEIGHT = (1.5, 1.95)  # m
GIRTH = (0.85, 1.3)  # width scale of the trunk and limbs
LEGS = (0.92, 1.08)  # leg length (ankle to hip) relative to the average; the head's top stays at the height
ARMS = (0.92, 1.08)  # arm length relative to the average
SHOULDERS = (0.9, 1.15)  # shoulder width relative to the trunk's
HEAD = (0.92, 1.08)  # head size
SECTIONS = 12  # vertices around a body tube
RINGS_BETWEEN = 2  # extra rings between two stations, for smooth bending
MAX_INFLUENCES = 4  # joints per vertex
# Rest heights of the joints as fractions of the body height.
Z = {"ankle": 0.045, "knee": 0.285, "hip": 0.50, "pelvis": 0.53, "spine": 0.60, "chest": 0.70,
     "upper_chest": 0.78, "shoulder": 0.815, "neck": 0.835, "throat": 0.85, "head": 0.87, "elbow": 0.63,
     "wrist": 0.475}
LEG_LEVELS = ("knee", "hip", "pelvis")  # scaled from the ankle by the leg length
TRUNK_LEVELS = ("spine", "chest", "upper_chest", "shoulder", "neck", "throat")  # between pelvis and head
ARM_LEVELS = ("elbow", "wrist")  # hanging from the shoulder, scaled by the arm length
# The shoe: a box from FOOT_HEEL behind to FOOT_TOE in front of the ankle, its sole on z = 0 at rest.
FOOT_HEEL, FOOT_TOE, FOOT_WIDTH, FOOT_HEIGHT = 0.035, 0.115, 0.05, 0.06
CLOTH_TILE = 0.25  # m of body length per texture tile
HAIR_STYLES = ("short", "long", "bun", "buzz", "bald")  # a buzz cut is painted on the scalp, no hair mesh
HAIR_THICKNESS = 0.006  # fraction of the height the hair stands off the scalp
HAIR_EDGE_THICKNESS, HAIR_CROWN_THICKNESS = 0.1, 2.0  # relative: thin at the hairline, fuller on top
HAIR_ROWS = 5  # rings of the hair from its edge to the crown
# The hair's edge on the head, (angle from the front, rad; height above the head's centre in vertical half-axes):
# high on the forehead, over the ears, down to the nape. human_looks.HAIRLINE paints the scalp just below it.
HAIR_EDGE = ((0.0, 0.48), (0.9, 0.36), (np.pi / 2, 0.18), (2.3, -0.25), (np.pi, -0.5))
# The arm's first ring sits SHOULDER_TOP (fraction of the height) above the shoulder joint, level with the torso's
# top, and its end rounds SHOULDER_CAP of the arm's radius further: no posts sticking up beside the neck.
SHOULDER_TOP, SHOULDER_CAP = 0.012, 0.35
HEAD_SECTIONS = 16  # vertices round the head and its hair: the face is seen close up
HEAD_FORWARD = 0.004  # the head's centre lies this far (fraction of the height) in front of the neck's axis
# The nose: stations from the bridge between the eyes to the tip and the base, each (height above the head's
# centre, how far out of the head's surface there, forward and sideways radii), in the head's vertical half-axis.
NOSE = ((0.04, -0.04, 0.035, 0.045), (-0.18, 0.03, 0.04, 0.055), (-0.33, 0.08, 0.05, 0.07),
        (-0.4, 0.02, 0.035, 0.08))
# An ear: stations from its top down, each (height above the head's centre, how far behind the head's centre,
# how far out of the head's surface, front-to-back and in-out radii), in the head's vertical half-axis.
EAR = ((0.2, 0.08, -0.01, 0.1, 0.03), (0.0, 0.1, 0.04, 0.16, 0.045), (-0.22, 0.06, 0.0, 0.09, 0.035))
FEATURE_SECTIONS = 8  # vertices round the nose and the ears
HEAD_POLAR = (0.9, 0.12)  # polar angles of the head's first (chin) and last (crown) rings, fractions of pi
HEAD_RADII = (0.056, 0.048, 0.066)  # half-axes of the head (forward, sideways, up), fractions of the height


@dataclass(frozen=True)
class Body:
    height: float
    girth: float
    levels: dict[str, float]  # rest heights of the joints and body stations, fractions of the height
    shoulders: float  # shoulder width factor
    head: float  # head size factor
    joints: np.ndarray  # (J, 3) rest positions
    long_sleeves: bool
    shorts: bool
    hair: str  # one of HAIR_STYLES
    look: looks.Look  # colours and fabrics


@dataclass(frozen=True)
class Station:
    center: tuple[float, float, float]
    radii: tuple[float, float]  # along the tube frame's first (forward) and second (sideways) axes
    weights: dict[str, float]


@dataclass
class Part:
    """Vertices, faces, UVs and dense (V, J) weights of one body piece."""

    vertices: np.ndarray
    faces: np.ndarray
    uvs: np.ndarray
    weights: np.ndarray


def body_levels(legs: float, arms: float) -> dict[str, float]:
    """Joint and station heights (fractions of the height) for the given leg and arm lengths: the legs
    stretch from the ankle, the trunk fills the space between pelvis and head, the arms hang from the
    shoulder."""
    z = dict(Z)
    for name in LEG_LEVELS:
        z[name] = Z["ankle"] + (Z[name] - Z["ankle"]) * legs
    trunk = (Z["head"] - z["pelvis"]) / (Z["head"] - Z["pelvis"])
    for name in TRUNK_LEVELS:
        z[name] = z["pelvis"] + (Z[name] - Z["pelvis"]) * trunk
    for name in ARM_LEVELS:
        z[name] = z["shoulder"] - (Z["shoulder"] - Z[name]) * arms
    return z


def make_body(rng: np.random.Generator) -> Body:
    """Random proportions, clothes, hair and look; joint rest positions scale with height and girth."""
    h, g = float(rng.uniform(*HEIGHT)), float(rng.uniform(*GIRTH))
    z = body_levels(float(rng.uniform(*LEGS)), float(rng.uniform(*ARMS)))
    shoulders, head = float(rng.uniform(*SHOULDERS)), float(rng.uniform(*HEAD))
    chest_half = 0.1 * h * g
    shoulder_y, hip_y = chest_half * shoulders + 0.015 * h, 0.05 * h * g
    joints = np.zeros((len(JOINTS), 3))
    for name in ("pelvis", "spine", "chest", "neck", "head"):
        joints[J[name]] = (0.0, 0.0, z[name] * h)
    for side, s in (("l", 1.0), ("r", -1.0)):
        joints[J[f"{side}_shoulder"]] = (0.0, s * shoulder_y, z["shoulder"] * h)
        joints[J[f"{side}_elbow"]] = (0.0, s * (shoulder_y + 0.01 * h), z["elbow"] * h)
        joints[J[f"{side}_wrist"]] = (0.0, s * (shoulder_y + 0.02 * h), z["wrist"] * h)
        for name in ("hip", "knee", "ankle"):
            joints[J[f"{side}_{name}"]] = (0.0, s * hip_y, z[name] * h)
    return Body(
        height=h, girth=g, levels=z, shoulders=shoulders, head=head, joints=joints,
        long_sleeves=bool(rng.integers(2)), shorts=bool(rng.integers(2)),
        hair=HAIR_STYLES[int(rng.integers(len(HAIR_STYLES)))], look=looks.draw_look(rng),
    )


def sole_points(body: Body) -> np.ndarray:
    """(2 feet, 4 corners, 3) corners of each sole relative to its ankle joint, in the rest pose."""
    h = body.height
    ankle_z = body.levels["ankle"] * h
    corners = [(x * h, y * FOOT_WIDTH * h / 2, -ankle_z) for x in (-FOOT_HEEL, FOOT_TOE) for y in (-1, 1)]
    return np.array([corners, corners])


def _frame(axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors across a tube axis: the first as close to +x (forward) as possible."""
    reference = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
    first = reference - reference.dot(axis) * axis
    first /= np.linalg.norm(first)
    return first, np.cross(axis, first)


def _sheet_faces(rings: int, columns: int, open_start: bool = False) -> list[tuple[int, int, int]]:
    """Two outward triangles per quad of a grid of `rings` rows of `columns` vertices (angles growing
    counter-clockwise about the direction the rings advance in), then fans closing the first ring onto vertex
    rings * columns (unless `open_start`) and the last onto the vertex after that."""
    faces = []
    for i in range(rings - 1):
        for k in range(columns - 1):
            a, b = i * columns + k, i * columns + k + 1
            faces += [(a, b, b + columns), (a, b + columns, a + columns)]
    start, last = rings * columns, (rings - 1) * columns
    end = start + (not open_start)
    for k in range(columns - 1):
        faces += [(end, last + k, last + k + 1)] if open_start else [(start, k + 1, k), (end, last + k, last + k + 1)]
    return faces


def tube(stations: list[Station], cap: tuple[float, float] | None = None, sections: int = SECTIONS) -> Part:
    """A capped tube through the stations, with weights interpolated along it.

    `cap` gives how far the end poles stick out beyond the first and last stations (rounded ends);
    by default half the end radius. u runs once round the tube from its back (u = 0, the UV seam, where
    shading normals split) through its front (u = 1/2, the first frame axis) and v along it, CLOTH_TILE per unit.
    """
    centers = np.array([s.center for s in stations], dtype=float)
    radii = np.array([s.radii for s in stations], dtype=float)
    weights = np.zeros((len(stations), len(JOINTS)))
    for i, s in enumerate(stations):
        for name, w in s.weights.items():
            weights[i, J[name]] = w
    # Resample stations into rings.
    t = np.linspace(0, len(stations) - 1, (len(stations) - 1) * (RINGS_BETWEEN + 1) + 1)
    lo = np.minimum(np.floor(t).astype(int), len(stations) - 2)
    f = (t - lo)[:, None]
    ring_c = centers[lo] * (1 - f) + centers[lo + 1] * f
    ring_r = radii[lo] * (1 - f) + radii[lo + 1] * f
    ring_w = weights[lo] * (1 - f) + weights[lo + 1] * f
    tangents = np.gradient(ring_c, axis=0)
    tangents /= np.linalg.norm(tangents, axis=1, keepdims=True)
    length = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(ring_c, axis=0), axis=1))])

    angles = np.pi + np.linspace(0, 2 * np.pi, sections + 1)  # the last column repeats the first for a UV seam
    vertices, uvs, vweights = [], [], []
    for c, (ra, rb), tangent, w, v in zip(ring_c, ring_r, tangents, ring_w, length):
        first, second = _frame(tangent)
        ring = c + np.outer(ra * np.cos(angles), first) + np.outer(rb * np.sin(angles), second)
        vertices.append(ring)
        uvs.append(np.stack([angles / (2 * np.pi) - 0.5, np.full_like(angles, v / CLOTH_TILE)], axis=1))
        vweights.append(np.repeat(w[None], len(angles), axis=0))
    ends = cap if cap is not None else (0.5 * radii[0].min(), 0.5 * radii[-1].min())
    poles = [ring_c[0] - tangents[0] * ends[0], ring_c[-1] + tangents[-1] * ends[1]]
    faces = _sheet_faces(len(ring_c), len(angles))
    vertices = np.concatenate([*vertices, poles])
    uvs = np.concatenate([*uvs, [[0.5, 0.0], [0.5, length[-1] / CLOTH_TILE]]])
    vweights = np.concatenate([*vweights, ring_w[[0, -1]]])
    return Part(vertices, np.array(faces), uvs, vweights)


def rigid_box(extents: tuple[float, float, float], center: tuple[float, float, float], joint: str) -> Part:
    """A box moving with one joint; v runs from 0 at its bottom to 1 on its top (a shoe's sole to its upper)."""
    vertices, faces, uvs = triplanar(box(extents, center), CLOTH_TILE)
    uvs[:, 1] = (vertices[:, 2] - vertices[:, 2].min()) / extents[2]
    weights = np.zeros((len(vertices), len(JOINTS)))
    weights[:, J[joint]] = 1.0
    return Part(vertices, faces, uvs, weights)


def _leg_stations(body: Body, side: str) -> list[Station]:
    h, g = body.height, body.girth
    hip, knee, ankle = (body.joints[J[f"{side}_{n}"]] for n in ("hip", "knee", "ankle"))
    x, y = hip[0], hip[1]
    thigh, calf = 0.058 * h * g, 0.036 * h * np.sqrt(g)
    at = lambda z: (x, y, z)
    return [
        Station(at(hip[2] + 0.02 * h), (thigh, thigh), {"pelvis": 0.5, f"{side}_hip": 0.5}),
        Station(at(hip[2] - 0.06 * h), (thigh, thigh), {f"{side}_hip": 1.0}),
        Station(at(knee[2] + 0.06 * h), (0.7 * thigh, 0.7 * thigh), {f"{side}_hip": 1.0}),
        Station(at(knee[2]), (0.034 * h, 0.034 * h), {f"{side}_hip": 0.5, f"{side}_knee": 0.5}),
        Station(at(knee[2] - 0.06 * h), (calf, calf), {f"{side}_knee": 1.0}),
        Station(at(ankle[2] + 0.05 * h), (0.022 * h, 0.022 * h), {f"{side}_knee": 1.0}),
        Station(at(ankle[2]), (0.021 * h, 0.021 * h), {f"{side}_knee": 0.5, f"{side}_ankle": 0.5}),
    ]


def _arm_stations(body: Body, side: str) -> list[Station]:
    h = body.height
    shoulder, elbow, wrist = (body.joints[J[f"{side}_{n}"]] for n in ("shoulder", "elbow", "wrist"))
    upper = 0.032 * h * np.sqrt(body.girth)
    lerp = lambda a, b, t: tuple(a + (b - a) * t)
    return [
        Station(tuple(shoulder + (0, 0, SHOULDER_TOP * h)), (upper, upper), {"chest": 0.5, f"{side}_shoulder": 0.5}),
        Station(lerp(shoulder, elbow, 0.25), (upper, upper), {f"{side}_shoulder": 1.0}),
        Station(lerp(shoulder, elbow, 0.8), (0.026 * h, 0.026 * h), {f"{side}_shoulder": 1.0}),
        Station(tuple(elbow), (0.024 * h, 0.024 * h), {f"{side}_shoulder": 0.5, f"{side}_elbow": 0.5}),
        Station(lerp(elbow, wrist, 0.2), (0.025 * h, 0.025 * h), {f"{side}_elbow": 1.0}),
        Station(lerp(elbow, wrist, 0.85), (0.019 * h, 0.019 * h), {f"{side}_elbow": 1.0}),
        Station(tuple(wrist), (0.018 * h, 0.018 * h), {f"{side}_elbow": 0.5, f"{side}_wrist": 0.5}),
    ]


def _arm(stations: list[Station]) -> Part:
    """An arm (or sleeve) tube whose top barely rounds over the shoulder."""
    return tube(stations, cap=(SHOULDER_CAP * stations[0].radii[0], 0.5 * min(stations[-1].radii)))


def _hand(body: Body, side: str) -> Part:
    h, wrist = body.height, body.joints[J[f"{side}_wrist"]]
    down = lambda dz: tuple(wrist - (0, 0, dz * h))
    # A hanging hand is flat across y (palm to the thigh) and wide along x.
    return tube([Station(tuple(wrist), (0.018 * h, 0.016 * h), {f"{side}_wrist": 1.0}),
                 Station(down(0.04), (0.027 * h, 0.012 * h), {f"{side}_wrist": 1.0}),
                 Station(down(0.08), (0.02 * h, 0.01 * h), {f"{side}_wrist": 1.0})])


def _pelvis(body: Body) -> Part:
    h, g, z = body.height, body.girth, body.levels
    return tube([
        Station((0, 0, (z["hip"] - 0.045) * h), (0.065 * h * g, 0.085 * h * g), {"pelvis": 1.0}),
        Station((0, 0, z["hip"] * h), (0.072 * h * g, 0.1 * h * g), {"pelvis": 1.0}),
        Station((0, 0, z["spine"] * h), (0.064 * h * g, 0.09 * h * g), {"pelvis": 0.5, "spine": 0.5}),
    ])


def _torso(body: Body) -> Part:
    h, g, z = body.height, body.girth, body.levels
    s = body.shoulders
    return tube([
        Station((0, 0, (z["spine"] - 0.03) * h), (0.065 * h * g, 0.09 * h * g), {"pelvis": 0.3, "spine": 0.7}),
        Station((0, 0, (z["spine"] + z["chest"]) / 2 * h), (0.066 * h * g, 0.092 * h * g),
                {"spine": 0.5, "chest": 0.5}),
        Station((0, 0, z["chest"] * h), (0.074 * h * g, 0.1 * h * g), {"chest": 1.0}),
        Station((0, 0, z["upper_chest"] * h), (0.068 * h * g, 0.1 * h * g * s), {"chest": 1.0}),
        Station((0, 0, (z["shoulder"] + 0.012) * h), (0.05 * h * g, 0.085 * h * g * s), {"chest": 1.0}),
    ], cap=(0.02 * h, 0.015 * h))


def _head_radii(body: Body) -> tuple[float, float, float]:
    """Half-axes of the head ellipsoid (forward, sideways, up), m."""
    h = body.height * body.head
    return tuple(r * h for r in HEAD_RADII)


def head_grid() -> looks.HeadGrid:
    """Where the head's UVs (`_unit_v` of its tube) lie on the head, for painting the face."""
    chin, crown = np.cos(np.asarray(HEAD_POLAR) * np.pi)
    return looks.HeadGrid(float(chin), float(crown), HEAD_RADII[1] / HEAD_RADII[2])


def _unit_v(part: Part) -> Part:
    """The part with v scaled to run 0..1 along it: one texture over the whole tube (head, hair)."""
    uvs = part.uvs.copy()
    uvs[:, 1] /= uvs[:, 1].max()
    return Part(part.vertices, part.faces, uvs, part.weights)


def _neck_and_head(body: Body) -> list[Part]:
    """The neck, and the head with one texture over it (v from the chin to the crown)."""
    h, z = body.height, body.levels
    neck = tube([Station((0, 0, (z["shoulder"] - 0.005) * h), (0.031 * h, 0.031 * h), {"chest": 0.5, "neck": 0.5}),
                 Station((0, 0, z["throat"] * h), (0.029 * h, 0.029 * h), {"neck": 1.0}),
                 Station((0, 0, (z["head"] + 0.01) * h), (0.028 * h, 0.028 * h), {"neck": 0.5, "head": 0.5})])
    rx, ry, rz = _head_radii(body)
    cz = h - rz
    phis = np.linspace(*HEAD_POLAR, 6) * np.pi  # from near the chin up to near the crown
    stations = [Station((HEAD_FORWARD * h, 0.0, cz + rz * np.cos(p)), (rx * np.sin(p), ry * np.sin(p)),
                        {"head": 1.0}) for p in phis]
    caps = (rz * (1 + np.cos(phis[0])), rz * (1 - np.cos(phis[-1])))
    head = _unit_v(tube(stations, cap=caps, sections=HEAD_SECTIONS))
    return [neck, _merge([head, *(_on_face(body, part) for part in (_nose(body), *_ears(body)))])]


def _head_center(body: Body) -> np.ndarray:
    return np.array([HEAD_FORWARD * body.height, 0.0, body.height - _head_radii(body)[2]])


def _nose(body: Body) -> Part:
    rx, _, rz = _head_radii(body)
    center = _head_center(body)
    return tube([Station((center[0] + rx * np.sqrt(1 - y**2) + out * rz, 0.0, center[2] + y * rz),
                         (front * rz, side * rz), {"head": 1.0}) for y, out, front, side in NOSE],
                sections=FEATURE_SECTIONS)


def _ears(body: Body) -> list[Part]:
    rx, ry, rz = _head_radii(body)
    center = _head_center(body)
    ears = []
    for sign in (1.0, -1.0):
        ears.append(tube([Station((center[0] - back * rz,
                                   sign * (ry * np.sqrt(1 - y**2 - (back * rz / rx) ** 2) + out * rz), center[2] + y * rz),
                                  (front * rz, width * rz), {"head": 1.0}) for y, back, out, front, width in EAR],
                         sections=FEATURE_SECTIONS))
    return ears


def _on_face(body: Body, part: Part) -> Part:
    """A part on the head (nose, ear) textured with the face texture where it sits: UVs of the head's grid at
    its vertices' angles round and heights on the head."""
    grid, rz = head_grid(), _head_radii(body)[2]
    offset = part.vertices - _head_center(body)
    u = 0.5 + np.arctan2(offset[:, 1], offset[:, 0]) / (2 * np.pi)
    v = (offset[:, 2] / rz - grid.chin) / (grid.crown - grid.chin)
    return Part(part.vertices, part.faces, np.stack([u, v], axis=1), part.weights)


def _hair_shell(body: Body) -> Part:
    """The hair over the scalp: a shell round the head ellipsoid from HAIR_EDGE up to the crown, a little off the
    scalp (more on top), v from the edge (0) to the crown (1) like the strands, u as round a tube."""
    h = body.height
    radii = np.array(_head_radii(body))
    center = _head_center(body)
    angles = np.pi + np.linspace(0, 2 * np.pi, HEAD_SECTIONS + 1)
    from_front = np.abs(np.angle(np.exp(1j * angles)))
    edge = np.arccos(np.interp(from_front, *zip(*HAIR_EDGE)))
    vertices, uvs = [], []
    for k in range(HAIR_ROWS):
        rise = k / HAIR_ROWS
        polar = edge * (1 - rise)
        thickness = HAIR_THICKNESS * h * (HAIR_EDGE_THICKNESS + (HAIR_CROWN_THICKNESS - HAIR_EDGE_THICKNESS) * rise)
        rx, ry, rz = radii + thickness
        vertices.append(center + np.stack([rx * np.sin(polar) * np.cos(angles), ry * np.sin(polar) * np.sin(angles),
                                           rz * np.cos(polar)], axis=1))
        uvs.append(np.stack([angles / (2 * np.pi) - 0.5, np.full_like(angles, rise)], axis=1))
    crown = center + (0, 0, radii[2] + HAIR_THICKNESS * h * HAIR_CROWN_THICKNESS)
    vertices, uvs = np.concatenate([*vertices, [crown]]), np.concatenate([*uvs, [[0.5, 1.0]]])
    weights = np.zeros((len(vertices), len(JOINTS)))
    weights[:, J["head"]] = 1.0
    return Part(vertices, np.array(_sheet_faces(HAIR_ROWS, HEAD_SECTIONS + 1, open_start=True)), uvs, weights)


def _hair(body: Body) -> list[Part]:
    """The hair over the head ellipsoid: a shell from the hairline over the crown (unless buzzed or bald), plus
    a fall down the back to the shoulders (long) or a knot at the back of the head (bun)."""
    if body.hair in ("buzz", "bald"):
        return []
    h, z = body.height, body.levels
    rx, ry, rz = (r + HAIR_THICKNESS * h for r in _head_radii(body))
    cz, x0 = h - _head_radii(body)[2], HEAD_FORWARD * h
    parts = [_hair_shell(body)]
    if body.hair == "long":
        back = x0 - 0.75 * rx
        parts.append(_unit_v(tube([
            Station((back, 0.0, cz + 0.3 * rz), (0.03 * h, 0.8 * ry), {"head": 1.0}),
            Station((back - 0.01 * h, 0.0, cz - rz), (0.025 * h, 0.75 * ry), {"head": 0.6, "neck": 0.4}),
            Station((back - 0.02 * h, 0.0, (z["shoulder"] + 0.01) * h), (0.02 * h, 0.7 * ry),
                    {"neck": 0.3, "chest": 0.7}),
        ])))
    elif body.hair == "bun":
        radius, center = 0.035 * h, np.array([x0 - rx, 0.0, cz + 0.35 * rz])
        knot = np.linspace(0.85, 0.15, 4) * np.pi
        parts.append(_unit_v(tube([Station(tuple(center + (0, 0, radius * np.cos(p))), (radius * np.sin(p),) * 2,
                                           {"head": 1.0}) for p in knot],
                                  cap=(radius * (1 + np.cos(knot[0])), radius * (1 - np.cos(knot[-1]))))))
    return parts


def _merge(parts: list[Part]) -> Part:
    offsets = np.cumsum([0] + [len(p.vertices) for p in parts[:-1]])
    return Part(np.concatenate([p.vertices for p in parts]),
                np.concatenate([p.faces + o for p, o in zip(parts, offsets)]),
                np.concatenate([p.uvs for p in parts]), np.concatenate([p.weights for p in parts]))


def _skinned(name: str, part: Part, material: Material) -> SkinnedMesh:
    """Keep each vertex's strongest joints and renormalise their weights."""
    order = np.argsort(-part.weights, axis=1, kind="stable")[:, :MAX_INFLUENCES]
    weights = np.take_along_axis(part.weights, order, axis=1)
    weights /= weights.sum(axis=1, keepdims=True)
    return SkinnedMesh(name, part.vertices, part.faces, order, weights, material, part.uvs)


def body_meshes(rng: np.random.Generator, body: Body, texture_dir: Path) -> list[SkinnedMesh]:
    """Skin, head (with the face), shirt, trousers (or shorts), shoes and hair (unless bald) as skinned meshes,
    each textured from the body's look."""
    h, look = body.height, body.look
    neck, head = _neck_and_head(body)
    skin_parts, shirt_parts, trouser_parts = [neck], [_torso(body)], [_pelvis(body)]
    for side in ("l", "r"):
        arm = _arm_stations(body, side)
        if body.long_sleeves:
            shirt_parts.append(_arm(arm))
        else:
            shirt_parts.append(_arm(arm[:4]))
            skin_parts.append(tube(arm[3:]))
        skin_parts.append(_hand(body, side))
        leg = _leg_stations(body, side)
        if body.shorts:  # down to above the knee
            trouser_parts.append(tube(leg[:3]))
            skin_parts.append(tube(leg[2:]))
        else:
            trouser_parts.append(tube(leg))
    heel, toe = FOOT_HEEL * h, FOOT_TOE * h
    shoe_parts = [rigid_box(((heel + toe), FOOT_WIDTH * h, FOOT_HEIGHT * h),
                            ((toe - heel) / 2, body.joints[J[f"{s}_ankle"]][1], FOOT_HEIGHT * h / 2), f"{s}_ankle")
                  for s in ("l", "r")]

    def material(name: str, image: np.ndarray, color: looks.Color, roughness: float) -> Material:
        """The texture saved as `name`.png; the base colour is the look's colour in linear RGB."""
        linear = tuple(float(c) for c in srgb_to_linear(np.asarray(color)))
        return Material(name, linear, save_png(image, texture_dir / f"{name}.png"), roughness=roughness)

    meshes = [
        _skinned("skin", _merge(skin_parts),
                 material("skin", looks.skin_texture(rng, look.skin), look.skin, looks.SKIN_ROUGHNESS)),
        _skinned("head", head,
                 material("head", looks.face_texture(rng, look, head_grid(), body.hair != "bald"), look.skin,
                          looks.SKIN_ROUGHNESS)),
        _skinned("shirt", _merge(shirt_parts), material("shirt", looks.cloth_texture(rng, look.top), look.top.color,
                                                        looks.roughness_of(look.top))),
        _skinned("trousers", _merge(trouser_parts), material("trousers", looks.cloth_texture(rng, look.bottom),
                                                             look.bottom.color, looks.roughness_of(look.bottom))),
        _skinned("shoes", _merge(shoe_parts), material("shoes", looks.shoe_texture(rng, look.shoe_upper,
                                                                                    look.shoe_sole),
                                                       look.shoe_upper, looks.SHOE_ROUGHNESS)),
    ]
    hair = _hair(body)
    if hair:
        meshes.append(_skinned("hair", _merge(hair), material("hair", looks.hair_texture(rng, look.hair), look.hair,
                                                              looks.HAIR_ROUGHNESS)))
    return meshes

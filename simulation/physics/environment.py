"""Environment collision: an environment package's meshes as convex MuJoCo geoms plus a floor plane.

MuJoCo collides meshes through their convex hulls, so each prim is decomposed into a bounded
number of convex pieces:

1. The prim's triangles are welded and split into connected components.
2. A watertight component whose hull volume is within CONVEX_TOLERANCE of its own volume (a box,
   a cabinet) is one piece: its hull.
3. Any other component (single-sided wall/ceiling sheets of 3D-Front, L-shaped or hollow pieces)
   is cut into near-planar patches: faces joined across edges whose dihedral angle is below
   PATCH_ANGLE_DEG. Each patch is split greedily into convex pieces in its plane (triangles are
   added to a piece while the piece's 2D hull stays as large as its area), so a wall with a door
   hole keeps the hole. Each piece is extruded SLAB_THICKNESS backwards along its normal (behind the
   visible side, which USD meshes face outward) into a convex slab.
4. A component that would need more than MAX_SLABS_PER_COMPONENT slabs (curved, detailed
   furniture) is instead clipped to a grid of at most GRID_CELLS^3 cells over its bounds; each
   cell's clipped surface gives one hull. This over-approximates by at most a cell, which only
   matters for clutter the robot cannot enter anyway.
5. A prim that still has more than MAX_PIECES_PER_PRIM pieces (hundreds of small parts) is clipped
   as a whole to a grid of at most PRIM_GRID_CELLS^3 cells instead, which bounds every prim.

Prims lying entirely at floor height are left out: an infinite plane at the package's floor height
carries the robots. All environment geoms are static (see simulation.robots.mjcf.COLLISION).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import shapely
import trimesh

from core.assets.layout import META_FILE, PACKAGE_STAGE
from core.assets.usd_read import read_meshes
from core.errors import InputError
from core.formats.asset_meta import load_meta
from core.progress import track
from simulation.robots.mjcf import COLLISION, element

FLOOR_TOLERANCE = 0.01  # m: a prim within this of the floor height everywhere is floor
CONVEX_TOLERANCE = 0.05  # a watertight part is convex if hull volume <= (1 + this) * volume
PATCH_ANGLE_DEG = 5.0  # adjacent faces closer to coplanar than this share a patch
PLANAR_CONVEX_TOLERANCE = 1e-3  # relative excess of a 2D hull's area over the piece's area
SLAB_THICKNESS = 0.05  # m
MIN_THICKNESS = 0.02  # m: flatter hulls are thickened to this
MIN_FACE_AREA = 1e-6  # m^2: smaller (degenerate) triangles are dropped
MAX_SLABS_PER_COMPONENT = 64
MAX_PIECES_PER_PRIM = 256
GRID_CELLS = 4  # per axis, for a component's grid fallback
PRIM_GRID_CELLS = 8  # per axis, for a whole prim's grid fallback
MIN_CELL = 0.1  # m: the grid never cuts finer than this
FLOOR_FRICTION = (1.0, 0.005, 0.0001)


@dataclass(frozen=True)
class ConvexPiece:
    """One convex collision geom: the hull of `vertices` (world frame)."""

    prim_path: str
    label: str | None
    method: str  # "hull" | "slab" | "cell"
    vertices: np.ndarray


@dataclass(frozen=True)
class EnvironmentCollision:
    floor_height: float
    pieces: tuple[ConvexPiece, ...]


def load_environment_collision(package: str | Path) -> EnvironmentCollision:
    """Convex collision pieces of an environment package (see the module notes for the method)."""
    package = Path(package)
    meta = load_meta(package, "environment")
    if meta.environment is None:
        raise InputError("an environment package needs its environment section", package / META_FILE, "environment")
    usd = package / PACKAGE_STAGE
    if not usd.is_file():
        raise InputError("environment stage not found", usd)
    floor = meta.environment.floor_height
    pieces: list[ConvexPiece] = []
    for mesh in track(read_meshes(usd), "collision pieces"):
        vertices = np.asarray(mesh.vertices, dtype=np.float64)
        if len(mesh.faces) == 0 or np.abs(vertices[:, 2] - floor).max() <= FLOOR_TOLERANCE:
            continue
        for method, points in decompose(vertices, mesh.faces):
            pieces.append(ConvexPiece(mesh.prim_path, mesh.semantic_label, method, points))
    return EnvironmentCollision(floor, tuple(pieces))


def decompose(vertices: np.ndarray, faces: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Convex pieces (method, points whose hull is the piece) of one triangle mesh."""
    mesh = _clean(vertices, faces)
    if mesh is None:
        return []
    pieces = []
    for part in mesh.split(only_watertight=False):
        pieces += _decompose_component(part)
        if len(pieces) > MAX_PIECES_PER_PRIM:
            return _grid_cells(mesh, PRIM_GRID_CELLS)
    return pieces


def environment_elements(env: EnvironmentCollision) -> tuple[list[ET.Element], list[ET.Element]]:
    """(mesh assets, worldbody elements) for the MJCF: the pieces as mesh geoms, then the floor.

    The pieces are geoms of the world body itself, whose bounding-volume tree MuJoCo treats as
    static, so hundreds of pieces add little per-step cost (spread over static bodies instead, each
    body's box is recomputed every step). The floor plane gets a static body of its own: MuJoCo
    filters body pairs by the union of their geoms' collision bits, so the mecanum rollers, which
    touch only the floor, never enter a tree search against the environment.
    """
    assets, elements = [], []
    for index, piece in enumerate(env.pieces):
        name = f"env/{index:04d}"
        assets.append(element("mesh", name=name, vertex=piece.vertices))
        elements.append(element("geom", name=name, type="mesh", mesh=name, rgba=(0.7, 0.7, 0.7, 1),
                                **COLLISION["static"]))
    floor = element("body", name="env/floor")
    element("geom", floor, name="env/floor", type="plane", size=(0, 0, 1), pos=(0, 0, env.floor_height),
            friction=FLOOR_FRICTION, rgba=(0.6, 0.6, 0.6, 1), **COLLISION["floor"])
    return assets, elements + [floor]


# ---------------------------------------------------------------- decomposition steps


def _clean(vertices: np.ndarray, faces: np.ndarray) -> trimesh.Trimesh | None:
    mesh = trimesh.Trimesh(np.asarray(vertices, dtype=np.float64), np.asarray(faces, dtype=np.int64), process=True)
    mesh.update_faces(mesh.area_faces > MIN_FACE_AREA)
    mesh.remove_unreferenced_vertices()
    return mesh if len(mesh.faces) else None


def _decompose_component(part: trimesh.Trimesh) -> list[tuple[str, np.ndarray]]:
    if part.is_watertight:
        volume = abs(part.volume)
        hull = part.convex_hull
        if volume > 0 and hull.volume <= (1 + CONVEX_TOLERANCE) * volume:
            return [("hull", np.asarray(hull.vertices))]
    slabs = _planar_slabs(part)
    return slabs if slabs is not None else _grid_cells(part, GRID_CELLS)


def _planar_slabs(part: trimesh.Trimesh) -> list[tuple[str, np.ndarray]] | None:
    """Convex slabs from near-planar patches, or None if there would be too many."""
    n_faces = len(part.faces)
    adjacency = part.face_adjacency
    flat = adjacency[part.face_adjacency_angles < np.radians(PATCH_ANGLE_DEG)] if len(adjacency) else adjacency
    neighbours: list[list[int]] = [[] for _ in range(n_faces)]
    for a, b in flat:
        neighbours[a].append(int(b))
        neighbours[b].append(int(a))
    patches = trimesh.graph.connected_components(flat, nodes=np.arange(n_faces), min_len=1)
    if len(patches) > MAX_SLABS_PER_COMPONENT:  # every patch makes at least one slab
        return None
    slabs = []
    for patch in sorted(patches, key=lambda p: int(np.min(p))):
        patch = np.sort(patch)
        normal = (part.face_normals[patch] * part.area_faces[patch, None]).sum(axis=0)
        normal /= np.linalg.norm(normal) if np.linalg.norm(normal) > 0 else 1.0
        for piece in _convex_pieces(part, patch, normal, neighbours):
            points = part.vertices[np.unique(part.faces[piece])]
            slabs.append(("slab", np.concatenate([points, points - SLAB_THICKNESS * normal])))
            if len(slabs) > MAX_SLABS_PER_COMPONENT:
                return None
    return slabs


def _convex_pieces(part: trimesh.Trimesh, patch: np.ndarray, normal: np.ndarray,
                   neighbours: list[list[int]]) -> list[list[int]]:
    """Split a patch's faces into groups whose projections on the patch plane are convex."""
    u = np.cross(normal, [1.0, 0.0, 0.0] if abs(normal[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(normal, u)
    in_plane = part.vertices[part.faces[patch]] @ np.stack([u, v], axis=1)  # (F, 3, 2)
    corners = dict(zip(patch.tolist(), in_plane))
    areas = part.area_faces
    unassigned = set(patch.tolist())
    pieces = []
    for seed in patch.tolist():
        if seed not in unassigned:
            continue
        unassigned.discard(seed)
        piece, points, area = [seed], corners[seed], areas[seed]
        frontier = deque(n for n in neighbours[seed] if n in unassigned)
        while frontier:
            face = frontier.popleft()
            if face not in unassigned:
                continue
            candidate = np.concatenate([points, corners[face]])
            if _hull_area(candidate) <= (area + areas[face]) * (1 + PLANAR_CONVEX_TOLERANCE):
                unassigned.discard(face)
                piece.append(face)
                points, area = candidate, area + areas[face]
                frontier.extend(n for n in neighbours[face] if n in unassigned)
        pieces.append(piece)
    return pieces


def _hull_area(points: np.ndarray) -> float:
    return float(shapely.MultiPoint(points).convex_hull.area)


def _grid_cells(mesh: trimesh.Trimesh, cells: int) -> list[tuple[str, np.ndarray]]:
    """Hulls of the mesh surface clipped to each cell of a grid (at most `cells` per axis)."""
    lo, hi = mesh.bounds
    counts = np.clip(np.floor((hi - lo) / MIN_CELL), 1, cells).astype(int)
    edges = [np.linspace(lo[a], hi[a], counts[a] + 1) for a in range(3)]
    cells = []

    def clip(part: trimesh.Trimesh | None, axis: int, low: float, high: float) -> trimesh.Trimesh | None:
        for origin, direction in ((low, 1.0), (high, -1.0)):
            if part is None or len(part.faces) == 0:
                return None
            normal = np.zeros(3)
            normal[axis] = direction
            point = np.zeros(3)
            point[axis] = origin
            part = trimesh.intersections.slice_mesh_plane(part, normal, point, cap=False)
        return part if part is not None and len(part.faces) else None

    for i in range(counts[0]):
        slab_x = clip(mesh, 0, edges[0][i], edges[0][i + 1])
        for j in range(counts[1]):
            slab_y = clip(slab_x, 1, edges[1][j], edges[1][j + 1])
            for k in range(counts[2]):
                cell = clip(slab_y, 2, edges[2][k], edges[2][k + 1])
                if cell is not None:
                    cells.append(("cell", _thickened(np.asarray(cell.vertices))))
    return cells


def _thickened(points: np.ndarray) -> np.ndarray:
    """The points, plus copies offset along any principal axis thinner than MIN_THICKNESS."""
    centred = points - points.mean(axis=0)
    for axis in np.linalg.svd(centred, full_matrices=True)[2]:
        extent = np.ptp(centred @ axis)
        if extent < MIN_THICKNESS:
            offset = axis * (MIN_THICKNESS - extent) / 2
            points = np.concatenate([points + offset, points - offset])
    return points

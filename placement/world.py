"""The environment as placement sees it: floor polygon (cut to the configured region), collision tiles,
closed solids, ray casts, and on a terrain its ground (heights and slopes under any point).

Contacts are counted against `collision.stl`, cut into square tiles so that the broad phase skips
most of a large house. Containment ("a trace swallowed by a sofa") is tested against the closed
pieces of `asset.usdc` (one prim per piece): closed pieces as they are, open non-architecture
pieces by their convex hull (conservative: the space under a table counts as the table).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import fcl
import numpy as np
import shapely
import trimesh
from scipy.spatial import QhullError
from shapely.geometry import shape

from core.assets.ground import Ground
from core.assets.layout import COLLISION_FILE, META_FILE, PACKAGE_STAGE
from core.assets.usd_read import read_meshes
from core.errors import InputError
from core.formats.asset_meta import AssetMeta, load_meta
from core.progress import get_logger
from placement.collide import Obstacles, Probes, bvh_model, is_closed, probe_points

TILE_SIZE = 2.0  # m: collision triangles are grouped by the tile of their centroid
# A closed piece whose box covers this much of the floor is a room shell or a floor slab, not
# furniture: everything in the room would read as "inside" it.
SHELL_FOOTPRINT_FRACTION = 0.5
MIN_SOLID_VOLUME = 1e-5  # m^3: thinner hulls (a picture frame, a rug) cannot swallow anything
MAX_RAY_RANGE = 10.0  # m: free distance reported for a ray that hits nothing
RAY_STEP = 0.05  # m: sampling step to find where a ray leaves the floor polygon
ARCHITECTURE = "architecture"
MIN_SAMPLE_BATCH = 64
MAX_SAMPLE_ROUNDS = 1000

log = get_logger("placement")


@dataclass
class Solid:
    """A closed piece of the environment, in world coordinates."""

    name: str
    mesh: trimesh.Trimesh
    lo: np.ndarray
    hi: np.ndarray
    probes: Probes
    hull_only: bool = False  # an open piece (e.g. plant leaves) stood in for by its convex hull


@dataclass
class PlacementWorld:
    package: Path
    meta: AssetMeta
    polygon: shapely.Geometry
    floor_height: float
    bounds: np.ndarray  # (2, 3) min and max corners
    collision: trimesh.Trimesh
    tiles: Obstacles
    solids: list[Solid]
    ground: Ground | None = None  # a terrain's ground; None: a flat floor at floor_height

    def ground_heights(self, xy: np.ndarray) -> np.ndarray:
        """The ground (or floor) height under each point (N, 2); NaN off a terrain's ground."""
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        return np.full(len(xy), self.floor_height) if self.ground is None else self.ground.heights(xy)

    def sample_xy(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return sample_xy(rng, self.polygon, count)

    def inside_polygon(self, xy: np.ndarray) -> np.ndarray:
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        return shapely.contains_xy(self.polygon, xy[:, 0], xy[:, 1])

    def clearance(self, x: float, y: float) -> float:
        """Distance from (x, y) to the polygon's boundary; negative outside the polygon."""
        distance = shapely.distance(self.polygon.boundary, shapely.Point(x, y))
        return float(distance if self.inside_polygon([x, y])[0] else -distance)

    def inside_solid(self, point: np.ndarray) -> bool:
        point = np.asarray(point, dtype=np.float64).reshape(1, 3)
        return any(np.all(s.lo <= point) and np.all(s.hi >= point) and s.mesh.contains(point)[0]
                   for s in self.solids)

    def free_distance(self, origin: np.ndarray, directions: np.ndarray, max_range: float = MAX_RAY_RANGE) -> np.ndarray:
        """Per direction, how far one can go from `origin` before hitting the collision mesh or leaving
        the floor polygon (a window or an open doorway to nowhere is not free space)."""
        directions = np.asarray(directions, dtype=np.float64)
        origins = np.repeat(np.asarray(origin, dtype=np.float64)[None], len(directions), axis=0)
        hit = np.full(len(directions), max_range)
        locations, index_ray, _ = self.collision.ray.intersects_location(origins, directions, multiple_hits=False)
        if len(index_ray):
            np.minimum.at(hit, index_ray, np.linalg.norm(locations - origins[index_ray], axis=1))
        steps = np.arange(RAY_STEP, max_range + RAY_STEP, RAY_STEP)
        samples = origins[:, None, :2] + steps[None, :, None] * directions[:, None, :2]
        outside = ~self.inside_polygon(samples.reshape(-1, 2)).reshape(len(directions), len(steps))
        first_out = np.where(outside.any(axis=1), steps[outside.argmax(axis=1)] - RAY_STEP, max_range)
        return np.minimum(hit, first_out)


def sample_xy(rng: np.random.Generator, polygon: shapely.Geometry, count: int) -> np.ndarray:
    """`count` points uniform inside the polygon (rejection sampling in its bounding box)."""
    lo_x, lo_y, hi_x, hi_y = polygon.bounds
    batch = max(2 * count, MIN_SAMPLE_BATCH)
    found: list[np.ndarray] = []
    for _ in range(MAX_SAMPLE_ROUNDS):
        points = rng.uniform((lo_x, lo_y), (hi_x, hi_y), size=(batch, 2))
        found.append(points[shapely.contains_xy(polygon, points[:, 0], points[:, 1])])
        if sum(len(f) for f in found) >= count:
            return np.concatenate(found)[:count]
    raise InputError(f"could not sample points inside the floor polygon (area {polygon.area:.3g} m^2)",
                     field="environment.floor_polygon")


def floor_polygon(meta: AssetMeta, meta_path: Path) -> shapely.Geometry:
    try:
        polygon = shape(meta.environment.floor_polygon)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise InputError(f"not a GeoJSON polygon ({exc})", meta_path, "environment.floor_polygon") from exc
    if polygon.is_empty or polygon.area <= 0 or polygon.geom_type not in ("Polygon", "MultiPolygon"):
        raise InputError("the environment has no floor polygon (empty or zero area); placement needs one",
                         meta_path, "environment.floor_polygon")
    polygon = polygon if polygon.is_valid else polygon.buffer(0)
    shapely.prepare(polygon)
    return polygon


def load_mesh(path: Path, what: str) -> trimesh.Trimesh:
    """A triangle mesh file with at least one face, or an InputError naming it."""
    if not path.is_file():
        raise InputError(f"{what} not found", path)
    try:
        mesh = trimesh.load(path, force="mesh")
    except (ValueError, OSError, IndexError) as exc:
        raise InputError(f"unreadable {what} ({exc})", path) from exc
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise InputError(f"empty {what}: no triangles", path, "faces")
    if not np.isfinite(mesh.vertices).all():
        raise InputError(f"non-finite vertex coordinates in the {what}", path, "vertices")
    return mesh


def collision_tiles(mesh: trimesh.Trimesh, tile: float = TILE_SIZE) -> Obstacles:
    """One FCL object per square tile of triangles, each with the exact box of its own triangles."""
    keys = np.floor(mesh.triangles_center[:, :2] / tile).astype(np.int64)
    _, tile_of_face = np.unique(keys, axis=0, return_inverse=True)
    tiles = Obstacles()
    for index in range(tile_of_face.max() + 1):
        faces = mesh.faces[tile_of_face.ravel() == index]
        used, local = np.unique(faces, return_inverse=True)
        vertices = mesh.vertices[used]
        obj = fcl.CollisionObject(bvh_model(vertices, local.reshape(-1, 3)), fcl.Transform())
        tiles.add(obj, vertices.min(axis=0), vertices.max(axis=0))
    return tiles


def closed_solids(usd_path: Path, floor_area: float, pieces: list | None = None) -> list[Solid]:
    """The pieces that can swallow a trace (see the module docstring); `pieces`: the stage's meshes, when read."""
    if not usd_path.is_file():
        raise InputError(f"{PACKAGE_STAGE} not found; the environment package is incomplete", usd_path)
    solids = []
    for piece in read_meshes(usd_path) if pieces is None else pieces:
        if len(piece.faces) == 0:
            continue
        mesh = trimesh.Trimesh(piece.vertices, piece.faces, process=True)
        hull_only = not is_closed(mesh)
        parts = piece.prim_path.strip("/").split("/")
        category = parts[1] if len(parts) > 2 else ""
        if hull_only:
            if category == ARCHITECTURE or len(mesh.vertices) < 4:
                continue
            try:
                mesh = mesh.convex_hull
            except QhullError:  # flat or degenerate piece: nothing to be inside of
                log.warning("%s: %s is flat or degenerate (no convex hull); it cannot hold a trace and is skipped",
                            usd_path, piece.prim_path)
                continue
        lo, hi = mesh.bounds
        footprint = float(np.prod(hi[:2] - lo[:2]))
        if abs(mesh.volume) < MIN_SOLID_VOLUME or footprint >= SHELL_FOOTPRINT_FRACTION * floor_area:
            continue
        solids.append(Solid(piece.prim_path, mesh, lo, hi, probe_points(mesh), hull_only))
    return solids


def within_region(polygon: shapely.Geometry, region: list[tuple[float, float]] | None) -> shapely.Geometry:
    """The floor polygon cut to the configured region (config environment.region), checked to keep some area."""
    if region is None:
        return polygon
    shape_ = shapely.Polygon(region)
    if not shape_.is_valid or shape_.area <= 0:
        raise InputError(f"not a simple polygon of positive area ({shapely.is_valid_reason(shape_)})",
                         field="environment.region")
    cut = shapely.intersection(polygon, shape_)
    if cut.is_empty or cut.area <= 0:
        raise InputError("the region does not overlap the environment's floor polygon", field="environment.region")
    shapely.prepare(cut)
    return cut


def terrain_ground(meta: AssetMeta, pieces: list, meta_path: Path) -> Ground:
    """The ground of a terrain package: its ground prims' triangles."""
    wanted = set(meta.environment.terrain.ground_prims)
    grounds = [p for p in pieces if p.prim_path in wanted and len(p.faces)]
    if not grounds:
        raise InputError(f"none of the ground prims is a mesh of {PACKAGE_STAGE}", meta_path, "environment.terrain")
    offsets = np.cumsum([0] + [len(p.vertices) for p in grounds])
    return Ground(np.concatenate([p.vertices for p in grounds]),
                  np.concatenate([p.faces + o for p, o in zip(grounds, offsets)]))


def load_placement_world(package: str | Path, region: list[tuple[float, float]] | None = None) -> PlacementWorld:
    """Load a complete environment package for placement, its floor polygon cut to `region` when given."""
    package = Path(package)
    if not package.is_dir():
        raise InputError("environment package folder not found", package)
    meta = load_meta(package, "environment")
    meta_path = package / META_FILE
    if meta.environment is None:
        raise InputError("an environment package needs its environment section", meta_path, "environment")
    polygon = floor_polygon(meta, meta_path)
    collision = load_mesh(package / COLLISION_FILE, "collision mesh")
    usd = package / PACKAGE_STAGE
    pieces = read_meshes(usd) if usd.is_file() else None
    ground = terrain_ground(meta, pieces, meta_path) if meta.environment.terrain and pieces is not None else None
    return PlacementWorld(
        package=package, meta=meta, polygon=within_region(polygon, region),
        floor_height=float(meta.environment.floor_height), bounds=np.array(meta.environment.bounds, dtype=np.float64),
        collision=collision, tiles=collision_tiles(collision), solids=closed_solids(usd, float(polygon.area), pieces),
        ground=ground,
    )

"""Environment packages: floor polygon, occupancy maps, collision mesh and USD.

The floor polygon is the union of the floor triangles projected on XY (a true, possibly
non-convex outline with holes). `occupancy.npz` holds a 2D map (0 free, 1 occupied, 2 outside the
floor polygon) at `resolution` for the robot height band, and a 3D voxel grid of surfaces. A terrain's
floor meshes are its uneven ground: the band then counts from the ground under each point.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import shapely
import trimesh
from shapely.geometry import mapping

from asset_converters.package import CONVERTER_VERSION, write_package
from asset_converters.usd_io import add_light, add_material, add_mesh, create_stage
from core.assets.ground import Ground
from core.assets.layout import COLLISION_FILE, OCCUPANCY_FILE, PACKAGE_ROOT, PACKAGE_STAGE
from core.assets.parts import DistantLight, Light, SceneMesh
from core.errors import InputError
from core.formats.asset_meta import AssetMeta, EnvironmentInfo, SourceInfo, TerrainInfo
from core.formats.occupancy import LEGEND, save_occupancy
from core.formats.scene_layout import prim_name

OCCUPANCY_RESOLUTION = 0.05  # m, 2D map cell
VOXEL_SIZE = 0.1  # m, 3D grid cell
# Obstacles between these heights above the floor block a ground robot in the 2D map.
OBSTACLE_BAND = (0.05, 1.9)
COVERAGE_TOLERANCE = 1e-9  # relative area difference below which floor triangles count as not overlapping


def floor_polygon(meshes: list[SceneMesh], coverage: bool = False) -> shapely.MultiPolygon:
    """Union of the XY projections of the floor triangles. With `coverage` (a terrain's ground, whose
    triangles rarely overlap seen from above), a fast coverage union is tried first and kept when its area
    is the triangles' total, i.e. they did not overlap."""
    triangles = []
    for mesh in meshes:
        if mesh.is_floor:
            corners = mesh.vertices[mesh.faces][:, :, :2]
            triangles += [shapely.Polygon(t) for t in corners]
    triangles = [t for t in triangles if t.is_valid and t.area > 1e-9]
    if not triangles:
        raise InputError("the environment has no floor triangles, so it has no floor polygon", field="floor")
    union = shapely.coverage_union_all(triangles) if coverage else None
    total = float(shapely.area(triangles).sum())
    if union is None or not union.is_valid or abs(union.area - total) > COVERAGE_TOLERANCE * total:
        union = shapely.union_all(triangles, grid_size=1e-6)
    union = union.buffer(0)
    polygons = [g for g in getattr(union, "geoms", [union]) if isinstance(g, shapely.Polygon) and g.area > 1e-6]
    return shapely.MultiPolygon(polygons)


def _surface_points(vertices: np.ndarray, faces: np.ndarray, spacing: float) -> np.ndarray:
    """Points on every triangle no farther apart than `spacing`: a barycentric grid per triangle,
    vectorised over all triangles that need the same grid density."""
    corners = vertices[faces]  # (F, 3, 3)
    edges = np.linalg.norm(corners - np.roll(corners, 1, axis=1), axis=2).max(axis=1)
    steps = np.maximum(np.ceil(edges / spacing).astype(int), 1)
    chunks = []
    for n in np.unique(steps):
        i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
        keep = i + j <= n
        bary = np.stack([i[keep], j[keep], n - i[keep] - j[keep]], axis=1) / n  # (P, 3)
        chunks.append(np.einsum("pk,fkd->fpd", bary, corners[steps == n]).reshape(-1, 3))
    return np.concatenate(chunks)


def occupancy(meshes: list[SceneMesh], polygon: shapely.MultiPolygon, floor_height: float,
              resolution: float = OCCUPANCY_RESOLUTION, voxel: float = VOXEL_SIZE,
              ground: Ground | None = None) -> dict[str, np.ndarray]:
    """2D obstacle map and 3D surface voxel grid over the environment's bounds; with a terrain's `ground`, the
    obstacle band counts from the ground under each surface point instead of from `floor_height`."""
    all_vertices = np.concatenate([m.vertices for m in meshes])
    lo, hi = all_vertices.min(axis=0), all_vertices.max(axis=0)
    points = np.concatenate([
        _surface_points(m.vertices, m.faces, min(resolution, voxel) * 0.5)
        for m in meshes if not m.is_floor
    ] or [np.zeros((0, 3))])

    shape3 = np.maximum(np.ceil((hi - lo) / voxel).astype(int), 1)
    grid3 = np.zeros(shape3, dtype=bool)
    idx = np.clip(((points - lo) / voxel).astype(int), 0, shape3 - 1)
    grid3[tuple(idx.T)] = True
    # A flat floor's vertices mark its voxels; an uneven ground needs points all over it.
    floor_points = np.concatenate([m.vertices if ground is None else _surface_points(m.vertices, m.faces, voxel * 0.5)
                                   for m in meshes if m.is_floor])
    floor_idx = np.clip(((floor_points - lo) / voxel).astype(int), 0, shape3 - 1)
    grid3[tuple(floor_idx.T)] = True

    shape2 = np.maximum(np.ceil((hi[:2] - lo[:2]) / resolution).astype(int), 1)
    grid2 = np.zeros(shape2, dtype=np.uint8)
    base = np.full(len(points), floor_height) if ground is None else _ground_under(ground, points, lo, resolution)
    band = (points[:, 2] >= base + OBSTACLE_BAND[0]) & (points[:, 2] <= base + OBSTACLE_BAND[1])
    idx2 = np.clip(((points[band, :2] - lo[:2]) / resolution).astype(int), 0, shape2 - 1)
    centers_x = lo[0] + (np.arange(shape2[0]) + 0.5) * resolution
    centers_y = lo[1] + (np.arange(shape2[1]) + 0.5) * resolution
    gx, gy = np.meshgrid(centers_x, centers_y, indexing="ij")
    inside = shapely.contains_xy(polygon, gx, gy)
    grid2[~inside] = 2
    grid2[tuple(idx2.T)] = 1
    return {
        "map2d": grid2, "map2d_origin": lo[:2].astype(np.float64), "map2d_resolution": np.array(resolution),
        "voxels": grid3, "voxels_origin": lo.astype(np.float64), "voxel_size": np.array(voxel),
        "legend": np.array(LEGEND),
    }


def _ground_under(ground: Ground, points: np.ndarray, lo: np.ndarray, resolution: float) -> np.ndarray:
    """The ground height under each point, cast once per 2D map cell (at its centre); points off the ground get
    -inf, so nothing there counts as an obstacle of the band."""
    cells = ((points[:, :2] - lo[:2]) / resolution).astype(np.int64)
    rows = int(cells[:, 1].max()) + 1 if len(cells) else 1
    unique, inverse = np.unique(cells[:, 0] * rows + cells[:, 1], return_inverse=True)
    centres = lo[:2] + (np.column_stack([unique // rows, unique % rows]) + 0.5) * resolution
    heights = ground.heights(centres)
    return np.where(np.isnan(heights), -np.inf, heights)[inverse]


def validate_meshes(meshes: list[SceneMesh], where: str) -> None:
    if not meshes:
        raise InputError("no meshes", where)
    for mesh in meshes:
        if len(mesh.vertices) < 3 or len(mesh.faces) == 0:
            raise InputError("empty mesh", where, mesh.name)
        if not np.isfinite(mesh.vertices).all():
            raise InputError("non-finite vertex coordinates", where, mesh.name)
        if mesh.faces.min() < 0 or mesh.faces.max() >= len(mesh.vertices):
            raise InputError("face index out of range", where, mesh.name)
        if mesh.uvs is not None and len(mesh.uvs) != len(mesh.vertices):
            raise InputError(f"{len(mesh.uvs)} uvs for {len(mesh.vertices)} vertices", where, mesh.name)


def write_environment_package(meshes: list[SceneMesh], lights: list[Light | DistantLight], out: str | Path,
                              source: SourceInfo, input_hash: str,
                              write_extra: Callable[[Path, list[str]], None] | None = None,
                              terrain: bool = False) -> Path:
    """Write asset.usdc (one prim per piece, grouped by category), collision.stl, occupancy.npz, meta.

    `write_extra(folder, prim_paths)` may add converter-specific files to the package before it is
    sealed; `prim_paths[i]` is the prim written for `meshes[i]`. With `terrain`, the floor meshes are an
    uneven ground (meta's `environment.terrain`): the floor height is their lowest point.
    """
    out = Path(out)
    validate_meshes(meshes, f"environment {out.name!r}")
    polygon = floor_polygon(meshes, coverage=terrain)
    floor_vertices = np.concatenate([m.vertices for m in meshes if m.is_floor])
    floor_height = float(floor_vertices[:, 2].min() if terrain else np.median(floor_vertices[:, 2]))
    ground = None
    if terrain:
        grounds = [m for m in meshes if m.is_floor]
        offsets = np.cumsum([0] + [len(m.vertices) for m in grounds])
        ground = Ground(floor_vertices, np.concatenate([m.faces + o for m, o in zip(grounds, offsets)]))

    def build(folder: Path) -> AssetMeta:
        stage = create_stage(folder / PACKAGE_STAGE)
        labels, used, paths = {}, set(), []
        for mesh in meshes:
            name = prim_name(mesh.name)
            while name in used:
                name += "_"
            used.add(name)
            path = f"{PACKAGE_ROOT}/{prim_name(mesh.category)}/{name}"
            material = add_material(stage, mesh.material, folder)
            add_mesh(stage, path, mesh.vertices, mesh.faces, mesh.uvs, material, mesh.semantic_label,
                     double_sided=mesh.category == "architecture")
            labels[path] = mesh.semantic_label
            paths.append(path)
        for light in lights:
            add_light(stage, light)
        stage.GetRootLayer().Save()
        combined = trimesh.util.concatenate([trimesh.Trimesh(m.vertices, m.faces, process=False) for m in meshes])
        combined.export(folder / COLLISION_FILE)
        grids = occupancy(meshes, polygon, floor_height, ground=ground)
        save_occupancy(folder / OCCUPANCY_FILE, grids)
        if write_extra is not None:
            write_extra(folder, paths)
        lo, hi = combined.bounds
        return AssetMeta(
            id=out.name, kind="environment", converter=source.dataset, converter_version=CONVERTER_VERSION,
            source=source, semantic_labels=labels,
            environment=EnvironmentInfo(
                bounds=(tuple(map(float, lo)), tuple(map(float, hi))), floor_height=floor_height,
                floor_polygon=mapping(polygon), floor_area=float(polygon.area), lights=len(lights),
                occupancy_resolution=OCCUPANCY_RESOLUTION, voxel_size=VOXEL_SIZE,
                terrain=None if ground is None else TerrainInfo(
                    ground_prims=[path for path, mesh in zip(paths, meshes) if mesh.is_floor],
                    ground_range=(floor_height, float(floor_vertices[:, 2].max()))),
            ),
        )

    return write_package(out, input_hash, build)

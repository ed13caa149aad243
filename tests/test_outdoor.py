"""Outdoor environments and animals: the sun (a directional light) against analytic shading and shadow
geometry; a procedural terrain with humans and a procedural animal (a skinned GLB through the glTF
converter) placed on it, checked against the ground read back from the package with pxr and an
independent point-in-triangle lookup; determinism of the packages and the placement."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from pxr import Usd, UsdGeom
from test_render import CAMERA, EDGE_MARGIN, cube, pixel_rays, ray_box

from asset_converters.batch import run_jobs
from asset_converters.procedural import demo_jobs
from asset_converters.procedural.outdoor import IN_PLACE_MOTIONS, animal_jobs, terrain_job
from asset_converters.procedural.terrain import TerrainOptions
from core.assets.animation import load_animation
from core.assets.skinning import joint_world_transforms, posed_meshes
from core.config import AnimalsConfig, FlyingObjectsConfig, GroundFitConfig, HumansConfig, IntRange, RobotConfig
from core.formats.asset_meta import load_meta
from core.formats.class_map import DEFAULT_CLASS_MAP
from core.formats.placement import write_placement
from core.geometry import pose_from_xyz_yaw, transform_points
from placement.place import place_scene
from simulation.render import DirectionalLight, RenderMaterial, RenderMesh, RenderScene, look_at, render_frame
from simulation.render.shading import linear_to_srgb8

SEED = 3
TERRAIN = TerrainOptions(size=14.0, relief=1.2, rocks=3, trees=2)
SLOPE_LIMIT_DEG = 6.0  # below the terrain's steepest slopes, so the limit has work to do
MAX_GAP = 0.1
FEET_TOLERANCE = 0.02  # m: "feet on the ground"
SUPPORT_BAND = 0.02  # m above a trace's lowest vertex: its feet
MIN_MOTION = 0.05  # m a vertex of a walking animal moves within half a second


def test_directional_light_lights_and_shadows_analytically():
    """A sun over a floor with a box: pixels whose ray towards the sun meets the box get the ambient term
    only, the others Lambert + Blinn-Phong with irradiance n.l and no falloff (a far and a near floor point
    differ only by the specular lobe)."""
    direction, intensity, albedo, ambient = np.array([0.3, 0.5, 0.8]), 1.8, 0.5, 0.1
    unit = direction / np.linalg.norm(direction)
    lo, hi = np.array([-0.3, -0.3, 1.0]), np.array([0.3, 0.3, 1.2])
    floor = RenderMesh("floor", [[-20, -20, 0], [20, -20, 0], [20, 20, 0], [-20, 20, 0]], [[0, 1, 2], [0, 2, 3]], 1, 1,
                       RenderMaterial((albedo,) * 3, roughness=1.0))
    blocker = cube("blocker", 2, (lo + hi) / 2, 0.3)
    blocker.vertices[:, 2] *= (hi[2] - lo[2]) / 0.6
    scene = RenderScene([floor, blocker], lights=[DirectionalLight(tuple(direction), intensity)],
                        ambient=(ambient,) * 3)
    pose = look_at((0.5, -4.0, 4.0), (0.0, 0.0, 0.0))
    frame = render_frame(scene, CAMERA, pose)

    origin, directions = pixel_rays(pose)
    t = -origin[2] / directions[..., 2]
    points = origin + t[..., None] * directions
    on_floor = frame.instance == 1

    def blocked(grow):
        entry, _, _ = ray_box(points, np.broadcast_to(unit, points.shape), lo - grow, hi + grow)
        return np.isfinite(entry) & (entry > 0)

    shadow, lit = blocked(-EDGE_MARGIN) & on_floor, ~blocked(EDGE_MARGIN) & on_floor
    assert shadow.sum() > 100 and lit.sum() > 5000
    dark = linear_to_srgb8(np.float32(albedo * ambient))
    assert np.all(frame.rgb[shadow] == dark)
    view = -directions / np.linalg.norm(directions, axis=-1, keepdims=True)
    half = unit + view
    n_dot_h = half[..., 2] / np.linalg.norm(half, axis=-1)
    lobe = 9 / (8 * np.pi) * n_dot_h  # roughness 1: exponent 1, normalisation (1 + 8) / (8 pi)
    expected = albedo * ambient + intensity * unit[2] * (albedo + 0.04 * lobe)
    difference = np.abs(frame.rgb[lit].astype(int) - linear_to_srgb8(expected[lit])[:, None].astype(int))
    assert difference.max() <= 1


# ---------------------------------------------------------------- terrain, humans and animals


def build(root):
    """The terrain, one procedural animal (walk) and one in-place human, as packages under `root`."""
    humans = [job for job in demo_jobs(root, SEED, humans=1, objects=0, motions=IN_PLACE_MOTIONS)
              if job.out.parent.name == "humans"]
    jobs = [terrain_job(root, SEED, TERRAIN), *animal_jobs(root, SEED, 1), *humans]
    result = run_jobs(jobs, "outdoor test assets")
    assert result.failed == []
    return jobs[0].out, [jobs[1].out], [job.out for job in humans]


def place(terrain, animals, humans):
    fit = GroundFitConfig(max_slope_deg=SLOPE_LIMIT_DEG, max_gap=MAX_GAP)
    return place_scene(terrain, humans, [], HumansConfig(count=IntRange(min=3, max=3), ground=fit),
                       FlyingObjectsConfig(count=IntRange(min=0, max=0)), RobotConfig(), SEED,
                       animal_packages=animals, animals=AnimalsConfig(count=IntRange(min=2, max=2), ground=fit))


@pytest.fixture(scope="module")
def outdoor(tmp_path_factory):
    root = tmp_path_factory.mktemp("outdoor")
    terrain, animals, humans = build(root / "a")
    return root, terrain, animals, humans, place(terrain, animals, humans)


class GroundTruth:
    """The ground prims of a terrain package read with pxr; heights and slopes by point-in-triangle tests."""

    def __init__(self, package):
        stage = Usd.Stage.Open(str(package / "asset.usdc"))
        triangles = []
        for path in load_meta(package).environment.terrain.ground_prims:
            mesh = UsdGeom.Mesh(stage.GetPrimAtPath(path))
            points = np.asarray(mesh.GetPointsAttr().Get(), dtype=np.float64)
            counts = np.asarray(mesh.GetFaceVertexCountsAttr().Get())
            assert np.all(counts == 3)
            triangles.append(points[np.asarray(mesh.GetFaceVertexIndicesAttr().Get()).reshape(-1, 3)])
        self.triangles = np.concatenate(triangles)
        normals = np.cross(self.triangles[:, 1] - self.triangles[:, 0], self.triangles[:, 2] - self.triangles[:, 0])
        self.slopes = np.degrees(np.arccos(np.abs(normals[:, 2]) / np.linalg.norm(normals, axis=1)))
        self.centres = self.triangles[:, :, :2].mean(axis=1)

    def at(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(height, slope in degrees) of the ground under each point (N, 2), by barycentric coordinates in the
        triangle that holds it (searched among the nearest triangle centres)."""
        heights, slopes = np.full(len(xy), np.nan), np.full(len(xy), np.nan)
        nearest = np.argsort(((xy[:, None] - self.centres[None]) ** 2).sum(axis=2), axis=1)[:, :8]
        for i, point in enumerate(xy):
            for f in nearest[i]:
                a, b, c = self.triangles[f]
                matrix = np.array([b[:2] - a[:2], c[:2] - a[:2]]).T
                u, v = np.linalg.solve(matrix, point - a[:2])
                if u >= -1e-9 and v >= -1e-9 and u + v <= 1 + 1e-9:
                    heights[i] = a[2] + u * (b[2] - a[2]) + v * (c[2] - a[2])
                    slopes[i] = self.slopes[f]
                    break
        return heights, slopes


def world_vertices(package, placed, frame: int) -> np.ndarray:
    anim = load_animation(package)
    local = np.concatenate([v for v, _ in posed_meshes(anim, frame, joint_world_transforms(anim))])
    return transform_points(pose_from_xyz_yaw(placed.x, placed.y, placed.z, placed.yaw), local)


def test_humans_and_animals_stand_on_the_terrain_within_the_slope_limit(outdoor):
    _, terrain, animals, humans, scene = outdoor
    ground = GroundTruth(terrain)
    steep = ground.slopes > SLOPE_LIMIT_DEG
    assert 0.05 < steep.mean() < 0.95  # the limit rules out part of the ground, not all of it
    placement = scene.placement
    assert len(placement.humans) == 3 and len(placement.animals) == 2
    for placed in [*placement.humans, *placement.animals]:
        package = next(p for p in [*humans, *animals] if p.name == placed.asset_id)
        # Feet: the trace's lowest vertices (every foot position over the clip), placed.
        trace = trimesh.load(package / "trace.stl")
        feet = trace.vertices[trace.vertices[:, 2] <= trace.vertices[:, 2].min() + SUPPORT_BAND]
        world = transform_points(pose_from_xyz_yaw(placed.x, placed.y, placed.z, placed.yaw), feet)
        heights, slopes = ground.at(world[:, :2])
        assert not np.isnan(heights).any()
        clearance = world[:, 2] - heights
        assert abs(clearance.min()) < FEET_TOLERANCE  # resting on the ground: not floating, not sunk
        assert clearance.max() < MAX_GAP + SUPPORT_BAND
        assert slopes.max() <= SLOPE_LIMIT_DEG
        # The posed mesh itself: at its lowest over the clip it touches the ground, and never sinks into it.
        frames = load_meta(package).animation.frame_count
        lowest = []
        for frame in range(0, frames, max(frames // 6, 1)):
            vertices = world_vertices(package, placed, frame)
            low = vertices[vertices[:, 2] < vertices[:, 2].min() + MAX_GAP + FEET_TOLERANCE]
            lowest.append(np.min(low[:, 2] - ground.at(low[:, :2])[0]))
        assert min(lowest) > -FEET_TOLERANCE and min(lowest) < FEET_TOLERANCE + MAX_GAP


def test_procedural_animal_is_a_skinned_gltf_that_moves_and_is_an_animal(outdoor):
    _, _, animals, _, scene = outdoor
    meta = load_meta(animals[0])
    assert meta.source.dataset == "gltf" and meta.kind == "animated"  # converted as a user's GLB would be
    label = meta.semantic_labels[next(iter(meta.semantic_labels))]
    assert DEFAULT_CLASS_MAP.resolve(label, "animal") == "animal"
    placed = scene.placement.animals[0]
    fps = meta.animation.fps
    first, later = world_vertices(animals[0], placed, 0), world_vertices(animals[0], placed, round(0.5 * fps))
    moved = np.linalg.norm(first - later, axis=1)
    assert moved.max() > MIN_MOTION  # the legs swing
    assert np.abs(first.mean(axis=0)[:2] - later.mean(axis=0)[:2]).max() < 0.1  # walking in place


def test_same_seed_gives_identical_packages_and_placement(outdoor, tmp_path):
    root, terrain, animals, humans, scene = outdoor
    again_terrain, again_animals, _ = build(tmp_path / "b")
    for ours, theirs in ((terrain, again_terrain), (animals[0], again_animals[0])):
        files = sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(theirs) for p in theirs.rglob("*") if p.is_file())
        assert all((ours / f).read_bytes() == (theirs / f).read_bytes() for f in files)
    first = write_placement(scene.placement, root / "first.json")
    second = write_placement(place(terrain, animals, humans).placement, root / "second.json")
    assert first.read_bytes() == second.read_bytes()

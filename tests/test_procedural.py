"""Procedural demo assets, checked through pxr, shapely and trimesh against what the packages claim."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import shapely
import trimesh
from conftest import run_grade
from pxr import Usd, UsdGeom, UsdLux, UsdShade, UsdSkel
from shapely.geometry import shape

from asset_converters.batch import run_jobs
from asset_converters.procedural import build_demo_assets, build_environment, demo_jobs
from asset_converters.procedural.demo import MOTION_ORDER, build_human
from asset_converters.procedural.layout import CEILING_HEIGHT
from core.assets.animation import load_animation
from core.assets.skinning import joint_world_transforms, posed_meshes
from core.assets.usd_read import read_meshes
from core.errors import InputError
from core.formats.asset_meta import load_meta
from core.outputs import LOCK_FILE
from core.rundir import sha256_file

# Small counts keep the module fast; the CLI test below rebuilds exactly these in a subprocess.
SEED, ROOMS, FURNITURE, HUMANS, OBJECTS = 3, 2, 4, 3, 2
ARGS = ["--seed", str(SEED), "--rooms", str(ROOMS), "--furniture", str(FURNITURE), "--humans", str(HUMANS),
        "--objects", str(OBJECTS)]
FURNITURE_LABELS = {"table", "chair", "sofa", "shelf", "bed", "cabinet", "plant", "lamp"}
OBJECT_LABELS = {"mug", "bottle", "book", "ball", "box", "can"}
ROBOT_WIDTH = 1.0  # m: a doorway must let a body this wide through
TRACE_SAMPLES = 400  # posed vertices checked against each trace
# manifold3d's union (and simplification) of the swept hulls moves the surface inwards by a few mm
# (up to 3.5 mm measured before simplification), so a posed vertex may lie that far outside trace.stl.
TRACE_TOLERANCE = 0.005  # m


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    assets = build_demo_assets(out, SEED, ROOMS, FURNITURE, HUMANS, OBJECTS)
    assert assets.batch.failed == [] and len(assets.batch.converted) == 1 + HUMANS + OBJECTS
    return assets


def file_hashes(root: Path) -> dict[str, str]:
    """Every package file's hash (the --out folder's writer lock is not part of any package)."""
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != LOCK_FILE}


def xy_hull(vertices: np.ndarray) -> shapely.Polygon:
    return shapely.MultiPoint(vertices[:, :2]).convex_hull


@pytest.mark.slow
def test_every_package_is_z_up_metres_labelled_and_textured(demo):
    for package in [demo.environment, *demo.humans, *demo.objects]:
        stage = Usd.Stage.Open(str(package / "asset.usdc"))
        assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
        assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
        meshes = read_meshes(package / "asset.usdc")
        assert meshes and all(m.semantic_label for m in meshes), package
        files = [UsdShade.Shader(p).GetInput("file").Get() for p in stage.Traverse()
                 if p.IsA(UsdShade.Shader) and UsdShade.Shader(p).GetIdAttr().Get() == "UsdUVTexture"]
        assert files, f"{package.name} has no texture"
        for asset in files:
            texture = (package / asset.path).resolve()
            assert texture.is_file() and texture.parent == (package / "textures").resolve()
        textured = [m for m in meshes if m.texture is not None]
        assert all(m.uvs is not None and len(m.uvs) == len(m.vertices) for m in textured)
    assert {m.semantic_label for m in read_meshes(demo.humans[0] / "asset.usdc")} == {"person"}
    for package in demo.objects:
        meta = load_meta(package)
        assert set(meta.semantic_labels.values()) <= OBJECT_LABELS
        assert 0.05 <= max(meta.object.extents) <= 0.30  # household-object size
        assert trimesh.load(package / "collision.stl").is_convex


@pytest.mark.slow
def test_environment_outline_is_non_convex_and_matches_the_floor(demo):
    meta = load_meta(demo.environment).environment
    polygon = shape(meta.floor_polygon)
    assert polygon.area < 0.97 * polygon.convex_hull.area
    meshes = read_meshes(demo.environment / "asset.usdc")
    floors = [m for m in meshes if m.semantic_label == "floor"]
    floor_area = sum(trimesh.Trimesh(m.vertices, m.faces, process=False).area for m in floors)
    assert polygon.area == pytest.approx(floor_area, rel=1e-6)
    assert meta.floor_area == pytest.approx(floor_area, rel=1e-6)
    assert {m.semantic_label for m in meshes} >= {"floor", "wall", "ceiling"}
    assert {m.semantic_label for m in meshes if "/furniture/" in m.prim_path} <= FURNITURE_LABELS
    assert len([m for m in meshes if "/furniture/" in m.prim_path]) == FURNITURE
    assert sum(len(m.faces) for m in meshes) < 30_000  # the ray-cast renderer's budget
    ceiling = max(m.vertices[:, 2].max() for m in meshes if m.semantic_label == "ceiling")
    assert CEILING_HEIGHT[0] <= ceiling <= CEILING_HEIGHT[1]
    stage = Usd.Stage.Open(str(demo.environment / "asset.usdc"))
    lights = [p for p in stage.Traverse() if p.IsA(UsdLux.SphereLight)]
    assert len(lights) == ROOMS == meta.lights
    for light in lights:
        position = UsdGeom.Xformable(light).ComputeLocalToWorldTransform(Usd.TimeCode.Default()).ExtractTranslation()
        assert polygon.contains(shapely.Point(position[0], position[1])) and position[2] < ceiling


@pytest.mark.slow
def test_furniture_is_inside_apart_and_leaves_the_floor_connected(demo):
    polygon = shape(load_meta(demo.environment).environment.floor_polygon)
    meshes = read_meshes(demo.environment / "asset.usdc")
    pieces = [xy_hull(m.vertices) for m in meshes if "/furniture/" in m.prim_path]
    walls = [xy_hull(m.vertices) for m in meshes if m.semantic_label == "wall" and m.vertices[:, 2].min() < 0.01]
    for piece in pieces:
        assert piece.within(polygon)
    for a, b in itertools.combinations(pieces, 2):
        assert not a.intersects(b)
    wall_area = shapely.union_all(walls)
    for piece in pieces:
        assert not piece.intersects(wall_area)
    # Doorways: the architecture alone leaves a 1 m wide body a connected floor.
    empty = polygon.difference(wall_area)
    assert empty.buffer(-ROBOT_WIDTH / 2 + 0.01).geom_type == "Polygon"
    free = empty.difference(shapely.union_all(pieces))
    assert free.geom_type == "Polygon"
    # A 0.6 m robot still reaches everywhere but small corner pockets.
    reachable = free.buffer(-0.3)
    assert len([g for g in getattr(reachable, "geoms", [reachable]) if g.area > 0.5]) == 1


@pytest.mark.parametrize("index", range(HUMANS))
@pytest.mark.slow
def test_humanoid_usdskel_matches_numpy_skinning(demo, index):
    package = demo.humans[index]
    anim = load_animation(package)
    meta = load_meta(package).animation
    assert 15 <= len(anim.joint_names) <= 20
    assert {"pelvis", "head", "l_wrist", "r_knee", "l_ankle"} <= set(anim.joint_names)
    assert sum(len(m.faces) for m in anim.skinned) < 5000
    stage = Usd.Stage.Open(str(package / "asset.usdc"))
    skel_anim = next(UsdSkel.Animation(p) for p in stage.Traverse() if p.IsA(UsdSkel.Animation))
    assert len(skel_anim.GetRotationsAttr().GetTimeSamples()) == anim.frame_count == meta.frame_count
    assert stage.GetTimeCodesPerSecond() == meta.fps == 30.0
    assert 2.0 <= meta.duration <= 5.0
    assert list(meta.motions) == [package.name.split("_")[-1]]
    rest = np.concatenate([m.rest_vertices for m in anim.skinned])
    assert rest[:, 2].min() == pytest.approx(0.0, abs=1e-9)  # feet on the floor in the rest pose
    head = next(m for m in anim.skinned if m.name == "head")
    assert 1.5 <= head.rest_vertices[:, 2].max() <= 1.95  # the top of the head (hair may stand above it)
    for frame in (0, anim.frame_count // 2, anim.frame_count - 1):
        usd = read_meshes(package / "asset.usdc", time=frame)
        numpy_posed = posed_meshes(anim, frame)
        assert len(usd) == len(numpy_posed)
        for stage_mesh, (vertices, faces) in zip(usd, numpy_posed, strict=True):
            np.testing.assert_allclose(stage_mesh.vertices, vertices, atol=1e-4)
            np.testing.assert_array_equal(stage_mesh.faces, faces)


@pytest.mark.slow
def test_walk_travels_idle_stays_and_wave_raises_the_wrist_over_the_head(demo):
    walk, idle, wave = (load_animation(p) for p in demo.humans[:3])
    root = np.asarray(load_meta(demo.humans[0]).animation.root_trajectory)
    travelled = root[-1, :2] - root[0, :2]
    assert 2.0 <= np.linalg.norm(travelled) <= 4.0 and abs(travelled[1]) < 1e-9  # along +x
    speed = np.linalg.norm(travelled) / ((walk.frame_count - 1) / walk.fps)
    assert 0.9 <= speed <= 1.6  # m/s, a walking pace
    world = joint_world_transforms(walk)
    knees = world[:, [walk.joint_names.index("l_knee"), walk.joint_names.index("r_knee")], 0, 3] - root[:, None, 0]
    assert np.ptp(knees[:, 0]) > 0.2  # the legs swing

    idle_root = joint_world_transforms(idle)[:, 0, :3, 3]
    assert np.linalg.norm(idle_root[:, :2] - idle_root[0, :2], axis=1).max() < 0.05

    world = joint_world_transforms(wave)
    wrist = world[:, wave.joint_names.index("r_wrist"), 2, 3]
    head = world[:, wave.joint_names.index("head"), 2, 3]
    rest_top = np.concatenate([m.rest_vertices for m in wave.skinned])[:, 2].max()
    head_top = head + (rest_top - wave.bind_world[wave.joint_names.index("head"), 2, 3])
    assert wrist[0] < head[0]
    assert (wrist > head_top).sum() >= wave.fps  # above the top of the head for a second or more


@pytest.mark.slow
def test_feet_rest_on_the_floor_in_every_frame(demo):
    for package in demo.humans:
        anim = load_animation(package)
        world = joint_world_transforms(anim)
        lowest = [min(v[:, 2].min() for v, _ in posed_meshes(anim, f, world)) for f in range(anim.frame_count)]
        np.testing.assert_allclose(lowest, 0.0, atol=1e-6)  # never sinking into the floor, never floating
        assert load_meta(package).animation.ground_offset == pytest.approx(0.0, abs=1e-6)


def winding_numbers(points: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Generalised winding number of a closed mesh at each point (1 inside, 0 outside); robust to the
    sliver triangles that make ray-parity tests (trimesh's contains/signed_distance) flip signs."""
    a, b, c = (triangles[None, :, k] - points[:, None] for k in range(3))
    la, lb, lc = (np.linalg.norm(v, axis=2) for v in (a, b, c))
    dot = lambda u, v: np.einsum("pti,pti->pt", u, v)
    solid = np.arctan2(dot(a, np.cross(b, c)), la * lb * lc + dot(a, b) * lc + dot(b, c) * la + dot(c, a) * lb)
    return solid.sum(axis=1) / (2 * np.pi)


@pytest.mark.slow
def test_trace_contains_every_posed_frame(demo):
    for package in demo.humans:
        anim = load_animation(package)
        trace = trimesh.load(package / "trace.stl")
        world = joint_world_transforms(anim)
        points = np.concatenate([v for f in range(anim.frame_count) for v, _ in posed_meshes(anim, f, world)])
        sample = points[np.linspace(0, len(points) - 1, TRACE_SAMPLES).astype(int)]
        outside = winding_numbers(sample, trace.triangles) < 0.5
        # Vertices on the hulls' surface count as outside about half the time; none may stick out further.
        assert trace.nearest.on_surface(sample[outside])[1].max(initial=0.0) < TRACE_TOLERANCE


@pytest.mark.slow
def test_cli_is_deterministic_and_a_second_run_skips_everything(demo, tmp_path):
    first = run_grade("convert", "procedural", "--out", str(tmp_path), *ARGS)
    assert first.returncode == 0, first.stderr
    assert f"converted {1 + HUMANS + OBJECTS}, skipped 0" in first.stderr
    built = file_hashes(demo.environment.parent.parent)
    assert file_hashes(tmp_path) == built  # a fresh process, same seed: byte-identical packages
    second = run_grade("convert", "procedural", "--out", str(tmp_path), *ARGS)
    assert second.returncode == 0, second.stderr
    assert f"converted 0, skipped {1 + HUMANS + OBJECTS}" in second.stderr
    assert file_hashes(tmp_path) == built


@pytest.mark.parametrize(("option", "value"), [("--rooms", "65"), ("--rooms", "0"), ("--furniture", "501"),
                                               ("--humans", "1001"), ("--objects", "-1")])
def test_cli_refuses_counts_beyond_what_a_run_accepts(option, value, tmp_path):
    """The config's limits (core.config: MAX_ROOMS, MAX_FURNITURE, ...): 100000 rooms ran for hours."""
    result = run_grade("convert", "procedural", "--out", str(tmp_path / "out"), option, value)
    assert result.returncode == 2 and option in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_another_seed_gives_other_assets(demo, tmp_path):
    with_seed = lambda seed: build_environment(seed, ROOMS, FURNITURE, tmp_path / f"textures{seed}")[0]
    a, b = with_seed(SEED), with_seed(SEED + 1)
    assert [m.semantic_label for m in a] != [m.semantic_label for m in b] or any(
        m.vertices.shape != n.vertices.shape or not np.allclose(m.vertices, n.vertices) for m, n in zip(a, b))
    jobs = [j for j in demo_jobs(tmp_path / "other", SEED + 1, ROOMS, FURNITURE, HUMANS, OBJECTS)
            if "environment" not in j.out.parts]
    result = run_jobs(jobs, "other seed")
    assert result.failed == []
    for job in jobs:
        ours = demo.environment.parent.parent / job.out.relative_to(tmp_path / "other")
        assert sha256_file(job.out / "asset.usdc") != sha256_file(ours / "asset.usdc")


@pytest.mark.slow
def test_bad_counts_are_refused_and_unplaceable_furniture_fails_cleanly(tmp_path):
    with pytest.raises(InputError, match="rooms"):
        build_demo_assets(tmp_path / "none", rooms=0)
    assert not (tmp_path / "none").exists()
    crowded = build_demo_assets(tmp_path / "crowded", seed=1, rooms=1, furniture=40, humans=0, objects=0)
    assert len(crowded.batch.failed) == 1 and "furniture" in crowded.batch.failed[0][1]
    assert not crowded.environment.exists()
    cli = run_grade("convert", "procedural", "--out", str(tmp_path / "cli"), "--rooms", "0")
    assert cli.returncode == 2 and not (tmp_path / "cli").exists()


@pytest.mark.parametrize("seed", [0, 42])
def test_walls_meet_without_overlap_and_close_every_corner(seed):
    """Overlapping wall boxes would have coplanar faces, which show as speckled instance ids."""
    from asset_converters.procedural.environment import wall_boxes
    from asset_converters.procedural.layout import WALL_THICKNESS, make_plan
    from core.seeding import generator

    t = WALL_THICKNESS
    plan = make_plan(generator(seed, "procedural/environment/plan"), 3)
    boxes = wall_boxes(plan)
    for a, b in itertools.combinations(boxes, 2):
        lo, hi = np.maximum(a.bounds[0], b.bounds[0]), np.minimum(a.bounds[1], b.bounds[1])
        assert not np.all(hi > lo + 1e-9), (a.bounds, b.bounds)

    def footprint(z: float) -> shapely.Geometry:
        return shapely.union_all([shapely.box(*b.bounds[0][:2], *b.bounds[1][:2]) for b in boxes
                                  if b.bounds[0][2] <= z <= b.bounds[1][2]])

    outlines = shapely.union_all([shapely.box(*r).exterior for r in plan.rooms])
    band = outlines.buffer(t / 2, cap_style="square", join_style="mitre")  # every wall, corners closed
    openings = []
    for door in plan.doors:
        half = np.array([door.width / 2, t]) if door.along_x else np.array([t, door.width / 2])
        openings.append(shapely.box(*(np.array(door.center) - half), *(np.array(door.center) + half)))
    assert band.difference(footprint(plan.ceiling - 0.05)).area == pytest.approx(0.0, abs=1e-6)  # lintels close it
    assert footprint(0.1).symmetric_difference(band.difference(shapely.union_all(openings))).area == pytest.approx(
        0.0, abs=1e-6)  # at the floor: exactly the clear doorways are open


def body_signature(anim) -> tuple[float, float, float, tuple[float, ...]]:
    """(height to the top of the head, hip height / height, shoulder width, shirt colour) read off the
    rest meshes and skeleton."""
    head = next(m for m in anim.skinned if m.name == "head")
    height = float(head.rest_vertices[:, 2].max())
    joint = lambda name: anim.bind_world[anim.joint_names.index(name), :3, 3]
    shirt = next(m for m in anim.skinned if m.name == "shirt")
    return (height, float(joint("l_hip")[2]) / height, float(joint("l_shoulder")[1] - joint("r_shoulder")[1]),
            shirt.material.base_color)


def test_humans_of_one_seed_differ_move_differently_and_repeat_byte_for_byte(tmp_path):
    humans = [build_human(SEED, i, motion, f"human_{i}", tmp_path / f"textures{i}")
              for i, motion in enumerate(MOTION_ORDER)]
    signatures = [body_signature(h) for h in humans]
    for (a, b) in itertools.combinations(signatures, 2):  # every pair differs in every proportion and colour
        assert abs(a[0] - b[0]) > 1e-3 and abs(a[1] - b[1]) > 1e-4 and abs(a[2] - b[2]) > 1e-3
        assert np.abs(np.subtract(a[3], b[3])).max() > 0.01
    assert len({frozenset(m.name for m in h.skinned) for h in humans}) > 1 or len(
        {next(m.material.base_color for m in h.skinned if m.name == "hair") for h in humans}) > 1  # hair varies
    speeds = {}
    for motion, anim in zip(MOTION_ORDER, humans):
        root = joint_world_transforms(anim)[:, 0, :3, 3]
        speeds[motion] = np.linalg.norm(root[-1, :2] - root[0, :2]) / ((anim.frame_count - 1) / anim.fps)
    assert 0.9 <= speeds["walk"] <= 1.6 and 1.8 <= speeds["jog"] <= 3.0  # m/s: walking and jogging paces
    assert max(speeds["idle"], speeds["wave"], speeds["talk"]) < 0.02  # in place
    talk = joint_world_transforms(humans[MOTION_ORDER.index("talk")])
    wrists = talk[:, [humans[4].joint_names.index(n) for n in ("l_wrist", "r_wrist")], 2, 3]
    assert np.ptp(wrists, axis=0).min() > 0.05  # both hands gesture
    # The same seed, in another folder: the same arrays and texture bytes.
    again = build_human(SEED, 3, MOTION_ORDER[3], "human_3", tmp_path / "again")
    for a, b in zip(humans[3].skinned, again.skinned, strict=True):
        assert a.rest_vertices.tobytes() == b.rest_vertices.tobytes() and a.material.base_color == b.material.base_color
        if a.material.texture is not None:
            assert a.material.texture.read_bytes() == b.material.texture.read_bytes()
    assert humans[3].local_rotations.tobytes() == again.local_rotations.tobytes()


# Published skin colours (CIELAB, D65) the drawn skin tones are checked against, independent of the ramp that
# draws them (human_looks.SKIN_LAB):
# - the ColorChecker's "dark skin" and "light skin" patches (X-Rite / BabelColor averages): L* 37.99 and 65.71,
#   hue angles 46.0 and 44.5 deg, chroma 19.5 and 25.4. The tones must span at least from one to the other.
# - Chardon, Cretois & Hourseau, "Skin colour typology and suntanning pathways", Int. J. Cosmet. Sci. 13 (1991):
#   the individual typology angle ITA = atan((L* - 50) / b*) grades skin from "very light" (> 55 deg) to "dark"
#   (< -30 deg); the darkest skins measured reach about -60 deg.
SKIN_PATCH_LIGHTNESS = (37.99, 65.71)
SKIN_ITA = (-60.0, 70.0)  # deg
SKIN_HUE = (35.0, 70.0)  # deg: skin's red-yellow quadrant, around the patches' 44-46 deg
SKIN_CHROMA = (10.0, 35.0)  # around the patches' 19.5-25.4
CLOTH_CHROMA = 70.0  # muted: sRGB's primaries have chroma 80-134
LOOKS = 200


def lab(srgb) -> np.ndarray:
    """CIELAB (D65) of sRGB colours in [0, 1], through scikit-image (an implementation independent of ours)."""
    from skimage.color import rgb2lab

    return rgb2lab(np.asarray(srgb, dtype=np.float64).reshape(1, -1, 3))[0]


def drawn_looks(count: int) -> list:
    from asset_converters.procedural.humanoid import make_body
    from core.seeding import generator

    return [make_body(generator(SEED, f"procedural/human/{i}")).look for i in range(count)]


def test_skin_tones_span_a_published_skin_gamut_and_clothes_are_muted():
    looks = drawn_looks(LOOKS)
    lightness, a, b = lab([look.skin for look in looks]).T
    ita, hue = np.degrees(np.arctan2(lightness - 50, b)), np.degrees(np.arctan2(b, a))
    assert SKIN_ITA[0] <= ita.min() and ita.max() <= SKIN_ITA[1]
    assert SKIN_HUE[0] <= hue.min() and hue.max() <= SKIN_HUE[1]
    assert SKIN_CHROMA[0] <= np.hypot(a, b).min() and np.hypot(a, b).max() <= SKIN_CHROMA[1]
    assert lightness.min() < SKIN_PATCH_LIGHTNESS[0] and lightness.max() > SKIN_PATCH_LIGHTNESS[1]
    # Hair from black to blond or grey, several fabrics, and no garment in a saturated primary.
    hair = lab([look.hair for look in looks])[:, 0]
    assert hair.min() < 20 and hair.max() > 60
    assert len({look.top.style for look in looks}) >= 4 and len({look.bottom.style for look in looks}) >= 3
    clothes = lab([c for look in looks for c in (look.top.color, look.top.accent, look.bottom.color)])
    assert np.hypot(clothes[:, 1], clothes[:, 2]).max() < CLOTH_CHROMA


def test_look_textures_repeat_byte_for_byte_differ_across_people_and_redden_the_lips(tmp_path):
    from PIL import Image

    from asset_converters.procedural.human_looks import MOUTH_Y
    from asset_converters.procedural.humanoid import body_meshes, head_grid, make_body
    from core.seeding import generator

    def textures(index: int, folder: str) -> dict[str, bytes]:
        rng = generator(SEED, f"procedural/human/{index}")
        meshes = body_meshes(rng, make_body(rng), tmp_path / folder)
        return {m.name: m.material.texture.read_bytes() for m in meshes}

    first, again, other = textures(0, "a"), textures(0, "b"), textures(1, "c")
    assert first == again
    assert all(first[name] != other[name] for name in first.keys() & other.keys())
    head = np.asarray(Image.open(tmp_path / "a" / "head.png").convert("RGB"), dtype=np.float64) / 255
    grid = head_grid()
    row = lambda y: int((1 - (y - grid.chin) / (grid.crown - grid.chin)) * head.shape[0])
    front = head.shape[1] // 2  # u = 1/2: the middle of the face
    lips, chin = lab([head[row(MOUTH_Y - 0.02), front], head[row(grid.chin + 0.1), front]])
    assert lips[1] > chin[1] + 3 and lips[0] < chin[0]  # redder (a*) and darker (L*) than the skin below


def test_human_textures_are_in_the_usd_package_and_the_render_mesh_atlas(tmp_path):
    from PIL import Image

    from simulation.embedded.actors import HumanModel
    from simulation.render import load_texture

    jobs = [j for j in demo_jobs(tmp_path, SEED, ROOMS, 0, 1, 0) if j.out.parent.name == "humans"]
    assert run_jobs(jobs, "one human").failed == []
    package = jobs[0].out
    stage = Usd.Stage.Open(str(package / "asset.usdc"))
    files = {}
    for prim in stage.Traverse():
        if prim.IsA(UsdGeom.Mesh):
            material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()
            shader = UsdShade.Shader(material.ComputeSurfaceSource()[0])
            source = shader.GetInput("diffuseColor").GetConnectedSources()[0][0].source
            files[prim.GetName()] = package / UsdShade.Shader(source.GetPrim()).GetInput("file").Get().path
    assert {"skin", "head", "shirt", "trousers", "shoes"} <= set(files)
    images = {name: np.asarray(Image.open(path).convert("RGB")) for name, path in files.items()}
    assert all(image.std() > 0 for image in images.values())  # textured, not flat colour
    # The ray caster and Cycles see a person as one mesh whose atlas holds every texture of the package.
    atlas = HumanModel(package, load_texture).mesh.material.texture
    for name, image in images.items():
        rows, columns = image.shape[:2]
        found = any(np.array_equal(atlas[top:top + rows, left:left + columns], image)
                    for top in range(2) for left in range(atlas.shape[1] - columns + 1))
        assert found, name

"""3D-Front converter: the real shared house checked through pxr against its own JSON (geometry, lights, a
rendered frame), a tiny synthetic house with a synthetic 3D-FUTURE folder (textures, class materials, lamps),
bad inputs, and the folder batch via the CLI."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import shapely
import trimesh
from conftest import run_grade
from PIL import Image
from pxr import Usd, UsdGeom, UsdLux
from scipy.spatial.distance import cdist
from scipy.spatial.transform import Rotation

from asset_converters.class_materials import LOOKS
from asset_converters.front3d import convert_house, window_pane
from core.assets.usd_read import get_semantic_label, read_meshes
from core.errors import ExitCode, InputError
from core.formats.asset_meta import load_meta
from core.formats.manifest import StageStatus, stage_status
from core.formats.placement import EnvironmentRef, Placement, PlacementParameters, RobotStart, RobotVolume
from placement.compose import compose_scene
from simulation.embedded.scene import load_scene
from simulation.render import Camera, RenderOptions, look_at, render_frame
from simulation.render.shading import srgb_to_linear

HOUSE = "front3d/0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json"
SMALL_ROOM = "Bathroom-771"
TOL = 1e-4  # float32 points in USD
_converted: dict[str, Path] = {}  # the real house is converted once per session (it takes seconds)


def y_up_to_z_up(points: np.ndarray) -> np.ndarray:
    """Written out independently of the converter: (x, y, z) -> (x, -z, y)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    return np.stack([points[:, 0], -points[:, 2], points[:, 1]], axis=1)


def triangle_area(corners: np.ndarray) -> float:
    return float(0.5 * np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]),
                                      axis=1).sum())


def floor_triangles(data: dict, room: str | None = None) -> np.ndarray:
    refs = {c["ref"] for r in data["scene"]["room"] if room in (None, r["instanceid"]) for c in r["children"]}
    tris = [np.array(m["xyz"]).reshape(-1, 3)[np.array(m["faces"]).reshape(-1, 3)]
            for m in data["mesh"] if m["type"] == "Floor" and m["uid"] in refs]
    return np.concatenate(tris)


def box_corners(entry: dict, child: dict) -> np.ndarray | None:
    """World Z-up corners of a furniture box: bbox centred in x/z, bottom at y = 0, then T R S."""
    size = entry and (entry.get("bbox") or entry.get("size"))
    if not size:
        return None
    signs = np.array([[sx, sy, sz] for sx in (-0.5, 0.5) for sy in (0.0, 1.0) for sz in (-0.5, 0.5)])
    local = signs * np.ravel(size) * child["scale"]
    return y_up_to_z_up(Rotation.from_quat(child["rot"]).apply(local) + child["pos"])


def expected_boxes(data: dict) -> list[np.ndarray]:
    furniture = {f["uid"]: f for f in data["furniture"]}
    boxes = [box_corners(furniture.get(c["ref"]), c) for room in data["scene"]["room"] for c in room["children"]]
    return [b for b in boxes if b is not None]


def stage_lights(package: Path) -> np.ndarray:
    """World positions (N, 3) of the package's sphere lights, read through pxr."""
    stage = Usd.Stage.Open(str(package / "asset.usdc"))
    cache = UsdGeom.XformCache()
    return np.array([np.asarray(cache.GetLocalToWorldTransform(p))[3, :3] for p in stage.Traverse()
                     if p.IsA(UsdLux.SphereLight)]).reshape(-1, 3)


def room_meshes(data: dict, room: dict, types: tuple[str, ...]) -> list[np.ndarray]:
    """Z-up triangles (T, 3, 3) of the room's architecture meshes of `types` (the sample places them at the origin)."""
    meshes = {m["uid"]: m for m in data["mesh"]}
    found = [meshes[c["ref"]] for c in room["children"] if c["ref"] in meshes and meshes[c["ref"]]["type"] in types]
    return [y_up_to_z_up(m["xyz"])[np.array(m["faces"]).reshape(-1, 3)] for m in found]


def is_lamp_entry(entry: dict) -> bool:
    text = f"{entry.get('category') or ''} {entry.get('title') or ''}".lower()
    return any(word in text for word in ("lamp", "light", "chandelier"))


@pytest.fixture
def house_json(realdata) -> Path:
    return realdata / HOUSE


@pytest.fixture
def house_data(house_json) -> dict:
    return json.loads(house_json.read_text())


@pytest.fixture
def house_pkg(house_json, tmp_path_factory) -> Path:
    if "house" not in _converted:
        _converted["house"] = convert_house(house_json, tmp_path_factory.mktemp("front3d") / "house")
    return _converted["house"]


@pytest.mark.slow
def test_real_house_stage_hierarchy_and_labels(house_pkg, house_data):
    stage = Usd.Stage.Open(str(house_pkg / "asset.usdc"))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert UsdGeom.GetStageMetersPerUnit(stage) == 1.0
    assert stage.GetDefaultPrim().GetPath() == "/asset"
    meshes = [p for p in stage.Traverse() if p.IsA(UsdGeom.Mesh)]
    groups = {str(p.GetParent().GetPath()) for p in meshes}
    assert groups == {"/asset/architecture", "/asset/furniture"}
    labels = {str(p.GetPath()): get_semantic_label(p) for p in meshes}
    assert all(labels.values())

    # Every architecture mesh is referenced once by a room; furniture with a bbox becomes a box.
    arch = [p for p in labels if p.startswith("/asset/architecture/")]
    assert len(arch) == len(house_data["mesh"])
    assert len(labels) - len(arch) == len(expected_boxes(house_data))

    semantics = json.loads((house_pkg / "semantics.json").read_text())
    assert semantics["prims"] == labels == load_meta(house_pkg).semantic_labels
    ids = semantics["classes"]
    assert set(labels.values()) <= set(ids) and len(set(ids.values())) == len(ids)
    mapping = {(semantics["raw_categories"][p], label) for p, label in labels.items()}
    assert {("Floor", "floor"), ("WallInner", "wall"), ("WallOuter", "wall"), ("Ceiling", "ceiling"), ("Door", "door"),
            ("Window", "window"), ("Dining Chair", "dining_chair"), ("TV Stand", "tv_stand")} <= mapping
    # 19 children reference furniture the release does not include; 5 entries have no bbox.
    assert semantics["conversion"]["dangling_furniture_refs_skipped"] == 19
    assert semantics["conversion"]["furniture_without_size_skipped"] == 5


@pytest.mark.slow
def test_real_house_bounds_match_source(house_pkg, house_data):
    stage = Usd.Stage.Open(str(house_pkg / "asset.usdc"))
    cache = UsdGeom.BBoxCache(Usd.TimeCode.Default(), [UsdGeom.Tokens.default_])
    arch = cache.ComputeWorldBound(stage.GetPrimAtPath("/asset/architecture")).ComputeAlignedRange()
    source = y_up_to_z_up(np.concatenate([m["xyz"] for m in house_data["mesh"]]))
    np.testing.assert_allclose(arch.GetMin(), source.min(axis=0), atol=TOL)
    np.testing.assert_allclose(arch.GetMax(), source.max(axis=0), atol=TOL)

    furniture = [m.vertices for m in read_meshes(house_pkg / "asset.usdc") if "/furniture/" in m.prim_path]
    boxes = expected_boxes(house_data)
    for corners in boxes:  # each expected box is exactly one converted furniture mesh
        assert sum(cdist(corners, v).min(axis=1).max() < TOL and cdist(v, corners).min(axis=1).max() < TOL
                   for v in furniture) >= 1
    everything = np.concatenate([source, *boxes])
    lo, hi = load_meta(house_pkg).environment.bounds
    np.testing.assert_allclose(lo, everything.min(axis=0), atol=TOL)
    np.testing.assert_allclose(hi, everything.max(axis=0), atol=TOL)


@pytest.mark.slow
def test_real_house_floor_polygon_is_true_outline(house_pkg, house_data):
    env = load_meta(house_pkg).environment
    triangles = floor_triangles(house_data)
    assert env.floor_area == pytest.approx(triangle_area(triangles), rel=1e-6)
    polygon = shapely.geometry.shape(env.floor_polygon)
    assert polygon.is_valid and polygon.area == pytest.approx(env.floor_area, rel=1e-6)
    assert polygon.convex_hull.area > 1.1 * polygon.area  # the house is not convex
    proper = np.array([triangle_area(t[None]) > 1e-9 for t in triangles])  # the JSON has a collinear one
    centroids = y_up_to_z_up(triangles[proper].mean(axis=1))[:, :2]
    assert shapely.contains_xy(polygon, centroids[:, 0], centroids[:, 1]).all()
    assert env.floor_height == pytest.approx(0.0)


@pytest.mark.slow
def test_real_house_collision_and_occupancy(house_pkg, house_data):
    meta = load_meta(house_pkg)
    collision = trimesh.load(house_pkg / "collision.stl")
    np.testing.assert_allclose(collision.bounds, meta.environment.bounds, atol=TOL)
    source_faces = sum(len(m["faces"]) // 3 for m in house_data["mesh"])
    windows = sum(m["type"] == "Window" for m in house_data["mesh"])  # the sample's are open: each gets a pane
    assert len(collision.faces) == source_faces + 12 * len(expected_boxes(house_data)) + 2 * windows

    grids = np.load(house_pkg / "occupancy.npz")
    res, origin, grid = float(grids["map2d_resolution"]), grids["map2d_origin"], grids["map2d"]
    np.testing.assert_allclose(origin, meta.environment.bounds[0][:2])
    assert set(np.unique(grid)) == {0, 1, 2}
    polygon = shapely.geometry.shape(meta.environment.floor_polygon)
    cx, cy = (origin[:, None, None] + (np.indices(grid.shape) + 0.5) * res)
    inside = shapely.contains_xy(polygon, cx, cy)
    assert (grid[inside] != 2).all() and (grid[~inside] != 0).all()  # outside: walls (1) or outside (2)
    assert (grid[inside] == 0).mean() > 0.3  # furniture boxes and walls leave most of the floor free
    for mesh in house_data["mesh"]:  # the cell under the largest triangle of every inner wall is blocked
        if mesh["type"] == "WallInner":
            triangles = y_up_to_z_up(np.array(mesh["xyz"])).reshape(-1, 3)[np.array(mesh["faces"]).reshape(-1, 3)]
            largest = triangles[np.argmax([triangle_area(t[None]) for t in triangles])]
            cell = tuple(((largest.mean(axis=0)[:2] - origin) / res).astype(int))
            assert grid[cell] == 1, mesh["uid"]
    voxels = grids["voxels"]
    size = np.array(meta.environment.bounds[1]) - meta.environment.bounds[0]
    assert voxels.shape == tuple(np.ceil(size / float(grids["voxel_size"])).astype(int)) and voxels.any()


def window_tube(width: float, depth: float, bottom: float, top: float, angle: float) -> tuple[np.ndarray, np.ndarray]:
    """3D-Front's window: the four sides of an opening `width` wide through a wall `depth` thick, turned by
    `angle` about z, as a triangle soup."""
    w, d = width / 2, depth / 2
    corners = {(i, j, k): np.array([i * w, j * d, (bottom, top)[k]]) for i in (-1, 1) for j in (-1, 1) for k in (0, 1)}
    quads = [[(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)], [(-1, -1, 1), (1, -1, 1), (1, 1, 1), (-1, 1, 1)],
             [(-1, -1, 0), (-1, 1, 0), (-1, 1, 1), (-1, -1, 1)], [(1, -1, 0), (1, 1, 0), (1, 1, 1), (1, -1, 1)]]
    turn = Rotation.from_euler("z", angle).as_matrix()
    vertices = np.array([corners[c] for quad in quads for c in quad]) @ turn.T + [2.0, -1.0, 0.0]
    faces = np.array([[4 * q, 4 * q + 1, 4 * q + 2] for q in range(4)]
                     + [[4 * q, 4 * q + 2, 4 * q + 3] for q in range(4)])
    return vertices, faces


@pytest.mark.parametrize("angle", [0.0, 0.4, np.pi / 2])
def test_an_open_window_gets_a_pane_across_its_opening_and_a_glazed_one_none(angle):
    vertices, faces = window_tube(1.2, 0.2, 0.8, 2.1, angle)
    pane, pane_faces = window_pane(vertices, faces)
    # The pane lies in the wall's middle plane and spans the opening: a ray through the opening meets it.
    turn = Rotation.from_euler("z", angle).as_matrix()
    local = (pane - [2.0, -1.0, 0.0]) @ turn
    np.testing.assert_allclose(local[:, 1], 0.0, atol=1e-9)
    np.testing.assert_allclose(sorted(local[:, 0]), [-0.6, -0.6, 0.6, 0.6], atol=1e-9)
    np.testing.assert_allclose(sorted(local[:, 2]), [0.8, 0.8, 2.1, 2.1], atol=1e-9)
    opening = trimesh.Trimesh(pane, pane_faces)
    centre = np.array([0.3, -1.0, 1.5]) @ turn.T + [2.0, -1.0, 0.0]
    hits, _, _ = opening.ray.intersects_location([centre], [turn @ [0.0, 1.0, 0.0]])
    assert len(hits) == 1
    glazed_vertices = np.vstack([vertices, pane])
    glazed_faces = np.vstack([faces, pane_faces + len(vertices), pane_faces[:, ::-1] + len(vertices)])
    assert window_pane(glazed_vertices, glazed_faces) is None


@pytest.mark.slow
def test_single_room_is_a_subset(house_pkg, house_json, house_data, tmp_path):
    out = convert_house(house_json, tmp_path / "room", room=SMALL_ROOM)
    room_meshes = {m.prim_path: m for m in read_meshes(out / "asset.usdc")}
    house_meshes = {m.prim_path: m for m in read_meshes(house_pkg / "asset.usdc")}
    assert room_meshes and set(room_meshes) < set(house_meshes)
    for path, mesh in room_meshes.items():
        np.testing.assert_array_equal(mesh.vertices, house_meshes[path].vertices)
        assert mesh.semantic_label == house_meshes[path].semantic_label
    room = next(r for r in house_data["scene"]["room"] if r["instanceid"] == SMALL_ROOM)
    architecture = [p for p in room_meshes if "/architecture/" in p]
    assert len(architecture) == sum(c["ref"] in {m["uid"] for m in house_data["mesh"]} for c in room["children"])
    assert load_meta(out).environment.floor_area == pytest.approx(
        triangle_area(floor_triangles(house_data, SMALL_ROOM)), rel=1e-6)


def test_unknown_room_lists_valid_ids(house_json, house_data, tmp_path):
    with pytest.raises(InputError) as info:
        convert_house(house_json, tmp_path / "x", room="Attic-1")
    assert info.value.field == "room"
    assert all(r["instanceid"] in str(info.value) for r in house_data["scene"]["room"])
    assert not (tmp_path / "x").exists()


@pytest.mark.slow
def test_real_house_every_room_and_lamp_has_a_light(house_pkg, house_data):
    lights = stage_lights(house_pkg)
    assert len(lights) == load_meta(house_pkg).environment.lights
    for room in house_data["scene"]["room"]:
        floor = shapely.union_all([shapely.Polygon(t[:, :2]) for t in np.concatenate(
            room_meshes(house_data, room, ("Floor",)))])
        ceiling = min(t[..., 2].min() for t in room_meshes(house_data, room, ("Ceiling", "CustomizedCeiling")))
        inside = shapely.contains_xy(floor, lights[:, 0], lights[:, 1]) & (lights[:, 2] > 0) & (lights[:, 2] < ceiling)
        assert inside.any(), room["instanceid"]
    furniture = {f["uid"]: f for f in house_data["furniture"]}
    lamps = [box_corners(furniture[c["ref"]], c) for r in house_data["scene"]["room"] for c in r["children"]
             if c["ref"] in furniture and is_lamp_entry(furniture[c["ref"]])]
    assert len(lamps) == 2  # the two pendant lamps over the living room's tables
    for corners in lamps:  # hanging lamps: a light just under the middle of the shade
        centre, bottom = (corners.min(axis=0) + corners.max(axis=0))[:2] / 2, corners[:, 2].min()
        below = lights[np.linalg.norm(lights[:, :2] - centre, axis=1) < TOL]
        assert len(below) == 1 and 0 < bottom - below[0, 2] <= 0.1


def house_scene(package: Path, folder: Path):
    """The package loaded as the embedded backend loads a scene (no humans, no objects)."""
    placement = Placement(
        seed=0, environment=EnvironmentRef(id="house", path=str(package)),
        parameters=PlacementParameters(human_count_range=(0, 0), human_candidates=0, max_tries=1, contact_threshold=1,
                                       human_contact_threshold=1, flying_count_range=(0, 0), flying_candidates=0,
                                       flying_collision_check=False),
        humans=[], rejected_humans=[], flying_objects=[], rejected_flying_objects=[],
        robot=RobotStart(kind="uav", x=0, y=0, z=1.2, yaw=0, volume=RobotVolume(shape="box", extents=(0.6, 0.6, 0.3)),
                         heading_clearance=1.0, tries=1),
    )
    return load_scene(compose_scene(placement, folder / "scene.usda"))


LUMINANCE = np.array([0.2126, 0.7152, 0.0722])  # Rec. 709 weights of linear sRGB
# "Not dark": the floor seen across a room averages at least 0.1 in linear luminance (sRGB 89/255), above
# what the house rendered before it had lights (0.08: a white floor under the 0.08 ambient term alone, the
# "flat dark grey" of the report) whatever the floor's colour; and in every room the lights give at least
# LIT_RATIO times what the ambient term alone gives.
MIN_FLOOR_LUMINANCE = 0.1
LIT_RATIO = 3.0


@pytest.mark.slow
def test_real_house_frame_is_lit(house_pkg, house_data, tmp_path):
    scene = house_scene(house_pkg, tmp_path)
    render = scene.render_scene()
    floor_ids = [i for i, info in scene.instances.items() if info.semantic_class == "floor"]
    camera = Camera(64, 48, 32.0, 32.0, 32.0, 24.0)  # 90 deg across

    def luminance(pose, lights):  # of the surfaces seen (not the sky through windows), and which are floor
        render.lights = lights
        frame = render_frame(render, camera, pose, options=RenderOptions(boxes=False))
        seen = frame.instance > 0
        return (srgb_to_linear(frame.rgb) @ LUMINANCE)[seen], np.isin(frame.instance, floor_ids)[seen]

    for room in house_data["scene"]["room"]:
        corners = np.concatenate(room_meshes(house_data, room, ("Floor",))).reshape(-1, 3)
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        centre = (lo + hi) / 2
        down = look_at((centre[0], centre[1], 1.5), (centre[0] + 0.3, centre[1], 0.0))
        lit, _ = luminance(down, scene.lights)
        ambient, _ = luminance(down, [])
        assert lit.mean() >= LIT_RATIO * ambient.mean(), room["instanceid"]
        if room["instanceid"].startswith("LivingDiningRoom"):  # across the largest room, from a corner
            across = look_at((lo[0] + 0.4, lo[1] + 0.4, 1.5), (centre[0], centre[1], 0.0))
            lit, floor = luminance(across, scene.lights)
            assert floor.mean() > 0.1 and lit[floor].mean() >= MIN_FLOOR_LUMINANCE


# ---------------------------------------------------------------- a tiny synthetic house

CHAIR_JID = "chair-model"
FLOOR_MATERIAL_JID = "oak-texture"


def tiny_house() -> dict:
    """One 4 x 3 m room (Y up): floor, one wall, one chair turned 90 deg, one unpublished piece."""
    return {
        "uid": "tiny",
        "mesh": [
            {"uid": "m/floor", "type": "Floor", "material": "mat/floor",
             "xyz": [0, 0, 0, 4, 0, 0, 4, 0, 3, 0, 0, 3], "faces": [0, 2, 1, 0, 3, 2],
             "uv": [0, 0, 1, 0, 1, 1, 0, 1]},
            {"uid": "m/wall", "type": "WallInner", "material": "mat/wall",
             "xyz": [0, 0, 0, 4, 0, 0, 4, 2.5, 0, 0, 2.5, 0], "faces": [0, 1, 2, 0, 2, 3], "uv": []},
        ],
        "material": [
            {"uid": "mat/floor", "jid": FLOOR_MATERIAL_JID, "texture": "", "color": [255, 255, 255, 255]},
            {"uid": "mat/wall", "jid": "local", "texture": "", "color": [255, 0, 0, 255]},
        ],
        "furniture": [{"uid": "f/chair", "jid": CHAIR_JID, "category": "Lounge Chair", "bbox": [0.5, 0.9, 0.6],
                       "valid": True}],
        "scene": {"room": [{"instanceid": "Room-1", "type": "Bedroom", "children": [
            {"ref": "m/floor", "pos": [0, 0, 0], "rot": [0, 0, 0, 1], "scale": [1, 1, 1], "instanceid": "mesh/1"},
            {"ref": "m/wall", "pos": [0, 0, 0], "rot": [0, 0, 0, 1], "scale": [1, 1, 1], "instanceid": "mesh/2"},
            {"ref": "f/chair", "pos": [2, 0, 1.5], "rot": [0, 0.70710678, 0, 0.70710678], "scale": [1, 1, 1],
             "instanceid": "furniture/3"},
            {"ref": "f/unpublished", "pos": [1, 0, 1], "rot": [0, 0, 0, 1], "scale": [1, 1, 1],
             "instanceid": "furniture/4"},
        ]}]},
    }


CHAIR_OBJ = """v -0.2 0 -0.3
v 0.2 0 -0.3
v 0.2 0 0.3
v 0 0.9 0
vt 0 0
vt 1 0
vt 1 1
vt 0.5 0.5
f 1/1 2/2 3/3
f 1/1 2/2 4/4
f 2/2 3/3 4/4
f 3/3 1/1 4/4
"""


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def future_folder(tmp_path) -> Path:
    folder = tmp_path / "3D-FUTURE-model"
    (folder / CHAIR_JID).mkdir(parents=True)
    (folder / CHAIR_JID / "raw_model.obj").write_text(CHAIR_OBJ)
    Image.new("RGB", (4, 4), (10, 200, 30)).save(folder / CHAIR_JID / "texture.png")
    write_json(folder / "model_info.json", [{"model_id": CHAIR_JID, "category": "Dining Chair",
                                              "super-category": "Chair", "style": "Modern"}])
    return folder


@pytest.fixture
def texture_folder(tmp_path) -> Path:
    folder = tmp_path / "3D-FRONT-texture"
    (folder / FLOOR_MATERIAL_JID).mkdir(parents=True)
    Image.new("RGB", (8, 8), (120, 80, 40)).save(folder / FLOOR_MATERIAL_JID / "texture.png")
    return folder


def test_future_model_and_textures_replace_box(tmp_path, future_folder, texture_folder):
    house = write_json(tmp_path / "tiny.json", tiny_house())
    out = convert_house(house, tmp_path / "pkg", future_models=future_folder, textures=texture_folder)
    meshes = {m.prim_path.rsplit("/", 1)[0]: m for m in read_meshes(out / "asset.usdc")}
    chair = meshes["/asset/furniture"]
    local = np.array([[float(t) for t in line.split()[1:]] for line in CHAIR_OBJ.splitlines() if line[:2] == "v "])
    expected = y_up_to_z_up(Rotation.from_quat([0, 0.70710678, 0, 0.70710678]).apply(local) + [2, 0, 1.5])
    assert cdist(chair.vertices, expected).min(axis=1).max() < TOL
    assert len(chair.vertices) == 4 and chair.uvs is not None and chair.semantic_label == "dining_chair"
    assert chair.texture.read_bytes() == (future_folder / CHAIR_JID / "texture.png").read_bytes()
    assert chair.texture.parent == out / "textures"

    architecture = {m.semantic_label: m for m in read_meshes(out / "asset.usdc") if "/architecture/" in m.prim_path}
    assert architecture["floor"].texture.read_bytes() == (
        texture_folder / FLOOR_MATERIAL_JID / "texture.png").read_bytes()
    wall = architecture["wall"]  # untextured: its class material, in the red of its 3D-Front material
    red = np.asarray(Image.open(wall.texture).convert("RGB"), dtype=float).reshape(-1, 3).mean(axis=0)
    assert wall.texture.parent == out / "textures" and red[0] > 3 * max(red[1:])
    # Planar UVs: the wall stands in the plane y = 0 (z = 0 in the JSON), so u, v are x, z over the tile size.
    np.testing.assert_allclose(wall.uvs, wall.vertices[:, [0, 2]] / LOOKS["wall"].tile, atol=TOL)
    floor = shapely.geometry.shape(load_meta(out).environment.floor_polygon)
    np.testing.assert_allclose(floor.bounds, (0, -3, 4, 0), atol=TOL)  # z of the JSON became -y
    semantics = json.loads((out / "semantics.json").read_text())
    assert semantics["raw_categories"][chair.prim_path] == "Dining Chair"
    assert semantics["conversion"]["furniture_models"] == 1
    assert semantics["conversion"]["dangling_furniture_refs_skipped"] == 1

    boxed = convert_house(house, tmp_path / "boxed")  # no model folder: the bbox, bottom on the floor
    box = next(m for m in read_meshes(boxed / "asset.usdc") if "/furniture/" in m.prim_path)
    assert box.semantic_label == "lounge_chair"
    np.testing.assert_allclose(box.vertices.min(axis=0), [2 - 0.3, -1.5 - 0.25, 0], atol=TOL)
    np.testing.assert_allclose(box.vertices.max(axis=0), [2 + 0.3, -1.5 + 0.25, 0.9], atol=TOL)
    assert load_meta(boxed).environment.floor_area == pytest.approx(12.0)


def furnished_house() -> dict:
    """The tiny house with a second chair, a floor lamp (by category) and a chandelier (by title only)."""
    data = tiny_house()
    data["furniture"] += [{"uid": "f/floor_lamp", "jid": "lamp-1", "category": "Floor Lamp", "bbox": [0.4, 1.6, 0.4]},
                          {"uid": "f/chandelier", "jid": "lamp-2", "title": "Chandelier", "bbox": [0.6, 0.5, 0.6]}]
    pose = {"rot": [0, 0, 0, 1], "scale": [1, 1, 1]}
    data["scene"]["room"][0]["children"] += [{"ref": "f/chair", "pos": [1, 0, 0.8], **pose},
                                             {"ref": "f/floor_lamp", "pos": [3.5, 0, 0.5], **pose},
                                             {"ref": "f/chandelier", "pos": [1, 2.0, 2], **pose}]
    return data


def test_lamps_and_rooms_become_lights(tmp_path):
    out = convert_house(write_json(tmp_path / "house.json", furnished_house()), tmp_path / "pkg")
    lights = stage_lights(out)
    # The floor lamp (top at 1.6 m) shines from just over its top, the chandelier (2.0-2.5 m, reaching the top of
    # the 2.5 m wall) from just under its bottom, each over the middle of its box; (x, y) = (x, -z) of the JSON.
    for (x, y), lo, hi in (((3.5, -0.5), 1.6, 1.7), ((1.0, -2.0), 1.9, 2.0)):
        found = lights[np.linalg.norm(lights[:, :2] - (x, y), axis=1) < TOL]
        assert len(found) == 1 and lo < found[0, 2] < hi
    room = shapely.box(0, -3, 4, 0)  # the floor; the room has no ceiling, its wall is 2.5 m high
    ceiling = [p for p in lights if shapely.contains_xy(room, p[0], p[1]) and 2.0 < p[2] < 2.5
               and np.linalg.norm(p[:2] - (1.0, -2.0)) > TOL]
    assert len(ceiling) == 1 and len(lights) == 3


def texture_of(package: Path, prim_path: str) -> bytes:
    return next(m for m in read_meshes(package / "asset.usdc") if m.prim_path == prim_path).texture.read_bytes()


def test_class_materials_differ_per_instance_and_follow_the_seed(tmp_path):
    house = write_json(tmp_path / "house.json", furnished_house())
    out = convert_house(house, tmp_path / "a")
    meshes = read_meshes(out / "asset.usdc")
    chairs = [m for m in meshes if m.semantic_label == "lounge_chair"]
    assert len(chairs) == 2 and all(m.texture is not None for m in meshes)
    assert chairs[0].texture.read_bytes() != chairs[1].texture.read_bytes()
    low, high = LOOKS["chair"].roughness
    assert all(low <= m.roughness <= high for m in chairs)
    floor = next(m for m in meshes if m.semantic_label == "floor")  # planar UVs on the floor: x, y over the tile
    np.testing.assert_allclose(floor.uvs, floor.vertices[:, :2] / LOOKS["floor"].tile, atol=TOL)
    other = convert_house(house, tmp_path / "b", seed=1)
    assert all(texture_of(other, m.prim_path) != m.texture.read_bytes() for m in meshes)


def test_label_mapping_file_remaps_classes(tmp_path, future_folder):
    house = write_json(tmp_path / "tiny.json", tiny_house())
    labels = write_json(tmp_path / "labels.json", {"dining chair": "chair", "WallInner": "structure",
                                                   "floor": "ground", "Sofa": "sofa"})
    out = convert_house(house, tmp_path / "pkg", future_models=future_folder, labels=labels)
    semantics = json.loads((out / "semantics.json").read_text())
    assert sorted(semantics["prims"].values()) == ["chair", "ground", "structure"]
    assert semantics["classes"] == {"background": 0, "chair": 1, "ground": 2, "sofa": 3, "structure": 4}
    assert load_meta(out).environment.floor_area == pytest.approx(12.0)  # the floor stays the floor


def _break(mutate):
    data = tiny_house()
    mutate(data)
    return data


BAD_HOUSES = {
    "missing mesh list": (lambda d: d.pop("mesh"), "mesh", "missing key"),
    "missing child ref": (lambda d: d["scene"]["room"][0]["children"][1].pop("ref"),
                          "scene.room[0].children[1].ref", "missing key"),
    "unknown uid": (lambda d: d["scene"]["room"][0]["children"][1].update(ref="m/nowhere"),
                    "scene.room[0].children[1].ref", "unknown uid"),
    "xyz not triples": (lambda d: d["mesh"][0]["xyz"].pop(), "mesh[0].xyz", "multiple of 3"),
    "face out of range": (lambda d: d["mesh"][1]["faces"].__setitem__(5, 4), "mesh[1].faces", "out of range"),
    "uv length": (lambda d: d["mesh"][0]["uv"].pop(), "mesh[0].uv", "expected 8 numbers"),
    "short rotation": (lambda d: d["scene"]["room"][0]["children"][2]["rot"].pop(),
                       "scene.room[0].children[2].rot", "expected 4 numbers"),
    "no rooms": (lambda d: d["scene"].pop("room"), "scene.room", "missing key"),
    "bbox length": (lambda d: d["furniture"][0].update(bbox=[1, 2]), "furniture[0].bbox", "expected 3 numbers"),
}


@pytest.mark.parametrize("case", sorted(BAD_HOUSES))
def test_bad_house_names_field_and_writes_nothing(tmp_path, case):
    mutate, field, message = BAD_HOUSES[case]
    house = write_json(tmp_path / "bad.json", _break(mutate))
    with pytest.raises(InputError, match=message) as info:
        convert_house(house, tmp_path / "out" / "pkg")
    assert info.value.field == field and info.value.file == str(house)
    assert not (tmp_path / "out").exists()


def test_bad_files_name_the_file(tmp_path, future_folder):
    house = write_json(tmp_path / "tiny.json", tiny_house())
    malformed = tmp_path / "malformed.json"
    malformed.write_text('{"mesh": [')
    with pytest.raises(InputError, match="malformed JSON") as info:
        convert_house(malformed, tmp_path / "out" / "a")
    assert info.value.file == str(malformed)

    for name in ("texture.png", "raw_model.obj"):
        (future_folder / CHAIR_JID / name).unlink()
        with pytest.raises(InputError, match=f"{CHAIR_JID}/{name} not found") as info:
            convert_house(house, tmp_path / "out" / "b", future_models=future_folder)
        assert info.value.file == str(house) and info.value.field == "furniture[0].jid"

    (future_folder / "model_info.json").write_text("[{}]")
    with pytest.raises(InputError, match="model_id"):
        convert_house(house, tmp_path / "out" / "c", future_models=future_folder)
    (future_folder / "labels.json").write_text('{"Sofa": 3}')
    with pytest.raises(InputError, match="class name") as info:
        convert_house(house, tmp_path / "out" / "d", labels=future_folder / "labels.json")
    assert info.value.field == "Sofa"
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_folder_batch_via_cli_reports_failure_and_skips_done(tmp_path):
    houses = tmp_path / "houses"
    houses.mkdir()
    write_json(houses / "good.json", tiny_house())
    write_json(houses / "broken.json", _break(lambda d: d["mesh"][0]["xyz"].pop()))
    out = tmp_path / "packages"

    first = run_grade("convert", "front3d", str(houses), "--out", str(out))
    assert first.returncode == ExitCode.CONVERT_FAILURES, first.stderr
    assert "converted 1, skipped 0" in first.stderr and "failed 1" in first.stderr
    assert "broken.json" in first.stderr and "mesh[0].xyz" in first.stderr
    assert stage_status(out / "good") is StageStatus.COMPLETE and not (out / "broken").exists()
    manifest = (out / "good" / "MANIFEST.json").read_bytes()

    second = run_grade("convert", "front3d", str(houses), "--out", str(out))
    assert second.returncode == ExitCode.CONVERT_FAILURES
    assert "converted 0, skipped 1" in second.stderr
    assert (out / "good" / "MANIFEST.json").read_bytes() == manifest

    missing = run_grade("convert", "front3d", str(tmp_path / "nowhere"), "--out", str(out))
    assert missing.returncode == ExitCode.BAD_INPUT and "no such file or folder" in missing.stderr


def test_same_input_in_one_go_is_deterministic(tmp_path):
    house = write_json(tmp_path / "tiny.json", copy.deepcopy(tiny_house()))
    a, b = convert_house(house, tmp_path / "a" / "pkg"), convert_house(house, tmp_path / "b" / "pkg")
    for name in ("semantics.json", "collision.stl", "meta.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    textures = sorted(p.name for p in (a / "textures").iterdir())
    assert textures and textures == sorted(p.name for p in (b / "textures").iterdir())
    assert all((a / "textures" / n).read_bytes() == (b / "textures" / n).read_bytes() for n in textures)
    grids_a, grids_b = np.load(a / "occupancy.npz"), np.load(b / "occupancy.npz")
    assert all(np.array_equal(grids_a[k], grids_b[k]) for k in grids_a.files)

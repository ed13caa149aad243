"""The Embree ray-cast renderer against analytic geometry: depth, normals, boxes, occlusion, flow,
textures, shadows, determinism, per-frame deformation and bad input; its rasteriser (occlusion ratios)
against Embree ray casts; its own Embree binding against embreex's."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from embreex.mesh_construction import TriangleMesh
from embreex.rtcore_scene import EmbreeScene
from PIL import Image

from core.assets import parts
from core.errors import InputError
from core.seeding import generator
from simulation.render import (
    NO_HIT_DEPTH,
    Camera,
    MeshState,
    PointLight,
    RenderMaterial,
    RenderMesh,
    RenderOptions,
    RenderScene,
    light_from_part,
    load_texture,
    look_at,
    material_from_part,
    mesh_from_part,
    render_frame,
    tiles,
)
from simulation.render.annotations import AloneCoverage, layer_view
from simulation.render.camera import linear_map, ray_table
from simulation.render.embree import BUILD_QUALITY_LOW, BUILD_QUALITY_MEDIUM, SharedScene
from simulation.render.raycast import intersect, trace_camera, trace_occlusion
from simulation.render.scene import closed_edges
from simulation.render.shading import linear_to_srgb8, srgb_to_linear

W, H = 160, 120
F = 100.0
K = np.array([[F, 0.0, 79.5], [0.0, F, 59.5], [0.0, 0.0, 1.0]])
CAMERA = Camera.from_intrinsics(K, W, H, near=0.05, far=50.0)
# Camera at the origin looking along world +y: optical x = world x, optical y (down) = world -z.
POSE = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])
EDGE_MARGIN = 1e-3  # metres: pixels whose ray passes this close to an edge are ambiguous by construction


def translation(offset) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, 3] = offset
    return pose


def cube(name: str, instance_id: int, center, half=0.5, semantic_id: int = 7, **kwargs) -> RenderMesh:
    box = trimesh.creation.box(extents=(2 * half,) * 3)
    return RenderMesh(name, box.vertices, box.faces, instance_id, semantic_id, pose=translation(center), **kwargs)


def quad(name: str, instance_id: int, x, z, y: float, uvs=None, material=None, semantic_id: int = 1) -> RenderMesh:
    """A rectangle in the plane world-y = `y`, facing the camera at the origin (normal -y)."""
    vertices = np.array([[x[0], y, z[0]], [x[1], y, z[0]], [x[1], y, z[1]], [x[0], y, z[1]]])
    return RenderMesh(name, vertices, np.array([[0, 1, 2], [0, 2, 3]]), instance_id, semantic_id,
                      material or RenderMaterial(), uvs)


def pixel_rays(pose: np.ndarray = POSE) -> tuple[np.ndarray, np.ndarray]:
    """World origin and per-pixel directions scaled so that their optical z component is 1 (t = depth)."""
    v, u = np.mgrid[0:H, 0:W].astype(np.float64)
    local = np.stack([(u - K[0, 2]) / F, (v - K[1, 2]) / F, np.ones_like(u)], axis=-1)
    return pose[:3, 3], local @ pose[:3, :3].T


def ray_box(origin, directions, lo, hi):
    """Slab test: entry distance (inf if missed), the entry axis, and the margin to the nearest edge."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (np.asarray(lo) - origin) / directions
        t2 = (np.asarray(hi) - origin) / directions
    t_min, t_max = np.minimum(t1, t2), np.maximum(t1, t2)
    entry, leave = t_min.max(axis=-1), t_max.min(axis=-1)
    axis = t_min.argmax(axis=-1)
    ordered = np.sort(t_min, axis=-1)
    gap = np.minimum(ordered[..., 2] - ordered[..., 1], np.abs(leave - entry))  # ~ distance to an edge / t
    hit = (entry <= leave) & (leave > 0)
    return np.where(hit, entry, np.inf), axis, gap * np.where(hit, entry, 0)


def project(points, pose=POSE):
    local = (points - pose[:3, 3]) @ pose[:3, :3]
    return np.stack([F * local[..., 0] / local[..., 2] + K[0, 2], F * local[..., 1] / local[..., 2] + K[1, 2]], -1)


def corner_box(lo, hi):
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    px = project(corners)
    return (math.ceil(px[:, 0].min()), math.ceil(px[:, 1].min()), math.floor(px[:, 0].max()),
            math.floor(px[:, 1].max()))


def box_tuple(row) -> tuple[int, int, int, int]:
    return int(row["x_min"]), int(row["y_min"]), int(row["x_max"]), int(row["y_max"])


def test_cube_depth_normals_boxes_are_exact():
    center, half = np.array([1.21, 4.03, 0.87]), 0.5
    lo, hi = center - half, center + half
    mesh = cube("cube", 5, center, half, semantic_id=9)
    scene = RenderScene([mesh], lights=[PointLight((0, 0, 3), 5.0)])
    frame = render_frame(scene, CAMERA, POSE)

    origin, directions = pixel_rays()
    t, axis, margin = ray_box(origin, directions, lo, hi)
    expected_mask = np.isfinite(t)
    clear = margin > EDGE_MARGIN
    assert np.array_equal((frame.instance == 5)[clear], expected_mask[clear])
    assert set(np.unique(frame.instance)) == {0, 5}
    on = expected_mask & clear
    assert on.sum() > 500
    # Front face (depth 3.53), left face (x = 0.71) and bottom face (z = 0.37) are all in view.
    assert {0, 1, 2} <= set(np.unique(axis[on]).tolist())
    np.testing.assert_allclose(frame.depth[on], t[on], rtol=2e-6)
    ranges = t * np.linalg.norm(directions, axis=-1)
    np.testing.assert_allclose(frame.distance[on], ranges[on], rtol=2e-6)
    assert np.all(frame.depth[~expected_mask & clear] == NO_HIT_DEPTH)
    assert np.all(frame.semantic[on] == 9)

    # The entry face's outward normal points back along the entry axis, against the ray.
    normals = np.zeros((H, W, 3))
    rows, cols = np.nonzero(on)
    normals[rows, cols, axis[on]] = -np.sign(directions[rows, cols, axis[on]])
    np.testing.assert_allclose(frame.normals[on], normals[on], atol=1e-6)
    assert np.all(frame.normals[frame.instance == 0] == 0)

    expected_box = corner_box(lo, hi)
    assert frame.instance_ids.tolist() == [5]
    assert box_tuple(frame.boxes_2d_tight[0]) == expected_box
    assert box_tuple(frame.boxes_2d_loose[0]) == expected_box
    assert frame.boxes_2d_tight[0]["semanticId"] == 9 and frame.boxes_2d_tight[0]["occlusionRatio"] == 0
    box3d = frame.boxes_3d[0]
    assert [float(box3d[k]) for k in ("x_min", "y_min", "z_min", "x_max", "y_max", "z_max")] == [-0.5] * 3 + [0.5] * 3
    np.testing.assert_allclose(box3d["transform"], translation(center), atol=1e-6)
    assert frame.camera.width == W and np.array_equal(frame.camera.K, K) and np.array_equal(frame.camera.pose, POSE)


@pytest.mark.parametrize("deform", [False, True], ids=["rigid", "deforming"])
def test_flow_follows_moving_object_and_camera(deform):
    center, half = np.array([-0.4, 3.6, 0.2]), 0.45
    delta = np.array([0.12, -0.08, 0.05])
    next_camera = translation((0.03, 0.1, -0.02)) @ POSE
    wall = quad("wall", 1, (-20, 20), (-20, 20), 9.0)
    scene = RenderScene([wall], [cube("mover", 2, center, half)])
    local = scene.dynamic_table.meshes[0].vertices
    state = (MeshState(next_vertices=local + delta) if deform
             else MeshState(pose=translation(center), next_pose=translation(center + delta)))
    frame = render_frame(scene, CAMERA, POSE, {"mover": state}, RenderOptions(rgb=False, boxes=False), next_camera)

    origin, directions = pixel_rays()
    t, _, margin = ray_box(origin, directions, center - half, center + half)
    on_cube = np.isfinite(t) & (margin > EDGE_MARGIN)
    wall_t = 9.0 / directions[..., 1]
    points = np.where(np.isfinite(t)[..., None], t[..., None] * directions, wall_t[..., None] * directions)
    moved = np.where(np.isfinite(t)[..., None], points + delta, points)
    v, u = np.mgrid[0:H, 0:W]
    expected = project(moved, next_camera) - np.stack([u, v], axis=-1)
    on_wall = ~np.isfinite(t) & (frame.instance == 1)
    assert on_cube.sum() > 300 and on_wall.sum() > 1000
    np.testing.assert_allclose(frame.flow[on_cube], expected[on_cube], atol=2e-3)
    np.testing.assert_allclose(frame.flow[on_wall], expected[on_wall], atol=2e-3)
    assert np.abs(expected[on_cube] - expected[on_wall].mean(axis=0)).max() > 1  # object motion is visible


@pytest.mark.parametrize("target_dynamic,occluder_dynamic", [(False, False), (True, False), (False, True),
                                                             (True, True)])
def test_occluded_object_tight_box_shrinks_loose_box_does_not(target_dynamic, occluder_dynamic):
    target = quad("target", 3, (-0.61, 0.59), (-0.43, 0.47), 5.0, semantic_id=4)
    occluder = quad("occluder", 8, (-5.0, -0.013), (-2.0, 2.0), 3.0)
    static = [m for m, dyn in ((target, target_dynamic), (occluder, occluder_dynamic)) if not dyn]
    dynamic = [m for m, dyn in ((target, target_dynamic), (occluder, occluder_dynamic)) if dyn]
    frame = render_frame(RenderScene(static, dynamic), CAMERA, POSE, options=RenderOptions(rgb=False))

    # Pixel-centre ranges covered by each quad (the projection of a camera-facing rectangle).
    cols = range(math.ceil(F * -0.61 / 5 + 79.5), math.floor(F * 0.59 / 5 + 79.5) + 1)
    rows = range(math.ceil(-F * 0.47 / 5 + 59.5), math.floor(F * 0.43 / 5 + 59.5) + 1)
    occluder_last_col = math.floor(F * -0.013 / 3 + 79.5)
    visible_cols = [c for c in cols if c > occluder_last_col]
    assert 0 < len(visible_cols) < len(cols)
    row = frame.instance_ids.tolist().index(3)
    tight, loose = frame.boxes_2d_tight[row], frame.boxes_2d_loose[row]
    assert box_tuple(loose) == (cols[0], rows[0], cols[-1], rows[-1])
    assert box_tuple(tight) == (visible_cols[0], rows[0], visible_cols[-1], rows[-1])
    assert (frame.instance == 3).sum() == len(visible_cols) * len(rows)
    expected_ratio = 1 - len(visible_cols) / len(cols)
    assert tight["occlusionRatio"] == pytest.approx(expected_ratio, abs=1e-6)
    assert loose["occlusionRatio"] == tight["occlusionRatio"]
    assert tight["semanticId"] == 4
    occluder_row = frame.instance_ids.tolist().index(8)
    assert frame.boxes_2d_tight[occluder_row]["occlusionRatio"] == 0
    # The occluder reaches past the image border: its loose box is clipped there.
    assert box_tuple(frame.boxes_2d_loose[occluder_row]) == (0, 0, occluder_last_col, H - 1)


def test_loose_box_of_mesh_crossing_the_near_plane():
    """A floor running under and behind the camera, its near part hidden by a low wall."""
    floor = RenderMesh("floor", [[-20, -3, -1], [20, -3, -1], [20, 10, -1], [-20, 10, -1]], [[0, 1, 2], [0, 2, 3]],
                       1, 1)
    wall = quad("wall", 2, (-20, 20), (-2, -0.3), 1.0)
    frame = render_frame(RenderScene([floor, wall]), CAMERA, POSE, options=RenderOptions(rgb=False))
    # Floor rays: direction z = -(v - cy) / F hits z = -1 at y = F / (v - cy) <= 10; the wall covers
    # the rows whose ray passes below z = -0.3 at y = 1.
    first_floor_row = math.ceil(K[1, 2] + F / 10)
    first_wall_row = math.ceil(K[1, 2] + F * 0.3)
    row = frame.instance_ids.tolist().index(1)
    assert box_tuple(frame.boxes_2d_tight[row]) == (0, first_floor_row, W - 1, first_wall_row - 1)
    assert box_tuple(frame.boxes_2d_loose[row]) == (0, first_floor_row, W - 1, H - 1)
    hidden = (H - first_wall_row) / (H - first_floor_row)
    assert frame.boxes_2d_tight[row]["occlusionRatio"] == pytest.approx(hidden, abs=1e-6)


def test_parts_adapters(tmp_path):
    texture = np.zeros((4, 4, 3), np.uint8)
    texture[:, :, 1] = 255
    Image.fromarray(texture).save(tmp_path / "green.png")
    part = parts.SceneMesh("poster", [[-1, 2, -1], [1, 2, -1], [1, 2, 1], [-1, 2, 1]], [[0, 1, 2], [0, 2, 3]], "art",
                           material=parts.Material("paint", texture=tmp_path / "green.png", roughness=0.9),
                           uvs=[[0, 0], [1, 0], [1, 1], [0, 1]])
    mesh = mesh_from_part(part, instance_id=4, semantic_id=2)
    assert mesh.material.roughness == 0.9 and np.array_equal(mesh.material.texture, texture)
    light = light_from_part(parts.Light("lamp", (0, 0, 2), intensity=1000.0, radius=0.1), exposure=0.5)
    assert light.intensity == pytest.approx(1000.0 * math.pi * 0.01 * 0.5) and light.radius == 0.1
    scene = RenderScene([mesh], ambient=(1, 1, 1))
    assert scene.instances() == {4: {"name": "poster", "semantic_id": 2, "dynamic": False}}
    frame = render_frame(scene, CAMERA, POSE)
    assert np.all(frame.rgb[frame.instance == 4] == (0, 255, 0))
    with pytest.raises(InputError, match="missing.png"):
        material_from_part(parts.Material("gone", texture=tmp_path / "missing.png"))


def quad_uvs(x, z, y: float, repeats: float) -> np.ndarray:
    """(H, W, 2) UVs seen at each pixel on the plane world-y = `y` of a `quad` whose UVs run from 0 at its
    (x[0], z[0]) corner to `repeats` at the opposite one."""
    _, directions = pixel_rays()
    points = directions * (y / directions[..., 1])[..., None]
    return np.stack([(points[..., 0] - x[0]) / (x[1] - x[0]) * repeats,
                     (points[..., 2] - z[0]) / (z[1] - z[0]) * repeats], axis=-1)


def sampled_texture(texture: np.ndarray, filter_mode: str, uv: np.ndarray) -> tuple[np.ndarray, int]:
    """sRGB colours of uint8 `texture` (h, w, 3) at `uv` (..., 2) with wrapping, computed in float64, and the
    tolerance in levels the float32 renderer gets."""
    th, tw = texture.shape[:2]
    x = uv[..., 0] * tw - 0.5
    y = (1 - uv[..., 1]) * th - 0.5
    if filter_mode == "nearest":
        return texture[np.floor(y + 0.5).astype(int) % th, np.floor(x + 0.5).astype(int) % tw], 0
    linear = srgb_to_linear(texture).astype(np.float64)
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    fx, fy = (x - x0)[..., None], (y - y0)[..., None]

    def texel(j, i):
        return linear[j % th, i % tw]

    blended = ((texel(y0, x0) * (1 - fx) + texel(y0, x0 + 1) * fx) * (1 - fy)
               + (texel(y0 + 1, x0) * (1 - fx) + texel(y0 + 1, x0 + 1) * fx) * fy)
    return linear_to_srgb8(blended), 1


@pytest.mark.parametrize("uv_offset", [0.0, -7.3])  # UVs far below zero wrap like those in [0, 2]
@pytest.mark.parametrize("filter_mode", ["nearest", "bilinear"])
def test_textured_quad_shows_texture_colours(filter_mode, uv_offset, tmp_path):
    texture = np.array([[[200, 30, 40], [20, 180, 60], [90, 90, 90]],
                        [[10, 40, 220], [250, 250, 250], [0, 0, 0]]], dtype=np.uint8)
    Image.fromarray(texture).save(tmp_path / "tex.png")
    loaded = load_texture(tmp_path / "tex.png")
    assert np.array_equal(loaded, texture)
    repeats = 2.0  # UVs run to 2: the texture repeats twice across the quad
    uvs = np.array([[0, 0], [repeats, 0], [repeats, repeats], [0, repeats]]) + uv_offset
    material = RenderMaterial(texture=loaded, texture_filter=filter_mode)
    z_range = (-0.7513, 0.7487)  # quad edges off pixel centres
    scene = RenderScene([quad("poster", 1, (-1.0, 1.0), z_range, 2.0, uvs, material)], ambient=(1, 1, 1))
    frame = render_frame(scene, CAMERA, POSE)

    uv = quad_uvs((-1.0, 1.0), z_range, 2.0, repeats) + uv_offset
    inside = frame.instance == 1
    assert inside.sum() > 5000
    expected, tolerance = sampled_texture(texture, filter_mode, uv)
    difference = np.abs(frame.rgb[inside].astype(int) - expected[inside].astype(int))
    assert difference.max() <= tolerance
    if filter_mode == "nearest":  # every texel colour shows up unchanged
        for colour in texture.reshape(-1, 3):
            assert np.any(np.all(frame.rgb[inside] == colour, axis=-1))


def test_one_frame_samples_each_mesh_with_its_own_texture_and_filter(tmp_path):
    """Meshes with different textures, filters and none at all, hit by the rays of one tile."""
    textures = [np.array([[[200, 30, 40], [20, 180, 60], [90, 90, 90]],
                          [[10, 40, 220], [250, 250, 250], [0, 0, 0]]], dtype=np.uint8),
                np.array([[[0, 0, 0], [255, 128, 0]], [[30, 200, 250], [120, 60, 10]], [[5, 5, 90], [60, 250, 60]]],
                         dtype=np.uint8)]
    loaded = []
    for k, texture in enumerate(textures):
        Image.fromarray(texture).save(tmp_path / f"tex{k}.png")
        loaded.append(load_texture(tmp_path / f"tex{k}.png"))
    z_range, repeats, base = (-0.7513, 0.7487), 1.5, (0.2, 0.6, 0.4)
    columns = [(-1.5, -0.52), (-0.48, 0.48), (0.52, 1.5)]
    uvs = np.array([[0, 0], [repeats, 0], [repeats, repeats], [0, repeats]])
    materials = [RenderMaterial(texture=loaded[0], texture_filter="nearest"),
                 RenderMaterial(texture=loaded[1], texture_filter="bilinear"), RenderMaterial(base)]
    scene = RenderScene([quad(f"q{k}", k + 1, x, z_range, 2.0, uvs, material)
                         for k, (x, material) in enumerate(zip(columns, materials))], ambient=(1, 1, 1))
    frame = render_frame(scene, CAMERA, POSE)

    for k, filter_mode in enumerate(("nearest", "bilinear")):
        inside = frame.instance == k + 1
        assert inside.sum() > 3000
        expected, tolerance = sampled_texture(textures[k], filter_mode, quad_uvs(columns[k], z_range, 2.0, repeats))
        assert np.abs(frame.rgb[inside].astype(int) - expected[inside].astype(int)).max() <= tolerance
    plain = frame.instance == 3
    assert plain.sum() > 3000
    assert np.all(frame.rgb[plain] == linear_to_srgb8(np.float32(base)))


@pytest.mark.parametrize("radius", [0.0, 1.5])  # a point, and a sphere light whose falloff is 1 / (d^2 + r^2)
def test_point_light_behind_occluder_casts_shadow_where_geometry_says(radius):
    light, intensity, albedo, ambient = np.array([0.2, 0.1, 3.0]), 6.0, 0.5, 0.1
    lo, hi = np.array([-0.3, -0.3, 1.0]), np.array([0.3, 0.3, 1.2])
    floor = RenderMesh("floor", [[-5, -5, 0], [5, -5, 0], [5, 5, 0], [-5, 5, 0]], [[0, 1, 2], [0, 2, 3]], 1, 1,
                       RenderMaterial((albedo,) * 3, roughness=1.0))
    blocker = cube("blocker", 2, (lo + hi) / 2, 0.3)
    blocker.vertices[:, 2] *= (hi[2] - lo[2]) / 0.6
    scene = RenderScene([floor, blocker], lights=[PointLight(tuple(light), intensity, radius=radius)],
                        ambient=(ambient,) * 3)
    pose = look_at((0.5, -4.0, 4.0), (0.0, 0.0, 0.0))
    frame = render_frame(scene, CAMERA, pose)

    origin, directions = pixel_rays(pose)
    t = -origin[2] / directions[..., 2]
    points = origin + t[..., None] * directions
    to_light = light - points
    dist = np.linalg.norm(to_light, axis=-1)
    on_floor = frame.instance == 1

    def blocked(grow):
        entry, _, _ = ray_box(points, to_light / dist[..., None], lo - grow, hi + grow)
        return entry < dist

    shadow, lit = blocked(-EDGE_MARGIN) & on_floor, ~blocked(EDGE_MARGIN) & on_floor
    assert shadow.sum() > 100 and lit.sum() > 5000
    dark = linear_to_srgb8(np.float32(albedo * ambient))
    assert np.all(frame.rgb[shadow] == dark)
    # Lit floor: Lambert + normalised Blinn-Phong (roughness 1 -> exponent 1), 1/(d^2 + r^2) falloff.
    n_dot_l = to_light[..., 2] / dist
    view = -directions / np.linalg.norm(directions, axis=-1, keepdims=True)
    half = to_light / dist[..., None] + view
    n_dot_h = half[..., 2] / np.linalg.norm(half, axis=-1)
    lobe = 9 / (8 * np.pi) * n_dot_h
    expected = albedo * ambient + intensity * n_dot_l / (dist**2 + radius**2) * (albedo + 0.04 * lobe)
    difference = np.abs(frame.rgb[lit].astype(int) - linear_to_srgb8(expected[lit])[:, None].astype(int))
    assert difference.max() <= 1
    assert np.all(frame.rgb[lit].astype(int).sum(axis=-1) > 3 * int(dark))


def build_mixed_scene() -> RenderScene:
    rng_texture = np.arange(4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 3) * 5
    uvs = [[0, 0], [1, 0], [1, 1], [0, 1]]
    sphere = trimesh.creation.icosphere(2, 0.4)
    static = [quad("back", 1, (-20, 20), (-20, 20), 8.0, uvs, RenderMaterial(texture=rng_texture, roughness=0.3)),
              cube("box", 2, (-0.8, 4.0, 0.3), 0.4, material=RenderMaterial((0.9, 0.3, 0.1), metallic=0.5))]
    dynamic = [RenderMesh("ball", sphere.vertices, sphere.faces, 3, 2, RenderMaterial((0.2, 0.7, 0.3)),
                          pose=translation((0.7, 3.5, 0.0)), smooth=True)]
    return RenderScene(static, dynamic, [PointLight((1.0, 1.0, 2.0), 8.0), PointLight((-2, 2, -1), 2.0,
                                                                                    (1.0, 0.8, 0.6))])


def test_two_renders_are_byte_identical():
    frames = []
    for _ in range(2):
        scene = build_mixed_scene()
        state = {"ball": MeshState(pose=translation((0.6, 3.4, 0.1)), next_pose=translation((0.7, 3.4, 0.1)))}
        next_camera = translation((0.1, 0, 0)) @ POSE
        frames.append(render_frame(scene, CAMERA, POSE, state, RenderOptions(supersample=2), next_camera))
    first, second = frames
    for name in ("rgb", "depth", "distance", "instance", "semantic", "normals", "flow", "instance_ids",
                 "boxes_2d_tight", "boxes_2d_loose", "boxes_3d"):
        assert getattr(first, name).tobytes() == getattr(second, name).tobytes(), name
    assert set(np.unique(first.instance)) == {1, 2, 3}
    unit = np.linalg.norm(first.normals[first.instance > 0], axis=-1)
    np.testing.assert_allclose(unit, 1.0, atol=1e-5)


def test_deforming_mesh_changes_render_without_rebuilding_static_scene():
    wall = quad("wall", 1, (-20, 20), (-20, 20), 6.0)
    sheet = quad("sheet", 2, (-0.5, 0.5), (-0.5, 0.5), 0.0)  # local frame; placed at y = 3 by its pose
    sheet.pose = translation((0.0, 3.0, 0.0))
    scene = RenderScene([wall], [sheet])
    embree = scene.embree
    before = render_frame(scene, CAMERA, POSE, options=RenderOptions(rgb=False))
    pushed = sheet.vertices.copy()
    pushed[:, 1] -= 0.5
    pushed[:2, 2] -= 0.3  # stretch the bottom edge downwards too
    after = render_frame(scene, CAMERA, POSE, {"sheet": MeshState(vertices=pushed)}, RenderOptions(rgb=False))

    assert scene.embree is embree
    centre = (60, 80)
    assert before.instance[centre] == after.instance[centre] == 2
    assert before.depth[centre] == pytest.approx(3.0, rel=1e-6)
    assert after.depth[centre] == pytest.approx(2.5, rel=1e-6)
    assert (after.instance == 2).sum() > (before.instance == 2).sum()
    bottom_row = box_tuple(after.boxes_2d_tight[after.instance_ids.tolist().index(2)])[3]
    assert bottom_row == math.floor(F * 0.8 / 2.5 + 59.5)
    assert after.boxes_3d[after.instance_ids.tolist().index(2)]["z_min"] == pytest.approx(-0.8)
    assert np.all(after.depth[after.instance == 1] == pytest.approx(6.0, rel=1e-6))


def test_camera_from_fov_and_from_intrinsics_agree():
    from_fov = Camera.from_fov(W, H, 2 * math.degrees(math.atan(W / (2 * F))), near=0.05, far=50.0)
    assert from_fov.K == pytest.approx(CAMERA.K)
    assert (from_fov.width, from_fov.height, from_fov.near, from_fov.far) == (W, H, 0.05, 50.0)
    square = Camera.from_fov(W, H, 90.0)
    assert square.fx == pytest.approx(W / 2) and square.fy == square.fx and square.cx == (W - 1) / 2
    scene = RenderScene([cube("cube", 1, (0.2, 3.0, -0.1))])
    a = render_frame(scene, from_fov, POSE, options=RenderOptions(rgb=False))
    b = render_frame(scene, CAMERA, POSE, options=RenderOptions(rgb=False))
    np.testing.assert_allclose(a.depth, b.depth, rtol=1e-6)
    assert np.array_equal(a.instance, b.instance)
    eye, target = np.array([1.0, -2.0, 1.5]), np.array([0.0, 1.0, 0.5])
    pose = look_at(eye, target)
    assert np.allclose(pose[:3, :3].T @ pose[:3, :3], np.eye(3)) and np.linalg.det(pose[:3, :3]) == pytest.approx(1)
    forward = (target - eye) / np.linalg.norm(target - eye)
    assert pose[:3, 2] == pytest.approx(forward) and pose[2, 1] < 0  # image down = world down-ish


def test_bad_input_names_the_field(tmp_path):
    box = trimesh.creation.box()
    with pytest.raises(InputError, match="faces"):
        RenderMesh("bad", box.vertices, box.faces + 100, 1)
    with pytest.raises(InputError, match="uvs"):
        RenderMesh("bad", box.vertices, box.faces, 1, material=RenderMaterial(texture=np.zeros((2, 2, 3), np.uint8)))
    with pytest.raises(InputError, match="instance_id"):
        RenderMesh("bad", box.vertices, box.faces, 0)
    with pytest.raises(InputError, match="vertices"):
        RenderMesh("bad", np.zeros((0, 3)), np.zeros((0, 3), int), 1)
    with pytest.raises(InputError, match="instance_id"):
        RenderScene([cube("a", 1, (0, 3, 0)), cube("b", 1, (1, 3, 0))])
    with pytest.raises(InputError, match="radius"):
        PointLight((0, 0, 3), radius=-0.1)
    scene = RenderScene([], [cube("a", 1, (0, 3, 0))])
    with pytest.raises(InputError, match="vertices"):
        render_frame(scene, CAMERA, POSE, {"a": MeshState(vertices=np.zeros((3, 3)))})
    with pytest.raises(InputError, match="states"):
        render_frame(scene, CAMERA, POSE, {"nope": MeshState()})
    with pytest.raises(InputError, match="degenerate"):
        RenderMesh("flat", [[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]], 1)
    with pytest.raises(InputError, match="at least one mesh"):
        RenderScene([])
    with pytest.raises(InputError, match="K"):
        Camera.from_intrinsics(np.eye(2), W, H)
    with pytest.raises(InputError, match="missing.png"):
        load_texture(tmp_path / "missing.png")


def random_meshes(seed_name: str) -> list[RenderMesh]:
    """Closed blobs (deformed spheres and boxes: every edge joins two faces) and open triangle soups, some
    crossing the near plane, some reaching past the image border, overlapping one another."""
    rng = generator(0, seed_name)
    meshes = []
    for k in range(6):
        if k % 3 == 2:  # open: loose triangles around a centre
            center = rng.uniform([-1.5, 1.0, -1.0], [1.5, 4.0, 1.0])
            vertices = center + rng.normal(0.0, 0.6, (30, 3))
            faces = rng.integers(0, 30, (12, 3))
            faces = faces[(faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])]
        else:
            base = trimesh.creation.icosphere(2, 0.5) if k % 3 == 0 else trimesh.creation.box(extents=(1, 0.8, 0.6))
            vertices = base.vertices @ rng.normal(0.0, 0.6, (3, 3)) + rng.normal(0.0, 0.03, base.vertices.shape)
            vertices += rng.uniform([-1.5, 1.5, -1.0], [1.5, 4.0, 1.0])
            faces = base.faces
        meshes.append(RenderMesh(f"m{k}", vertices, faces, k + 1))
    near = trimesh.creation.box(extents=(3.03, 0.61, 0.53))  # crosses the near plane (y = 0.05) below the axis
    meshes.append(RenderMesh("near", near.vertices + [0.31, 0.12, -0.41], near.faces, 7))
    return meshes


def alone_masks(meshes: list[RenderMesh]) -> list[np.ndarray]:
    """Ray-cast truth: the pixels each mesh covers when rendered on its own."""
    return [render_frame(RenderScene([mesh]), CAMERA, POSE, options=RenderOptions(rgb=False, boxes=False)).instance > 0
            for mesh in meshes]


@pytest.mark.parametrize("seed_name", ["tests/render/alone-a", "tests/render/alone-b"])
def test_rasterised_alone_coverage_equals_alone_ray_casts(seed_name):
    meshes = random_meshes(seed_name)
    assert sum(closed_edges(m.faces) is not None for m in meshes) == 5  # both rasterising paths are used
    scene = RenderScene(meshes)
    view = layer_view(CAMERA, POSE, scene.static)
    alone = AloneCoverage(CAMERA, view, None)
    for mesh, (truth, blank) in enumerate(zip(alone_masks(meshes), [np.zeros((H, W), np.int64)] * len(meshes))):
        # Pixels that do not show the mesh in a blank image = every pixel it covers.
        assert alone.hidden(False, mesh, blank, -1) == truth.sum() > 50
        x0, y0, x1, y1 = view.boxes[mesh]
        assert truth.sum() == truth[y0:y1 + 1, x0:x1 + 1].sum()  # coverage stays inside the projected box
        drawn = np.zeros((H, W), bool)
        drawn[y0:y1 + 1, x0:x1 + 1] = alone._drawn.mask(alone._row[(False, mesh)])
        assert np.array_equal(drawn, truth), meshes[mesh].name


def test_occlusion_ratios_equal_those_of_alone_ray_casts():
    """Overlapping closed and open meshes, static and dynamic, one crossing the near plane."""
    meshes = random_meshes("tests/render/ratios")
    scene = RenderScene(meshes[::2], meshes[1::2])
    frame = render_frame(scene, CAMERA, POSE, options=RenderOptions(rgb=False))
    truth = dict(zip([m.instance_id for m in meshes], alone_masks(meshes)))
    ratios = frame.boxes_2d_tight["occlusionRatio"]
    assert len(frame.instance_ids) >= 5 and ratios.max() > 0.3
    for row, instance_id in enumerate(frame.instance_ids.tolist()):
        visible = frame.instance == instance_id
        assert not np.any(visible & ~truth[instance_id])
        expected = np.float32(1.0 - visible.sum() / truth[instance_id].sum())
        assert ratios[row] == frame.boxes_2d_loose["occlusionRatio"][row] == expected


def test_tile_size_worker_count_and_job_split_do_not_change_the_frame(monkeypatch):
    state = {"ball": MeshState(pose=translation((0.6, 3.4, 0.1)), next_pose=translation((0.7, 3.4, 0.1)))}
    next_camera = translation((0.1, 0, 0)) @ POSE
    frames = []
    # One row per tile (boxes merged over 120 tiles), uneven tiles, one tile; one to three tile workers; a tile in
    # one job or in two (depth first).
    for tile_pixels, workers, depth_first in ((W, 3, False), (7 * W, 1, True), (H * W, 2, False), (5 * W, 2, True)):
        monkeypatch.setattr(tiles, "TILE_PIXELS", tile_pixels)
        frames.append(render_frame(build_mixed_scene(), CAMERA, POSE, state, RenderOptions(threads=workers),
                                   next_pose=next_camera, depth_first=depth_first))
    for frame in frames[1:]:
        for name in ("rgb", "depth", "distance", "instance", "semantic", "normals", "flow", "boxes_2d_tight",
                     "boxes_2d_loose", "boxes_3d"):
            assert getattr(frame, name).tobytes() == getattr(frames[0], name).tobytes(), name


def test_occlusion_packets_match_embreex_and_skip_rays_of_no_reach():
    """Shadow-ray packets agree with embreex's one-ray OCCLUDED query, rays of zero or negative reach included
    (such rays are not traced: zero reach is never blocked, negative reach always, as embreex reports them)."""
    rng = generator(0, "tests/render/occlusion")
    sphere = trimesh.creation.icosphere(2, 1.0)
    vertices = (sphere.vertices + [0.0, 0.0, 5.0]).astype(np.float32)
    count = 3001  # not a multiple of the packet width
    origins = rng.uniform(-2.0, 2.0, (count, 3)).astype(np.float32)
    directions = rng.normal(0.0, 0.3, (count, 3)) + [0.0, 0.0, 1.0]
    directions = (directions / np.linalg.norm(directions, axis=1, keepdims=True)).astype(np.float32)
    reach = rng.uniform(0.0, 10.0, count).astype(np.float32)
    reach[::7], reach[1::11] = 0.0, -1.0  # facing away from the light; next to it

    reference = EmbreeScene()
    TriangleMesh(reference, vertices, sphere.faces)
    expected = reference.run(origins, directions, reach.copy(), "OCCLUDED", 0) != -1
    shared = SharedScene(dynamic=False)
    shared.add(vertices, sphere.faces, BUILD_QUALITY_MEDIUM)
    shared.commit()
    blocked = trace_occlusion(shared.embree, origins, directions, reach)
    assert 300 < expected.sum() < count - 300
    np.testing.assert_array_equal(blocked, expected)
    assert not blocked[reach == 0].any() and blocked[reach < 0].all()


def test_closed_edges_pair_faces_of_opposite_winding():
    box = trimesh.creation.box()
    edges = closed_edges(box.faces)
    assert edges.shape == (18, 4)
    for u, v, f, g in edges:
        assert (u, v) in zip(box.faces[f], np.roll(box.faces[f], -1))
        assert (v, u) in zip(box.faces[g], np.roll(box.faces[g], -1))
    assert closed_edges(np.array([[0, 1, 2], [0, 2, 3]])) is None  # open quad
    flipped = box.faces.copy()
    flipped[0] = flipped[0][::-1]
    assert closed_edges(flipped) is None


def test_embree_binding_traces_like_embreex_and_updates_in_place():
    rng = generator(0, "tests/render/embree")
    sphere = trimesh.creation.icosphere(2, 1.0)
    vertices = (sphere.vertices + [0.0, 0.0, 5.0]).astype(np.float32)
    origins = np.zeros((2000, 3), np.float32)
    directions = rng.normal(0.0, 0.1, (2000, 3)) + [0.0, 0.0, 1.0]
    directions = (directions / np.linalg.norm(directions, axis=1, keepdims=True)).astype(np.float32)
    tfar = np.full(2000, 100.0, np.float32)

    reference = EmbreeScene()
    TriangleMesh(reference, vertices, sphere.faces)
    expected = reference.run(origins, directions, tfar.copy(), "INTERSECT", 1)
    shared = SharedScene(dynamic=False)
    assert shared.add(vertices, sphere.faces, BUILD_QUALITY_MEDIUM) == 0
    shared.commit()
    hits = intersect(shared.embree, origins, directions, tfar)
    hit = expected["primID"] >= 0
    assert 1000 < hit.sum() < 2000
    np.testing.assert_array_equal(hits.prim, expected["primID"])
    np.testing.assert_array_equal(hits.t[hit], expected["tfar"][hit])
    np.testing.assert_array_equal(hits.u, expected["u"])
    np.testing.assert_array_equal(hits.normal, expected["Ng"])
    assert np.all(hits.geometry[hit] == 0) and np.all(hits.geometry[~hit] == -1)

    # Two walls across every ray; moving the near one behind the far one hands the hits over.
    wall = np.array([[-50, -50, 0], [50, -50, 0], [50, 50, 0], [-50, 50, 0]], np.float32)
    faces = np.array([[0, 1, 2], [0, 2, 3]])
    dynamic = SharedScene(dynamic=True)
    assert dynamic.add(wall + [0, 0, 5], faces, BUILD_QUALITY_LOW) == 0
    assert dynamic.add(wall + [0, 0, 30], faces, BUILD_QUALITY_MEDIUM) == 1
    dynamic.commit()
    before = intersect(dynamic.embree, origins, directions, tfar)
    dynamic.set_vertices(0, wall + [0, 0, 45])
    dynamic.commit()
    after = intersect(dynamic.embree, origins, directions, tfar)
    assert np.all(before.geometry == 0) and np.all(after.geometry == 1)
    np.testing.assert_allclose(before.t, 5.0 / directions[:, 2], rtol=1e-6)
    np.testing.assert_allclose(after.t, 30.0 / directions[:, 2], rtol=1e-6)


def test_camera_rays_trace_in_one_loop_like_embreex_one_ray_at_a_time():
    """The compiled camera loop (rays made, traced as packets and compacted to their hits) agrees bit for bit with
    numpy's rotation of the ray table and with embreex tracing the same rays one at a time, across static and
    dynamic geometry and rays that leave the scene."""
    scene = build_mixed_scene()
    scene.set_frame({"ball": MeshState(pose=translation((0.5, 3.0, 0.2)))})
    pose = look_at((0.3, -1.0, 0.4), (2.0, 8.0, 0.0))  # sees the ball, the box and past the back wall's edge
    camera = Camera.from_fov(203, 77, 150.0)  # pixel count not a multiple of the packet width
    table = ray_table(camera, pose, 1, (5 * camera.width + 3, camera.width * camera.height))
    hits = trace_camera(scene.embree, table, scene.geometry_faces, scene.table.face_mesh)

    components = linear_map(table.local, pose[:3, :3])
    np.testing.assert_array_equal(hits.components, components)
    origins = (components * table.offset + table.eye[:, None]).T
    expected = scene.embree.run(np.ascontiguousarray(origins), np.ascontiguousarray(components.T),
                                table.tfar.copy(), "INTERSECT", 1)
    hit = np.flatnonzero(expected["primID"] >= 0)
    assert 0.2 * len(table.tfar) < len(hit) < 0.9 * len(table.tfar)
    assert set(expected["geomID"][hit]) == {0, 1}  # static and dynamic hits
    np.testing.assert_array_equal(hits.rays, hit)
    face = scene.geometry_faces[expected["geomID"][hit]] + expected["primID"][hit]
    np.testing.assert_array_equal(hits.face, face)
    np.testing.assert_array_equal(hits.mesh, scene.table.face_mesh[face])
    for name, key in (("t", "tfar"), ("u", "u"), ("v", "v"), ("normal", "Ng")):
        np.testing.assert_array_equal(getattr(hits, name), expected[key][hit], name)

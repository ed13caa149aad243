"""Cycles RGB (simulation.cycles, the `cycles` extra) against analytic geometry and the ray caster's ground truth:
lit versus shadowed floor and the lights' calibration, Cycles' own depth and object-index passes through the
same pixels as the ray caster (skewed intrinsics, a dynamic mesh posed per frame), motion blur, and a
`grade generate` run and a `grade replay` whose RGB comes from Cycles while their ground truth stays
byte-identical."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import trimesh
from PIL import Image

from core.config import CyclesConfig, RenderConfig
from core.config_io import load_experiment
from pipeline.generate import generate
from replay.overrides import ReplayOverrides
from replay.run import replay_run
from simulation.cycles import CyclesRenderer, CyclesSettings, expose, renderer_for
from simulation.cycles.blender import bpy
from simulation.render import (
    Camera,
    DirectionalLight,
    EnvironmentMap,
    Exposure,
    MeshState,
    PointLight,
    RenderMaterial,
    RenderMesh,
    RenderOptions,
    RenderScene,
    look_at,
    render_frame,
)
from simulation.render.shading import srgb_to_linear
from tests.conftest import CONFIGS, requires_extra

# Skips where bpy is not installed (no wheels past Python 3.11); fails instead in CI (tests/conftest.py).
pytestmark = requires_extra("bpy")

W, H = 160, 120
LIGHT = np.array([-2.0, -1.5, 3.0])
LIGHT_INTENSITY = 9.0  # irradiance at 1 m
FLOOR_ALBEDO = 0.8
BOX_MIN, BOX_MAX = np.array([-0.5, -0.5, 0.0]), np.array([0.5, 0.5, 1.0])
PENUMBRA = 0.05  # m: pixels whose light ray passes closer than this to the box's surface are left out
EYE, TARGET = np.array([3.0, -3.5, 3.0]), np.array([0.3, 0.6, 0.0])


def translation(offset) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, 3] = offset
    return pose


def floor() -> RenderMesh:
    vertices = np.array([[-6.0, -6.0, 0.0], [6.0, -6.0, 0.0], [6.0, 6.0, 0.0], [-6.0, 6.0, 0.0]])
    return RenderMesh("floor", vertices, np.array([[0, 1, 2], [0, 2, 3]]), 1, 1,
                      RenderMaterial((FLOOR_ALBEDO,) * 3, roughness=1.0))


def box(name: str, instance_id: int, center, extents=(1.0, 1.0, 1.0)) -> RenderMesh:
    mesh = trimesh.creation.box(extents=extents)
    return RenderMesh(name, mesh.vertices, mesh.faces, instance_id, 2, RenderMaterial((0.6, 0.3, 0.2)),
                      pose=translation(center))


def segment_hits_box(points: np.ndarray, target: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether the segments from `points` (N, 3) to `target` pass through the box [lo, hi] (slab test)."""
    direction = target - points
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - points) / direction, (hi - points) / direction
    enter = np.nanmax(np.minimum(t1, t2), axis=1)
    leave = np.nanmin(np.maximum(t1, t2), axis=1)
    return (enter <= leave) & (leave > 0) & (enter < 1)


@pytest.fixture(scope="module")
def shadow_scene() -> tuple[RenderScene, Camera, np.ndarray]:
    scene = RenderScene([floor(), box("box", 2, (0.0, 0.0, 0.5))], [], [PointLight(tuple(LIGHT), LIGHT_INTENSITY,
                                                                                    radius=0.02)],
                        background=(0.0, 0.0, 0.0))
    return scene, Camera.from_fov(W, H, 70.0, near=0.05, far=50.0), look_at(EYE, TARGET)


def test_lit_floor_is_brighter_than_the_box_shadow_and_as_bright_as_the_ray_caster_says(shadow_scene):
    scene, camera, pose = shadow_scene
    truth = render_frame(scene, camera, pose, options=RenderOptions(rgb=False, boxes=False))
    renderer = CyclesRenderer(scene, CyclesSettings(samples=8, denoise=False))
    linear = renderer.render_linear(camera, pose)
    rgb = expose(linear, Exposure(mode="auto", tone_map="filmic"))
    assert rgb.shape == (H, W, 3) and rgb.dtype == np.uint8 and len(np.unique(rgb)) > 50

    # Floor points from the ray caster's depth, sorted by whether the box blocks their light (with a margin).
    v, u = np.nonzero(truth.instance == 1)
    rays = np.stack([(u - camera.cx) / camera.fx, (v - camera.cy) / camera.fy, np.ones(len(u))], axis=1)
    points = (rays * truth.depth[v, u, None]) @ pose[:3, :3].T + pose[:3, 3]
    shadowed = segment_hits_box(points, LIGHT, BOX_MIN + PENUMBRA, BOX_MAX - PENUMBRA)
    lit = ~segment_hits_box(points, LIGHT, BOX_MIN - PENUMBRA, BOX_MAX + PENUMBRA)
    assert shadowed.sum() > 200 and lit.sum() > 2000
    luminance = linear[v, u].mean(axis=1)
    assert luminance[lit].mean() > 4 * luminance[shadowed].mean()
    # Direct light on a Lambertian floor: albedo x intensity x cos / d^2, the ray caster's diffuse term.
    to_light = LIGHT - points[lit]
    distance = np.linalg.norm(to_light, axis=1)
    expected = FLOOR_ALBEDO * LIGHT_INTENSITY * (to_light[:, 2] / distance) / distance**2
    assert 0.85 < np.median(luminance[lit] / expected) < 1.15


def test_a_sun_lights_as_the_ray_caster_says_and_casts_the_boxs_shadow_along_its_direction(shadow_scene):
    _, camera, pose = shadow_scene
    sun = DirectionalLight((-1.5, 1.0, 2.0), 1.5)  # the shadow falls towards +x, -y: in view
    scene = RenderScene([floor(), box("box", 2, (0.0, 0.0, 0.5))], [], [sun], background=(0.0, 0.0, 0.0))
    truth = render_frame(scene, camera, pose, options=RenderOptions(rgb=False, boxes=False))
    linear = CyclesRenderer(scene, CyclesSettings(samples=8, denoise=False)).render_linear(camera, pose)
    v, u = np.nonzero(truth.instance == 1)
    rays = np.stack([(u - camera.cx) / camera.fx, (v - camera.cy) / camera.fy, np.ones(len(u))], axis=1)
    points = (rays * truth.depth[v, u, None]) @ pose[:3, :3].T + pose[:3, 3]
    far = points + 100.0 * np.asarray(sun.direction)  # towards the sun, beyond the box
    shadowed = segment_hits_box(points, far, BOX_MIN + PENUMBRA, BOX_MAX - PENUMBRA)
    lit = ~segment_hits_box(points, far, BOX_MIN - PENUMBRA, BOX_MAX + PENUMBRA)
    assert shadowed.sum() > 200 and lit.sum() > 2000
    luminance = linear[v, u].mean(axis=1)
    assert luminance[lit].mean() > 4 * luminance[shadowed].mean()
    # No falloff: albedo x intensity x cos(sun, up) everywhere on the lit floor.
    expected = FLOOR_ALBEDO * sun.intensity * sun.direction[2]
    assert 0.85 < np.median(luminance[lit]) / expected < 1.15


def test_depth_and_object_index_passes_match_the_ray_caster_through_the_same_pixels():
    # Non-square pixels and an off-centre principal point; a dynamic box, deformed and moved per frame.
    camera = Camera.from_intrinsics(np.array([[150.0, 0.0, 70.3], [0.0, 165.0, 66.8], [0.0, 0.0, 1.0]]), W, H,
                                    near=0.05, far=50.0)
    scene = RenderScene([floor(), box("box", 2, (0.0, 0.0, 0.5))], [box("mover", 3, (0.0, 0.0, 0.0), (0.4, 0.4, 0.4))],
                        [PointLight(tuple(LIGHT), LIGHT_INTENSITY)])
    renderer = CyclesRenderer(scene, CyclesSettings(samples=1, denoise=False))
    pose = look_at(EYE, TARGET)
    rest = scene.dynamic_table.meshes[0].vertices
    # The last frame leaves the vertices to the mesh's rest ones, sent again after the stretched frame.
    for center, stretch in (((1.2, -0.8, 0.3), 1.0), ((-0.8, 1.5, 1.4), 2.0), ((-0.8, 1.5, 1.4), None)):
        vertices = None if stretch is None else rest * [1.0, 1.0, stretch]
        states = {"mover": MeshState(vertices=vertices, pose=translation(center))}
        truth = render_frame(scene, camera, pose, states, RenderOptions(rgb=False, boxes=False))
        depth, index = renderer.passes(camera, pose, states)
        assert (truth.instance == 3).sum() > 100  # the mover is in view
        assert (index == truth.instance).mean() > 0.99
        both = (truth.instance > 0) & (index == truth.instance)
        assert np.abs(depth[both] - truth.depth[both]).max() < 0.01


def test_motion_blur_smears_a_moving_box_along_its_path():
    scene = RenderScene([floor()], [box("mover", 2, (0.0, 0.0, 0.0), (0.3, 0.3, 0.3))],
                        [PointLight((0.0, 0.0, 4.0), 16.0)], background=(0.0, 0.0, 0.0))
    camera = Camera.from_fov(80, 60, 60.0)
    pose = look_at(np.array([0.0, -0.01, 5.0]), np.array([0.0, 0.0, 0.0]))
    opening, closing = {"mover": MeshState(pose=translation((-1.0, 0.0, 0.5)))}, {
        "mover": MeshState(pose=translation((1.0, 0.0, 0.5)))}
    start = render_frame(scene, camera, pose, opening, RenderOptions(rgb=False, boxes=False)).instance == 2
    end = render_frame(scene, camera, pose, closing, RenderOptions(rgb=False, boxes=False)).instance == 2
    between = np.zeros_like(start)
    rows, columns = np.nonzero(start | end)
    between[rows.min():rows.max() + 1, columns.min():columns.max() + 1] = True
    between &= ~(start | end)  # swept over only mid-exposure
    sharp = CyclesRenderer(scene, CyclesSettings(samples=4, denoise=False)).render_linear(camera, pose, opening)
    blurred = CyclesRenderer(scene, CyclesSettings(samples=16, denoise=False, motion_blur=0.01)).render_linear(
        camera, pose, opening, (pose, closing))
    # The box's reddish colour: the floor is grey, so red minus blue measures box coverage. A pixel on the path
    # sees the 0.3 m box for 0.3 / 2 m = 15% of the exposure.
    sharp_red, red = sharp[..., 0] - sharp[..., 2], blurred[..., 0] - blurred[..., 2]
    box_red = sharp_red[start].mean()
    assert between.sum() > 20 and sharp_red[between].mean() < 0.02 * box_red
    assert 0.075 * box_red < red[between].mean() < 0.3 * box_red
    assert red[start].mean() < 0.3 * box_red


def test_textures_and_the_environment_image_look_as_in_the_ray_caster():
    # A textured quad (red grows along u, green along v) in uniform white light: Cycles' radiance is the albedo,
    # as the ray caster's is with a white ambient term and no lights.
    u, v = np.meshgrid(np.linspace(0, 1, 32), np.linspace(1, 0, 32))  # rows from the top: v = 1 first
    texture = (np.stack([u, v, np.full_like(u, 0.3)], axis=-1) * 255).round().astype(np.uint8)
    quad = RenderMesh("quad", np.array([[-1.0, 3.0, -0.75], [1.0, 3.0, -0.75], [1.0, 3.0, 0.75], [-1.0, 3.0, 0.75]]),
                      np.array([[0, 1, 2], [0, 2, 3]]), 1, 1, RenderMaterial(texture=texture, roughness=1.0),
                      np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]))
    scene = RenderScene([quad], [], [], ambient=(1.0, 1.0, 1.0), background=(1.0, 1.0, 1.0))
    camera, pose = Camera.from_fov(80, 60, 60.0), look_at(np.zeros(3), np.array([0.0, 1.0, 0.0]))
    truth = render_frame(scene, camera, pose, options=RenderOptions(boxes=False))
    linear = CyclesRenderer(scene, CyclesSettings(samples=16, denoise=False)).render_linear(camera, pose)
    on = truth.instance == 1
    assert on.sum() > 1000
    expected = srgb_to_linear(truth.rgb)[on]
    for channel in (0, 1):  # red along u, green along v: a flipped or swapped texture would anti-correlate
        assert np.corrcoef(linear[on][:, channel], expected[:, channel])[0, 1] > 0.95
    bright = expected > 0.2
    assert 0.85 < np.median(linear[on][bright] / expected[bright]) < 1.2

    # An equirectangular environment (red along the columns, green down the rows) seen towards +X and +Y.
    columns, rows = np.meshgrid(np.linspace(0, 1, 64), np.linspace(0, 1, 32))
    environment = EnvironmentMap.of(np.stack([columns, rows, np.full_like(rows, 0.2)], axis=-1))
    far = RenderMesh("far", np.array([[-1.0, -1.0, -90.0], [1.0, -1.0, -90.0], [0.0, 1.0, -90.0]]),
                     np.array([[0, 1, 2]]), 1)  # a scene needs a mesh: this one is out of view
    scene = RenderScene([far], [], [], environment=environment)
    renderer = CyclesRenderer(scene, CyclesSettings(samples=4, denoise=False))
    for target in ((1.0, 0.0, 0.3), (0.0, 1.0, -0.3)):
        pose = look_at(np.zeros(3), np.array(target))
        truth = render_frame(scene, camera, pose, options=RenderOptions(boxes=False))
        rgb = renderer.render(camera, pose)
        difference = np.abs(rgb.astype(int) - truth.rgb.astype(int))
        assert truth.rgb.std() > 10 and difference.mean() < 2 and difference.max() < 8


def test_every_config_setting_reaches_blenders_scene(shadow_scene):
    scene = shadow_scene[0]
    chosen = CyclesConfig(samples=5, adaptive_threshold=0.02, adaptive_min_samples=3, denoise_prefilter="accurate",
                          motion_blur=0.01, max_bounces=7, diffuse_bounces=2, glossy_bounces=1, light_tree=False)
    assert chosen.model_dump() != CyclesConfig().model_dump()
    settings = renderer_for(RenderConfig(rgb="cycles", cycles=chosen), scene, seed=3).settings
    assert {key: getattr(settings, key) for key in CyclesConfig.model_fields} == chosen.model_dump()
    cycles = bpy().context.scene.cycles
    assert (cycles.samples, cycles.use_adaptive_sampling, cycles.adaptive_threshold, cycles.adaptive_min_samples) == (
        5, True, pytest.approx(0.02), 3)
    assert (cycles.use_denoising, cycles.denoising_prefilter) == (True, "ACCURATE")
    assert (cycles.max_bounces, cycles.diffuse_bounces, cycles.glossy_bounces) == (7, 2, 1)
    assert not cycles.use_light_tree and bpy().context.scene.render.use_motion_blur
    CyclesRenderer(scene, CyclesSettings(adaptive_threshold=0.0, denoise_prefilter="none"))
    cycles = bpy().context.scene.cycles  # a new renderer empties Blender: the old scene's settings are gone
    assert not cycles.use_adaptive_sampling and cycles.denoising_prefilter == "NONE"


def test_bounces_carry_the_only_light_into_the_boxs_shadow(shadow_scene):
    # The shadowed floor sees only the box's unlit back, which sees the lit floor: the light reaches it after
    # two diffuse bounces and not before.
    scene, camera, pose = shadow_scene
    truth = render_frame(scene, camera, pose, options=RenderOptions(rgb=False, boxes=False))
    v, u = np.nonzero(truth.instance == 1)
    rays = np.stack([(u - camera.cx) / camera.fx, (v - camera.cy) / camera.fy, np.ones(len(u))], axis=1)
    points = (rays * truth.depth[v, u, None]) @ pose[:3, :3].T + pose[:3, 3]
    shadowed = segment_hits_box(points, LIGHT, BOX_MIN + PENUMBRA, BOX_MAX - PENUMBRA)
    renderer = CyclesRenderer(scene, CyclesSettings(samples=8, denoise=False, diffuse_bounces=0, glossy_bounces=0))
    direct = renderer.render_linear(camera, pose)[v, u][shadowed]
    renderer.configure(replace(renderer.settings, diffuse_bounces=1))
    once = renderer.render_linear(camera, pose)[v, u][shadowed]
    renderer.configure(replace(renderer.settings, diffuse_bounces=2))
    twice = renderer.render_linear(camera, pose)[v, u][shadowed]
    assert direct.max() == 0 and twice.mean() > 20 * max(once.mean(), 1e-6)


def test_adaptive_sampling_and_denoising_give_the_same_bytes_for_the_same_seed(shadow_scene):
    scene, camera, pose = shadow_scene
    settings = CyclesSettings(samples=16, adaptive_threshold=0.05, denoise=True, seed=11)
    first = CyclesRenderer(scene, settings).render_linear(camera, pose)
    again = CyclesRenderer(scene, settings).render_linear(camera, pose)
    other = CyclesRenderer(scene, replace(settings, seed=12)).render_linear(camera, pose)
    assert first.tobytes() == again.tobytes() and first.tobytes() != other.tobytes()


# A tiny run: one small room, one human, one flying object, a 10 Hz camera for 0.2 s.
TINY = ["seed=3", "simulation.duration=0.2", "simulation.bootstrap=0", "environment.rooms=1",
        "environment.furniture={min: 2, max: 2}", "humans.count={min: 1, max: 1}",
        "flying_objects.count={min: 1, max: 1}", f"robot.sensors.cameras.0.width={W}",
        f"robot.sensors.cameras.0.height={H}", "robot.sensors.cameras.0.rate_hz=10"]
CYCLES = {"render.rgb": "cycles", "render.cycles.samples": 2, "render.cycles.denoise": False}


def _files(run: Path, kind: str) -> dict[str, str]:
    folder = run / "gt" / "camera" / kind
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


@pytest.mark.slow
def test_generate_and_replay_write_cycles_rgb_with_the_ray_casters_ground_truth(tmp_path):
    assets = tmp_path / "assets"
    runs = {}
    for name, extra in (("raycast", []), ("cycles", [f"{key}={json.dumps(value)}" for key, value in CYCLES.items()])):
        runs[name] = tmp_path / name
        generate(load_experiment(CONFIGS / "demo.yaml", [*TINY, *extra, f"assets_dir={assets}"]), runs[name])
    # The ray-cast run replayed with Cycles RGB: the same frames as the Cycles run.
    runs["replay"] = tmp_path / "replay"
    replay_run(runs["raycast"], runs["replay"], ReplayOverrides(set=CYCLES))
    for kind in ("depth", "instance", "semantic"):
        assert _files(runs["raycast"], kind) == _files(runs["cycles"], kind) == _files(runs["replay"], kind)
    assert (runs["raycast"] / "gt/camera/frames.jsonl").read_bytes() == (runs["cycles"] / "gt/camera/frames.jsonl"
                                                                         ).read_bytes()
    ray, cycles = _files(runs["raycast"], "rgb"), _files(runs["cycles"], "rgb")
    assert ray.keys() == cycles.keys() and len(ray) == 3 and _files(runs["replay"], "rgb") == cycles
    for name in ray:
        image = np.asarray(Image.open(runs["cycles"] / "gt/camera/rgb" / name))
        assert image.shape == (H, W, 3) and image.std() > 5
        assert ray[name] != cycles[name]

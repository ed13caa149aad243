"""The ray caster's quality presets against analytic cases: a sphere light's penumbra width behind an edge, the
cosine-weighted sky a floor sees in a corner and beside a wall (ambient occlusion through the irradiance probes),
the GGX lobe's normalisation and energy bounds; determinism and the config reaching the cameras."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.config_io import load_experiment
from core.errors import ConfigError
from simulation.render import (
    Camera,
    PointLight,
    RenderMaterial,
    RenderMesh,
    RenderOptions,
    RenderScene,
    look_at,
    render_frame,
)
from simulation.render.irradiance import ProbeSettings, bake, grid_shape
from simulation.render.quality import PRESETS, ShadingQuality, preset
from simulation.render.shade_kernels import ggx_lobe
from simulation.render.shading import srgb_to_linear

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
WHITE = RenderMaterial(base_color=(1.0, 1.0, 1.0), roughness=1.0)
BLACK = RenderMaterial(base_color=(0.0, 0.0, 0.0), roughness=1.0)


def rectangle(name: str, instance_id: int, corners, material: RenderMaterial) -> RenderMesh:
    """A rectangle with corners a, b, c, d (counter-clockwise seen from its front)."""
    return RenderMesh(name, np.asarray(corners, float), np.array([[0, 1, 2], [0, 2, 3]]), instance_id, 1, material)


def linear(frame) -> np.ndarray:
    """The frame's colour back in linear units (exposure fixed at 1, clipped: the scenes stay below 1)."""
    return srgb_to_linear(frame.rgb)[..., 0].astype(np.float64)


# ---------------------------------------------------------------- soft shadows: the penumbra of a sphere light
LIGHT_HEIGHT, EDGE_HEIGHT, LIGHT_RADIUS, INTENSITY = 2.0, 1.0, 0.2, 1.0
TOP = Camera.from_intrinsics(np.array([[200.0, 0, 99.5], [0, 200.0, 99.5], [0, 0, 1]]), 200, 200, 0.05, 50.0)


def penumbra_scene(with_plate: bool) -> RenderScene:
    """A white floor at z = 0, a black plate over x < 0 at z = EDGE_HEIGHT, a sphere light above x = 0."""
    floor = rectangle("floor", 1, [[-5, -5, 0], [5, -5, 0], [5, 5, 0], [-5, 5, 0]], WHITE)
    plate = rectangle("plate", 2, [[-5, -5, EDGE_HEIGHT], [0, -5, EDGE_HEIGHT], [0, 5, EDGE_HEIGHT],
                                   [-5, 5, EDGE_HEIGHT]], BLACK)
    light = PointLight((0.0, 0.0, LIGHT_HEIGHT), INTENSITY, radius=LIGHT_RADIUS)
    return RenderScene([floor, plate] if with_plate else [floor], lights=[light], ambient=(0.0, 0.0, 0.0))


def floor_profile(quality: ShadingQuality, with_plate: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Floor x (m) of each image column and the linear brightness (rows, columns), seen straight down from between
    the floor and the plate (columns run along x, rows along y)."""
    height = 0.9
    pose = look_at(np.array([0.0, 0.0, height]), np.array([0.0, 0.0, 0.0]), up=(0.0, 1.0, 0.0))
    frame = render_frame(penumbra_scene(with_plate), TOP, pose, options=RenderOptions(boxes=False, quality=quality))
    # Pixel column c sees floor x = (c - cx) / f * height along the camera's right axis (world x here).
    x = (np.arange(TOP.width) - TOP.K[0, 2]) / TOP.K[0, 0] * height * pose[0, 0]
    return x, linear(frame)


def disc_share(x: np.ndarray) -> np.ndarray:
    """The analytic share of the light's disc a floor point at x sees past the plate's edge: the ray to disc point
    lx crosses the plate's height at x + (lx - x) h / H, which must be >= 0, so lx >= -x (H - h) / h; the share of
    a unit disc beyond c is (acos(c) - c sqrt(1 - c^2)) / pi."""
    c = np.clip(-x * (LIGHT_HEIGHT - EDGE_HEIGHT) / EDGE_HEIGHT / LIGHT_RADIUS, -1, 1)
    return (np.arccos(c) - c * np.sqrt(1 - c * c)) / np.pi


@pytest.mark.parametrize(("samples", "tolerance"), [(16, 0.06), (2, 0.1)])
def test_sphere_light_penumbra_follows_the_disc_the_edge_uncovers(samples, tolerance):
    # Similar triangles: the penumbra is w = 2 R h / (H - h) wide around x = 0; every row of the image crosses the
    # edge at the same x, so the rows' mean share of light seen estimates the disc's uncovered share there.
    width = 2 * LIGHT_RADIUS * EDGE_HEIGHT / (LIGHT_HEIGHT - EDGE_HEIGHT)
    soft = ShadingQuality(shadow_samples=samples)
    x, shaded = floor_profile(soft)
    _, open_floor = floor_profile(soft, with_plate=False)
    visible = shaded / open_floor
    margin = 0.01  # m: two pixels
    assert np.all(visible[:, x > width / 2 + margin] == 1.0)
    assert np.all(visible[:, x < -width / 2 - margin] == 0.0)
    inside = np.abs(x) < width / 2
    assert inside.sum() > 50
    assert np.abs(visible.mean(axis=0)[inside] - disc_share(x[inside])).max() < tolerance
    # Not a hard edge: around the penumbra's middle nearly every pixel sees part of the light, none all of it.
    middle = visible[:, np.abs(x) < width / 8]
    assert ((middle > 0) & (middle < 1)).mean() > 0.8


def test_hard_shadows_have_no_penumbra():
    x, shaded = floor_profile(PRESETS["fast"])
    _, open_floor = floor_profile(PRESETS["fast"], with_plate=False)
    visible = shaded / open_floor
    assert set(np.unique(visible[:, np.abs(x) > 0.01])) <= {0.0, 1.0}


# ---------------------------------------------------------------- indirect light: the sky seen from a corner
SKY = 0.6
SIZE = 200.0  # m: walls this long and high stand in for infinite ones
PROBES = ProbeSettings(spacing=1.0, rays=512, bounces=1, max_probes=2000)


def corner_scene(walls: int) -> RenderScene:
    """A white floor (0..SIZE)^2 at z = 0 with `walls` black walls (x = 0, then y = 0) under a uniform sky."""
    floor = rectangle("floor", 1, [[0, 0, 0], [SIZE, 0, 0], [SIZE, SIZE, 0], [0, SIZE, 0]], WHITE)
    x_wall = rectangle("x_wall", 2, [[0, 0, 0], [0, SIZE, 0], [0, SIZE, SIZE], [0, 0, SIZE]], BLACK)
    y_wall = rectangle("y_wall", 3, [[0, 0, 0], [0, 0, SIZE], [SIZE, 0, SIZE], [SIZE, 0, 0]], BLACK)
    return RenderScene([floor, x_wall, y_wall][:1 + walls], ambient=(0.0, 0.0, 0.0), background=(SKY, SKY, SKY))


def sky_share(walls: int, point: np.ndarray, count: int = 1000) -> float:
    """The cosine-weighted share of the upper hemisphere's directions from `point` that pass the black walls of
    corner_scene(walls) (the rectangles x = 0 and y = 0, 0..SIZE on both axes): a midpoint sum over (theta, phi)
    with each ray tested against the rectangles directly."""
    theta = (np.arange(count) + 0.5) * (np.pi / 2) / count
    phi = (np.arange(2 * count) + 0.5) * np.pi / count
    t, p = np.meshgrid(theta, phi, indexing="ij")
    direction = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1)
    open_sky = np.ones(t.shape, bool)
    for axis in range(walls):  # wall `axis` is the plane where coordinate `axis` is 0
        towards = direction[..., axis] < 0
        distance = np.where(towards, -point[axis] / np.where(towards, direction[..., axis], -1), np.inf)
        crossing = point + direction * distance[..., None]
        inside = np.all((crossing >= 0) & (crossing <= SIZE), axis=-1)
        open_sky &= ~(towards & inside)
    weight = np.cos(t) * np.sin(t)
    return float(np.sum(weight * open_sky) / np.sum(weight))


@pytest.mark.parametrize(("walls", "where", "ideal"), [(1, (5.0, SIZE / 2), 0.5), (2, (5.0, 5.0), 0.25)])
def test_floor_sees_the_share_of_the_sky_its_probes_see(walls, where, ideal):
    # Beside an infinite wall a floor point sees half the sky (cosine-weighted), in the corner of two a quarter
    # (ambient occlusion 1/2 and 1/4); the walls are black, so nothing bounces and the floor shows its albedo (1)
    # times the share of the sky's radiance its probes see. These floor points lie between the walls and the
    # first probes (grid_shape), whose share of this finite-walled sky is integrated directly.
    scene = corner_scene(walls)
    origin, _, _ = grid_shape(scene.static.world_vertices.min(axis=0), scene.static.world_vertices.max(axis=0),
                              PROBES)
    probe = np.array([origin[0], where[1] if walls == 1 else origin[1], origin[2]])
    expected = sky_share(walls, probe)
    assert expected == pytest.approx(ideal, rel=0.15)
    camera = Camera.from_intrinsics(np.array([[60.0, 0, 39.5], [0, 60.0, 29.5], [0, 0, 1]]), 80, 60, 0.05, 100.0)
    eye = np.array([*where, 3.0])
    pose = look_at(eye, eye - (0.0, 0.0, 3.0), up=(1.0, 0.0, 0.0))
    frame = render_frame(scene, camera, pose, options=RenderOptions(boxes=False, quality=ShadingQuality(
        probes=PROBES)))
    floor = frame.instance == 1
    assert floor.all()
    assert np.median(linear(frame)[floor]) == pytest.approx(expected * SKY, rel=0.02)
    flat = render_frame(scene, camera, pose, options=RenderOptions(boxes=False))
    assert np.all(linear(flat) == 0)  # without probes: the (zero) ambient term only


def test_probe_bake_is_deterministic_and_white_furnace_exact():
    # Open floor under a uniform sky: upward-facing cubes hold the sky's radiance (the Monte Carlo sum of the
    # cosine over a Fibonacci sphere is exact to well within 1%).
    static = corner_scene(0).static_scene()
    first = bake(static, np.zeros(0, np.int64), np.zeros((0, 3), np.float32), np.zeros(0, np.float32), PROBES)
    again = bake(static, np.zeros(0, np.int64), np.zeros((0, 3), np.float32), np.zeros(0, np.float32), PROBES)
    assert first.cubes.tobytes() == again.cubes.tobytes()
    upward = first.cubes[-1][..., 4, :][first.valid]
    assert np.allclose(upward, SKY, rtol=0.01)


# ---------------------------------------------------------------- GGX
def _ggx_values(alpha: float, n_dot_v: float, count: int = 400):
    """ggx_lobe over a (theta, phi) grid of light directions (midpoint rule) for a view at n.v in the xz plane."""
    theta = (np.arange(count) + 0.5) * (np.pi / 2) / count
    phi = (np.arange(2 * count) + 0.5) * (2 * np.pi) / (2 * count)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    light = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1)
    view = np.array([np.sqrt(1 - n_dot_v**2), 0.0, n_dot_v])
    half = light + view
    half /= np.linalg.norm(half, axis=-1, keepdims=True)
    values = np.vectorize(lambda nl, nh: ggx_lobe(np.float32(nl), np.float32(n_dot_v), np.float32(nh),
                                                  np.float32(alpha)))(light[..., 2], half[..., 2])
    solid_angle = np.sin(t) * (np.pi / 2 / count) * (2 * np.pi / (2 * count))
    return values, light[..., 2], half[..., 2], solid_angle


@pytest.mark.parametrize("alpha", [0.1, 0.3, 0.6, 1.0])
@pytest.mark.parametrize("n_dot_v", [0.2, 0.6, 1.0])
def test_ggx_reflects_at_most_the_light_it_gets(alpha, n_dot_v):
    # Directional albedo R(v) = (1/pi) integral of ggx_lobe (pi times the BRDF) n.l dw <= 1 (energy conservation);
    # single-scattering GGX loses little energy when smooth and seen head-on.
    values, n_dot_l, _, solid_angle = _ggx_values(alpha, n_dot_v)
    albedo = float(np.sum(values * n_dot_l * solid_angle) / np.pi)
    assert 0.2 < albedo <= 1.005
    if n_dot_v == 1.0:
        # Head-on, the same albedo from the textbook's microfacet form: microfacet normals drawn in proportion to
        # D(h) n.h (tan^2 theta_h = a^2 xi / (1 - xi)) reflect the view into n.l = 2 (n.h)^2 - 1, and the
        # albedo is the mean of Smith's G2 = 1 / (1 + Lambda(l) + Lambda(v)) over them (0 below the horizon).
        xi = (np.arange(200_000) + 0.5) / 200_000
        cos_h = 1 / np.sqrt(1 + alpha**2 * xi / (1 - xi))
        n_dot_l = np.clip(2 * cos_h**2 - 1, 1e-9, 1)
        lam = (-1 + np.sqrt(1 + alpha**2 * (1 - n_dot_l**2) / n_dot_l**2)) / 2
        assert albedo == pytest.approx(np.mean(np.where(2 * cos_h**2 - 1 > 0, 1 / (1 + lam), 0)), rel=0.01)
    if alpha == 0.1 and n_dot_v == 1.0:
        assert albedo > 0.95  # smooth and head-on: little energy escapes single scattering


def test_ggx_distribution_is_normalised():
    # The microfacet distribution's projected area is 1: integral of D(h) n.h dw_h over the hemisphere.
    alpha, count = np.float32(0.4), 2000
    theta = (np.arange(count) + 0.5) * (np.pi / 2) / count
    n_dot_h = np.cos(theta).astype(np.float32)
    # At n.l = n.v = 1 the visibility term is 1/4 exactly: ggx_lobe = pi D / 4.
    d = np.array([ggx_lobe(np.float32(1), np.float32(1), h, alpha) for h in n_dot_h]) * 4 / np.pi
    integral = np.sum(d * n_dot_h * np.sin(theta)) * (np.pi / 2 / count) * 2 * np.pi
    assert integral == pytest.approx(1.0, rel=0.01)


# ---------------------------------------------------------------- mip-maps
def test_mip_maps_average_distant_texels_and_keep_near_ones():
    # A floor tiled with a one-texel checkerboard of linear 0 and 1 under ambient light 1: near the camera a pixel
    # covers less than a texel (level 0: bilinear as without mip-maps), far away many texels, where every level
    # from 1 on holds their mean, 1/2, exactly.
    size, tiles = 64, 40
    checker = ((np.indices((size, size)).sum(axis=0) % 2) * 255).astype(np.uint8)
    texture = np.repeat(checker[..., None], 3, axis=2)
    vertices = np.array([[-20, 0, 0], [20, 0, 0], [20, 80, 0], [-20, 80, 0]], float)
    uvs = np.array([[0, 0], [tiles, 0], [tiles, 2 * tiles], [0, 2 * tiles]], float)
    floor = RenderMesh("floor", vertices, np.array([[0, 1, 2], [0, 2, 3]]), 1, 1,
                       RenderMaterial(texture=texture, roughness=1.0), uvs)
    scene = RenderScene([floor], ambient=(1.0, 1.0, 1.0))
    camera = Camera.from_intrinsics(np.array([[80.0, 0, 79.5], [0, 80.0, 59.5], [0, 0, 1]]), 160, 120, 0.05, 200.0)
    pose = look_at(np.array([0.0, 0.0, 1.5]), np.array([0.0, 10.0, 0.0]))

    def image(mipmaps: bool):
        frame = render_frame(scene, camera, pose, options=RenderOptions(boxes=False, quality=ShadingQuality(
            mipmaps=mipmaps)))
        return linear(frame), frame.depth

    plain, depth = image(False)
    filtered, _ = image(True)
    texels_per_pixel = depth / camera.K[0, 0] * size * tiles / 40  # along the image rows, at least
    far, near = texels_per_pixel > 8, texels_per_pixel < 0.5
    assert far.sum() > 500 and near.sum() > 500
    assert np.abs(filtered[far] - 0.5).max() < 0.02
    assert plain[far].std() > 0.2  # unfiltered: the checkerboard aliases
    assert np.array_equal(filtered[near], plain[near])


# ---------------------------------------------------------------- presets
def test_presets_render_deterministically_and_differ():
    scene = penumbra_scene(True)
    pose = look_at(np.array([1.5, -1.5, 1.2]), np.array([0.0, 0.0, 0.0]))
    frames = {name: render_frame(scene, TOP, pose, options=RenderOptions(boxes=False, quality=PRESETS[name]))
              for name in ("fast", "default", "default", "high")}
    again = render_frame(scene, TOP, pose, options=RenderOptions(boxes=False, quality=PRESETS["default"]))
    assert frames["default"].rgb.tobytes() == again.rgb.tobytes()
    assert frames["fast"].rgb.tobytes() != frames["default"].rgb.tobytes()
    # Ground truth does not depend on the lighting.
    assert frames["fast"].depth.tobytes() == frames["high"].depth.tobytes()


def test_config_quality_reaches_every_camera_and_rejects_unknown_names():
    from simulation.embedded.sensors import CameraSensor

    config = load_experiment(CONFIGS / "demo.yaml", ["render.quality=default"])
    for index, camera in enumerate(config.robot.sensors.cameras):
        field = f"robot.sensors.cameras.{index}"
        assert CameraSensor.from_config(camera, field, config.render).options.quality == preset("default")
    assert load_experiment(CONFIGS / "demo.yaml").render.quality == "fast"  # older runs replay as they were made
    with pytest.raises(ConfigError, match="render.quality"):
        load_experiment(CONFIGS / "demo.yaml", ["render.quality=ultra"])

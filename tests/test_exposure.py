"""What rays that leave the scene see (background colour, equirectangular environment image) and how colour is
exposed (fixed and auto exposure, filmic tone curve): against analytic scenes, the published sRGB and ACES
curves and the images written by OpenCV and Pillow; and the demo flat's frames (brightness, clipping)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from conftest import CONFIGS
from PIL import Image

from core.config import ExperimentConfig
from core.config_io import load_experiment
from core.errors import InputError
from core.seeding import generator
from pipeline.prepare import prepare
from simulation.embedded import EmbeddedWorld
from simulation.render import (
    NO_HIT_DEPTH,
    Camera,
    Exposure,
    RenderMaterial,
    RenderMesh,
    RenderOptions,
    RenderScene,
    load_environment,
    look_at,
    render_frame,
)

# Camera at the origin looking along world +y (optical x = world x, optical y = world -z).
POSE = np.array([[1.0, 0, 0, 0], [0, 0, 1, 0], [0, -1, 0, 0], [0, 0, 0, 1]])
W, H, F = 80, 60, 50.0
CAMERA = Camera.from_intrinsics(np.array([[F, 0, (W - 1) / 2], [0, F, (H - 1) / 2], [0, 0, 1]]), W, H, 0.05, 50.0)
MARGIN = 0.02  # m: pixels whose ray passes this close to an edge are left out
REC709 = np.array([0.2126, 0.7152, 0.0722])
MIDDLE_GREY, LOG_FLOOR = 0.18, 1e-4  # Reinhard's key and delta, as documented for auto exposure
# The demo flat seen from the middle of every room, as its camera (90 deg FOV, auto exposure, filmic) sees it.
DEMO_W, DEMO_H = 96, 72
DEMO_OVERRIDES = ["humans.count={min: 2, max: 2}", "flying_objects.count={min: 1, max: 1}",
                  f"robot.sensors.cameras.0.width={DEMO_W}", f"robot.sensors.cameras.0.height={DEMO_H}",
                  "render.environment_strength=0.5"]
EYE_HEIGHT = 1.2  # m
PITCHES = (0.0, 0.8)  # level, and up towards the ceiling light (rad)
LUMA_RANGE = (0.3, 0.55)  # mean sRGB luma of a well exposed frame: neither dark nor washed out
MAX_CLIPPED = 0.01  # share of (255, 255, 255) pixels
DIMMED = 0.01  # light and ambient factor of a dark flat


def srgb8(linear) -> np.ndarray:
    """The sRGB transfer (IEC 61966-2-1) of linear values clipped to [0, 1], as 8-bit levels."""
    x = np.clip(np.asarray(linear, np.float64), 0.0, 1.0)
    return np.round(255 * np.where(x <= 0.0031308, 12.92 * x, 1.055 * x ** (1 / 2.4) - 0.055)).astype(int)


def srgb_decode(levels) -> np.ndarray:
    x = np.asarray(levels, np.float64) / 255
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4)


def aces(x) -> np.ndarray:
    """Narkowicz's ACES filmic fit of an input scaled by 0.6 (2015)."""
    x = 0.6 * np.asarray(x, np.float64)
    return x * (2.51 * x + 0.03) / (x * (2.43 * x + 0.59) + 0.14)


def quad(name: str, instance_id: int, x, z, y: float, material: RenderMaterial | None = None) -> RenderMesh:
    """A rectangle in the plane world-y = `y` facing the camera at the origin."""
    vertices = np.array([[x[0], y, z[0]], [x[1], y, z[0]], [x[1], y, z[1]], [x[0], y, z[1]]])
    return RenderMesh(name, vertices, np.array([[0, 1, 2], [0, 2, 3]]), instance_id, 3, material or RenderMaterial())


def plane_hits(y: float) -> tuple[np.ndarray, np.ndarray]:
    """World x and z (H, W) where each pixel's ray meets the plane world-y = `y`."""
    v, u = np.mgrid[0:H, 0:W].astype(np.float64)
    return (u - (W - 1) / 2) / F * y, -(v - (H - 1) / 2) / F * y


def luma(rgb: np.ndarray) -> np.ndarray:
    return rgb.astype(np.float64) / 255 @ REC709


# ---------------------------------------------------------------- background


def test_rays_through_a_window_see_the_background_with_no_depth_and_no_ids():
    """A wall 3 m ahead with a 2 x 1.5 m window: rays through the window leave the scene."""
    y, hole_x, hole_z, sky = 3.0, (-1.0, 1.0), (-0.5, 1.0), (0.2, 0.45, 0.9)
    wall = [quad("left", 1, (-6, hole_x[0]), (-4, 4), y), quad("right", 2, (hole_x[1], 6), (-4, 4), y),
            quad("below", 3, hole_x, (-4, hole_z[0]), y), quad("above", 4, hole_x, (hole_z[1], 4), y)]
    x, z = plane_hits(y)
    window = (x > hole_x[0] + MARGIN) & (x < hole_x[1] - MARGIN) & (z > hole_z[0] + MARGIN) & (z < hole_z[1] - MARGIN)
    outside = (x < hole_x[0] - MARGIN) | (x > hole_x[1] + MARGIN) | (z < hole_z[0] - MARGIN) | (z > hole_z[1] + MARGIN)
    assert window.sum() > 500 and outside.sum() > 500

    frame = render_frame(RenderScene(wall, ambient=(1, 1, 1), background=sky), CAMERA, POSE)
    assert np.all(frame.rgb[window] == srgb8(sky))
    assert np.all(frame.depth[window] == NO_HIT_DEPTH) and np.all(frame.distance[window] == NO_HIT_DEPTH)
    assert np.all(frame.instance[window] == 0) and np.all(frame.semantic[window] == 0)
    assert np.all(frame.instance[outside] > 0) and np.all(frame.depth[outside] == pytest.approx(y, rel=1e-5))

    default = render_frame(RenderScene(wall, ambient=(1, 1, 1)), CAMERA, POSE).rgb[window]
    assert np.all(default == default[0]) and default[0].min() > 100  # a light sky by default, not a black hole


def texel_direction(column: int, row: int, width: int, height: int) -> np.ndarray:
    """The world direction of an equirectangular texel's centre: the middle column looks along +X, columns
    run towards +Y leftwards (seen from inside), the top row looks up (+Z)."""
    azimuth = (0.5 - (column + 0.5) / width) * 2 * math.pi
    elevation = (0.5 - (row + 0.5) / height) * math.pi
    return np.array([math.cos(elevation) * math.cos(azimuth), math.cos(elevation) * math.sin(azimuth),
                     math.sin(elevation)])


def look_along(direction: np.ndarray, eye=(0.0, 0.0, 0.0)) -> np.ndarray:
    eye = np.asarray(eye, np.float64)
    up = (0.0, 0.0, 1.0) if abs(direction[2]) < 0.9 else (1.0, 0.0, 0.0)
    return look_at(eye, eye + direction, up)


def centre_pixels(scene: RenderScene, directions: list[np.ndarray], options: RenderOptions | None = None,
                  eye=(0.0, 0.0, 0.0)) -> np.ndarray:
    """The centre pixel of a 3x3 camera looking along each direction (its ray is the optical axis)."""
    camera = Camera.from_fov(3, 3, 30.0, near=0.05, far=100.0)
    options = options or RenderOptions()
    return np.array([render_frame(scene, camera, look_along(d, eye), options=options).rgb[1, 1] for d in directions])


def far_box() -> RenderMesh:
    """A triangle to make a scene of, out of every view used here (far below)."""
    return RenderMesh("far", np.array([[0, 0, -90.0], [1, 0, -90], [0, 1, -90]]), np.array([[0, 1, 2]]), 1)


def test_equirectangular_texels_come_back_along_their_directions(tmp_path):
    width, height = 8, 4
    image = generator(0, "tests/environment").integers(0, 256, (height, width, 3), dtype=np.uint8)
    Image.fromarray(image).save(tmp_path / "sky.png")
    scene = RenderScene([far_box()], environment=load_environment(tmp_path / "sky.png"))
    cells = [(i, j) for j in range(height) for i in range(width) if not (j == height - 1 and i % 2)]
    seen = centre_pixels(scene, [texel_direction(i, j, width, height) for i, j in cells])
    assert np.array_equal(seen, np.array([image[j, i] for i, j in cells]))


def test_radiance_hdr_environment_is_linear_and_scaled_by_strength(tmp_path):
    width, height, strength = 4, 2, 0.25
    linear = np.zeros((height, width, 3), np.float32)
    linear[..., 0] = [[4.0, 2.0, 1.0, 0.5], [0.25, 3.0, 1.5, 0.75]]  # beyond 1: an HDR sky
    linear[..., 1], linear[..., 2] = linear[..., 0] / 2, linear[..., 0] / 4
    cv2.imwrite(str(tmp_path / "sky.hdr"), linear[..., ::-1])
    stored = cv2.imread(str(tmp_path / "sky.hdr"), cv2.IMREAD_ANYDEPTH | cv2.IMREAD_COLOR)[..., ::-1]
    assert np.allclose(stored, linear, rtol=0.01)
    scene = RenderScene([far_box()], environment=load_environment(tmp_path / "sky.hdr", strength))
    cells = [(i, j) for j in range(height) for i in range(width)]
    seen = centre_pixels(scene, [texel_direction(i, j, width, height) for i, j in cells])
    expected = srgb8([stored[j, i] * strength for i, j in cells])
    assert np.abs(seen.astype(int) - expected).max() <= 1
    with pytest.raises(InputError, match="tone_map"):
        Exposure("auto", 0.0, "gamma")
    with pytest.raises(InputError, match="broken.hdr"):
        (tmp_path / "broken.hdr").write_text("not an image")
        load_environment(tmp_path / "broken.hdr")


# ---------------------------------------------------------------- exposure


def test_auto_exposure_brings_the_log_average_luminance_to_middle_grey():
    """A grey wall lit by ambient light alone has linear luminance = its albedo everywhere; beside it the sky."""
    options = RenderOptions(exposure=Exposure("auto", 0.0, "clip"))
    for albedo in (0.02, 0.6):  # a dark and a bright wall expose to the same grey
        wall = quad("wall", 1, (-9, 9), (-9, 9), 2.0, RenderMaterial((albedo,) * 3))
        frame = render_frame(RenderScene([wall], ambient=(1, 1, 1)), CAMERA, POSE, options=options)
        assert np.all(frame.rgb == srgb8(MIDDLE_GREY * albedo / (albedo + LOG_FLOOR)))
    sky, albedo, ev = np.array([0.3, 0.6, 1.2]), 0.05, 1.0
    half = quad("half", 1, (0, 9), (-9, 9), 2.0, RenderMaterial((albedo,) * 3))
    frame = render_frame(RenderScene([half], ambient=(1, 1, 1), background=tuple(sky)), CAMERA, POSE,
                         options=RenderOptions(exposure=Exposure("auto", ev, "clip")))
    wall = frame.instance == 1
    log_average = (wall.sum() * math.log(albedo + LOG_FLOOR) + (~wall).sum() * math.log(REC709 @ sky + LOG_FLOOR)) / wall.size
    scale = MIDDLE_GREY / math.exp(log_average) * 2**ev
    assert 0.2 < wall.mean() < 0.8
    assert np.abs(frame.rgb[wall].astype(int) - srgb8(albedo * scale)).max() <= 1
    assert np.abs(frame.rgb[~wall].astype(int) - srgb8(sky * scale)).max() <= 1


def test_fixed_exposure_scales_by_two_to_the_ev_and_filmic_rolls_highlights_off():
    albedos, ambient, ev = (0.01, 0.1, 0.9), 8.0, 1.0
    columns = [(-3.0, -1.05), (-0.95, 0.95), (1.05, 3.0)]
    walls = [quad(f"q{k}", k + 1, x, (-9, 9), 2.0, RenderMaterial((a,) * 3)) for k, (x, a) in enumerate(zip(columns,
                                                                                                             albedos))]
    scene = RenderScene(walls, ambient=(ambient,) * 3)
    filmic = render_frame(scene, CAMERA, POSE, options=RenderOptions(exposure=Exposure("fixed", ev, "filmic")))
    clipped = render_frame(scene, CAMERA, POSE, options=RenderOptions(exposure=Exposure("fixed", ev, "clip")))
    for k, albedo in enumerate(albedos):
        inside = filmic.instance == k + 1
        assert inside.sum() > 300
        exposed = albedo * ambient * 2**ev  # 0.16, 1.6 and 14.4
        assert np.abs(filmic.rgb[inside].astype(int) - srgb8(aces(exposed))).max() <= 1
        assert np.all(clipped.rgb[inside] == srgb8(exposed))
    # Diffuse white and above: clipping whites them out, the filmic curve keeps 1.6 below white.
    assert np.all(clipped.rgb[clipped.instance >= 2] == 255)
    assert np.all(filmic.rgb[filmic.instance == 2] < 250) and np.all(filmic.rgb[filmic.instance == 3] == 255)


# ---------------------------------------------------------------- the demo flat


@pytest.fixture(scope="module")
def demo(tmp_path_factory, asset_cache):
    """The demo's world with an environment image (8 columns of distinct colours, rows alike)."""
    folder = tmp_path_factory.mktemp("demo")
    columns = generator(1, "tests/environment-columns").integers(0, 256, (1, 8, 3), dtype=np.uint8)
    Image.fromarray(np.repeat(columns, 4, axis=0)).save(folder / "sky.png")
    config = with_environment(folder / "sky.png")
    return EmbeddedWorld(config, prepare(config, folder / "run", cache=asset_cache).scene), columns[0]


def with_environment(image: Path) -> ExperimentConfig:
    config = load_experiment(CONFIGS / "demo.yaml", DEMO_OVERRIDES)
    return config.model_copy(update={"render": config.render.model_copy(update={"environment": image})})


def room_views(world: EmbeddedWorld) -> list[np.ndarray]:
    """From the middle of every room (under its ceiling light), looking around level and up at the light."""
    poses = []
    for light in world.lights():
        eye = np.array([light.position[0], light.position[1], EYE_HEIGHT])
        for yaw in np.radians([0.0, 90.0, 180.0, 270.0]):
            poses += [look_at(eye, eye + [math.cos(yaw), math.sin(yaw), math.tan(p)]) for p in PITCHES]
    return poses


def demo_frames(world: EmbeddedWorld, options: RenderOptions) -> list[np.ndarray]:
    sensor = world.robot().camera("camera")
    return [render_frame(world.render_scene, sensor.camera, pose, world.scene.states(0.0), options).rgb
            for pose in room_views(world)]


@pytest.mark.slow  # the demo scene is prepared once for these (~5 s)
def test_demo_frames_are_exposed_without_clipping_and_dark_rooms_are_not_black(demo):
    world, _ = demo
    options = dataclasses.replace(world.robot().camera("camera").options, boxes=False)
    assert options.exposure == Exposure("auto", 0.0, "filmic")  # render.exposure's defaults reach the camera
    assert len(world.lights()) >= 2
    for rgb in demo_frames(world, options):
        assert LUMA_RANGE[0] < luma(rgb).mean() < LUMA_RANGE[1]
        assert np.all(rgb == 255, axis=-1).mean() <= MAX_CLIPPED

    render, lights, ambient = world.render_scene, world.render_scene.lights, world.render_scene.ambient
    try:  # the flat at 1% of its light: auto exposure still shows it, a fixed exposure would not
        render.lights = [dataclasses.replace(light, intensity=light.intensity * DIMMED) for light in lights]
        render.ambient = ambient * np.float32(DIMMED)
        for rgb in demo_frames(world, options):
            assert LUMA_RANGE[0] < luma(rgb).mean() < LUMA_RANGE[1]
        fixed = dataclasses.replace(options, exposure=Exposure())
        assert max(luma(rgb).mean() for rgb in demo_frames(world, fixed)) < LUMA_RANGE[0] / 2
    finally:
        render.lights, render.ambient = lights, ambient


@pytest.mark.slow  # the demo scene is prepared once for these (~5 s)
def test_the_backend_shows_the_configured_environment_outside_the_flat(demo):
    """Seen from 20 m outside the flat looking away from it, every ray leaves the scene."""
    world, columns = demo
    vertices = world.render_scene.static.world_vertices
    low, high = vertices.min(axis=0), vertices.max(axis=0)
    eye = np.array([high[0] + 20.0, (low[1] + high[1]) / 2, EYE_HEIGHT])
    level = [texel_direction(i, 1, 8, 4) * [1, 1, 0] for i in (2, 3, 4, 5)]  # columns facing +X, level
    identity = RenderOptions(exposure=Exposure())
    seen = centre_pixels(world.render_scene, [d / np.linalg.norm(d) for d in level], identity, eye)
    assert np.abs(seen.astype(int) - srgb8(0.5 * srgb_decode(columns[2:6]))).max() <= 1
    frame = render_frame(world.render_scene, world.robot().camera("camera").camera, look_along(np.array([1.0, 0, 0]), eye))
    assert np.all(frame.depth == NO_HIT_DEPTH) and np.all(frame.instance == 0)


@pytest.mark.slow  # the demo scene is prepared once for these (~5 s)
def test_an_unreadable_environment_image_names_the_file_and_key(demo, tmp_path):
    world, _ = demo
    (tmp_path / "sky.png").write_text("not an image")
    with pytest.raises(InputError, match="render.environment") as error:
        EmbeddedWorld(with_environment(tmp_path / "sky.png"), world.scene.path)
    assert "sky.png" in str(error.value)


def test_a_recording_depends_on_the_environment_images_contents(tmp_path):
    from core.formats.manifest import MANIFEST
    from pipeline.generate import record_hash

    sky = tmp_path / "sky.png"
    Image.fromarray(np.full((4, 8, 3), 100, np.uint8)).save(sky)
    (tmp_path / MANIFEST).write_text("{}")
    config = load_experiment(CONFIGS / "demo.yaml", [f"render.environment={sky}"])
    before = record_hash(config, tmp_path / "scene.usda")
    assert record_hash(config, tmp_path / "scene.usda") == before
    Image.fromarray(np.full((4, 8, 3), 200, np.uint8)).save(sky)  # same path, another sky
    assert record_hash(config, tmp_path / "scene.usda") != before

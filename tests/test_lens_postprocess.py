"""Post-processing through a lens (postprocess/lens_warp.py, process_run.py) against OpenCV and closed forms.

- Zero motion gives the frame back, byte for byte, through radtan and equidistant lenses.
- A pure rotation moves labels to where cv2.projectPoints / cv2.fisheye.projectPoints put the rotated rays of
  cv2's own undistortion of the output pixels (within 89 degrees of the axis, where cv2.fisheye is valid), and
  blurs the image as cv2.remap samples it there.
- A translation inside a fisheye's range-depth sphere (every pixel at range 2 m): each output pixel takes the
  label of the pixel where its ray from the moved centre meets the sphere, as cv2.fisheye projects that point.
- `grade postprocess` on a recorded 200-degree fisheye: depth noise (kinect) keeps the range depth's shape and
  blur runs; realsense and the homography blur are refused for that camera with exit 2, nothing written.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from core.config.lens import Lens
from postprocess.blur import blur_and_shutter, warp_labels
from simulation.render import Camera
from tests.conftest import CONFIGS, TINY_RUN, run_grade
from tests.test_postprocess_run import tree_hashes

FISHEYE = Lens("equidistant", (-0.01, 0.002, 0.0, 0.0))
RADTAN = Lens("radtan", (-0.28, 0.07, 1e-3, -5e-4, 0.01))
CAMERAS = {"equidistant": Camera.from_fov(160, 120, 180.0, lens=FISHEYE),
           "radtan": Camera.from_fov(160, 120, 90.0, lens=RADTAN)}
ROUNDING_MARGIN = 0.02  # px: expected sources this close to a pixel boundary are not compared (nearest is a tie)


def cv2_project(lens: Lens, camera: Camera, points: np.ndarray) -> np.ndarray:
    objects = np.ascontiguousarray(points.T, np.float64)
    if lens.model == "radtan":
        pixels, _ = cv2.projectPoints(objects, np.zeros(3), np.zeros(3), camera.K, lens.D)
    else:
        pixels, _ = cv2.fisheye.projectPoints(objects[:, None, :], np.zeros(3), np.zeros(3), camera.K, lens.D)
    return pixels.reshape(-1, 2).T


def cv2_rays(lens: Lens, camera: Camera) -> np.ndarray:
    """(3, H * W) rays of the pixel centres as OpenCV undistorts them (z = 1)."""
    v, u = np.mgrid[0:camera.height, 0:camera.width]
    points = np.stack([u.reshape(-1), v.reshape(-1)], axis=1).astype(np.float64)[:, None, :]
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 1000, 1e-14)
    if lens.model == "radtan":
        normal = cv2.undistortPoints(points, camera.K, lens.D, criteria=criteria)
    else:
        normal = cv2.fisheye.undistortPoints(points, camera.K, lens.D, criteria=criteria)
    normal = normal.reshape(-1, 2).T
    return np.vstack([normal, np.ones((1, normal.shape[1]))])


def pose_of(rotation: np.ndarray, translation=(0.0, 0.0, 0.0)) -> np.ndarray:
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = rotation, translation
    return pose


def pixel_labels(camera: Camera) -> np.ndarray:
    return (np.arange(camera.width * camera.height) + 1).astype(np.uint16).reshape(camera.height, camera.width)


def compare_nearest(warped: np.ndarray, camera: Camera, expected: np.ndarray, usable: np.ndarray) -> int:
    """Checks that each usable output pixel holds the label of the pixel nearest its expected source (2, N);
    returns how many were compared."""
    inside = usable & (expected[0] >= 0) & (expected[0] < camera.width - 1) & (expected[1] >= 0) & (
        expected[1] < camera.height - 1)
    clear = np.all(np.abs(expected - np.floor(expected) - 0.5) > ROUNDING_MARGIN, axis=0)
    pick = np.flatnonzero(inside & clear)
    source = np.rint(expected[:, pick]).astype(np.int64)
    np.testing.assert_array_equal(warped.reshape(-1)[pick], source[1] * camera.width + source[0] + 1)
    return len(pick)


@pytest.mark.parametrize("name", CAMERAS)
def test_zero_motion_gives_the_frame_back(name):
    camera = CAMERAS[name]
    rng = np.random.default_rng(4)
    rgb = rng.integers(0, 256, (camera.height, camera.width, 3), dtype=np.uint8)
    depth = rng.uniform(0.5, 5.0, (camera.height, camera.width)).astype(np.float32)
    result = blur_and_shutter(rgb, depth, camera.K, lambda times: np.broadcast_to(np.eye(4), (*np.shape(times), 4, 4)),
                              1.0, 0.02, 0.01, 5, lens=camera.lens)
    np.testing.assert_array_equal(result.image, rgb)
    labels = pixel_labels(camera)
    np.testing.assert_array_equal(warp_labels(labels, depth, camera.K, np.eye(4), np.eye(4), camera.lens), labels)


@pytest.mark.parametrize("name", CAMERAS)
def test_a_rotation_moves_pixels_where_cv2_projects_the_rotated_rays(name):
    camera = CAMERAS[name]
    rotation = Rotation.from_euler("yx", [12.0, -5.0], degrees=True).as_matrix()
    rays = cv2_rays(camera.lens, camera)
    turned = rotation @ rays  # the output pixel's ray in the frame camera
    angle = np.degrees(np.arccos(turned[2] / np.linalg.norm(turned, axis=0)))
    usable = (angle < 85.0) & (np.degrees(np.arctan(np.hypot(rays[0], rays[1]))) < 85.0)
    expected = cv2_project(camera.lens, camera, np.where(usable, turned, [[0.0], [0.0], [1.0]]))
    depth = np.full((camera.height, camera.width), 3.0, np.float32)  # a rotation needs none; any will do
    warped = warp_labels(pixel_labels(camera), depth, camera.K, np.eye(4), pose_of(rotation), camera.lens)
    assert compare_nearest(warped, camera, expected, usable) > 0.5 * camera.width * camera.height

    # Blur over an exposure that starts at the rotated pose and ends at the frame's: two sub-poses, the frame's
    # own image and the frame sampled at the rotated sources, as cv2.remap samples it (bilinear), averaged.
    v, u = np.mgrid[0:camera.height, 0:camera.width]
    rgb = np.stack([127.5 + 120 * np.sin(u / 7.0 + v / 11.0), 127.5 + 120 * np.cos(u / 9.0 - v / 5.0),
                    127.5 + 120 * np.sin(v / 6.0)], -1).round().astype(np.uint8)  # smooth: bilinear is near exact
    result = blur_and_shutter(rgb, depth, camera.K, lambda times: np.where(
        np.asarray(times)[..., None, None] < 1.0, pose_of(rotation), np.eye(4)), 1.0, 0.02, 0.0, 2, lens=camera.lens)
    maps = expected.reshape(2, camera.height, camera.width).astype(np.float32)
    sampled = cv2.remap(rgb, maps[0], maps[1], cv2.INTER_LINEAR)
    inside = (usable & (expected[0] >= 0) & (expected[0] < camera.width - 1) & (expected[1] >= 0)
              & (expected[1] < camera.height - 1)).reshape(camera.height, camera.width)
    mean = (rgb.astype(float) + sampled) / 2
    assert inside.sum() > 0.5 * camera.width * camera.height
    assert np.abs(result.image[inside] - mean[inside]).max() <= 1.0


def test_a_translation_inside_the_fisheyes_range_sphere_follows_cv2():
    camera = CAMERAS["equidistant"]
    radius, move = 2.0, np.array([0.3, -0.1, 0.2])
    rays = cv2_rays(camera.lens, camera)
    unit = rays / np.linalg.norm(rays, axis=0)
    # Where the ray from the moved centre meets the sphere |X| = radius (far root), as the frame sees it.
    b = move @ unit
    along = -b + np.sqrt(b * b - (move @ move - radius * radius))
    points = move[:, None] + along * unit
    usable = (np.degrees(np.arccos(unit[2])) < 85.0) & (np.degrees(np.arccos(points[2] / radius)) < 85.0)
    expected = cv2_project(camera.lens, camera, np.where(usable, points, [[0.0], [0.0], [1.0]]))
    depth = np.full((camera.height, camera.width), radius, np.float32)  # the range along every ray
    warped = warp_labels(pixel_labels(camera), depth, camera.K, np.eye(4), pose_of(np.eye(3), move), camera.lens)
    assert compare_nearest(warped, camera, expected, usable) > 0.5 * camera.width * camera.height


# TINY_RUN with its camera a 200 degree fisheye.
FISHEYE_CAMERA = ("robot.sensors.cameras=[{name: camera, mount: {link: camera_link, translation: [0.1, 0.0, 0.0]}, "
                  "width: 96, height: 72, model: equidistant, fov_deg: 200, distortion: [-0.01, 0.002, 0, 0], "
                  "rate_hz: 30}]")


@pytest.fixture(scope="module")
def fisheye_run(tmp_path_factory, asset_cache):
    from core.config_io import load_experiment
    from pipeline.generate import generate

    folder = tmp_path_factory.mktemp("fisheye-post") / "run"
    generate(load_experiment(CONFIGS / "demo.yaml", [*TINY_RUN, FISHEYE_CAMERA]), folder, cache=asset_cache,
             wait=True)
    return folder


@pytest.mark.parametrize(("args", "field"), [(["--depth", "realsense"], "depth.model"),
                                             (["--blur", "--set", "blur.model=homography"], "blur.model")])
def test_settings_without_meaning_through_a_lens_are_refused(fisheye_run, args, field):
    before = tree_hashes(fisheye_run, ("gt",))
    result = run_grade("postprocess", str(fisheye_run), *args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and field in result.stderr and "'camera'" in result.stderr
    assert tree_hashes(fisheye_run, ("gt",)) == before


def test_depth_noise_and_blur_of_a_fisheye_run(fisheye_run):
    from core.recording import Recording

    result = run_grade("postprocess", str(fisheye_run), "--depth", "kinect", "--blur")
    assert result.returncode == 0, result.stderr
    camera = Recording.open(fisheye_run).camera("camera")
    for frame in camera:
        true, noisy = frame.depth(), frame.processed("depth_noisy")
        kept = (noisy > 0) & (true > 0)
        assert kept.sum() > 0.3 * true.size
        # Kinect's sigma at these ranges is millimetres: the noisy range stays within 5 sigma plus a PNG step.
        sigma = 0.0012 + 0.0019 * (true[kept] - 0.4) ** 2
        assert np.all(np.abs(noisy[kept] - true[kept]) <= 5 * sigma + 1e-3)
        assert frame.processed("rgb_blur").shape == frame.rgb().shape
    assert math.isfinite(camera.blur_log()[0].exposure)


def test_the_rerun_export_logs_a_fisheye_without_a_pinhole(fisheye_run, tmp_path):
    from tests.rrd_columns import rrd_columns

    rrd = tmp_path / "fisheye.rrd"
    result = run_grade("view", str(fisheye_run), "--out", str(tmp_path / "view"), "--rerun", str(rrd))
    assert result.returncode == 0, result.stderr
    columns = rrd_columns(rrd)
    assert not any("Pinhole" in key for key in columns["/world/camera"])  # Rerun's pinhole has no distortion
    assert any("Transform3D" in key for key in columns["/world/camera"])  # the pose is there
    [note] = [values for key, values in columns["/world/camera/lens"].items() if key.endswith("TextDocument:text")]
    assert "equidistant" in str(note[0]) and "-0.01" in str(note[0])
    assert any(key.endswith("EncodedImage:blob") for key in columns["/world/camera/rgb"])


def test_a_fisheye_runs_bag_is_post_processed_through_its_lens(fisheye_run, tmp_path):
    """`grade postprocess BAG`: the camera_info's equidistant lens is followed (depth-aware blur and kinect depth
    noise run); the homography blur and realsense depth are refused naming the topic and the setting, with nothing
    written."""
    from core.formats.bags.reader import image_array, open_bag

    source = fisheye_run / "bags" / "demo"
    for args, field in ((["--depth", "realsense"], "depth.model"),
                        (["--blur", "--set", "blur.model=homography"], "blur.model")):
        out = tmp_path / field
        result = run_grade("postprocess", str(source), *args, "--out", str(out))
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert field in result.stderr and "/camera/" in result.stderr and "equidistant" in result.stderr
        assert not out.exists() and not list(tmp_path.glob(".*partial*"))
    out = tmp_path / "processed"
    result = run_grade("postprocess", str(source), "--blur", "--depth", "kinect", "--out", str(out))
    assert result.returncode == 0, result.stderr
    topic = "/camera/rgb/image_raw"
    images = []
    for bag in (source, out):
        with open_bag(bag) as reader:
            connections = [c for c in reader.connections if c.topic == topic]
            images.append([image_array(reader.deserialize(raw, c.msgtype)) for c, _, raw in
                           reader.messages(connections)])
    clean, blurred = images
    assert len(clean) == len(blurred) > 2 and all(a.shape == b.shape for a, b in zip(clean, blurred, strict=True))
    assert sum(not np.array_equal(a, b) for a, b in zip(clean, blurred, strict=True)) > len(clean) // 2

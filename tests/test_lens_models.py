"""Lens models (core/config/lens.py) against OpenCV as the independent truth.

- Rays: every pixel centre's ray in the camera's ray table projects back onto that pixel centre through
  cv2.projectPoints (radtan) and cv2.fisheye.projectPoints (equidistant) within 0.05 px (they agree to ~1e-5 px,
  the float32 rays' rounding); cv2.fisheye divides by z, so fisheye rays are checked up to 89.5 degrees off the
  axis, the rest of a 180/200 degree fisheye by the renderer's own round trip.
- Rendered spheres: the pixel nearest a sphere's centre direction is where the sphere's `distance` image is least
  (the sphere's nearest point lies on the ray to its centre, whatever the lens); its sub-pixel position from a
  quadratic fit lies within SPHERE_TOLERANCE of cv2's projection of the centre, on the axis and 86.5 degrees
  off it on a 180 degree fisheye. Looser than the rays' tolerance: the sphere is a faceted icosphere.
- Depth: depth pixels back-projected with cv2.undistortPoints / cv2.fisheye.undistortPoints land on the analytic
  plane the scene holds (z-depth for radtan, the range along the ray for equidistant).
- Flow: a camera moving past a plane; each pixel's flow ends where cv2 projects its surface point into the next
  camera.
- Config: bad lenses are refused naming the field; the bag's CameraInfo and EuRoC's sensor.yaml carry the lens.
"""

from __future__ import annotations

import json
import math

import cv2
import numpy as np
import pytest
import trimesh
import yaml
from rosbags.highlevel import AnyReader

from core.config.lens import Lens, equidistant_reach, theta_d
from core.config.sensors import CameraConfig
from core.errors import ConfigError
from core.formats.bags.writer import BagWriter
from export.euroc import check_lens, euroc_distortion
from simulation.render import Camera, RenderMesh, RenderOptions, RenderScene, render_frame
from simulation.render.camera import ray_table

RADTAN = Lens("radtan", (-0.28, 0.07, 1e-3, -5e-4, 0.01))  # a EuRoC-like barrel lens with decentring
FISHEYE = Lens("equidistant", (-0.01, 0.002, 0.0, 0.0))  # a TUM-VI-like Kannala-Brandt lens
IDEAL_FISHEYE = Lens("equidistant", (0.0, 0.0, 0.0, 0.0))
RAY_TOLERANCE = 0.05  # px
SPHERE_TOLERANCE = 0.1  # px: the centroid of a faceted sphere's rendered distance image, see the module doc
CV2_FISHEYE_LIMIT_DEG = 89.5  # cv2.fisheye.projectPoints divides by z
IDENTITY = np.eye(4)


def cv2_project(lens: Lens, camera: Camera, points: np.ndarray) -> np.ndarray:
    """(2, N) pixels of optical-frame points (3, N), as OpenCV projects them."""
    objects = np.ascontiguousarray(points.T, dtype=np.float64)
    if lens.model == "radtan":
        pixels, _ = cv2.projectPoints(objects, np.zeros(3), np.zeros(3), camera.K, lens.D)
    else:
        pixels, _ = cv2.fisheye.projectPoints(objects[:, None, :], np.zeros(3), np.zeros(3), camera.K, lens.D)
    return pixels.reshape(-1, 2).T


def cv2_undistort(lens: Lens, camera: Camera, pixels: np.ndarray) -> np.ndarray:
    """(2, N) normalised image coordinates (x / z, y / z) of pixels (2, N), as OpenCV undistorts them."""
    points = np.ascontiguousarray(pixels.T, dtype=np.float64)[:, None, :]
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 100, 1e-14)
    if lens.model == "radtan":
        return cv2.undistortPoints(points, camera.K, lens.D, criteria=criteria).reshape(-1, 2).T
    return cv2.fisheye.undistortPoints(points, camera.K, lens.D, criteria=criteria).reshape(-1, 2).T


def pixel_centres(camera: Camera) -> np.ndarray:
    v, u = np.mgrid[0:camera.height, 0:camera.width]
    return np.stack([u.reshape(-1), v.reshape(-1)]).astype(np.float64)


CAMERAS = {
    "radtan 90": Camera.from_fov(320, 240, 90.0, 0.05, 50.0, RADTAN),
    # Strong barrel distortion: cv2.undistortPoints needs thousands of steps in the corners.
    "radtan 120": Camera.from_fov(400, 300, 120.0, 0.05, 50.0, Lens("radtan", (-0.3, 0.08, 0.0, 0.0, 0.0))),
    "equidistant 180": Camera.from_fov(320, 240, 180.0, 0.05, 50.0, FISHEYE),
    "equidistant 200": Camera.from_fov(320, 240, 200.0, 0.05, 50.0, FISHEYE),
}


@pytest.mark.parametrize("name", CAMERAS)
def test_each_pixels_ray_projects_onto_its_centre_through_cv2(name):
    camera = CAMERAS[name]
    directions = ray_table(camera, IDENTITY).local.astype(np.float64)
    centres = pixel_centres(camera)
    checked = np.ones(directions.shape[1], dtype=bool)
    if camera.lens.model == "equidistant":
        checked = directions[2] > math.cos(math.radians(CV2_FISHEYE_LIMIT_DEG))
        assert checked.mean() > 0.6  # the test sees most of the image, up to its left and right edges
    error = np.hypot(*(cv2_project(camera.lens, camera, directions[:, checked]) - centres[:, checked]))
    assert error.max() < RAY_TOLERANCE
    if camera.lens.model == "equidistant":  # the edges' pixel centres are 89.7 / 99.7 degrees off the axis
        edge = np.degrees(np.arccos(directions[2].reshape(camera.height, camera.width)[camera.height // 2, -1]))
        half = float(name.split()[1]) / 2
        assert half - 0.6 < edge < half


def test_supersampled_rays_are_their_sub_pixel_positions_unprojected():
    camera = CAMERAS["radtan 90"]
    samples = 2
    directions = ray_table(camera, IDENTITY, samples).local.astype(np.float64)
    offsets = (np.arange(samples) + 0.5) / samples - 0.5
    sub_v, sub_u = np.meshgrid(offsets, offsets, indexing="ij")
    centres = pixel_centres(camera)
    # A pixel's samples are contiguous, in (sub_v, sub_u) order.
    expected = np.stack([(centres[0][:, None] + sub_u.reshape(-1)).reshape(-1),
                         (centres[1][:, None] + sub_v.reshape(-1)).reshape(-1)])
    assert np.hypot(*(cv2_project(camera.lens, camera, directions) - expected)).max() < RAY_TOLERANCE


def sphere(name: str, instance_id: int, centre: np.ndarray, radius: float) -> RenderMesh:
    ball = trimesh.creation.icosphere(subdivisions=5, radius=radius)
    pose = np.eye(4)
    pose[:3, 3] = centre
    return RenderMesh(name, ball.vertices, ball.faces, instance_id, 1, pose=pose)


def nearest_pixel(distance: np.ndarray, mask: np.ndarray, window: int = 3) -> np.ndarray:
    """Sub-pixel (u, v) of the least `distance` over `mask`: a quadratic fitted around the least pixel."""
    masked = np.where(mask, distance, np.inf)
    v0, u0 = np.unravel_index(np.argmin(masked), masked.shape)
    dv, du = np.mgrid[-window:window + 1, -window:window + 1]
    z = distance[v0 + dv, u0 + du].astype(np.float64).reshape(-1)
    du, dv = du.reshape(-1).astype(np.float64), dv.reshape(-1).astype(np.float64)
    a = np.stack([np.ones_like(du), du, dv, du * du, du * dv, dv * dv], axis=1)
    c = np.linalg.lstsq(a, z, rcond=None)[0]
    step = np.linalg.solve(np.array([[2 * c[3], c[4]], [c[4], 2 * c[5]]]), -c[1:3])
    return np.array([u0, v0]) + step


@pytest.mark.parametrize(("lens", "fov", "edge_deg", "radius"),
                         [(RADTAN, 90.0, 40.0, 0.08), (FISHEYE, 180.0, 86.5, 0.1)], ids=["radtan", "equidistant"])
def test_rendered_spheres_centre_where_cv2_projects_them(lens, fov, edge_deg, radius):
    camera = Camera.from_fov(640, 480, fov, 0.05, 50.0, lens)
    angle = math.radians(edge_deg)
    directions = {1: np.array([0.02, 0.01, 1.0]), 2: np.array([math.sin(angle), 0.03, math.cos(angle)])}
    centres = {i: 2.0 * d / np.linalg.norm(d) for i, d in directions.items()}
    frame = render_frame(RenderScene([sphere(f"s{i}", i, c, radius) for i, c in centres.items()]), camera, IDENTITY,
                         options=RenderOptions(rgb=False))
    for i, centre in centres.items():
        mask = frame.instance == i
        assert mask.sum() > 100
        found = nearest_pixel(frame.distance, mask)
        expected = cv2_project(lens, camera, centre[:, None])[:, 0]
        assert np.hypot(*(found - expected)) < SPHERE_TOLERANCE, (i, found, expected)
        # The tight box is the mask's; the loose box holds it.
        row = int(np.flatnonzero(frame.instance_ids == i)[0])
        v, u = np.nonzero(mask)
        tight, loose = frame.boxes_2d_tight[row], frame.boxes_2d_loose[row]
        assert (tight["x_min"], tight["y_min"], tight["x_max"], tight["y_max"]) == (u.min(), v.min(), u.max(), v.max())
        assert loose["x_min"] <= u.min() and loose["x_max"] >= u.max()
        assert loose["y_min"] <= v.min() and loose["y_max"] >= v.max()


def plane(normal: np.ndarray, offset: float, size: float = 40.0) -> RenderMesh:
    """A square {p: normal . p = offset}, `size` m across, facing the origin."""
    normal = normal / np.linalg.norm(normal)
    centre = normal * offset
    a = np.cross(normal, [0.0, 1.0, 0.0] if abs(normal[1]) < 0.9 else [1.0, 0.0, 0.0])
    a /= np.linalg.norm(a)
    b = np.cross(normal, a)
    h = size / 2
    vertices = np.array([centre - h * a - h * b, centre + h * a - h * b, centre + h * a + h * b,
                         centre - h * a + h * b])
    return RenderMesh("plane", vertices, np.array([[0, 2, 1], [0, 3, 2]]), 1, 1)


@pytest.mark.parametrize("lens", [RADTAN, FISHEYE], ids=["radtan", "equidistant"])
def test_cv2_undistortion_of_depth_pixels_lands_on_the_plane(lens):
    camera = Camera.from_fov(160, 120, 90.0 if lens.model == "radtan" else 180.0, 0.05, 50.0, lens)
    normal, offset = np.array([0.3, -0.2, 1.0]), 2.5
    normal /= np.linalg.norm(normal)
    frame = render_frame(RenderScene([plane(normal, offset)]), camera, IDENTITY, options=RenderOptions(rgb=False))
    pixels = pixel_centres(camera)
    depth = frame.depth.reshape(-1).astype(np.float64)
    normalised = cv2_undistort(lens, camera, pixels)
    rays = np.vstack([normalised, np.ones((1, normalised.shape[1]))])
    if lens.model == "radtan":  # depth is z
        points = rays * depth
    else:  # depth is the range along the ray; cv2.fisheye's inverse stops short of 90 degrees
        points = rays / np.linalg.norm(rays, axis=0) * depth
    hit = depth > 0
    if lens.model == "equidistant":
        angle = np.degrees(np.arctan(np.hypot(*normalised)))
        hit &= angle < 80.0
    assert hit.sum() > 0.5 * hit.size
    assert np.abs(normal @ points[:, hit] - offset).max() < 1e-4 * offset


@pytest.mark.parametrize("lens", [RADTAN, FISHEYE], ids=["radtan", "equidistant"])
def test_flow_ends_where_cv2_projects_the_surface_point_in_the_next_frame(lens):
    camera = Camera.from_fov(160, 120, 90.0 if lens.model == "radtan" else 160.0, 0.05, 50.0, lens)
    normal, offset = np.array([0.0, 0.0, 1.0]), 3.0
    next_pose = np.eye(4)
    next_pose[:3, 3] = [0.2, -0.1, 0.3]
    frame = render_frame(RenderScene([plane(normal, offset)]), camera, IDENTITY, options=RenderOptions(rgb=False),
                         next_pose=next_pose)
    pixels = pixel_centres(camera)
    range_ = frame.distance.reshape(-1).astype(np.float64)
    directions = ray_table(camera, IDENTITY).local.astype(np.float64)
    points = directions * range_ - next_pose[:3, 3][:, None]  # the next camera has the same orientation
    flow = frame.flow.reshape(-1, 2).T.astype(np.float64)
    usable = (range_ > 0) & (points[2] > 0.2) & (directions[2] > math.cos(math.radians(CV2_FISHEYE_LIMIT_DEG)))
    assert usable.mean() > 0.5
    expected = cv2_project(lens, camera, points[:, usable]) - pixels[:, usable]
    assert np.abs(flow[:, usable] - expected).max() < 0.01


def test_pinhole_cameras_keep_their_rays():
    pinhole = Camera.from_fov(64, 48, 70.0, 0.05, 50.0)
    assert pinhole.lens.pinhole
    table = ray_table(pinhole, IDENTITY)
    u, v = pixel_centres(pinhole)
    grid = np.stack([(u - pinhole.cx) / pinhole.fx, (v - pinhole.cy) / pinhole.fy, np.ones_like(u)])
    assert np.array_equal(table.local, (grid / np.linalg.norm(grid, axis=0)).astype(np.float32))


def camera_config(**fields) -> CameraConfig:
    return CameraConfig(name="camera", **fields)


@pytest.mark.parametrize(("fields", "mention"), [
    ({"distortion": (0.1, 0.0, 0.0, 0.0, 0.0)}, "coefficients are given for a pinhole camera"),
    ({"model": "radtan", "fov_deg": 185.0}, "fov_deg must be in (0, 180) for the radtan model"),
    ({"model": "pinhole", "fov_deg": 180.0}, "fov_deg must be in (0, 180)"),
    ({"model": "equidistant", "fov_deg": 200.0, "distortion": (-0.3, 0.0, 0.0, 0.0)},
     "fov_deg: the equidistant model with coefficients [-0.3, 0.0, 0.0, 0.0] stops rising"),
    ({"model": "radtan", "distortion": (-0.8, 0.0, 0.0, 0.0, 0.0)}, "fov_deg: the radtan model"),
    # Reaches 90 degrees but turns back before the image's corners.
    ({"model": "radtan", "fov_deg": 60.0, "distortion": (-0.9, 0.0, 0.0, 0.0, 0.0)},
     "distortion: the radtan model with coefficients [-0.9, 0.0, 0.0, 0.0, 0.0] stops rising"),
    ({"model": "equidistant", "fov_deg": 190.0, "distortion": (-0.1, 0.0, 0.0, 0.0)},
     "distortion: the equidistant model with coefficients [-0.1, 0.0, 0.0, 0.0] has no ray for pixel"),
    ({"model": "equidistant", "distortion": (0.1, 0.2)}, "takes 4 coefficients"),
    ({"model": "radtan", "distortion": (0.1, 0.2, 0.0, 0.0)}, "takes 5 coefficients"),
], ids=["pinhole with coefficients", "radtan 185 deg", "pinhole 180 deg", "fisheye fov unreachable",
        "radtan fov unreachable", "radtan turns in the corners", "fisheye turns in the corners", "fisheye count",
        "radtan count"])
def test_bad_lenses_are_refused_naming_the_field(fields, mention):
    with pytest.raises(ValueError, match="CameraConfig") as raised:
        camera_config(**fields)
    assert mention in str(raised.value)


def test_a_fisheye_camera_is_refused_by_the_experiment_loader_with_its_field(tmp_path):
    from core.config_io import load_experiment
    from tests.conftest import CONFIGS

    with pytest.raises(ConfigError, match=r"robot.sensors.cameras.0.*stops rising"):
        load_experiment(CONFIGS / "demo.yaml", ["robot.sensors.cameras.0.model=equidistant",
                                                "robot.sensors.cameras.0.fov_deg=200",
                                                "robot.sensors.cameras.0.distortion=[-0.3, 0, 0, 0]"])


@pytest.mark.parametrize(("settings", "mentions"), [
    (["robot.sensors.cameras.0.model=equidistant", "robot.sensors.cameras.0.fov_deg=200",
      "robot.sensors.cameras.0.distortion=[-0.3, 0, 0, 0]"], ["robot.sensors.cameras.0", "fov_deg", "stops rising"]),
    (["robot.sensors.cameras.0.distortion=[0.1, 0, 0, 0, 0]"], ["robot.sensors.cameras.0", "distortion", "pinhole"]),
    (["robot.sensors.cameras.0.model=radtan", "robot.sensors.cameras.0.fov_deg=180"],
     ["robot.sensors.cameras.0", "fov_deg", "(0, 180)"]),
], ids=["fisheye fov unreachable", "pinhole with coefficients", "radtan 180 deg"])
def test_grade_config_validate_exits_2_naming_the_lens_field(settings, mentions):
    from tests.conftest import CONFIGS, assert_refused, run_grade

    result = run_grade("config", "validate", str(CONFIGS / "demo.yaml"),
                       *(arg for setting in settings for arg in ("--set", setting)))
    assert_refused(result, *mentions)


def test_fisheye_reach_and_config_focal():
    reach, top = equidistant_reach(FISHEYE.coefficients)
    assert reach == pytest.approx(math.pi)  # this lens rises all the way round
    assert top == pytest.approx(float(theta_d(FISHEYE.coefficients, np.array(math.pi))))
    config = camera_config(model="equidistant", fov_deg=200.0, distortion=FISHEYE.coefficients)
    fx = config.camera_k[0]
    # The outer pixel edges (u = -0.5 and u = width - 0.5) are 100 degrees off the axis.
    assert (config.width / 2) / fx == pytest.approx(float(theta_d(FISHEYE.coefficients, np.radians(100.0))))
    assert config.model_dump(mode="json")["distortion"] == list(FISHEYE.coefficients)
    assert "model" not in camera_config().model_dump(mode="json")  # pinhole configs dump as before


@pytest.mark.parametrize("formats", [["ros1"], ["ros2"]])
def test_camera_info_carries_the_lens_and_reads_back_with_rosbags(tmp_path, formats):
    K = np.array([[300.0, 0.0, 319.5], [0.0, 300.0, 239.5], [0.0, 0.0, 1.0]])
    with BagWriter(tmp_path, "run", formats) as bags:
        bags.camera_info("/fisheye/camera_info", 0.1, "fisheye_optical_frame", K, 640, 480, FISHEYE.ros_model,
                         FISHEYE.D)
        bags.camera_info("/radtan/camera_info", 0.1, "radtan_optical_frame", K, 640, 480, RADTAN.ros_model,
                         RADTAN.D)
        bags.camera_info("/pinhole/camera_info", 0.1, "pinhole_optical_frame", K, 640, 480)
    path = tmp_path / "run.bag" if formats == ["ros1"] else tmp_path / "run"
    got = {}
    with AnyReader([path]) as reader:
        for connection, _, raw in reader.messages():
            got[connection.topic] = reader.deserialize(raw, connection.msgtype)
    d = "D" if formats == ["ros1"] else "d"
    assert got["/fisheye/camera_info"].distortion_model == "equidistant"
    assert getattr(got["/fisheye/camera_info"], d).tolist() == list(FISHEYE.coefficients)
    assert got["/radtan/camera_info"].distortion_model == "plumb_bob"
    assert getattr(got["/radtan/camera_info"], d).tolist() == list(RADTAN.coefficients)
    assert got["/pinhole/camera_info"].distortion_model == "plumb_bob"
    assert getattr(got["/pinhole/camera_info"], d).tolist() == [0.0] * 5


def test_euroc_sensor_yaml_lens_fields():
    assert euroc_distortion(FISHEYE) == {"distortion_model": "equidistant",
                                         "distortion_coefficients": list(FISHEYE.coefficients)}
    radtan = Lens("radtan", (-0.28, 0.07, 1e-3, -5e-4, 0.0))
    assert euroc_distortion(radtan) == {"distortion_model": "radial-tangential",
                                        "distortion_coefficients": [-0.28, 0.07, 1e-3, -5e-4]}
    assert euroc_distortion(Lens()) == {"distortion_model": "radial-tangential",
                                        "distortion_coefficients": [0.0, 0.0, 0.0, 0.0]}
    yaml.safe_dump(euroc_distortion(FISHEYE))  # plain floats, as sensor.yaml needs


class _Recording:
    def __init__(self, config: CameraConfig):
        self.config = config

    def camera_config(self, name: str) -> CameraConfig:
        return self.config


def test_euroc_refuses_a_radtan_k3_and_tum_and_kitti_refuse_lenses():
    from export.kitti import check_pinhole as kitti_check
    from export.tum import check_pinhole as tum_check

    with pytest.raises(ConfigError, match="k3"):
        check_lens(_Recording(camera_config(model="radtan", distortion=RADTAN.coefficients)), "camera")
    check_lens(_Recording(camera_config(model="equidistant", fov_deg=180.0)), "camera")
    for check, name in ((tum_check, "TUM RGB-D"), (kitti_check, "KITTI")):
        with pytest.raises(ConfigError, match=f"has lens model equidistant, which the {name}"):
            check(_Recording(camera_config(model="equidistant", fov_deg=180.0)), "camera")
        check(_Recording(camera_config()), "camera")


# TINY_RUN with a second camera: a 200 degree fisheye beside the pinhole the waypoint follower looks through.
FISHEYE_RUN = ('robot.sensors.cameras=[{name: camera, mount: {link: camera_link, translation: [0.1, 0.0, 0.0]}, '
               'width: 96, height: 72, fov_deg: 90, rate_hz: 30}, {name: fisheye, mount: {link: camera_link, '
               'translation: [0.1, 0.0, 0.0]}, width: 96, height: 72, model: equidistant, fov_deg: 200, '
               'distortion: [-0.01, 0.002, 0, 0], rate_hz: 30, outputs: [rgb, depth, instance, semantic, flow, '
               'boxes2d]}]')


@pytest.fixture(scope="module")
def fisheye_run(tmp_path_factory, asset_cache):
    from core.config_io import load_experiment
    from pipeline.generate import generate
    from tests.conftest import CONFIGS, TINY_RUN

    folder = tmp_path_factory.mktemp("fisheye-run")
    generate(load_experiment(CONFIGS / "demo.yaml", [*TINY_RUN, FISHEYE_RUN]), folder, cache=asset_cache, wait=True)
    return folder


def test_a_recorded_fisheye_carries_its_lens_in_the_bags_and_frames(fisheye_run):
    from core.formats.frames import FRAMES_FILE

    for bag in (fisheye_run / "bags" / "demo.bag", fisheye_run / "bags" / "demo"):
        with AnyReader([bag]) as reader:
            infos = {}
            for connection, _, raw in reader.messages([c for c in reader.connections
                                                       if c.topic.endswith("camera_info")]):
                infos.setdefault(connection.topic, reader.deserialize(raw, connection.msgtype))
        d = "D" if bag.suffix == ".bag" else "d"
        assert infos["/fisheye/camera_info"].distortion_model == "equidistant"
        assert getattr(infos["/fisheye/camera_info"], d).tolist() == list(FISHEYE.coefficients)
        assert infos["/camera/camera_info"].distortion_model == "plumb_bob"
        assert getattr(infos["/camera/camera_info"], d).tolist() == [0.0] * 5
    lines = [json.loads(line) for line in (fisheye_run / "gt" / "fisheye" / FRAMES_FILE).read_text().splitlines()]
    assert {(line["distortion_model"], tuple(line["D"])) for line in lines} == {("equidistant", FISHEYE.coefficients)}
    pinhole = json.loads((fisheye_run / "gt" / "camera" / FRAMES_FILE).read_text().splitlines()[0])
    assert "distortion_model" not in pinhole and "D" not in pinhole


def test_euroc_writes_the_fisheye_and_tum_refuses_it(fisheye_run, tmp_path):
    from export.euroc import export_euroc
    from tests.conftest import assert_refused, run_grade

    export_euroc([fisheye_run], tmp_path / "euroc", cameras=["fisheye"])
    sensor = yaml.safe_load(next((tmp_path / "euroc").rglob("cam0/sensor.yaml")).read_text())
    fx, fy, cx, cy = sensor["intrinsics"]
    assert (sensor["camera_model"], sensor["distortion_model"]) == ("pinhole", "equidistant")
    assert sensor["distortion_coefficients"] == list(FISHEYE.coefficients)
    assert fx == pytest.approx(96 / (2 * float(theta_d(FISHEYE.coefficients, np.radians(100.0)))))
    assert (fy, cx, cy) == (fx, 47.5, 35.5)
    result = run_grade("export", "tum", str(fisheye_run), "--out", str(tmp_path / "tum"), "--camera", "fisheye")
    assert_refused(result, "--camera", "fisheye", "TUM RGB-D")
    assert not (tmp_path / "tum").exists()


def test_replay_with_swaps_a_recorded_camera_to_a_fisheye():
    from core.config_io import load_experiment
    from replay.overrides import ReplayOverrides, replay_config
    from tests.conftest import CONFIGS

    recorded = load_experiment(CONFIGS / "demo.yaml").model_dump(mode="json")
    overrides = ReplayOverrides(cameras=[camera_config(model="equidistant", fov_deg=190.0,
                                                       distortion=FISHEYE.coefficients)])
    replayed = replay_config(recorded, overrides, "overrides.yaml").robot.sensors.cameras[0]
    assert (replayed.name, replayed.model, replayed.distortion, replayed.fov_deg) == (
        "camera", "equidistant", FISHEYE.coefficients, 190.0)


@pytest.mark.parametrize("lens", [RADTAN, FISHEYE], ids=["radtan", "equidistant"])
def test_coco_keypoints_are_projected_through_the_lens(lens):
    from export.keypoints import project_keypoints

    camera = CAMERAS["radtan 90" if lens.model == "radtan" else "equidistant 180"]
    points = np.array([[0.3, -0.2, 2.0], [0.8, 0.3, 1.0], [0.0, 0.0, -1.0]])  # the last behind the camera
    flat = project_keypoints(points, np.ones(3, dtype=bool), IDENTITY, camera.K, None,
                             np.zeros((camera.height, camera.width), np.uint16), 1, Lens.from_ros(lens.ros_model,
                                                                                                  lens.D.tolist()))
    expected = cv2_project(lens, camera, points[:2].T) + 0.5  # COCO's pixel centres are at + 0.5
    assert np.abs(np.array([flat[0:2], flat[3:5]]).T - expected).max() < 0.006  # COCO rounds to 0.01
    assert flat[8] == 0  # behind: even a fisheye of 180 degrees does not see straight back


def test_exploration_refuses_to_map_through_a_lens():
    """The explorers back-project depth through K: a distorted first camera is refused, naming it; a fisheye listed
    after a pinhole one is fine, unless exploration.cameras lists it to map with."""
    from core.config_io import load_experiment
    from simulation.exploration.params import ExplorerParams
    from tests.conftest import CONFIGS

    fisheye = ["robot.sensors.cameras.0.model=equidistant", "robot.sensors.cameras.0.fov_deg=180"]
    with pytest.raises(ConfigError, match=r"camera 'camera'.*equidistant.*pinhole"):
        ExplorerParams.from_config(load_experiment(CONFIGS / "demo.yaml", fisheye))
    second = ["robot.sensors.cameras=[{name: camera}, {name: fisheye, model: equidistant, fov_deg: 180}]"]
    assert ExplorerParams.from_config(load_experiment(CONFIGS / "demo.yaml", second)).camera == "camera"
    with pytest.raises(ConfigError, match=r"camera 'fisheye'.*equidistant.*exploration.cameras") as error:
        ExplorerParams.from_config(load_experiment(CONFIGS / "demo.yaml", [*second, "exploration.cameras=[camera, fisheye]"]))
    assert error.value.field == "exploration.cameras"

"""Lens models: how a camera's optical-frame directions map to pixels and back.

- `pinhole`: u = fx x / z + cx (the default; camera.py keeps its own arithmetic for it, so its rays and
  projections are bit for bit what they were before lens models existed).
- `radtan`: OpenCV's plumb_bob (k1, k2, p1, p2, k3): the normalised point (x / z, y / z) is distorted
  radially and tangentially, then scaled by K. cv2 projects and undistorts (the undistortion is checked by
  projecting back).
- `equidistant`: Kannala-Brandt as cv2.fisheye (k1..k4): a direction at angle theta off the optical axis lands
  at radius theta_d = theta (1 + k1 theta^2 + k2 theta^4 + k3 theta^6 + k4 theta^8) in normalised image
  coordinates. It reaches 90 degrees off the axis and beyond (fields of view over 180 degrees), where
  cv2.fisheye cannot go (it divides by z), so projecting and its Newton inverse are written here on
  theta = atan2(r, z).

The renderer's rays come from unprojecting each sample position once per camera
(simulation/render/camera.py); every ground-truth image, flow and box uses those rays and this projection. The
camera config (sensors.py) checks a lens here, so that a model without a ray for some pixel is refused when the
config loads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import cv2
import numpy as np

from core.errors import InputError

LensModel = Literal["pinhole", "radtan", "equidistant"]
LENS_MODELS: tuple[str, ...] = get_args(LensModel)
ROS_MODELS = {"plumb_bob": "radtan", "equidistant": "equidistant"}  # sensor_msgs/CameraInfo's names -> ours
COEFFICIENT_NAMES = {"pinhole": (), "radtan": ("k1", "k2", "p1", "p2", "k3"), "equidistant": ("k1", "k2", "k3", "k4")}
# Beyond this many degrees off the axis a radial-tangential lens's normalised radius (tan theta) is past 570: the
# model is a perspective one and cannot see to 90 degrees.
_RADTAN_MAX_DEG = 89.9
_REACH_SAMPLES = 20001  # steps over the angle when looking for where a radial function stops rising

# How far a pixel centre may land from itself after unprojecting and projecting again (both in float64), in pixels:
# far above float64 rounding, far below anything an image shows; an inverse that failed lands further.
ROUND_TRIP_TOLERANCE = 1e-4
_NEWTON_STEPS = 60  # enough for bisection alone to reach float64 precision over [0, pi]
# cv2.undistortPoints' fixed-point iteration converges linearly, slowly for strong barrel distortion near the image
# corners (200 steps leave ~1e-3 px there): it may take thousands, and stops once a point projects back within
# 1e-12 px, which all but those corners do in tens.
_UNDISTORT_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 10000, 1e-12)


@dataclass(frozen=True)
class Lens:
    """A lens model and its coefficients (radtan: k1, k2, p1, p2, k3; equidistant: k1..k4; pinhole: none)."""

    model: LensModel = "pinhole"
    coefficients: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.model not in LENS_MODELS:
            raise InputError(f"unknown lens model {self.model!r}; valid: {list(LENS_MODELS)}", "camera", "model")
        names = COEFFICIENT_NAMES[self.model]
        if len(self.coefficients) != len(names):
            raise InputError(f"the {self.model} model takes {len(names)} coefficients {list(names)}, got "
                             f"{len(self.coefficients)}", "camera", "distortion")
        if not all(math.isfinite(c) for c in self.coefficients):
            raise InputError("coefficients must be finite", "camera", "distortion")

    @classmethod
    def of(cls, model: LensModel, distortion: tuple[float, ...] | None) -> Lens:
        """A config's lens: no coefficients means an ideal lens of the model (all zero)."""
        return cls(model, tuple(float(c) for c in distortion) if distortion is not None
                   else (0.0,) * len(COEFFICIENT_NAMES[model]))

    @classmethod
    def from_ros(cls, distortion_model: str | None, D: list[float] | None) -> Lens:
        """The lens a frames.jsonl line or CameraInfo names: plumb_bob (radtan), equidistant, or none (pinhole)."""
        if distortion_model is None:
            return PINHOLE
        if distortion_model not in ROS_MODELS:
            raise InputError(f"unknown distortion_model {distortion_model!r}; valid: {sorted(ROS_MODELS)}",
                             field="distortion_model")
        return cls(ROS_MODELS[distortion_model], tuple(float(c) for c in D or ()))

    @property
    def pinhole(self) -> bool:
        return self.model == "pinhole"

    @property
    def D(self) -> np.ndarray:
        """The coefficients as cv2 takes them (pinhole: 5 zeros, as CameraInfo's plumb_bob)."""
        return np.asarray(self.coefficients if self.coefficients else (0.0,) * 5, dtype=np.float64)

    @property
    def ros_model(self) -> str:
        """sensor_msgs/CameraInfo.distortion_model (ROS's camera_calibration names)."""
        return "equidistant" if self.model == "equidistant" else "plumb_bob"

    @property
    def range_depth(self) -> bool:
        """Whether depth is the range along the ray (equidistant: rays reach 90 degrees and beyond, where z-depth
        is 0 or negative) rather than z in the optical frame, and near/far are spheres rather than planes."""
        return self.model == "equidistant"


PINHOLE = Lens()


def theta_d(coefficients: tuple[float, ...], theta: np.ndarray) -> np.ndarray:
    """Kannala-Brandt's distorted angle of `theta` (radians)."""
    k1, k2, k3, k4 = coefficients
    t2 = theta * theta
    return theta * (1.0 + t2 * (k1 + t2 * (k2 + t2 * (k3 + t2 * k4))))


def _theta_d_slope(coefficients: tuple[float, ...], theta: np.ndarray) -> np.ndarray:
    k1, k2, k3, k4 = coefficients
    t2 = theta * theta
    return 1.0 + t2 * (3.0 * k1 + t2 * (5.0 * k2 + t2 * (7.0 * k3 + t2 * 9.0 * k4)))


def _first_peak(values: np.ndarray) -> int:
    """Index of the last sample before `values` first stops rising (the last index if it never does)."""
    falls = np.flatnonzero(np.diff(values) <= 0)
    return int(falls[0]) if falls.size else len(values) - 1


def equidistant_reach(coefficients: tuple[float, ...]) -> tuple[float, float]:
    """The largest theta (<= pi) up to which theta_d rises, and theta_d there: the model has one ray for every
    normalised radius below that theta_d."""
    theta = np.linspace(0.0, math.pi, _REACH_SAMPLES)
    peak = _first_peak(theta_d(coefficients, theta))
    return float(theta[peak]), float(theta_d(coefficients, theta[peak]))


def radtan_reach(coefficients: tuple[float, ...]) -> float:
    """The largest undistorted normalised radius up to which the radial part r (1 + k1 r^2 + k2 r^4 + k3 r^6)
    rises (at most tan(89.9 deg))."""
    k1, k2, _, _, k3 = coefficients
    radius = np.tan(np.linspace(0.0, math.radians(_RADTAN_MAX_DEG), _REACH_SAMPLES))
    r2 = radius * radius
    return float(radius[_first_peak(radius * (1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))))])


def _equidistant_theta(coefficients: tuple[float, ...], radius: np.ndarray) -> np.ndarray:
    """theta with theta_d(theta) = radius, by Newton safeguarded with bisection on [0, the model's reach]."""
    limit, _ = equidistant_reach(coefficients)
    lo, hi = np.zeros_like(radius), np.full_like(radius, limit)
    theta = np.minimum(radius, limit)
    for _ in range(_NEWTON_STEPS):
        error = theta_d(coefficients, theta) - radius
        lo = np.where(error < 0, theta, lo)
        hi = np.where(error > 0, theta, hi)
        step = theta - error / _theta_d_slope(coefficients, theta)
        outside = ~((step > lo) & (step < hi))
        new = np.where(outside, 0.5 * (lo + hi), step)
        if np.array_equal(new, theta):
            break
        theta = new
    return theta


def unproject(camera_k: tuple[float, float, float, float], lens: Lens, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Unit optical-frame directions (3, N) float64 of pixel positions (u, v) (N,) through `lens` (not pinhole),
    K given as (fx, fy, cx, cy). InputError if a position has no direction (the inverse does not project back)."""
    fx, fy, cx, cy = camera_k
    if lens.model == "radtan":
        K = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
        normal = cv2.undistortPoints(np.stack([u, v], axis=1)[:, None, :], K, lens.D,
                                     criteria=_UNDISTORT_CRITERIA)[:, 0, :].T
        radius = np.hypot(*normal)
        reach = radtan_reach(lens.coefficients)
        if radius.size and radius.max() >= reach:
            raise InputError(f"the radtan model with coefficients {list(lens.coefficients)} stops rising "
                             f"{math.degrees(math.atan(reach)):.1f} degrees off the axis, inside the image: it is "
                             f"not monotonic over the field of view", "camera", "distortion")
        grid = np.vstack([normal, np.ones((1, normal.shape[1]))])
        directions = grid / np.sqrt((grid * grid).sum(axis=0))
    else:
        x, y = (u - cx) / fx, (v - cy) / fy
        radius = np.hypot(x, y)
        theta = _equidistant_theta(lens.coefficients, radius)
        scale = np.divide(np.sin(theta), radius, out=np.ones_like(radius), where=radius > 0)
        directions = np.stack([x * scale, y * scale, np.cos(theta)])
    back = project_directions(camera_k, lens, directions)
    miss = np.hypot(back[0] - u, back[1] - v)
    worst = int(np.argmax(miss)) if miss.size else 0
    if miss.size and not miss[worst] <= ROUND_TRIP_TOLERANCE:
        raise InputError(f"the {lens.model} model with coefficients {list(lens.coefficients)} has no ray for pixel "
                         f"({u[worst]:.2f}, {v[worst]:.2f}): its inverse lands {miss[worst]:.3g} px away; the model "
                         f"does not reach it (it stops rising, or the pixel lies beyond 180 degrees off the axis)",
                         "camera", "distortion")
    return directions


def project_directions(camera_k: tuple[float, float, float, float], lens: Lens, points: np.ndarray) -> np.ndarray:
    """Pixel coordinates (2, N) of optical-frame points (3, N) through `lens` (not pinhole). radtan: callers handle
    points with z <= 0; equidistant: defined for every point but those straight behind the camera (NaN)."""
    fx, fy, cx, cy = camera_k
    points = np.asarray(points, dtype=np.float64)
    if lens.model == "radtan":
        K = np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]])
        pixels, _ = cv2.projectPoints(np.ascontiguousarray(points.T), np.zeros(3), np.zeros(3), K, lens.D)
        return pixels[:, 0, :].T
    radius = np.hypot(points[0], points[1])
    distorted = theta_d(lens.coefficients, np.arctan2(radius, points[2]))
    # On the axis behind the camera every direction off it is as near: no pixel (NaN).
    on_axis = np.where(points[2] > 0, 0.0, np.nan)
    scale = np.divide(distorted, radius, out=on_axis, where=radius > 0)
    return np.stack([fx * points[0] * scale + cx, fy * points[1] * scale + cy])


def focal_of_fov(lens: Lens, width: int, horizontal_fov_deg: float) -> float:
    """The focal length (px) at which the outer pixel edges lie `horizontal_fov_deg` apart (square pixels, centred
    principal point); InputError naming fov_deg where the model cannot reach that angle."""
    limit = 180.0 if lens.model != "equidistant" else 360.0
    if not 0.0 < horizontal_fov_deg < limit:
        raise InputError(f"must be in (0, {limit:g}) degrees for the {lens.model} model, got {horizontal_fov_deg}",
                         "camera", "fov_deg")
    half = math.radians(horizontal_fov_deg) / 2.0
    if lens.model == "pinhole":
        return width / (2.0 * math.tan(half))
    if lens.model == "radtan":
        if math.tan(half) >= radtan_reach(lens.coefficients):
            raise InputError(f"the radtan model with coefficients {list(lens.coefficients)} stops rising before "
                             f"{math.degrees(half):g} degrees off the axis: it cannot reach this field of view",
                             "camera", "fov_deg")
        return radtan_focal(lens.coefficients, width, horizontal_fov_deg)
    reach, _ = equidistant_reach(lens.coefficients)
    if half >= reach:
        raise InputError(f"the equidistant model with coefficients {list(lens.coefficients)} stops rising "
                         f"{math.degrees(reach):.1f} degrees off the axis: it cannot reach a {horizontal_fov_deg:g} "
                         f"degree field of view", "camera", "fov_deg")
    return equidistant_focal(lens.coefficients, width, horizontal_fov_deg)


def check_image(camera_k: tuple[float, float, float, float], lens: Lens, width: int, height: int) -> None:
    """InputError unless every point of the image, to its outer pixel edges (where supersampling's samples may
    lie), has one ray. Radial models are checked along those edges, where the radii are largest (the renderer
    checks every sample again when it makes the camera's rays)."""
    if lens.pinhole:
        return
    across, down = np.arange(width + 1) - 0.5, np.arange(height + 1) - 0.5
    u = np.concatenate([across, across, np.full(height + 1, -0.5), np.full(height + 1, width - 0.5)])
    v = np.concatenate([np.full(width + 1, -0.5), np.full(width + 1, height - 0.5), down, down])
    unproject(camera_k, lens, u, v)


def equidistant_focal(coefficients: tuple[float, ...], width: int, horizontal_fov_deg: float) -> float:
    """The focal length (px) at which the outer pixel edges are `horizontal_fov_deg` apart."""
    return width / (2.0 * float(theta_d(coefficients, np.array(math.radians(horizontal_fov_deg) / 2.0))))


def radtan_focal(coefficients: tuple[float, ...], width: int, horizontal_fov_deg: float) -> float:
    """The focal length (px) at which the right pixel edge sees horizontal_fov_deg / 2 off the axis."""
    edge = np.array([[math.tan(math.radians(horizontal_fov_deg) / 2.0), 0.0, 1.0]])
    distorted, _ = cv2.projectPoints(edge, np.zeros(3), np.zeros(3), np.eye(3), np.asarray(coefficients, np.float64))
    return width / (2.0 * float(distorted[0, 0, 0]))

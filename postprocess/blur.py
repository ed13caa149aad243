"""Motion blur, rolling shutter and blur-aware labels of a rendered frame, as pure array functions.

Conventions: camera poses are 4x4 world <- camera in the ROS optical frame (z forward, x right, y down), K is
the 3x3 pinhole matrix, depth is float32 metres along the optical axis (0 or NaN: no return), times are
seconds, images (H, W, 3) uint8 and label images (H, W) uint16.

Timing. The rendered frame is the instant `t_end`, the end of the exposure [t_end - exposure, t_end] (the
moment a global-shutter camera would stamp its image at readout). Blur averages the images of `count`
sub-poses at instants evenly spread over the exposure, both ends included, so the last one is the frame
itself: GRADE averages the original with `num_pose` warps to the following poses, the same average as
count = num_pose + 1 here. With a rolling shutter, row r (0 = top) is exposed at its own time
t_r = t_end - readout * (1 - r / (H - 1)): the bottom row is read at t_end, the top row `readout` earlier;
with blur as well, row r's exposure is [t_r - exposure, t_r].

Models. depth_aware (default) re-renders each sub-pose by reprojecting the frame with its per-pixel depth
(postprocess.warp: a backward warp, exact for locally fronto-parallel surfaces and for rotations; no-return
pixels count as infinitely far). The average over the sub-poses is taken along each pixel's motion path
(warp.path_rows): exact reprojection for the first, middle and last sub-pose, the quadratic through those
three between, sampled about once per pixel of path length (never more than `count` samples) with weights that
keep the mean uniform in time; pixels whose path crosses a depth step are averaged sub-pose by sub-pose.
homography is GRADE's model, for replication: every pixel is treated as lying on the fronto-parallel plane at
`plane_distance`, H_i = K (R_i + T_i n^T / d) K^-1 with [R_i | T_i] taking frame-camera points into sub-pose
i's camera and n = (0, 0, 1). In both, a sample whose source falls outside the image keeps the output pixel's
original colour (GRADE replicates the border instead; along a path, decided per sample). A rolling shutter
re-renders each row from its own pose(s) by the same reprojection (blur and rolling shutter together with the
homography model: the same path average over the plane's constant inverse depth): exact for that row's scene
points as far as the frame's depth shows them, approximate where the row's new view sees surfaces the frame
hid.

Labels. `warp_labels` moves instance or semantic masks by the same per-pixel motion to the mean sub-pose
(rotation: chordal L2 mean, translation: arithmetic mean), nearest pixel, so a mask sits where the blurred
object's smear is centred.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from numba import njit
from scipy.spatial.transform import Rotation

from core.config import BlurConfig, RollingShutterConfig
from core.config.lens import PINHOLE, Lens
from core.jit_cache import flush_stale_caches
from postprocess import warp
from postprocess.lens_warp import lens_average, lens_nearest
from simulation.render.annotations import PixelStats

MODELS = ("depth_aware", "homography")
ROW_TIME = "t_end - readout * (1 - row / (height - 1))"  # stated in each frame's parameters

# times (N,) s -> poses (N, 4, 4) world <- camera. Vectorised: a blurred rolling-shutter frame needs
# H x sub-poses poses, too many for one Python call each.
PoseCurve = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class BlurResult:
    """A blurred (and rolling-shutter) frame with what made it."""

    image: np.ndarray  # (H, W, 3) uint8
    params: dict[str, Any]  # JSON-able: model, exposure, readout, sub-pose times and transforms (frame row)
    mean_poses: np.ndarray  # (H, 4, 4) world <- camera: each row's mean sub-pose (for warp_labels)

    @property
    def mean_pose(self) -> np.ndarray:
        """(4, 4) mean sub-pose of the exposure ending at t_end (the bottom row's)."""
        return self.mean_poses[-1]


def interpolate_pose(times: np.ndarray, poses: np.ndarray) -> PoseCurve:
    """The pose curve through `poses` (N, 4, 4) at increasing `times` (N,) s: translation linear, rotation
    slerp. Times outside [times[0], times[-1]] take the end pose (a camera at rest before its first sample).
    The curve maps times (M,) to (M, 4, 4); a scalar time gives one (4, 4)."""
    times = np.asarray(times, np.float64)
    poses = np.asarray(poses, np.float64)
    if times.ndim != 1 or len(times) < 2 or poses.shape != (len(times), 4, 4):
        raise ValueError(f"need N >= 2 times (N,) and poses (N, 4, 4), got {times.shape} and {poses.shape}")
    if np.any(np.diff(times) <= 0):
        raise ValueError("pose times must increase strictly")
    # As scipy's Slerp, without its per-call overhead: R(t) = R_i exp(alpha [d_i]x), d_i the rotation vector
    # of R_i^T R_{i+1} and alpha the fraction of segment i at t (Rodrigues' formula, batched).
    rotations = Rotation.from_matrix(poses[:, :3, :3])
    starts = rotations.as_matrix()
    steps = (rotations[:-1].inv() * rotations[1:]).as_rotvec()

    def pose_at(at: np.ndarray | float) -> np.ndarray:
        at = np.clip(np.asarray(at, np.float64), times[0], times[-1])
        flat = at.reshape(-1)
        segment = np.clip(np.searchsorted(times, flat) - 1, 0, len(times) - 2)
        alpha = (flat - times[segment]) / (times[segment + 1] - times[segment])
        out = np.zeros((len(flat), 4, 4))
        out[:, :3, :3] = _times_exp_so3(starts[segment], steps[segment] * alpha[:, None])
        out[:, :3, 3] = np.stack([np.interp(flat, times, poses[:, axis, 3]) for axis in range(3)], axis=1)
        out[:, 3, 3] = 1
        return out.reshape(at.shape + (4, 4))

    return pose_at


def exposure_times(t_end: float, exposure: float, count: int) -> np.ndarray:
    """(count,) instants evenly spread over [t_end - exposure, t_end], both ends included (count 1: t_end)."""
    if count < 1 or exposure < 0:
        raise ValueError(f"need count >= 1 and exposure >= 0, got {count} and {exposure}")
    if count == 1:
        return np.array([t_end], np.float64)
    return t_end - exposure * (1 - np.arange(count) / (count - 1))


def row_times(t_end: float, readout: float, height: int) -> np.ndarray:
    """(height,) exposure-end time of each row: t_end - readout * (1 - row / (height - 1))."""
    if height == 1:
        return np.array([t_end], np.float64)
    return t_end - readout * (1 - np.arange(height) / (height - 1))


def exposure_poses(pose_at: PoseCurve, t_end: float, exposure: float, count: int) -> np.ndarray:
    """(count, 4, 4) camera poses at `exposure_times(t_end, exposure, count)`; the last is the frame's."""
    return np.asarray(pose_at(exposure_times(t_end, exposure, count)), np.float64).reshape(count, 4, 4)


def sequence_timing(blur: BlurConfig | None, shutter: RollingShutterConfig | None,
                    rng: np.random.Generator) -> tuple[float, float]:
    """(exposure, readout) in s for one sequence: exposure from `blur` (drawn U(0, max_exposure) when null,
    0 without blur), then readout N(mean, std) clipped at 0 (0 without rolling shutter), in that order."""
    exposure = 0.0
    if blur is not None:
        exposure = blur.exposure if blur.exposure is not None else float(rng.uniform(0, blur.max_exposure))
    readout = 0.0
    if shutter is not None:
        readout = max(0.0, float(rng.normal(shutter.readout_mean, shutter.readout_std)))
    return exposure, readout


def motion_blur(rgb: np.ndarray, depth: np.ndarray | None, K: np.ndarray, frame_pose: np.ndarray,
                sub_poses: np.ndarray, model: str = "depth_aware", plane_distance: float = 1.0) -> np.ndarray:
    """(H, W, 3) uint8: the mean of the images the camera sees from `sub_poses` (S, 4, 4), re-rendered
    from the frame `rgb` seen from `frame_pose`; `depth` (H, W) m is needed by depth_aware only,
    `plane_distance` (m) by homography only. A sub-pose equal to the frame pose gives the frame exactly."""
    _check(rgb, depth, model)
    sub_poses = np.asarray(sub_poses, np.float64).reshape(-1, 4, 4)
    if model == "depth_aware":
        return _reproject(rgb, warp.inverse_depth(depth), K, frame_pose, sub_poses[None])
    K = np.asarray(K, np.float64)
    height, width = rgb.shape[:2]
    # Sub-pose camera <- frame camera for each sub-pose.
    relative = np.linalg.inv(sub_poses) @ np.asarray(frame_pose, np.float64)
    plane = relative[:, :3, 3, None] * np.array([0, 0, 1 / plane_distance])  # T n^T / d
    total = np.zeros(rgb.shape, np.float32)
    for homography in K @ (relative[:, :3, :3] + plane) @ np.linalg.inv(K):
        # Transparent border over a copy of the frame: pixels whose source leaves the image keep their colour.
        total += cv2.warpPerspective(rgb, homography, (width, height), dst=rgb.copy(), flags=cv2.INTER_LINEAR,
                                     borderMode=cv2.BORDER_TRANSPARENT)
    return np.clip(np.rint(total / len(sub_poses)), 0, 255).astype(np.uint8)


def rolling_shutter(rgb: np.ndarray, depth: np.ndarray, K: np.ndarray, frame_pose: np.ndarray,
                    row_poses: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8: each row r of the frame `rgb` (seen from `frame_pose`) re-rendered from its own pose
    `row_poses[r]` (H, 4, 4), e.g. the poses at `row_times(t_end, readout, H)`, using `depth` (H, W) m."""
    _check(rgb, depth, "depth_aware")
    row_poses = np.asarray(row_poses, np.float64)
    if row_poses.shape != (rgb.shape[0], 4, 4):
        raise ValueError(f"need one pose per row, (H, 4, 4), got {row_poses.shape}")
    return _reproject(rgb, warp.inverse_depth(depth), K, frame_pose, row_poses[:, None])


def blur_and_shutter(rgb: np.ndarray, depth: np.ndarray | None, K: np.ndarray, pose_at: PoseCurve, t_end: float,
                     exposure: float, readout: float, sub_poses: int, model: str = "depth_aware",
                     plane_distance: float = 1.0, lens: Lens = PINHOLE) -> BlurResult:
    """Motion blur and rolling shutter together: row r averages `sub_poses` poses of `pose_at` evenly spread
    over its exposure [t_r - exposure, t_r], t_r = t_end - readout * (1 - r / (H - 1)), re-rendered from the
    frame `rgb` seen at `pose_at(t_end)`. readout 0: plain motion blur; exposure 0: plain rolling shutter.
    Through a `lens` other than pinhole (depth_aware only: a homography is a pinhole's) the frame is reprojected
    through the lens, pose by pose (lens_warp.py); `depth` is then the lens's (z for radtan, the range for
    equidistant)."""
    _check(rgb, depth, model)
    if not lens.pinhole and model != "depth_aware":
        raise ValueError(f"the {model} model is a pinhole's; through a {lens.model} lens blur needs depth_aware")
    height = rgb.shape[0]
    frame_pose = np.asarray(pose_at(np.array([t_end])), np.float64).reshape(4, 4)
    offsets = exposure_times(0.0, exposure, sub_poses)  # relative to each row's exposure end
    ends = row_times(t_end, readout, height) if readout > 0 else np.array([t_end])
    times = ends[:, None] + offsets[None, :]
    poses = np.asarray(pose_at(times.reshape(-1)), np.float64).reshape(len(ends), sub_poses, 4, 4)
    if not lens.pinhole:
        image = lens_average(rgb, warp.inverse_depth(depth), K, lens, frame_pose, poses)
    elif len(ends) == 1:
        image = motion_blur(rgb, depth, K, frame_pose, poses[0], model, plane_distance)
    else:
        inverse = (warp.inverse_depth(depth) if model == "depth_aware"
                   else np.full(rgb.shape[:2], 1 / plane_distance, np.float32))  # the plane at every pixel
        image = _reproject(rgb, inverse, K, frame_pose, poses)
    mean_poses = _mean_poses(poses)
    to_frame = np.linalg.inv(frame_pose)
    params: dict[str, Any] = {
        "model": model, "exposure": float(exposure), "readout": float(readout), "sub_poses": int(sub_poses),
        "row_time": ROW_TIME,
        "sub_pose_times": [float(t) for t in offsets],  # relative to t_end, for the bottom row
        "sub_pose_transforms": (to_frame @ poses[-1]).tolist(),  # frame camera <- sub-pose camera
        "mean_pose_transform": (to_frame @ mean_poses[-1]).tolist(),
    }
    if model == "homography":
        params["plane_distance"] = float(plane_distance)
    return BlurResult(image, params, np.broadcast_to(mean_poses, (height, 4, 4)).copy())


def warp_labels(label: np.ndarray, depth: np.ndarray, K: np.ndarray, frame_pose: np.ndarray,
                mean_pose: np.ndarray, lens: Lens = PINHOLE) -> np.ndarray:
    """`label` (H, W) (instance or semantic ids) moved, nearest pixel, to what the camera sees from
    `mean_pose` (4, 4), or from each row's mean pose (H, 4, 4) with a rolling shutter, by the frame's
    per-pixel `depth` (H, W) m; a pixel whose source leaves the image keeps its own label. For images blurred
    with the homography model, pass the plane (a constant depth) as `depth`. Through a `lens` other than pinhole
    the labels move through the lens (lens_warp.py), `depth` being the lens's."""
    label = np.asarray(label)
    if label.ndim != 2 or np.shape(depth) != label.shape:
        raise ValueError(f"need label and depth of one (H, W) shape, got {label.shape} and {np.shape(depth)}")
    mean_pose = np.asarray(mean_pose, np.float64)
    if mean_pose.shape not in ((4, 4), (label.shape[0], 4, 4)):
        raise ValueError(f"need a (4, 4) or (H, 4, 4) mean pose, got {mean_pose.shape}")
    if not lens.pinhole:
        return lens_nearest(label, warp.inverse_depth(depth), np.asarray(K, np.float64), lens, frame_pose,
                            mean_pose.reshape(-1, 4, 4))
    A, o = warp.rays(K, frame_pose, mean_pose.reshape(-1, 4, 4))
    fx, fy, cx, cy = _intrinsics(K)
    return warp.nearest_rows(label, warp.inverse_depth(depth), fx, fy, cx, cy, A, o)


def boxes_from_mask(instance: np.ndarray) -> dict[int, tuple[int, int, int, int]]:
    """Inclusive pixel box (x_min, y_min, x_max, y_max) of each id but 0 present in `instance` (H, W)."""
    stats = PixelStats.of_rows(np.asarray(instance), 0)
    return {int(i): (int(stats.low[i, 0]), int(stats.low[i, 1]), int(stats.high[i, 0]), int(stats.high[i, 1]))
            for i in np.flatnonzero(stats.counts[1:]) + 1}


def _check(rgb: np.ndarray, depth: np.ndarray | None, model: str) -> None:
    if model not in MODELS:
        raise ValueError(f"unknown blur model {model!r}; one of {MODELS}")
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"need an (H, W, 3) uint8 image, got {rgb.shape} {rgb.dtype}")
    if model == "depth_aware" and (depth is None or np.shape(depth) != rgb.shape[:2]):
        raise ValueError(f"need a depth image of shape {rgb.shape[:2]}, got {np.shape(depth)}")


def _intrinsics(K: np.ndarray) -> tuple[float, float, float, float]:
    K = np.asarray(K, np.float64)
    return float(K[0, 0]), float(K[1, 1]), float(K[0, 2]), float(K[1, 2])


def _reproject(rgb: np.ndarray, inverse: np.ndarray, K: np.ndarray, frame_pose: np.ndarray,
               poses: np.ndarray) -> np.ndarray:
    """warp.path_rows (the path average, exact pose by pose where needed) over `poses` (R, S, 4, 4): R = H
    (per row) or 1 (all rows)."""
    A, o = warp.rays(K, frame_pose, poses)
    fx, fy, cx, cy = _intrinsics(K)
    return warp.path_rows(rgb.astype(np.float32), inverse, fx, fy, cx, cy, A, o, _path_weights(poses.shape[1]),
                          warp.PATH_DENSITY, warp.SMOOTH_TOLERANCE)


@functools.lru_cache(maxsize=16)
def _path_weights(samples: int) -> np.ndarray:
    weights = warp.path_weights(samples)
    weights.flags.writeable = False
    return weights


def _mean_poses(poses: np.ndarray) -> np.ndarray:
    """(R, 4, 4) mean of each row of `poses` (R, S, 4, 4): mean translation and the chordal L2 mean rotation
    (the quaternion maximising sum (q . q_i)^2, as scipy's Rotation.mean, batched over rows). q q^T is linear
    in the rotation matrix (q = (x, y, z, w): 4 x x = 1 + R00 - R11 - R22, 4 x w = R21 - R12, ...), so the sum
    over a row needs only the sum of its matrices."""
    rows, samples = poses.shape[:2]
    R = poses[..., :3, :3].sum(axis=1)  # (R, 3, 3)
    n = float(samples)
    m = np.empty((rows, 4, 4))
    m[:, 0, 0] = n + R[:, 0, 0] - R[:, 1, 1] - R[:, 2, 2]
    m[:, 1, 1] = n - R[:, 0, 0] + R[:, 1, 1] - R[:, 2, 2]
    m[:, 2, 2] = n - R[:, 0, 0] - R[:, 1, 1] + R[:, 2, 2]
    m[:, 3, 3] = n + R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
    m[:, 0, 1] = m[:, 1, 0] = R[:, 0, 1] + R[:, 1, 0]
    m[:, 0, 2] = m[:, 2, 0] = R[:, 0, 2] + R[:, 2, 0]
    m[:, 1, 2] = m[:, 2, 1] = R[:, 1, 2] + R[:, 2, 1]
    m[:, 0, 3] = m[:, 3, 0] = R[:, 2, 1] - R[:, 1, 2]
    m[:, 1, 3] = m[:, 3, 1] = R[:, 0, 2] - R[:, 2, 0]
    m[:, 2, 3] = m[:, 3, 2] = R[:, 1, 0] - R[:, 0, 1]
    _, vectors = np.linalg.eigh(m)
    out = np.zeros((rows, 4, 4))
    out[:, :3, :3] = Rotation.from_quat(vectors[:, :, -1]).as_matrix()
    out[:, :3, 3] = poses[:, :, :3, 3].mean(axis=1)
    out[:, 3, 3] = 1
    return out


@njit(cache=True, nogil=True)
def _times_exp_so3(start: np.ndarray, rotvecs: np.ndarray) -> np.ndarray:
    """(N, 3, 3) start @ exp([v]x) for rotations `start` (N, 3, 3) and rotation vectors v `rotvecs` (N, 3), by
    Rodrigues' formula exp([v]x) = c I + a [v]x + b v v^T (a = sin t / t, b = (1 - cos t) / t^2,
    c = cos t, t = |v|; Taylor terms below t^2 = 1e-8). A compiled loop: numpy's stacked 3 x 3 products
    cost more than the formula for the thousands of poses of a rolling-shutter frame."""
    out = np.empty_like(start)
    exp = np.empty((3, 3))
    for n in range(len(start)):
        vx, vy, vz = rotvecs[n, 0], rotvecs[n, 1], rotvecs[n, 2]
        theta2 = vx * vx + vy * vy + vz * vz
        if theta2 < 1e-8:
            a, b, c = 1 - theta2 / 6, 0.5 - theta2 / 24, 1 - theta2 / 2
        else:
            theta = np.sqrt(theta2)
            a, b, c = np.sin(theta) / theta, (1 - np.cos(theta)) / theta2, np.cos(theta)
        exp[0, 0], exp[1, 1], exp[2, 2] = c + b * vx * vx, c + b * vy * vy, c + b * vz * vz
        exp[0, 1], exp[1, 0] = b * vx * vy - a * vz, b * vx * vy + a * vz
        exp[0, 2], exp[2, 0] = b * vx * vz + a * vy, b * vx * vz - a * vy
        exp[1, 2], exp[2, 1] = b * vy * vz - a * vx, b * vy * vz + a * vx
        for i in range(3):
            for k in range(3):
                out[n, i, k] = start[n, i, 0] * exp[0, k] + start[n, i, 1] * exp[1, k] + start[n, i, 2] * exp[2, k]
    return out


flush_stale_caches(__name__)  # see core.jit_cache

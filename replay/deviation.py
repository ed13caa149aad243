"""How far a replay strayed from its parent: pure computations on arrays, then the report over two recordings
(layout of the report: core.formats.replay_report).

Steps, frames and IMU samples are paired by simulation time (both runs share one time axis; a replay with a
window holds part of it). A camera or IMU is compared only when its configuration is the same in both runs.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy.ndimage import uniform_filter
from scipy.spatial.transform import Rotation

from core.formats.images import MM_PER_M
from core.formats.replay_report import AXES, CameraDeviation, ImuDeviation, PoseDeviation, ReplayReport
from core.geometry import wxyz_to_xyzw
from core.recording import Frame, Recording

TIME_TOLERANCE = 1e-9  # s: samples of the two runs at the same simulation time
# SSIM's constants (Wang et al. 2004) and scikit-image's default window, whose figures GRADE's reports always had.
SSIM_WINDOW, SSIM_K1, SSIM_K2 = 7, 0.01, 0.03


def paired(times_a: np.ndarray, times_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Indices (ia, ib) of the samples at the same time in both (sorted) time arrays."""
    ib = np.clip(np.searchsorted(times_b, times_a), 0, max(len(times_b) - 1, 0))
    if not len(times_b):
        return np.zeros(0, int), np.zeros(0, int)
    same = np.abs(times_b[ib] - times_a) <= TIME_TOLERANCE
    return np.flatnonzero(same), ib[same]


def pose_deviation(position_a: np.ndarray, quat_wxyz_a: np.ndarray, position_b: np.ndarray,
                   quat_wxyz_b: np.ndarray) -> PoseDeviation:
    """Deviation of poses b from poses a (N each): translation b - a and the rotation a^-1 b as roll, pitch,
    yaw (extrinsic xyz), mean and std per axis, and the largest translation and rotation angle."""
    if not len(position_a):
        zeros = dict.fromkeys(AXES, 0.0)
        return PoseDeviation(steps=0, mean=zeros, std=zeros, max_translation=0.0, max_rotation=0.0)
    translation = np.asarray(position_b, float) - np.asarray(position_a, float)
    relative = (Rotation.from_quat(wxyz_to_xyzw(quat_wxyz_a)).inv() * Rotation.from_quat(wxyz_to_xyzw(quat_wxyz_b)))
    values = np.c_[translation, relative.as_euler("xyz")]
    return PoseDeviation(steps=len(values), mean=dict(zip(AXES, values.mean(0).tolist(), strict=True)),
                         std=dict(zip(AXES, values.std(0).tolist(), strict=True)),
                         max_translation=float(np.linalg.norm(translation, axis=1).max()),
                         max_rotation=float(relative.magnitude().max()))


def rgb_ssim(a: np.ndarray, b: np.ndarray) -> float:
    """SSIM of two (H, W, 3) uint8 images, channels averaged, computed as scikit-image's `structural_similarity`
    does by default (7x7 uniform windows, sample covariances, the border of half a window left out): the same
    figure without scikit-image in the base install (tests/test_replay.py compares the two)."""
    pad, norm = SSIM_WINDOW // 2, SSIM_WINDOW**2 / (SSIM_WINDOW**2 - 1)
    c1, c2 = (SSIM_K1 * 255) ** 2, (SSIM_K2 * 255) ** 2
    means = []
    for channel in range(a.shape[2]):
        x, y = a[..., channel].astype(np.float64), b[..., channel].astype(np.float64)
        ux, uy = uniform_filter(x, SSIM_WINDOW), uniform_filter(y, SSIM_WINDOW)
        vx = norm * (uniform_filter(x * x, SSIM_WINDOW) - ux * ux)
        vy = norm * (uniform_filter(y * y, SSIM_WINDOW) - uy * uy)
        vxy = norm * (uniform_filter(x * y, SSIM_WINDOW) - ux * uy)
        ssim = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
        means.append(ssim[pad:-pad, pad:-pad].mean())
    return float(np.mean(means))


def depth_mae_mm(a: np.ndarray, b: np.ndarray) -> float | None:
    """Mean absolute depth difference (mm) over pixels with a return in both, None when there are none."""
    both = (a > 0) & (b > 0) & np.isfinite(a) & np.isfinite(b)
    return float(np.abs(a[both] - b[both]).mean() * MM_PER_M) if both.any() else None


def _frame_pairs(parent: Recording, replay: Recording, camera: str) -> Iterator[tuple[Frame, Frame]]:
    a, b = list(parent.camera(camera)), list(replay.camera(camera))
    ia, ib = paired(np.array([f.time for f in a]), np.array([f.time for f in b]))
    for i, j in zip(ia.tolist(), ib.tolist(), strict=True):
        yield a[i], b[j]


def camera_deviation(parent: Recording, replay: Recording, camera: str) -> CameraDeviation:
    ssims, maes, identical, frames = [], [], 0, 0
    for a, b in _frame_pairs(parent, replay, camera):
        frames += 1
        same = all(a.path(kind) is not None and b.path(kind) is not None
                   and a.path(kind).read_bytes() == b.path(kind).read_bytes() for kind in ("rgb", "depth"))
        identical += same
        rgb_a, rgb_b = a.rgb(), b.rgb()
        if rgb_a is not None and rgb_b is not None:
            ssims.append(1.0 if same else rgb_ssim(rgb_a, rgb_b))
        depth_a, depth_b = a.depth(), b.depth()
        if depth_a is not None and depth_b is not None:
            mae = 0.0 if same else depth_mae_mm(depth_a, depth_b)
            if mae is not None:
                maes.append(mae)
    return CameraDeviation(frames=frames, identical_frames=identical,
                           ssim_mean=float(np.mean(ssims)) if ssims else None,
                           ssim_min=float(np.min(ssims)) if ssims else None,
                           depth_mae_mm_mean=float(np.mean(maes)) if maes else None,
                           depth_mae_mm_max=float(np.max(maes)) if maes else None)


def imu_deviation(parent: Recording, replay: Recording, name: str) -> ImuDeviation:
    a, b = parent.imu()[name], replay.imu()[name]
    ia, ib = paired(a.time, b.time)
    if not len(ia):
        return ImuDeviation(samples=0, max_linear_acceleration=0.0, max_angular_velocity=0.0)
    return ImuDeviation(samples=len(ia),
                        max_linear_acceleration=float(np.abs(a.linear_acceleration[ia] - b.linear_acceleration[ib]).max()),
                        max_angular_velocity=float(np.abs(a.angular_velocity[ia] - b.angular_velocity[ib]).max()))


def unchanged_sensors(parent: Recording, replay: Recording, kind: str) -> list[str]:
    """Names of the cameras or IMUs (`kind`) configured identically in both runs."""
    def configured(recording: Recording) -> dict[str, dict]:
        sensors = getattr(recording.experiment_config().robot.sensors, kind)
        return {s.name: s.model_dump(mode="json") for s in sensors}

    mine, theirs = configured(replay), configured(parent)
    return sorted(name for name, entry in mine.items() if theirs.get(name) == entry)


def deviation_report(parent: Recording, replay: Recording, mode: str, window: tuple[float, float]) -> ReplayReport:
    """The replay.json report of `replay` against `parent`."""
    a, b = parent.robot_path(), replay.robot_path()
    ia, ib = paired(a.time, b.time)
    pose = pose_deviation(a.position[ia], a.quat_wxyz[ia], b.position[ib], b.quat_wxyz[ib])
    cameras = {name: camera_deviation(parent, replay, name) for name in unchanged_sensors(parent, replay, "cameras")
               if name in parent.cameras and name in replay.cameras}
    imus = {name: imu_deviation(parent, replay, name) for name in unchanged_sensors(parent, replay, "imus")
            if name in parent.imu() and name in replay.imu()}
    return ReplayReport(parent=str(parent.path.resolve()), mode=mode, window=window, pose=pose, cameras=cameras,
                        imus=imus)

"""SLAM accuracy metrics: association, Umeyama alignment, ATE, RPE and GRADE's missing time.

Small functions on arrays in the style of evo's `core` (the tests check ATE and RPE against evo, which is GPL
and therefore a test dependency only). ATE alone hides tracking failures, since a method that loses track is
only scored where it still reports poses; GRADE therefore also reports the missing time within the experiment
window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from core.errors import InputError
from core.formats.slam_metrics import ErrorStats, RpeMetrics, SlamMetrics
from core.formats.tum import MAX_TIME_S
from evaluation.trajectory import Trajectory

DEFAULT_MAX_DIFFERENCE = 0.02  # s, TUM's associate.py default
DEFAULT_DELTA_S = 1.0
GAP_SLACK_S = 1e-5  # GRADE: a gap counts as missing when longer than 1/fps + this (timestamp jitter)
MIN_PAIRS = 3  # the fewest points a 3D alignment is defined by
TIME_RESOLUTION_S = 1e-6  # timestamps closer than this are the same time (TUM files give microseconds)


@dataclass(frozen=True)
class AteResult:
    """Absolute trajectory error after aligning the estimate onto the ground truth."""

    rotation: np.ndarray  # (3, 3) of the alignment: gt ≈ scale * rotation @ est + translation
    translation: np.ndarray  # (3,)
    scale: float
    aligned: Trajectory  # the whole estimate, aligned
    gt_indices: np.ndarray  # (M,) associated pose pairs
    est_indices: np.ndarray  # (M,)
    times: np.ndarray  # (M,) ground-truth times of the pairs
    errors: np.ndarray  # (M,) m, position error per pair
    stats: ErrorStats


@dataclass(frozen=True)
class RpeResult:
    """Relative pose error over pose pairs about delta_s apart; the stats are None when there is no such pair."""

    delta_s: float
    times: np.ndarray  # (K,) ground-truth time of each pair's first pose
    translation_errors: np.ndarray  # (K,) m
    rotation_errors: np.ndarray  # (K,) deg
    translation: ErrorStats | None
    rotation: ErrorStats | None


def error_stats(errors: np.ndarray) -> ErrorStats:
    """rmse, mean, median, std (population, as evo), min and max of per-pair errors (at least one)."""
    errors = np.asarray(errors, dtype=np.float64)
    return ErrorStats(rmse=float(np.sqrt(np.mean(errors ** 2))), mean=float(np.mean(errors)),
                      median=float(np.median(errors)), std=float(np.std(errors)), min=float(np.min(errors)),
                      max=float(np.max(errors)))


def associate(times_a: np.ndarray, times_b: np.ndarray,
              max_difference: float = DEFAULT_MAX_DIFFERENCE) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (ia, ib), in increasing order of ia, matching samples at most `max_difference` s apart, each
    sample used at most once: the closest candidate pairs are taken first (TUM's associate.py; evo's
    associate_trajectories gives the same pairs when one side is much sparser than the other)."""
    times_a, times_b = np.asarray(times_a, np.float64), np.asarray(times_b, np.float64)
    order_b = np.argsort(times_b, kind="stable")
    sorted_b = times_b[order_b]
    lo = np.searchsorted(sorted_b, times_a - max_difference, side="left")
    hi = np.searchsorted(sorted_b, times_a + max_difference, side="right")
    counts = hi - lo
    ia = np.repeat(np.arange(len(times_a)), counts)
    offsets = np.arange(len(ia)) - np.repeat(np.cumsum(counts) - counts, counts)  # 0, 1, .. within each a
    ib = order_b[np.repeat(lo, counts) + offsets]
    difference = np.abs(times_a[ia] - times_b[ib])
    keep = difference <= max_difference  # the window bounds above are computed in floating point
    ia, ib, difference = ia[keep], ib[keep], difference[keep]
    used_a, used_b = np.zeros(len(times_a), bool), np.zeros(len(times_b), bool)
    pairs = []
    for k in np.lexsort((ib, ia, difference)):
        a, b = ia[k], ib[k]
        if not used_a[a] and not used_b[b]:
            used_a[a] = used_b[b] = True
            pairs.append((a, b))
    pairs.sort()
    table = np.array(pairs, dtype=np.int64).reshape(-1, 2)
    return table[:, 0], table[:, 1]


def umeyama(source: np.ndarray, target: np.ndarray, with_scale: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """(R, t, s) minimising sum |target - (s R source + t)|^2 over rotations R, translations t and (with
    `with_scale`, else s = 1) scales s (Umeyama 1991, eqs. 34-43). ValueError for fewer than 3 points or
    points on a line, where the rotation is not determined."""
    source, target = np.asarray(source, np.float64), np.asarray(target, np.float64)
    if source.shape != target.shape or source.ndim != 2 or source.shape[1] != 3:
        raise ValueError(f"expected two (N, 3) arrays, got {source.shape} and {target.shape}")
    if len(source) < MIN_PAIRS:
        raise ValueError(f"an alignment needs at least {MIN_PAIRS} points, got {len(source)}")
    mean_source, mean_target = source.mean(axis=0), target.mean(axis=0)
    centred_source, centred_target = source - mean_source, target - mean_target
    variance = np.mean(np.sum(centred_source ** 2, axis=1))
    covariance = centred_target.T @ centred_source / len(source)
    u, d, vt = np.linalg.svd(covariance)
    if np.count_nonzero(d > np.finfo(d.dtype).eps) < 2:
        raise ValueError("the points are (nearly) on a line or a single point: the alignment is not determined")
    sign = np.eye(3)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:  # a reflection: flip the weakest axis (Kabsch)
        sign[2, 2] = -1
    rotation = u @ sign @ vt
    scale = float(np.trace(np.diag(d) @ sign) / variance) if with_scale else 1.0
    return rotation, mean_target - scale * rotation @ mean_source, scale


def apply_alignment(trajectory: Trajectory, rotation: np.ndarray, translation: np.ndarray,
                    scale: float) -> Trajectory:
    """Every pose mapped by the similarity x -> s R x + t (orientations rotated by R)."""
    poses = trajectory.poses.copy()
    poses[:, :3, :3] = rotation @ trajectory.poses[:, :3, :3]
    poses[:, :3, 3] = scale * trajectory.positions @ rotation.T + translation
    return Trajectory(trajectory.times, poses, trajectory.source)


def _associated(gt: Trajectory, est: Trajectory, max_difference: float) -> tuple[np.ndarray, np.ndarray]:
    gt_indices, est_indices = associate(gt.times, est.times, max_difference)
    if len(gt_indices) < MIN_PAIRS:
        raise InputError(f"only {len(gt_indices)} poses of the estimate are within {max_difference} s of a "
                         f"ground-truth pose ({gt.source}); the alignment needs {MIN_PAIRS}. Check that both use "
                         "the same clock, or raise --max-diff", est.source or None, "timestamp")
    return gt_indices, est_indices


def _aligned(gt: Trajectory, est: Trajectory, gt_indices: np.ndarray, est_indices: np.ndarray,
             sim3: bool) -> tuple[np.ndarray, np.ndarray, float]:
    try:
        return umeyama(est.positions[est_indices], gt.positions[gt_indices], with_scale=sim3)
    except ValueError as exc:
        raise InputError(f"cannot align the estimate to the ground truth: {exc}", est.source or None,
                         "poses") from exc


def ate(gt: Trajectory, est: Trajectory, sim3: bool = False,
        max_difference: float = DEFAULT_MAX_DIFFERENCE) -> AteResult:
    """Associate, align `est` onto `gt` (SE(3), or Sim(3) for monocular methods whose scale is arbitrary) by
    Umeyama on the associated positions, and measure each pair's position error."""
    gt_indices, est_indices = _associated(gt, est, max_difference)
    rotation, translation, scale = _aligned(gt, est, gt_indices, est_indices, sim3)
    aligned = apply_alignment(est, rotation, translation, scale)
    errors = np.linalg.norm(gt.positions[gt_indices] - aligned.positions[est_indices], axis=1)
    return AteResult(rotation, translation, scale, aligned, gt_indices, est_indices, gt.times[gt_indices], errors,
                     error_stats(errors))


def _between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(K, 4, 4) a^-1 b of rigid poses, with the transposed rotation instead of a general inverse."""
    out = np.zeros_like(a)
    rotation_t = np.transpose(a[:, :3, :3], (0, 2, 1))
    out[:, :3, :3] = rotation_t @ b[:, :3, :3]
    out[:, :3, 3] = np.einsum("kij,kj->ki", rotation_t, b[:, :3, 3] - a[:, :3, 3])
    out[:, 3, 3] = 1
    return out


def delta_pairs(times: np.ndarray, delta_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Index pairs (i, j), j > i, with times[j] the time nearest to times[i] + delta_s (ties: the earlier one).
    Left out: pairs whose span differs from delta_s by more than half of it, so that a tracking gap does not
    turn into a pair over a much longer or shorter span, and start poses within delta_s of the end, which have
    no pose delta_s later."""
    times = np.asarray(times, np.float64)
    if len(times) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    target = times + delta_s
    after = np.clip(np.searchsorted(times, target, side="left"), 1, len(times) - 1)
    before = after - 1
    nearest = np.where(np.abs(times[before] - target) <= np.abs(times[after] - target), before, after)
    first = np.arange(len(times))
    keep = ((nearest > first) & (np.abs(times[nearest] - target) <= delta_s / 2)
            & (target <= times[-1] + TIME_RESOLUTION_S))
    return first[keep], nearest[keep]


def rpe(gt: Trajectory, est: Trajectory, delta_s: float = DEFAULT_DELTA_S,
        max_difference: float = DEFAULT_MAX_DIFFERENCE, sim3: bool = False) -> RpeResult:
    """Relative pose error: for associated pose pairs about `delta_s` apart (delta_pairs on the ground-truth
    times), the error E = (gt_i^-1 gt_j)^-1 (est_i^-1 est_j) of the estimate's motion, as its translation norm
    (m) and rotation angle (deg). With `sim3` the estimate is first scaled by the Sim(3) alignment's scale (a
    rigid alignment does not change relative motions)."""
    if delta_s <= 0:
        raise InputError(f"delta must be positive, got {delta_s}", None, "delta")
    gt_indices, est_indices = _associated(gt, est, max_difference)
    if sim3:
        est = apply_alignment(est, *_aligned(gt, est, gt_indices, est_indices, sim3))
    first, second = delta_pairs(gt.times[gt_indices], delta_s)
    gt_poses, est_poses = gt.poses[gt_indices], est.poses[est_indices]
    error = _between(_between(gt_poses[first], gt_poses[second]), _between(est_poses[first], est_poses[second]))
    translation = np.linalg.norm(error[:, :3, 3], axis=1)
    rotation = np.degrees(Rotation.from_matrix(error[:, :3, :3]).magnitude()) if len(first) else np.zeros(0)
    found = len(first) > 0
    return RpeResult(delta_s, gt.times[gt_indices][first], translation, rotation,
                     error_stats(translation) if found else None, error_stats(rotation) if found else None)


def missing_time(est_times: np.ndarray, window: tuple[float, float], fps: float) -> tuple[float, float]:
    """(missing seconds, tracked fraction) as GRADE defines them: within `window` = [start, end], the sum of
    the gaps between consecutive estimates longer than 1/fps + 1e-5 s, plus the gap from the start to the first
    estimate and from the last estimate to the end when those are longer than the same threshold; tracked
    fraction = 1 - missing / (end - start). Estimates outside the window are ignored; none at all means the
    whole window is missing."""
    start, end = float(window[0]), float(window[1])
    # Within a trajectory's time range (core.formats.tum), so that its length end - start is a finite float.
    if not -MAX_TIME_S <= start < end <= MAX_TIME_S:
        raise InputError(f"the window must have start < end, both within +-{MAX_TIME_S:g} s, got [{start}, {end}]",
                         None, "window")
    if not fps > 0:
        raise InputError(f"fps must be positive, got {fps}", None, "fps")
    times = np.sort(np.asarray(est_times, np.float64))
    times = times[(times >= start) & (times <= end)]
    gaps = np.diff(np.concatenate([[start], times, [end]]))
    missing = float(np.sum(gaps[gaps > 1.0 / fps + GAP_SLACK_S]))
    return missing, 1.0 - missing / (end - start)


def median_rate(times: np.ndarray) -> float:
    """Samples per second from the median interval (robust to the odd dropped or doubled sample)."""
    intervals = np.diff(np.asarray(times, np.float64))
    if not len(intervals) or not np.median(intervals) > 0:
        raise InputError("need at least two distinct times to tell the frame rate; give --fps", None, "fps")
    return float(1.0 / np.median(intervals))


def evaluate_slam(gt: Trajectory, est: Trajectory, *, sim3: bool = False, delta_s: float = DEFAULT_DELTA_S,
                  max_difference: float = DEFAULT_MAX_DIFFERENCE, window: tuple[float, float] | None = None,
                  fps: float | None = None) -> SlamMetrics:
    """ATE, RPE and missing time of `est` against `gt`, as stored in metrics.json. The window defaults to the
    ground truth's first to last time, fps to the ground truth's median rate."""
    return slam_evaluation(gt, est, sim3=sim3, delta_s=delta_s, max_difference=max_difference, window=window,
                           fps=fps)[0]


def slam_evaluation(gt: Trajectory, est: Trajectory, *, sim3: bool = False, delta_s: float = DEFAULT_DELTA_S,
                    max_difference: float = DEFAULT_MAX_DIFFERENCE, window: tuple[float, float] | None = None,
                    fps: float | None = None) -> tuple[SlamMetrics, AteResult]:
    """`evaluate_slam` with the ATE result behind it (the aligned estimate and per-pair errors the plots
    show), so they are computed once."""
    for trajectory in (gt, est):
        # Every source may give none (an empty or comment-only TUM file, a camera without frames, a bag topic
        # without messages); said here, naming it, before the window and rate are taken from its times.
        if not len(trajectory):
            raise InputError("no poses (an empty trajectory, or a file of only blank and # comment lines)",
                             trajectory.source or None, "poses")
    window = (float(gt.times[0]), float(gt.times[-1])) if window is None else (float(window[0]), float(window[1]))
    fps = median_rate(gt.times) if fps is None else float(fps)
    absolute = ate(gt, est, sim3, max_difference)
    relative = rpe(gt, est, delta_s, max_difference, sim3)
    missing, tracked = missing_time(est.times, window, fps)
    rpe_metrics = None if relative.translation is None else RpeMetrics(
        delta_s=delta_s, pairs=len(relative.times), translation=relative.translation, rotation=relative.rotation)
    return SlamMetrics(gt=gt.source, est=est.source, alignment="sim3" if sim3 else "se3", scale=absolute.scale,
                       max_difference=max_difference, pairs=len(absolute.errors), ate=absolute.stats, rpe=rpe_metrics,
                       missing_time_s=missing, tracked_fraction=tracked, window=window, fps=fps), absolute

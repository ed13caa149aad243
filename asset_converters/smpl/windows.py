"""Windows of long SMPL-family clips: which frames of a sequence become an animated asset.

Placement accepts a human only when the volume swept by its whole clip fits in the house, and a long
mocap walk sweeps metres of floor (CMU 01_01: 3.6 m). GRADE keeps 50-500 frames per sequence; here a
clip is cut to windows of `humans.window.duration` seconds (at the package frame rate):

- least_sweep: the window with the smallest sweep;
- random: one window, its start drawn from the seed and the package's name;
- split: consecutive windows, as many as fit (at most `max_windows`), spread evenly over the clip,
  each converted into its own package `<name>_wNN`;
- whole: the entire clip.

A window's sweep is the largest horizontal distance between two joint positions over its frames: the
diameter of its footprint, without the body's girth.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.spatial import ConvexHull, QhullError
from scipy.spatial.distance import pdist

from core.config import ClipWindowConfig
from core.seeding import generator

MIN_WINDOW_FRAMES = 2  # one frame has no motion; two give a clip with a duration
DEFAULT_WINDOW = ClipWindowConfig()  # the converters' default, the config's: the least-sweep window


def window_frames(window: ClipWindowConfig, fps: float) -> int:
    """Frames per window at `fps`."""
    return max(MIN_WINDOW_FRAMES, round(window.duration * fps))


def _hull_corners(points: np.ndarray) -> np.ndarray:
    """The corners of the 2D convex hull of `points` (all points when they are collinear or too few):
    the farthest pair of a point set is always a pair of its hull's corners."""
    try:
        return points[ConvexHull(points).vertices]
    except QhullError:
        return points


def horizontal_diameter(points: np.ndarray) -> float:
    """Largest XY distance between two of the (..., 3) points."""
    corners = _hull_corners(np.asarray(points, dtype=np.float64).reshape(-1, 3)[:, :2])
    return float(pdist(corners).max()) if len(corners) > 1 else 0.0


def window_sweeps(joints: np.ndarray, length: int) -> np.ndarray:
    """Sweep of every window of `length` frames of (N, J, 3) joint positions: (N - length + 1,), entry s for
    frames s .. s + length - 1. `length` must be <= N."""
    per_frame = [_hull_corners(frame[:, :2]) for frame in np.asarray(joints, dtype=np.float64)]
    sweeps = np.empty(len(per_frame) - length + 1)
    for start in range(len(sweeps)):
        corners = _hull_corners(np.concatenate(per_frame[start : start + length]))
        sweeps[start] = pdist(corners).max() if len(corners) > 1 else 0.0
    return sweeps


def split_starts(frames: int, length: int, max_windows: int) -> list[int]:
    """First frames of the split windows: floor(frames / length) of them (at least one, at most
    `max_windows`), evenly spread from the first frame to the last, so they never overlap."""
    if length >= frames:
        return [0]
    count = min(frames // length, max_windows)
    if count == 1:
        return [0]
    return np.linspace(0, frames - length, count).round().astype(int).tolist()


def window_count(window: ClipWindowConfig, frames: int, fps: float) -> int:
    """How many packages a clip of `frames` frames at `fps` becomes."""
    if window.select != "split":
        return 1
    return len(split_starts(frames, window_frames(window, fps), window.max_windows))


def window_range(window: ClipWindowConfig, index: int, frames: int, fps: float,
                 joints: Callable[[], np.ndarray], seed: int, name: str) -> tuple[int, int]:
    """Frames [start, stop) of window `index` of a clip of `frames` frames at `fps`.

    `joints()` gives the clip's (N, J, 3) world joint positions; it is called only for least_sweep.
    `seed` and `name` (the package's) seed the random window, so each clip draws its own.
    """
    length = window_frames(window, fps)
    if window.select == "whole" or length >= frames:
        return 0, frames
    if window.select == "split":
        start = split_starts(frames, length, window.max_windows)[index]
    elif window.select == "random":
        start = int(generator(seed, f"humans/window/{name}").integers(0, frames - length + 1))
    else:
        start = int(np.argmin(window_sweeps(joints(), length)))
    return start, start + length


def window_suffix(window: ClipWindowConfig, index: int) -> str:
    """Package-name suffix of window `index`: split windows are numbered, a single window is not."""
    return f"_w{index:02d}" if window.select == "split" else ""


def window_options(window: ClipWindowConfig, index: int, seed: int) -> dict:
    """What of the window settings decides a package's content (part of its content address)."""
    options: dict = {"window": window.model_dump(mode="json")}
    if window.select == "split":
        options["window_index"] = index
    if window.select == "random":
        options["window_seed"] = seed
    return options

"""PNG figures of a SLAM evaluation: the aligned trajectories seen from above, and the ATE over time.

Figures are built on an Agg canvas (core.figures) and written atomically, like every output.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.figures import figure_png, new_figure
from core.formats.slam_metrics import SlamMetrics, write_slam_metrics
from core.rundir import atomic_write_bytes
from evaluation.metrics import AteResult
from evaluation.trajectory import Trajectory

TRAJECTORIES_FILE = "trajectories.png"
ERRORS_FILE = "errors.png"
TRAJECTORY_INCHES = (8.0, 8.0)
ERRORS_INCHES = (10.0, 4.0)


def plot_trajectories(path: Path, gt: Trajectory, aligned_est: Trajectory, title: str) -> Path:
    """Top-down x-y view (equal axes) of the ground truth and the aligned estimate, start marked."""
    figure = new_figure(TRAJECTORY_INCHES)
    axes = figure.add_subplot()
    for trajectory, label, colour in ((gt, "ground truth", "black"), (aligned_est, "estimate (aligned)", "tab:blue")):
        xy = trajectory.positions[:, :2]
        axes.plot(xy[:, 0], xy[:, 1], color=colour, linewidth=1.2, label=label)
        axes.plot(*xy[0], marker="o", color=colour, linestyle="none")
    axes.set_aspect("equal", adjustable="datalim")
    axes.set_xlabel("x (m)")
    axes.set_ylabel("y (m)")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    return atomic_write_bytes(path, figure_png(figure))


def plot_errors(path: Path, times: np.ndarray, errors: np.ndarray, title: str) -> Path:
    """The ATE of each associated pose pair over time (s from the first pair), with its RMSE as a line."""
    times, errors = np.asarray(times, np.float64), np.asarray(errors, np.float64)
    figure = new_figure(ERRORS_INCHES)
    axes = figure.add_subplot()
    elapsed = times - times[0] if len(times) else times
    axes.plot(elapsed, errors, color="tab:red", linewidth=1.0, marker=".", markersize=3, label="ATE")
    if len(errors):
        rmse = float(np.sqrt(np.mean(errors ** 2)))
        axes.axhline(rmse, color="gray", linestyle="--", linewidth=1.0, label=f"RMSE {rmse:.4f} m")
    axes.set_xlabel("time since the first pair (s)")
    axes.set_ylabel("position error (m)")
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    return atomic_write_bytes(path, figure_png(figure))


def write_evaluation(folder: Path, gt: Trajectory, metrics: SlamMetrics, absolute: AteResult,
                     title: str) -> list[Path]:
    """An evaluation's files in `folder`: metrics.json, trajectories.png (the ground truth and the aligned
    estimate) and errors.png (ATE over time)."""
    return [write_slam_metrics(folder, metrics),
            plot_trajectories(folder / TRAJECTORIES_FILE, gt, absolute.aligned,
                              f"{title} (aligned, {metrics.alignment})"),
            plot_errors(folder / ERRORS_FILE, absolute.times, absolute.errors,
                        f"{title}: ATE ({metrics.alignment}), RMSE {metrics.ate.rmse:.4f} m")]

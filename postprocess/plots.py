"""Matplotlib figures of a recording: the robot's path on the occupancy map, the IMU signals, and an exploring
robot's coverage of the floor it can reach.

Figures are built on an Agg canvas (core.figures) and returned as PNG bytes for an atomic write.
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from core.figures import figure_png, new_figure
from core.formats.imu import ImuSeries
from core.formats.states import RobotPath
from postprocess.backdrop import MapBackdrop

TRAJECTORY_INCHES = (8.0, 8.0)
IMU_ROW_INCHES = (12.0, 3.0)
COVERAGE_INCHES = (8.0, 4.0)
MAP_COLOURS = ListedColormap(["white", "dimgray", "lightgray"])  # free, occupied, outside (occupancy.npz legend)
BEYOND_MAP_COLOUR = "lightgray"  # beyond the map's extent reads as "outside" too, so the free floor stands out
MAP_CLASSES = 3
AXIS_COLOURS = ("tab:red", "tab:green", "tab:blue")  # x, y, z
CAMERA_COLOURS = ("tab:purple", "tab:cyan", "tab:olive", "tab:pink", "tab:brown")
MARGIN_M = 0.5


def path_length(position: np.ndarray) -> float:
    return float(np.linalg.norm(np.diff(position[:, :2], axis=0), axis=1).sum())


def trajectory_figure(robot: RobotPath, layout: MapBackdrop, camera_xy: dict[str, np.ndarray], title: str) -> Figure:
    """Top-down (north = +y up): occupancy map, robot path with start/end, camera frame positions, humans."""
    figure = new_figure(TRAJECTORY_INCHES)
    axes = figure.add_subplot(facecolor=BEYOND_MAP_COLOUR)
    occupancy = layout.occupancy
    x_min, x_max, y_min, y_max = occupancy.extent
    # map2d is indexed [ix, iy]; imshow wants rows = y, so transpose and put row 0 at the bottom.
    axes.imshow(occupancy.grid.T, origin="lower", extent=occupancy.extent, cmap=MAP_COLOURS, vmin=0,
                vmax=MAP_CLASSES - 1, interpolation="nearest")
    xy = robot.position[:, :2]
    axes.plot(xy[:, 0], xy[:, 1], color="tab:blue", linewidth=1.5, label="robot path", zorder=3)
    axes.plot(*xy[0], marker="o", markersize=9, color="tab:green", linestyle="none", label="start", zorder=5)
    axes.plot(*xy[-1], marker="s", markersize=9, color="tab:red", linestyle="none", label="end", zorder=5)
    for index, (name, points) in enumerate(sorted(camera_xy.items())):
        axes.scatter(points[:, 0], points[:, 1], s=6, color=CAMERA_COLOURS[index % len(CAMERA_COLOURS)],
                     label=f"{name} frames", zorder=4)
    if len(layout.humans):
        axes.scatter(layout.humans[:, 0], layout.humans[:, 1], marker="x", s=60, color="tab:orange",
                     label="human start", zorder=4)
    every = np.concatenate([xy, layout.humans[:, :2], *camera_xy.values()])
    axes.set_xlim(min(x_min, every[:, 0].min()) - MARGIN_M, max(x_max, every[:, 0].max()) + MARGIN_M)
    axes.set_ylim(min(y_min, every[:, 1].min()) - MARGIN_M, max(y_max, every[:, 1].max()) + MARGIN_M)
    axes.set_aspect("equal")
    axes.set_xlabel("x [m]")
    axes.set_ylabel("y [m]")
    duration = float(robot.time[-1] - robot.time[0])
    axes.set_title(f"{title}: robot path, {duration:.1f} s, {path_length(robot.position):.2f} m travelled")
    axes.legend(loc="upper right", fontsize="small", framealpha=0.85)
    figure.tight_layout()
    return figure


def plot_trajectory(robot: RobotPath, layout: MapBackdrop, camera_xy: dict[str, np.ndarray], title: str) -> bytes:
    """trajectory_figure as PNG bytes."""
    return figure_png(trajectory_figure(robot, layout, camera_xy, title))


def imu_figure(series: list[ImuSeries], title: str) -> Figure:
    """A row per IMU: accelerometer (m/s^2) and gyro (rad/s), x/y/z in the sensor frame, over sim time."""
    figure = new_figure((IMU_ROW_INCHES[0], IMU_ROW_INCHES[1] * len(series)))
    grid = figure.subplots(len(series), 2, squeeze=False, sharex=True)
    for row, imu in zip(grid, series):
        for axes, values, what in ((row[0], imu.linear_acceleration, "accelerometer [m/s²]"),
                                   (row[1], imu.angular_velocity, "gyro [rad/s]")):
            for axis, color, label in zip(values.T, AXIS_COLOURS, "xyz"):
                axes.plot(imu.time, axis, color=color, linewidth=0.8, label=label)
            axes.set_title(f"{imu.name}: {what}", fontsize="medium")
            axes.grid(True, alpha=0.3)
            axes.legend(loc="upper right", fontsize="small")
    for axes in grid[-1]:
        axes.set_xlabel("sim time [s]")
    figure.suptitle(title)
    figure.tight_layout()
    return figure


def plot_imu(series: list[ImuSeries], title: str) -> bytes:
    """imu_figure as PNG bytes."""
    return figure_png(imu_figure(series, title))


def coverage_figure(series: np.ndarray, title: str) -> Figure:
    """The share of the reachable floor the robot's map knew over sim time, `series` (N, 2) [time s, fraction]."""
    figure = new_figure(COVERAGE_INCHES)
    axes = figure.add_subplot()
    axes.plot(series[:, 0], 100.0 * series[:, 1], color="tab:blue", linewidth=1.5)
    axes.set_ylim(0.0, 100.0)
    axes.set_xlabel("sim time [s]")
    axes.set_ylabel("reachable floor known [%]")
    axes.grid(True, alpha=0.3)
    axes.set_title(f"{title}: {100.0 * series[-1, 1]:.1f}% of the reachable floor known at {series[-1, 0]:.1f} s")
    figure.tight_layout()
    return figure


def plot_coverage(series: np.ndarray, title: str) -> bytes:
    """coverage_figure as PNG bytes."""
    return figure_png(coverage_figure(series, title))

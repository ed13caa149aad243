"""Where a bag lies: a ROS 1 bag is the file `<name>.bag`; a ROS 2 bag is the folder `<name>/` holding
`metadata.yaml` beside its storage files. A `.bag.active` file is what a killed `rosbag record` leaves."""

from __future__ import annotations

from pathlib import Path

ROS1_SUFFIX = ".bag"
ROS2_METADATA = "metadata.yaml"
ACTIVE_SUFFIX = ".active"


def ros1_bag_path(folder: Path, name: str) -> Path:
    return Path(folder) / f"{name}{ROS1_SUFFIX}"


def ros2_bag_path(folder: Path, name: str) -> Path:
    return Path(folder) / name


def is_bag(path: Path) -> bool:
    """Whether `path` is a bag: a ROS 1 file (also an unindexed `.bag.active`) or a ROS 2 folder."""
    return path.name.endswith((ROS1_SUFFIX, ROS1_SUFFIX + ACTIVE_SUFFIX)) or (path / ROS2_METADATA).is_file()

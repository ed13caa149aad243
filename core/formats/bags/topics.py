"""The names of a recording's bag topics and TF frames (docs/guides/recording.md): the recorder writes them, the
Recording reader and the bag tools look them up, so both sides spell them here once.

Robot topics live under `recording.namespace` (GRADE's `my_robot_0` gives `/my_robot_0/camera/rgb/image_raw`,
`/my_robot_0/imu_body`; empty: `/camera/rgb/image_raw`), and robot TF frames carry it as a prefix
(`my_robot_0/base_link`, as robot_state_publisher's frame_prefix writes them), so the bags of several robots
merge into one TF tree. `/clock`, `/tf`, `/tf_static`, the start-of-experiment marker and the world frame are
shared by every robot and stay global.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CLOCK = "/clock"
TF = "/tf"
TF_STATIC = "/tf_static"
EXPERIMENT_MARKER = "/starting_experiment"
WORLD_FRAME = "world"
BASE_FRAME = "base_link"
OPTICAL_SUFFIX = "_optical_frame"

# A ROS graph-resource namespace without its leading slash: tokens of letters, digits and underscores, not starting
# with a digit, joined by single slashes (`my_robot_0`, `fleet/robot_1`); empty for none.
NAMESPACE_PATTERN = r"^$|^[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*$"


def check_namespace(namespace: str) -> str:
    """`namespace` if it is a ROS namespace as recording.namespace takes it, else ValueError saying what one is."""
    if not re.match(NAMESPACE_PATTERN, namespace):
        raise ValueError(f"{namespace!r} is not a ROS namespace: name tokens (letters, digits and _, not starting "
                         "with a digit) joined by '/', without a leading or trailing '/', e.g. my_robot_0")
    return namespace


@dataclass(frozen=True)
class BagTopics:
    """Topic and frame names of one robot's bags under `namespace` (no leading or trailing slash)."""

    namespace: str = ""

    def __post_init__(self) -> None:
        check_namespace(self.namespace)

    def topic(self, *parts: str) -> str:
        """A robot topic: /<namespace>/<parts...>; a sensor kind's recorder names its own topics with it
        (`topic(sensor, suffix)`), the shared ones are below."""
        return "/" + "/".join(part for part in (self.namespace, *parts) if part)

    def frame(self, name: str) -> str:
        """A robot TF frame: <namespace>/<name>."""
        return f"{self.namespace}/{name}" if self.namespace else name

    @property
    def base_frame(self) -> str:
        return self.frame(BASE_FRAME)

    def optical_frame(self, camera: str) -> str:
        """The camera's ROS optical frame (z forward, x right, y down), child of its body frame `<camera>`."""
        return self.frame(camera + OPTICAL_SUFFIX)

    @property
    def odometry(self) -> str:
        return self.topic("odom")

    @property
    def joint_states(self) -> str:
        return self.topic("joint_states")

    def imu(self, name: str) -> str:
        return self.topic(name)

    def camera_pose(self, camera: str) -> str:
        return self.topic(camera, "pose")

    def rgb(self, camera: str) -> str:
        return self.topic(camera, "rgb", "image_raw")

    def depth(self, camera: str) -> str:
        return self.topic(camera, "depth", "image_raw")

    def camera_info(self, camera: str) -> str:
        return self.topic(camera, "camera_info")

    def points(self, lidar: str) -> str:
        return self.topic(lidar, "points")

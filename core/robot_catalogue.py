"""The robots GRADE simulates, one entry per kind: the facts that the config schema, placement and the robot
models share. The models (simulation/robots) build their bodies around these names; a test compiles each model
and checks its links against this catalogue."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# A robot kind (config `robot.kind`, placement.json `robot.kind`): the keys of ROBOTS.
RobotKind = Literal["uav", "tiago_omni"]


@dataclass(frozen=True)
class RobotFacts:
    """What a robot kind is, whatever its model variant."""

    links: tuple[str, ...]  # its TF links, base_link first: where sensors may be mounted
    camera_link: str  # the link a camera sits on by default
    default_imus: tuple[tuple[str, str], ...]  # (name, link) of the IMUs it carries when none are configured
    # The collision volume placement keeps clear at its start, centred on the body, Z up: a box of these
    # extents, or a cylinder of diameter extents[0] and height extents[2].
    volume_shape: Literal["box", "cylinder"]
    volume_extents: tuple[float, float, float]


ROBOTS: dict[RobotKind, RobotFacts] = {
    "uav": RobotFacts(
        links=("base_link", "camera_link"), camera_link="camera_link",
        default_imus=(("imu_body", "base_link"), ("imu_camera", "camera_link")),
        volume_shape="box", volume_extents=(0.6, 0.6, 0.3),
    ),
    "tiago_omni": RobotFacts(
        links=("base_link", "torso_lift_link", "head_1_link", "head_2_link", "base_laser_link"),
        camera_link="head_2_link", default_imus=(("imu_body", "base_link"), ("imu_camera", "head_2_link")),
        volume_shape="cylinder", volume_extents=(0.7, 0.7, 1.2),
    ),
}

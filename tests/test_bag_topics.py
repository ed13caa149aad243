"""Bag topic and TF frame names (core.formats.bags.topics): today's names without a namespace, GRADE's `/my_robot_0/...`
with one, the shared topics and the world frame global; a namespace that is not a ROS name is a clear config
error. Recorded bags are checked against these names in test_generate (UAV and a namespaced TIAGo run)."""

from __future__ import annotations

import pytest

from core.config_io import load_experiment
from core.errors import ConfigError
from core.formats.bags.topics import BagTopics
from tests.conftest import CONFIGS


def _names(topics: BagTopics) -> list[str]:
    return [topics.imu("imu_body"), topics.odometry, topics.joint_states, topics.camera_pose("camera"),
            topics.rgb("camera"), topics.depth("camera"), topics.camera_info("camera"), topics.points("lidar"),
            topics.base_frame, topics.frame("imu_body"), topics.optical_frame("camera")]


def test_names_without_and_with_a_namespace():
    assert _names(BagTopics()) == [
        "/imu_body", "/odom", "/joint_states", "/camera/pose", "/camera/rgb/image_raw", "/camera/depth/image_raw",
        "/camera/camera_info", "/lidar/points", "base_link", "imu_body", "camera_optical_frame"]
    # GRADE's layout (its bags carry /my_robot_0/camera/pose, /my_robot_0/imu_body); frames as robot_state_publisher's
    # frame_prefix writes them.
    assert _names(BagTopics("my_robot_0")) == [
        "/my_robot_0/imu_body", "/my_robot_0/odom", "/my_robot_0/joint_states", "/my_robot_0/camera/pose",
        "/my_robot_0/camera/rgb/image_raw", "/my_robot_0/camera/depth/image_raw", "/my_robot_0/camera/camera_info",
        "/my_robot_0/lidar/points", "my_robot_0/base_link", "my_robot_0/imu_body", "my_robot_0/camera_optical_frame"]
    assert BagTopics("fleet/robot_1").rgb("cam") == "/fleet/robot_1/cam/rgb/image_raw"


@pytest.mark.parametrize("namespace", ["/my_robot_0", "my_robot_0/", "my robot", "0robot", "a//b", "robot-1"])
def test_a_namespace_that_is_not_a_ros_name_is_refused_naming_the_key(namespace):
    with pytest.raises(ConfigError, match="recording.namespace") as info:
        load_experiment(CONFIGS / "demo.yaml", [f"recording.namespace={namespace}"])
    assert "not a ROS namespace" in str(info.value) and "my_robot_0" in str(info.value)
    with pytest.raises(ValueError, match="not a ROS namespace"):
        BagTopics(namespace)


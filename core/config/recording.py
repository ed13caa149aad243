"""What a run records (`recording`): bag formats and compression, depth encoding, the class map, checkpoints
and the ROS namespace."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, field_validator, model_validator

from core.config.base import PositiveFloat, Strict
from core.config.paths import InputPath
from core.formats.bags.topics import check_namespace


class RecordingConfig(Strict):
    bag_formats: list[Literal["ros1", "ros2"]] = Field(default_factory=lambda: ["ros2"])
    ros2_storage: Literal["mcap", "sqlite3"] = "mcap"
    bag_compression: Literal["none", "lz4", "zstd", "bz2"] = Field(
        "none", description="compress the bags: ROS 1 chunks lz4 or bz2, ROS 2 MCAP chunks lz4 or zstd, "
                            "ROS 2 sqlite3 messages zstd")
    depth_encoding: Literal["32FC1", "16UC1"] = Field("32FC1", description="32FC1 metres or 16UC1 millimetres")
    depth_npy: StrictBool = Field(False, description="also save float32 depth in metres as .npy")
    human_vertices: StrictBool = Field(False, description="save posed human vertices per frame (large)")
    class_map: InputPath | None = Field(None, description="YAML file overriding the global semantic class map "
                                                     "(default: NYU40 + GRADE's extras; docs/guides/recording.md)")
    checkpoint_period: PositiveFloat = Field(1.0, description="s between full simulator states in states.npz "
                                                              "(replay can start at any of them)")
    namespace: str = Field(
        "", description="ROS namespace of the robot's bag topics and TF frames: my_robot_0 (GRADE) records "
                        "/my_robot_0/camera/rgb/image_raw with frames my_robot_0/base_link; empty: /camera/rgb/"
                        "image_raw, base_link. /clock, /tf, /tf_static, /starting_experiment and world stay global")

    @field_validator("namespace")
    @classmethod
    def _ros_namespace(cls, value: str) -> str:
        return check_namespace(value)

    @model_validator(mode="after")
    def _compression_fits_formats(self) -> RecordingConfig:
        # What each bag kind can be compressed with (core.formats.bags.writer.BAG_COMPRESSIONS writes them).
        kinds = {"ros1": ("ROS 1", ("lz4", "bz2")), "mcap": ("ROS 2 MCAP", ("lz4", "zstd")),
                 "sqlite3": ("ROS 2 sqlite3", ("zstd",))}
        used = [kinds["ros1" if f == "ros1" else self.ros2_storage] for f in self.bag_formats]
        refused = [f"{label} supports {' or '.join(ok)}" for label, ok in used
                   if self.bag_compression != "none" and self.bag_compression not in ok]
        if refused:
            raise ValueError(f"recording.bag_compression {self.bag_compression!r} cannot compress every bag of "
                             f"bag_formats {self.bag_formats}: {'; '.join(refused)}")
        return self

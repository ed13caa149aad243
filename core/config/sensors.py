"""The sensors' config models (cameras, IMUs, LiDARs), each mounted on a robot link; a robot's list of them:
core.config.sensor_kinds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np
from pydantic import (
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    StrictBool,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from core.config.base import FloatRange, NonNegFloat, PositiveFloat, PositiveInt, Strict, Vec3
from core.config.lens import Lens, LensModel, check_image, focal_of_fov
from core.errors import InputError
from core.geometry import mount_matrix

# Most pixels a camera may render per frame (after supersampling): 8K UHD. Beyond it one frame's buffers
# take gigabytes.
MAX_CAMERA_PIXELS = 7680 * 4320
# Most points a LiDAR may cast per sweep: 2^22, ten times a 128-channel, 0.1 degree spinning LiDAR's. Beyond it
# one sweep's rays take gigabytes.
MAX_LIDAR_POINTS = 1 << 22


class Mount(Strict):
    """A sensor pose in its parent link: translation (m) and roll/pitch/yaw (deg, XYZ extrinsic)."""

    link: str = "base_link"
    translation: Vec3 = (0.0, 0.0, 0.0)
    rpy_deg: Vec3 = (0.0, 0.0, 0.0)


STEREO_SIDES = ("left", "right")


def stereo_name(pair: str, side: str) -> str:
    """The name of a `stereo:` camera's left or right camera: its topics, TF frame and gt folder."""
    return f"{pair}_{side}"


@dataclass(frozen=True)
class StereoSide:
    """Which camera of a `stereo:` entry a camera is: the entry's name, the side, the baseline (m)."""

    pair: str
    side: Literal["left", "right"]
    baseline: float

    def projection_tx(self, fx: float) -> float:
        """P[0, 3] of the camera's CameraInfo, ROS's stereo convention: -fx * baseline for the right camera."""
        return -fx * self.baseline if self.side == "right" else 0.0


class StereoConfig(Strict):
    """A stereo pair made of one camera entry: its left camera at the mount, the right one `baseline` m to its
    right (the optical frame's +x: the mount's -y), both with its intrinsics, lens and rate."""

    baseline: PositiveFloat


class CameraConfig(Strict):
    """An RGB-D camera, or with `stereo` a rectified pair of them (`<name>_left`, `<name>_right`). Give `fov_deg`
    (horizontal, between the outer pixel edges) or full intrinsics (fx, fy, cx, cy). `model` is its lens (core/config/lens.py): pinhole, radtan (OpenCV's plumb_bob) or equidistant
    (Kannala-Brandt, as cv2.fisheye; fields of view beyond 180 degrees)."""

    name: str
    mount: Mount = Field(default_factory=Mount)
    width: PositiveInt = 640
    height: PositiveInt = 480
    model: LensModel = "pinhole"
    distortion: tuple[float, ...] | None = Field(
        None, description="radtan: k1, k2, p1, p2, k3; equidistant: k1, k2, k3, k4; left out: all 0")
    fov_deg: float | None = 90.0
    intrinsics: tuple[PositiveFloat, PositiveFloat, float, float] | None = Field(
        None, description="fx, fy, cx, cy in pixels; overrides fov_deg"
    )
    rate_hz: PositiveFloat = 30.0
    # Clip distances in m: depth is float32 (and millimetres in 16-bit PNGs), so a near plane below 0.1 mm or a far
    # one beyond 1000 km only loses precision or overflows.
    near: Annotated[float, Field(ge=1e-4, le=1e6)] = 0.05
    far: Annotated[float, Field(ge=1e-4, le=1e6)] = 100.0
    outputs: list[Literal["rgb", "depth", "instance", "semantic", "normals", "flow", "boxes2d", "boxes3d"]] = Field(
        default_factory=lambda: ["rgb", "depth", "instance", "semantic", "boxes2d", "boxes3d"]
    )
    to_bag: StrictBool = Field(True, description="publish this camera in the ROS bags")
    to_gt: StrictBool = Field(True, description="write this camera's frames to gt/<name>/")
    supersampling: Annotated[int, Field(ge=1, le=4)] = 1
    stereo: StereoConfig | None = None
    _stereo: StereoSide | None = PrivateAttr(None)

    @property
    def stereo_side(self) -> StereoSide | None:
        """Set on the two cameras a `stereo:` entry became."""
        return self._stereo

    def stereo_pair(self) -> list[CameraConfig]:
        """The left and right cameras of this `stereo:` entry: the left at the mount, the right `baseline` along
        the optical frame's +x, which is the mount's -y (body frame x forward, y left, z up)."""
        baseline = self.stereo.baseline
        offset = mount_matrix(self.mount.translation, self.mount.rpy_deg)[:3, :3] @ np.array([0.0, -baseline, 0.0])
        # Rounded to the picometre: the rotation leaves ~1e-17 m where the mount has a 0.
        translation = tuple(round(float(v), 12) for v in np.add(self.mount.translation, offset))
        mounts = {"left": self.mount, "right": self.mount.model_copy(update={"translation": translation})}
        pair = []
        for side in STEREO_SIDES:
            camera = self.model_copy(update={"name": stereo_name(self.name, side), "mount": mounts[side],
                                             "stereo": None})
            camera._stereo = StereoSide(self.name, side, baseline)
            pair.append(camera)
        return pair

    @field_validator("fov_deg")
    @classmethod
    def _fov_range(cls, value: float | None, info: ValidationInfo) -> float | None:
        limit = 360 if info.data.get("model") == "equidistant" else 180
        if value is not None and not 0.0 < value < limit:
            raise ValueError(f"fov_deg must be in (0, {limit}) for the {info.data.get('model')} model, got {value}")
        return value

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict:
        data = handler(self)
        # Every camera was an ideal pinhole before lens models: left out, existing configs' run.json and record
        # hashes stay byte for byte what they were.
        if self.model == "pinhole":
            data.pop("model", None)  # absent already from dumps that leave out defaults
            data.pop("distortion", None)
        if self.stereo is None:  # as the lens fields: configs without a pair dump what they did before it
            data.pop("stereo", None)
        return data

    @property
    def lens(self) -> Lens:
        return Lens.of(self.model, self.distortion)

    @property
    def camera_k(self) -> tuple[float, float, float, float]:
        """fx, fy, cx, cy: the intrinsics, or those of `fov_deg` through the lens model (camera.py's from_fov)."""
        if self.intrinsics is not None:
            return self.intrinsics
        focal = focal_of_fov(self.lens, self.width, self.fov_deg)
        return focal, focal, (self.width - 1) / 2.0, (self.height - 1) / 2.0

    @model_validator(mode="after")
    def _check(self) -> CameraConfig:
        if self.fov_deg is None and self.intrinsics is None:
            raise ValueError("give fov_deg or intrinsics")
        if self.model == "pinhole" and self.distortion is not None:
            raise ValueError("distortion: coefficients are given for a pinhole camera; set model: radtan (k1, k2, p1, "
                             "p2, k3) or model: equidistant (k1..k4)")
        try:
            check_image(self.camera_k, self.lens, self.width, self.height)
        except InputError as exc:
            raise ValueError(f"{exc.field}: {exc.message}") from exc
        if self.near >= self.far:
            raise ValueError(f"near ({self.near}) must be < far ({self.far})")
        pixels = self.width * self.height * self.supersampling**2
        if pixels > MAX_CAMERA_PIXELS:
            raise ValueError(f"{self.width}x{self.height} at supersampling {self.supersampling} is {pixels:,} pixels "
                             f"per frame, more than the {MAX_CAMERA_PIXELS:,} pixels (7680x4320) a camera may render")
        return self


class ImuConfig(Strict):
    name: str
    mount: Mount = Field(default_factory=Mount)
    rate_hz: PositiveFloat = 240.0


class LidarConfig(Strict):
    name: str = "lidar"
    mount: Mount = Field(default_factory=Mount)
    channels: PositiveInt = 16
    vertical_fov_deg: FloatRange = Field(default_factory=lambda: FloatRange(min=-15.0, max=15.0))
    horizontal_fov_deg: Annotated[float, Field(gt=0, le=360)] = 360.0
    horizontal_resolution_deg: Annotated[float, Field(gt=0, le=10)] = 0.4
    min_range: NonNegFloat = 0.1
    max_range: PositiveFloat = 30.0
    rate_hz: PositiveFloat = 10.0

    @model_validator(mode="after")
    def _check(self) -> LidarConfig:
        if self.min_range >= self.max_range:
            raise ValueError(f"min_range ({self.min_range}) must be < max_range ({self.max_range})")
        if self.vertical_fov_deg.min < -90 or self.vertical_fov_deg.max > 90:
            raise ValueError("vertical_fov_deg must lie within [-90, 90]")
        points = self.channels * math.ceil(self.horizontal_fov_deg / self.horizontal_resolution_deg)
        if points > MAX_LIDAR_POINTS:
            raise ValueError(f"{self.channels} channels at {self.horizontal_resolution_deg} deg over "
                             f"{self.horizontal_fov_deg} deg are {points:,} points per sweep, more than the "
                             f"{MAX_LIDAR_POINTS:,} a LiDAR may cast")
        return self


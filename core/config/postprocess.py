"""Noise applied after recording (`postprocess`, and `grade postprocess`): IMU, depth, motion blur and rolling
shutter."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from core.config.base import NonNegFloat, PositiveFloat, Strict


class ImuNoiseConfig(Strict):
    """The RotorS discrete IMU noise model GRADE applies, per axis: white noise of density `*_noise_density`,
    a first-order Gauss-Markov bias (random walk `*_random_walk`, correlation time `*_bias_correlation_time`)
    and a turn-on bias drawn once per axis. Defaults: GRADE's. Units: gyro rad/s, accelerometer m/s^2."""

    gyro_noise_density: NonNegFloat = Field(3.394e-4, description="rad/s/sqrt(Hz)")
    gyro_random_walk: NonNegFloat = Field(3.8785e-5, description="rad/s^2/sqrt(Hz)")
    gyro_bias_correlation_time: PositiveFloat = Field(1000.0, description="s")
    gyro_turn_on_bias: NonNegFloat = Field(0.0087, description="rad/s: sigma of the normal draw, or the upper "
                                                               "bound of the upstream uniform draw")
    accel_noise_density: NonNegFloat = Field(4.0e-3, description="m/s^2/sqrt(Hz)")
    accel_random_walk: NonNegFloat = Field(6.0e-3, description="m/s^3/sqrt(Hz)")
    accel_bias_correlation_time: PositiveFloat = Field(300.0, description="s")
    accel_turn_on_bias: NonNegFloat = Field(0.196, description="m/s^2, as gyro_turn_on_bias")
    turn_on_draw: Literal["normal", "upstream_uniform"] = Field(
        "normal", description="normal: N(0, turn_on_bias) per axis; upstream_uniform: U(0, turn_on_bias) as GRADE's "
                              "code draws it (always positive), for replication")


class DepthNoiseConfig(Strict):
    """Depth camera noise on float depth in metres; pixels outside [min_range, max_range] become invalid
    (0 in uint16 PNGs, NaN in float outputs)."""

    model: Literal["realsense", "kinect", "gaussian"] = Field(
        "realsense", description="realsense: sigma = min(z^2 subpixel / (f baseline), 10), f from K; kinect: sigma = "
                                 "0.0012 + 0.0019 (z - 0.4)^2, valid 0.5-3 m; gaussian: polynomials in z")
    subpixel: PositiveFloat = Field(0.2, description="realsense: disparity error, pixels")
    baseline: PositiveFloat = Field(0.05, description="realsense: stereo baseline, m")
    gaussian_mean: list[float] = Field(default_factory=lambda: [0.0],
                                       description="gaussian: bias polynomial in z, coefficients c0 + c1 z + ...")
    gaussian_sigma: list[float] = Field(default_factory=lambda: [0.0, 0.0, 0.001],
                                        description="gaussian: sigma polynomial in z, coefficients c0 + c1 z + ...")
    min_range: NonNegFloat = Field(0.0, description="m")
    max_range: PositiveFloat = Field(3.5, description="m (GRADE: 3.5 for image files, 5 for bags)")

    @model_validator(mode="after")
    def _ranges(self) -> DepthNoiseConfig:
        if self.min_range >= self.max_range:
            raise ValueError(f"min_range ({self.min_range}) must be < max_range ({self.max_range})")
        return self


class BlurConfig(Strict):
    """Motion blur from the camera's true motion over the exposure, averaged over sub-poses."""

    model: Literal["depth_aware", "homography"] = Field(
        "depth_aware", description="depth_aware: warp with the exact per-pixel depth; homography: GRADE's "
                                   "fronto-parallel plane K (R + T n^T / d) K^-1, for replication")
    exposure: Annotated[float, Field(gt=0, le=1)] | None = Field(
        0.02, description="s; null draws it once per sequence from U(0, max_exposure)")
    max_exposure: Annotated[float, Field(gt=0, le=1)] = Field(0.1, description="s, when exposure is null")
    sub_poses: Annotated[int, Field(ge=2, le=256)] = 30
    plane_distance: PositiveFloat = Field(1.0, description="homography model: distance d of the plane, m")


class RollingShutterConfig(Strict):
    """Rows exposed one after another: the readout time (first to last row) is drawn once per sequence."""

    readout_mean: Annotated[float, Field(ge=0, le=1)] = Field(0.015, description="s (a frame's rows are read out "
                                                                  "well within a second)")
    readout_std: Annotated[float, Field(ge=0, le=1)] = Field(0.006, description="s")


class PostprocessConfig(Strict):
    """What `grade postprocess` (and `grade generate` after recording) applies; a section left out is not applied.
    Outputs go to new files beside the originals, which are never changed."""

    imu: ImuNoiseConfig | None = None
    depth: DepthNoiseConfig | None = None
    blur: BlurConfig | None = None
    rolling_shutter: RollingShutterConfig | None = None

    @property
    def enabled(self) -> bool:
        return any(step is not None for step in (self.imu, self.depth, self.blur, self.rolling_shutter))

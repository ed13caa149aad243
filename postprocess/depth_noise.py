"""Depth camera noise on float depth images in metres (depth to the image plane, z; through an equidistant lens
the recorded depth is the range along each pixel's ray, and the noise applies to it as it is, along the ray).

Each valid pixel of true depth z becomes z + mu(z) + sigma(z) n with n ~ N(0, 1), per pixel, independent:

| model       | sigma(z), m                                             | mu(z), m  | valid true depth      |
|-------------|---------------------------------------------------------|-----------|-----------------------|
| `realsense` | min(z^2 subpixel / (f baseline), 10), f = K[0, 0] px    | 0         | config range          |
| `kinect`    | 0.0012 + 0.0019 (z - 0.4)^2 (Nguyen et al. 2012)        | 0         | config range and 0.5-3 m |
| `gaussian`  | abs(polynomial gaussian_sigma in z), c0 + c1 z + ...    | polynomial gaussian_mean in z | config range |

The range cut [min_range, max_range] (inclusive) applies to the TRUE depth, so a pixel is kept or dropped
by what the sensor looks at, not by its noise draw; noisy values may therefore lie slightly outside it.
Invalid pixels (input 0, NaN or inf, outside the ranges above, or a noisy depth <= 0, which no camera
reports) come out as NaN. core.formats.images.depth_millimetres stores the result as the depth PNGs'
uint16 millimetres (NaN -> 0).

Randomness: one standard normal per pixel from the caller's generator, drawn for the whole image whatever
is valid, so one generator state always gives the same bytes.
"""

from __future__ import annotations

import numpy as np
from numpy.polynomial import polynomial

from core.config import DepthNoiseConfig
from core.errors import InputError

REALSENSE_MAX_SIGMA_M = 10.0  # the stereo model's error diverges with z^2; GRADE caps it here
KINECT_SIGMA_M = (0.0012, 0.0019, 0.4)  # sigma = a + b (z - c)^2, Nguyen, Izadi, Lovell (3DIMPVT 2012)
KINECT_RANGE_M = (0.5, 3.0)  # where that fit was measured; the Kinect reports nothing reliable outside it


def depth_sigma(depth: np.ndarray, focal_px: float, config: DepthNoiseConfig) -> np.ndarray:
    """The model's noise standard deviation in m at true depth `depth` (m), float64, same shape."""
    z = np.asarray(depth, dtype=np.float64)
    if config.model == "realsense":
        # Stereo: depth error = z^2 / (f b) times the disparity error (subpixel, px).
        return np.minimum(z ** 2 * config.subpixel / (focal_px * config.baseline), REALSENSE_MAX_SIGMA_M)
    if config.model == "kinect":
        base, scale, offset = KINECT_SIGMA_M
        return base + scale * (z - offset) ** 2
    # A normal with sigma -s is the one with s: a polynomial that dips below 0 is read as its magnitude.
    return np.abs(polynomial.polyval(z, config.gaussian_sigma))


def depth_mean_error(depth: np.ndarray, config: DepthNoiseConfig) -> np.ndarray:
    """The model's mean error (bias) in m at true depth `depth` (m): gaussian_mean(z), 0 for the others."""
    z = np.asarray(depth, dtype=np.float64)
    if config.model == "gaussian":
        return polynomial.polyval(z, config.gaussian_mean) * np.ones_like(z)
    return np.zeros_like(z)


def valid_depth(depth: np.ndarray, config: DepthNoiseConfig) -> np.ndarray:
    """Which pixels of the TRUE depth the camera measures: finite, > 0, within the config and model ranges."""
    z = np.asarray(depth, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # NaN compares False: invalid, as wanted
        valid = np.isfinite(z) & (z > 0) & (z >= config.min_range) & (z <= config.max_range)
        if config.model == "kinect":
            valid &= (z >= KINECT_RANGE_M[0]) & (z <= KINECT_RANGE_M[1])
    return valid


def _focal_px(K: np.ndarray) -> float:
    K = np.asarray(K, dtype=np.float64)
    if K.shape != (3, 3) or not np.all(np.isfinite(K)):
        raise InputError(f"the intrinsics must be a finite 3x3 matrix, got shape {K.shape}", field="K")
    if K[0, 0] <= 0:
        raise InputError(f"the focal length K[0, 0] must be > 0 px, got {K[0, 0]!r}", field="K")
    return float(K[0, 0])


def apply_depth_noise(depth: np.ndarray, K: np.ndarray, config: DepthNoiseConfig,
                      rng: np.random.Generator) -> np.ndarray:
    """Noisy depth (module docstring): (H, W) float32 m, NaN where invalid.

    `depth` (H, W) true depth to the image plane in m, 0 or NaN where there is no return; `K` the 3x3
    pinhole intrinsics in pixels (only `realsense` uses them, but they are always checked). The input is
    not modified. Raises InputError for a depth that is not 2-D or bad intrinsics.
    """
    z = np.asarray(depth, dtype=np.float64)
    if z.ndim != 2:
        raise InputError(f"a depth image must be 2-D (H, W), got shape {z.shape}", field="depth")
    focal_px = _focal_px(K)
    valid = valid_depth(z, config)
    z = np.where(valid, z, 0.0)  # no NaN/inf through the polynomials: no warnings, no overflow
    draws = rng.standard_normal(z.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        noisy = z + depth_mean_error(z, config) + depth_sigma(z, focal_px, config) * draws
    kept = valid & (noisy > 0)
    if not np.all(np.abs(noisy[kept]) <= np.finfo(np.float32).max):
        # Finite settings may still give depths beyond float32 (a sigma polynomial of 1e308): refused, never written.
        raise InputError(f"the {config.model} noise gives depths beyond float32's range with gaussian_mean "
                         f"{config.gaussian_mean} and gaussian_sigma {config.gaussian_sigma}: a depth camera's "
                         "error is centimetres", field="gaussian_sigma")
    return np.where(kept, noisy, np.nan).astype(np.float32)

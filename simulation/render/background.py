"""What rays that hit nothing see: a constant colour, or an equirectangular environment image.

The image spans every direction of the world frame (Z up): its columns run once around the horizon,
the centre column looking along world +X and the quarter column from the left along +Y (as seen from
inside the sphere), its top row looking straight up (+Z) and its bottom row straight down. Radiance HDR
images (.hdr) are read as linear RGB; other images (PNG, JPEG, ...) as sRGB-encoded 8-bit colour.
Depth, instance and semantic ids of such rays are those of "no hit" whatever the background shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from core.errors import InputError
from simulation.render.shading import load_texture, srgb_to_linear

HDR_SUFFIXES = (".hdr",)  # Radiance RGBE: linear float colour


@dataclass(frozen=True)
class EnvironmentMap:
    """An equirectangular image (module docstring) as linear RGB rows (3, H, W + 1) float32, the first
    column repeated after the last so that a bilinear lookup never wraps its second column."""

    texels: np.ndarray

    @classmethod
    def of(cls, linear: np.ndarray, strength: float = 1.0) -> EnvironmentMap:
        """From a linear (H, W, 3) image, scaled by `strength`."""
        image = np.asarray(linear, dtype=np.float32)
        if image.ndim != 3 or image.shape[2] != 3 or min(image.shape[:2]) < 1 or not np.all(np.isfinite(image)):
            raise InputError(f"must be a finite (H, W, 3) image, got shape {image.shape}", "environment", "image")
        if image.min() < 0 or not strength >= 0:
            raise InputError("colours and strength must be >= 0", "environment", "strength")
        rows = np.ascontiguousarray(image.transpose(2, 0, 1) * np.float32(strength))
        return cls(np.ascontiguousarray(np.concatenate([rows, rows[:, :, :1]], axis=2)))


def load_environment(path: str | Path, strength: float = 1.0) -> EnvironmentMap:
    """An equirectangular image file (module docstring) times `strength`."""
    path = Path(path)
    if path.suffix.lower() not in HDR_SUFFIXES:
        return EnvironmentMap.of(srgb_to_linear(load_texture(path)), strength)
    image = cv2.imread(str(path), cv2.IMREAD_ANYDEPTH | cv2.IMREAD_COLOR) if path.is_file() else None
    if image is None:
        raise InputError("cannot read the Radiance HDR image", path, "environment")
    return EnvironmentMap.of(cv2.cvtColor(image, cv2.COLOR_BGR2RGB), strength)

"""The sRGB transfer function (IEC 61966-2-1), both ways, for every stage that converts colours: images and
material colours are stored sRGB-encoded, lighting works in linear light."""

from __future__ import annotations

import numpy as np


def srgb_to_linear(encoded: np.ndarray) -> np.ndarray:
    """sRGB-encoded values in [0, 1] -> linear light (float64)."""
    c = np.asarray(encoded, dtype=np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb(linear: np.ndarray) -> np.ndarray:
    """Linear light -> sRGB-encoded values in [0, 1] (float64; clipped to [0, 1] first)."""
    c = np.clip(np.asarray(linear, dtype=np.float64), 0.0, 1.0)
    return np.where(c <= 0.0031308, c * 12.92, 1.055 * np.power(c, 1 / 2.4) - 0.055)

"""Colour math: sRGB transfer, the texture pool, Blinn-Phong lobe parameters (the per-pixel loops that use
them are in kernels.py).

Shading happens in linear RGB; images are sRGB-encoded at the end. UVs follow USD/OpenGL: (0, 0) is the
texture's bottom-left corner, v grows upwards, and coordinates wrap (repeat).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TEXTURE_FILTERS = ("nearest", "bilinear")
# Encoding looks linear values up in a 16-bit table: exact for every 8-bit level and much faster than pow.
ENCODE_LEVELS = 65535
LUMINANCE_WEIGHTS = (0.2126, 0.7152, 0.0722)  # Rec. 709 / sRGB primaries: Y of linear RGB
_MIN_ROUGHNESS = 0.05  # keeps the Blinn-Phong exponent finite


def _srgb_decode(x: np.ndarray) -> np.ndarray:
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4)


def _srgb_encode(x: np.ndarray) -> np.ndarray:
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * np.power(x, 1 / 2.4) - 0.055)


_DECODE_LUT = _srgb_decode(np.arange(256) / 255.0).astype(np.float32)
ENCODE_LUT = np.round(_srgb_encode(np.arange(ENCODE_LEVELS + 1) / ENCODE_LEVELS) * 255).astype(np.uint8)


def srgb_to_linear(image: np.ndarray) -> np.ndarray:
    """uint8 sRGB -> float32 linear."""
    return _DECODE_LUT[image]


def linear_to_srgb8(linear: np.ndarray) -> np.ndarray:
    """float linear (clipped to [0, 1]) -> uint8 sRGB."""
    index = np.clip(linear, 0.0, 1.0)
    index *= np.float32(ENCODE_LEVELS)
    index += np.float32(0.5)
    return np.take(ENCODE_LUT, index.astype(np.intp))


@dataclass(frozen=True)
class TexturePool:
    """Several linear textures side by side in one array, so that one gather serves hits on any of them.

    Each texture is stored with a copy of its first column after its last and of its first row after
    its last: a bilinear lookup reads texels (i, j) to (i + 1, j + 1) without wrapping i + 1 and j + 1.
    Texel (i, j) of texture k is at first[k] + j * (width[k] + 1) + i (rows from the top).
    """

    texels: np.ndarray  # (3, T) float32
    first: np.ndarray  # (K,) intp
    width: np.ndarray  # (K,) float64
    height: np.ndarray  # (K,) float64

    @classmethod
    def of(cls, textures: Sequence[np.ndarray]) -> TexturePool:
        """The pool of linear textures given as channel rows (3, H, W)."""
        padded = [np.pad(texture, ((0, 0), (0, 1), (0, 1)), mode="wrap").reshape(3, -1) for texture in textures]
        sizes = [image.shape[1] for image in padded]
        return cls(np.ascontiguousarray(np.concatenate(padded, axis=1) if padded else np.zeros((3, 0)), np.float32),
                   np.cumsum([0, *sizes[:-1]], dtype=np.intp)[:len(sizes)],
                   np.array([texture.shape[2] for texture in textures], dtype=np.float64),
                   np.array([texture.shape[1] for texture in textures], dtype=np.float64))


def specular_lobe(roughness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Blinn-Phong exponent (Beckmann correspondence 2 / r^2 - 2) and its energy normalisation (e + 8) / 8pi."""
    rough = np.maximum(np.asarray(roughness, np.float32), np.float32(_MIN_ROUGHNESS))
    exponent = np.maximum(np.float32(2.0) / (rough * rough) - np.float32(2.0), np.float32(1.0))
    return exponent, ((exponent + np.float32(8.0)) / np.float32(8.0 * np.pi)).astype(np.float32)


def ggx_alpha(roughness: Sequence[float] | np.ndarray) -> np.ndarray:
    """GGX alpha = roughness^2 (Burley's perceptual mapping), float32, roughness floored as for Blinn-Phong."""
    rough = np.maximum(np.asarray(roughness, np.float32), np.float32(_MIN_ROUGHNESS))
    return (rough * rough).astype(np.float32)

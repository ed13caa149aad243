"""Colour math: reading texture images, sRGB transfer, the texture pool, Blinn-Phong lobe parameters (the per-pixel loops that use
them are in kernels.py).

Shading happens in linear RGB; images are sRGB-encoded at the end. UVs follow USD/OpenGL: (0, 0) is the
texture's bottom-left corner, v grows upwards, and coordinates wrap (repeat).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from core import color
from core.errors import InputError

TEXTURE_FILTERS = ("nearest", "bilinear")
# Encoding looks linear values up in a 16-bit table: exact for every 8-bit level and much faster than pow.
ENCODE_LEVELS = 65535
LUMINANCE_WEIGHTS = (0.2126, 0.7152, 0.0722)  # Rec. 709 / sRGB primaries: Y of linear RGB
_MIN_ROUGHNESS = 0.05  # keeps the Blinn-Phong exponent finite


def load_texture(path: str | Path, field: str = "texture") -> np.ndarray:
    """An image file as an (H, W, 3) uint8 sRGB array; errors name `field`."""
    try:
        with Image.open(path) as image:
            return np.asarray(image.convert("RGB"), dtype=np.uint8)
    except (OSError, UnidentifiedImageError) as exc:
        raise InputError(f"cannot read {field} image: {exc}", path, field) from exc


_DECODE_LUT = color.srgb_to_linear(np.arange(256) / 255.0).astype(np.float32)
ENCODE_LUT = np.round(color.linear_to_srgb(np.arange(ENCODE_LEVELS + 1) / ENCODE_LEVELS) * 255).astype(np.uint8)


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


def mip_chain(texture: np.ndarray) -> list[np.ndarray]:
    """The levels after the first of a linear texture (3, H, W), down to 1 x 1: each the mean of 2 x 2 texels of
    the level before (an odd size first wraps around one more row or column, as the texture repeats; a size of 1
    stays 1)."""
    levels, level = [], np.asarray(texture, np.float32)
    while level.shape[1] > 1 or level.shape[2] > 1:
        for axis in (1, 2):
            if level.shape[axis] > 1 and level.shape[axis] % 2:
                level = np.concatenate([level, level.take([0], axis=axis)], axis=axis)
        _, height, width = level.shape
        fold_y, fold_x = min(height, 2), min(width, 2)
        level = level.reshape(3, height // fold_y, fold_y, width // fold_x, fold_x).mean(axis=(2, 4), dtype=np.float32)
        levels.append(np.ascontiguousarray(level))
    return levels


@dataclass(frozen=True)
class MipMaps:
    """The smaller levels of a texture pool's textures in a pool of their own, and what chooses among them.

    Level l >= 1 of pool texture k is texture base[k] + l - 1 of `pool`; it has count[k] such levels. A hit's level
    of detail is log2(its footprint in texels): log2(distance * spread / |cos|) + face_bias[face] + size_bias[k],
    with face_bias 1/2 log2(uv area / world area) of the face and size_bias 1/2 log2(W H) of the texture."""

    pool: TexturePool
    base: np.ndarray  # (K,) intp
    count: np.ndarray  # (K,) int64
    size_bias: np.ndarray  # (K,) float32
    face_bias: np.ndarray  # (F,) float32

    @classmethod
    def of(cls, textures: Sequence[np.ndarray], vertices: np.ndarray, corners: np.ndarray,
           uvs: np.ndarray) -> MipMaps:
        """Mip-maps of linear textures (3, H, W) for faces `corners` (3, F) of `vertices` (V, 3) with `uvs` (2, V)."""
        chains = [mip_chain(texture) for texture in textures]
        base = np.cumsum([0, *(len(chain) for chain in chains[:-1])], dtype=np.intp)[:len(chains)]
        size = np.array([0.5 * np.log2(t.shape[1] * t.shape[2]) for t in textures], np.float32)
        a, b, c = (vertices[corners[k]] for k in range(3))
        world = np.linalg.norm(np.cross(b - a, c - a), axis=1)
        ua, ub, uc = (uvs[:, corners[k]].T for k in range(3))
        du, dv = ub - ua, uc - ua
        texture_area = np.abs(du[:, 0] * dv[:, 1] - du[:, 1] * dv[:, 0])
        with np.errstate(divide="ignore", invalid="ignore"):
            bias = np.where((world > 0) & (texture_area > 0), 0.5 * np.log2(texture_area / world), 0.0)
        return cls(TexturePool.of([level for chain in chains for level in chain]), base,
                   np.array([len(chain) for chain in chains], np.int64), size, bias.astype(np.float32))

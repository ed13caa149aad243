"""Colour math: sRGB transfer, texture lookup, Lambert + Blinn-Phong shading from point lights.

Shading happens in linear RGB; images are sRGB-encoded at the end. UVs follow USD/OpenGL: (0, 0) is the
texture's bottom-left corner, v grows upwards, and coordinates wrap (repeat).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

TEXTURE_FILTERS = ("nearest", "bilinear")
# Encoding looks linear values up in a 16-bit table: exact for every 8-bit level and much faster than pow.
_ENCODE_LEVELS = 65535
_MIN_ROUGHNESS = 0.05  # keeps the Blinn-Phong exponent finite
_DIELECTRIC_F0 = 0.04  # specular reflectance of non-metals at normal incidence


def _srgb_decode(x: np.ndarray) -> np.ndarray:
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4)


def _srgb_encode(x: np.ndarray) -> np.ndarray:
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * np.power(x, 1 / 2.4) - 0.055)


_DECODE_LUT = _srgb_decode(np.arange(256) / 255.0).astype(np.float32)
_ENCODE_LUT = np.round(_srgb_encode(np.arange(_ENCODE_LEVELS + 1) / _ENCODE_LEVELS) * 255).astype(np.uint8)


def srgb_to_linear(image: np.ndarray) -> np.ndarray:
    """uint8 sRGB -> float32 linear."""
    return _DECODE_LUT[image]


def linear_to_srgb8(linear: np.ndarray) -> np.ndarray:
    """float linear (clipped to [0, 1]) -> uint8 sRGB."""
    index = np.clip(linear, 0.0, 1.0)
    index *= np.float32(_ENCODE_LEVELS)
    index += np.float32(0.5)
    return np.take(_ENCODE_LUT, index.astype(np.intp))


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

    def sample(self, texture: np.ndarray, uv: np.ndarray, filter_mode: str) -> np.ndarray:
        """Colours (3, N) of textures `texture` (N,) (indices into the pool) at `uv` (2, N); texel centres sit
        at (i + 0.5) / size and coordinates wrap."""
        width, height = np.take(self.width, texture), np.take(self.height, texture)
        x = uv[0] * width.astype(np.float32)
        x -= np.float32(0.5)
        y = np.float32(1.0) - uv[1]
        y *= height.astype(np.float32)
        y -= np.float32(0.5)
        if filter_mode == "nearest":
            x += np.float32(0.5)
            y += np.float32(0.5)
        x0, y0 = np.floor(x), np.floor(y)
        # Texel index = wrap(y0) * (width + 1) + wrap(x0), exact in float64 for any texture coordinate below
        # 2^40 texels (a float32 coordinate beyond 2^24 has no fraction left to sample with anyway); the
        # gathers clip, so that absurd coordinates read some texel rather than fail.
        texel = _wrap(y0, height)
        texel *= width + 1
        texel += _wrap(x0, width)
        index = texel.astype(np.intp)
        index += np.take(self.first, texture)
        if filter_mode == "nearest":
            return np.take(self.texels, index, axis=1, mode="clip")
        fx, fy = x - x0, y - y0
        pitch = width.astype(np.intp)
        pitch += 1
        # (t00 (1 - fx) + t01 fx) (1 - fy) + (t10 (1 - fx) + t11 fx) fy, each product in place.
        gx = np.float32(1) - fx
        top = self._lerp(index, gx, fx)
        top *= np.float32(1) - fy
        index += pitch
        bottom = self._lerp(index, gx, fx)
        bottom *= fy
        top += bottom
        return top

    def _lerp(self, left: np.ndarray, left_weight: np.ndarray, right_weight: np.ndarray) -> np.ndarray:
        """Texels at `left` and their right neighbours, blended."""
        out = np.take(self.texels, left, axis=1, mode="clip")
        out *= left_weight
        other = np.take(self.texels, left + 1, axis=1, mode="clip")
        other *= right_weight
        out += other
        return out


def _wrap(coordinate: np.ndarray, size: np.ndarray) -> np.ndarray:
    """Whole-number float32 `coordinate` modulo `size`, as float64 in [0, size)."""
    wrapped = coordinate.astype(np.float64)
    turns = wrapped / size
    np.floor(turns, out=turns)
    turns *= size
    wrapped -= turns
    return wrapped


def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Column-wise dot product of two (3, N) arrays."""
    return np.einsum("ij,ij->j", a, b)


def specular_lobe(roughness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Blinn-Phong exponent (Beckmann correspondence 2 / r^2 - 2) and its energy normalisation (e + 8) / 8pi."""
    rough = np.maximum(np.asarray(roughness, np.float32), np.float32(_MIN_ROUGHNESS))
    exponent = np.maximum(np.float32(2.0) / (rough * rough) - np.float32(2.0), np.float32(1.0))
    return exponent, ((exponent + np.float32(8.0)) / np.float32(8.0 * np.pi)).astype(np.float32)


def blinn_phong(cos_nl: np.ndarray, cos_nv: np.ndarray, cos_lv: np.ndarray, irradiance: np.ndarray,
                exponent: np.ndarray, scale: np.ndarray, metallic: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Reflected colour as weights (N,): colour = albedo * diffuse + specular (times the light's colour).

    Inputs per point: the cosines between the unit normal n, the direction to the light l and the
    direction to the viewer v; the irradiance the light delivers (n.l / d^2 included); the lobe exponent
    and scale (`specular_lobe`) and metallic (None: all 0). Lambert diffuse plus a normalised Blinn-Phong
    lobe; metals tint the specular with the albedo and lose their diffuse part. The half vector
    h = (l + v) / |l + v| only enters through n.h = (n.l + n.v) / sqrt(2 + 2 l.v), so no (3, N) array
    is needed.
    """
    length = np.sqrt(np.maximum(np.float32(2) + np.float32(2) * cos_lv, np.float32(0)))
    n_dot_h = cos_nl + cos_nv
    n_dot_h /= np.maximum(length, np.float32(1e-12))
    lobe = np.log(np.clip(n_dot_h, np.float32(1e-12), np.float32(1.0), out=n_dot_h))
    lobe *= exponent
    np.exp(lobe, out=lobe)
    lobe *= scale
    lobe *= irradiance
    if metallic is None:
        return irradiance, lobe * np.float32(_DIELECTRIC_F0)
    # f0 = F0 (1 - m) + albedo m; reflected = albedo (1 - m) + f0 lobe
    dielectric = np.float32(1) - metallic
    return dielectric * irradiance + metallic * lobe, np.float32(_DIELECTRIC_F0) * dielectric * lobe

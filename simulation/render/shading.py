"""Colour math: sRGB transfer, texture lookup, Lambert + Blinn-Phong shading from point lights.

Shading happens in linear RGB; images are sRGB-encoded at the end. UVs follow USD/OpenGL: (0, 0) is the
texture's bottom-left corner, v grows upwards, and coordinates wrap (repeat).
"""

from __future__ import annotations

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


def sample_texture(texture: np.ndarray, uv: np.ndarray, filter_mode: str) -> np.ndarray:
    """Colours (C, N) of `texture` (C, H, W) at `uv` (2, N); texel centres sit at (i + 0.5) / size."""
    height, width = texture.shape[1:]
    x = uv[0] * np.float32(width) - np.float32(0.5)
    y = (np.float32(1.0) - uv[1]) * np.float32(height) - np.float32(0.5)
    if filter_mode == "nearest":
        return texture[:, np.floor(y + 0.5).astype(np.int64) % height, np.floor(x + 0.5).astype(np.int64) % width]
    x0, y0 = np.floor(x), np.floor(y)
    fx, fy = x - x0, y - y0
    i0, j0 = x0.astype(np.int64) % width, y0.astype(np.int64) % height
    i1, j1 = (i0 + 1) % width, (j0 + 1) % height
    top = texture[:, j0, i0] * (1 - fx) + texture[:, j0, i1] * fx
    bottom = texture[:, j1, i0] * (1 - fx) + texture[:, j1, i1] * fx
    return top * (1 - fy) + bottom * fy


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

"""Tileable procedural textures made with numpy and saved as PNG.

Every pattern is periodic over the image, because the USD materials sample textures with
`wrap = repeat` and the UVs of large surfaces run over many tiles.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image

Color = tuple[float, float, float]
TEXTURE_SIZE = 128  # pixels per side: enough for a ray-cast 640x480 view, small on disk
NOISE_FALLOFF = 2.0  # spectral exponent of the smooth noise (2 = soft clouds)


def periodic_noise(rng: np.random.Generator, size: int, falloff: float = NOISE_FALLOFF) -> np.ndarray:
    """Smooth noise in [0, 1] that tiles: white noise shaped by 1/f^falloff in the Fourier domain."""
    white = rng.standard_normal((size, size))
    freq = np.fft.fftfreq(size)
    radius = np.hypot(*np.meshgrid(freq, freq, indexing="ij"))
    radius[0, 0] = np.inf  # drop the mean
    field = np.real(np.fft.ifft2(np.fft.fft2(white) / radius**falloff))
    return (field - field.min()) / max(float(np.ptp(field)), 1e-12)


def stretched_noise(rng: np.random.Generator, shape: tuple[int, int], stretch: float,
                    falloff: float = NOISE_FALLOFF) -> np.ndarray:
    """Like periodic_noise on a (rows, columns) image, its features `stretch` times longer down the columns
    than across them (hair strands, warp threads); it tiles both ways."""
    white = rng.standard_normal(shape)
    rows, columns = np.meshgrid(np.fft.fftfreq(shape[0]) * shape[0], np.fft.fftfreq(shape[1]) * shape[1],
                                indexing="ij")
    radius = np.hypot(rows * stretch, columns)
    radius[0, 0] = np.inf  # drop the mean
    field = np.real(np.fft.ifft2(np.fft.fft2(white) / radius**falloff))
    return (field - field.min()) / max(float(np.ptp(field)), 1e-12)


def _mix(a: Color, b: Color, t: np.ndarray) -> np.ndarray:
    """Blend two colours per pixel by t in [0, 1] -> (H, W, 3) float."""
    t = np.clip(t, 0.0, 1.0)[..., None]
    return np.asarray(a) * (1.0 - t) + np.asarray(b) * t


def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates in [0, 1) along x (columns) and y (rows)."""
    x = np.arange(size) / size
    return np.meshgrid(x, x, indexing="xy")


def wood_grain(rng: np.random.Generator, base: Color, size: int = TEXTURE_SIZE) -> np.ndarray:
    """Wavy light/dark grain lines running along x."""
    _, y = _grid(size)
    lines = int(rng.integers(6, 14))
    warp = periodic_noise(rng, size) * float(rng.uniform(0.8, 1.6))
    grain = 0.5 + 0.5 * np.sin(2 * np.pi * (lines * y + warp))
    dark = tuple(c * 0.6 for c in base)
    return _mix(base, dark, grain**3 * 0.9 + 0.1 * periodic_noise(rng, size, 1.0))


def checker(rng: np.random.Generator, base: Color, size: int = TEXTURE_SIZE) -> np.ndarray:
    """Two-colour tiles with a thin grout line."""
    x, y = _grid(size)
    cells = int(rng.choice([2, 4, 8]))
    other = tuple(float(c) for c in np.clip(np.asarray(base) * rng.uniform(0.45, 0.75), 0, 1))
    tiles = ((np.floor(x * cells) + np.floor(y * cells)) % 2).astype(float)
    image = _mix(base, other, tiles)
    grout = (np.minimum((x * cells) % 1, (y * cells) % 1) < 0.03)[..., None]
    return np.where(grout, np.asarray(base) * 0.35, image)


def stripes(rng: np.random.Generator, base: Color, size: int = TEXTURE_SIZE) -> np.ndarray:
    """Soft parallel stripes (wallpaper, shirts)."""
    x, y = _grid(size)
    count = int(rng.integers(3, 9))
    # The second colour leans towards the first so stripes read as one design, not clashing paint.
    other = tuple(float(c) for c in 0.55 * np.asarray(base) + 0.45 * rng.uniform(0.15, 0.95, 3))
    diagonal = int(rng.integers(0, 2))  # 0: straight, 1: diagonal, still periodic because count is integer
    phase = count * (x + diagonal * y)
    band = (np.sin(2 * np.pi * phase) > 0.3).astype(float)
    return _mix(base, other, band * 0.8)


def noise(rng: np.random.Generator, base: Color, size: int = TEXTURE_SIZE) -> np.ndarray:
    """Mottled surface (plaster, stone, foliage)."""
    field = 0.6 * periodic_noise(rng, size) + 0.4 * periodic_noise(rng, size, 1.0)
    return np.asarray(base) * (0.65 + 0.7 * field[..., None])


def fabric(rng: np.random.Generator, base: Color, size: int = TEXTURE_SIZE) -> np.ndarray:
    """A plain weave: alternating warp and weft threads with a little fibre noise."""
    x, y = _grid(size)
    threads = int(rng.choice([16, 32]))
    weave = np.sin(2 * np.pi * threads * x) * np.sin(2 * np.pi * threads * y)
    fibre = periodic_noise(rng, size, 0.8)
    return np.asarray(base) * (0.8 + 0.12 * weave[..., None] + 0.15 * fibre[..., None])


PATTERNS: dict[str, Callable[[np.random.Generator, Color, int], np.ndarray]] = {
    "wood": wood_grain, "checker": checker, "stripes": stripes, "noise": noise, "fabric": fabric,
}


def make_texture(rng: np.random.Generator, pattern: str, base: Color, size: int = TEXTURE_SIZE) -> np.ndarray:
    """(size, size, 3) uint8 image of a named pattern in a base colour."""
    image = PATTERNS[pattern](rng, base, size)
    return np.round(np.clip(image, 0.0, 1.0) * 255).astype(np.uint8)


def save_png(image: np.ndarray, path: Path) -> Path:
    """Write an RGB uint8 image as PNG (pillow writes no timestamp, so the bytes are reproducible)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path, format="PNG", optimize=False)
    return path


def ramp_color(rng: np.random.Generator, low: Color, high: Color, jitter: float) -> Color:
    """A colour on the ramp from `low` to `high`, each channel nudged by up to `jitter`, so a wood stays a wood."""
    t = rng.uniform() + rng.uniform(-jitter, jitter, 3)
    return tuple(float(c) for c in np.clip(np.asarray(low) + (np.asarray(high) - np.asarray(low)) * t, 0.0, 1.0))

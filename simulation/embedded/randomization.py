"""Domain randomization of the embedded backend: light intensity and colour, material roughness and colour.

Draws come from `core.seeding` generators named by what they randomize, so they depend only on
the master seed. Roughness is drawn once per static mesh and the colour factor once per static material
when the scene is built. Lights are drawn at the start (epoch 0) and, with `during_run`, again at the
start of every `period` (epoch k at t = k * period), each epoch from its own generator: the lights of any
time follow from the seed alone, and a restored state needs no generator state.

A light's intensity is its authored one, or an absolute draw in USD sphere-light units converted as the
scene converts its lights, with the light's own radius (`intensity_per_unit`; a distant light's draw is an
illuminance), times the drawn scale. Its colour is the authored
one times a black body (temperature mode), a uniform draw per channel (random mode, GRADE's), or as authored.

Colour temperature -> colour: the chromaticity of a black body (Planckian locus, Kim et al. 2002
cubic fit, valid for 1667-25000 K), as linear RGB with Rec. 709 / sRGB primaries and a D65 white,
scaled to unit luminance so the temperature changes hue, not brightness; it multiplies the light's
authored colour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from core.assets import parts
from core.config import RandomizationConfig
from core.errors import ConfigError
from core.seeding import generator
from simulation.render import DirectionalLight, RenderLight, light_from_part
from simulation.render.shading import linear_to_srgb8, srgb_to_linear

KELVIN_RANGE = (1667.0, 25000.0)  # validity of the Planckian locus fit
# CIE XYZ -> linear sRGB (IEC 61966-2-1), and the luminance weights of linear sRGB.
XYZ_TO_LINEAR_SRGB = np.array([[3.2404542, -1.5371385, -0.4985314],
                               [-0.9692660, 1.8760108, 0.0415560],
                               [0.0556434, -0.2040259, 1.0572252]])
LUMINANCE = np.array([0.2126, 0.7152, 0.0722])
_EPOCH_TOLERANCE = 1e-9


def planckian_xy(kelvin: float) -> tuple[float, float]:
    """CIE 1931 chromaticity (x, y) of a black body at `kelvin` (Kim et al. 2002)."""
    if not KELVIN_RANGE[0] <= kelvin <= KELVIN_RANGE[1]:
        raise ValueError(f"colour temperature {kelvin} K is outside {KELVIN_RANGE}")
    t = 1e3 / kelvin
    if kelvin <= 4000:
        x = -0.2661239 * t**3 - 0.2343589 * t**2 + 0.8776956 * t + 0.179910
    else:
        x = -3.0258469 * t**3 + 2.1070379 * t**2 + 0.2226347 * t + 0.240390
    if kelvin <= 2222:
        y = -1.1063814 * x**3 - 1.34811020 * x**2 + 2.18555832 * x - 0.20219683
    elif kelvin <= 4000:
        y = -0.9549476 * x**3 - 1.37418593 * x**2 + 2.09137015 * x - 0.16748867
    else:
        y = 3.0817580 * x**3 - 5.87338670 * x**2 + 3.75112997 * x - 0.37001483
    return x, y


def kelvin_to_rgb(kelvin: float) -> np.ndarray:
    """Linear sRGB colour (3,) of a black body at `kelvin`, unit luminance; out-of-gamut parts clipped to 0."""
    x, y = planckian_xy(kelvin)
    xyz = np.array([x / y, 1.0, (1.0 - x - y) / y])
    rgb = np.maximum(XYZ_TO_LINEAR_SRGB @ xyz, 0.0)
    return rgb / float(LUMINANCE @ rgb)


def intensity_per_unit(light: RenderLight) -> float:
    """The render intensity one unit of USD light intensity gives a light of this one's kind (sphere lights: of
    its radius; distant lights: illuminance)."""
    if isinstance(light, DirectionalLight):
        return light_from_part(parts.DistantLight("unit", light.direction, intensity=1.0)).intensity
    return light_from_part(parts.Light("unit", light.position, intensity=1.0, radius=light.radius)).intensity


def tint_texture(texture: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """An sRGB uint8 texture with its linear colour multiplied per channel by `factor` (3,)."""
    return linear_to_srgb8(srgb_to_linear(texture[..., :3]) * np.asarray(factor, np.float32))


class Randomizer:
    """The randomization of one run: config ranges, master seed and the scene's authored lights."""

    def __init__(self, config: RandomizationConfig, seed: int):
        temperature = config.light_color_temperature_k
        if temperature.min < KELVIN_RANGE[0] or temperature.max > KELVIN_RANGE[1]:
            raise ConfigError(f"must lie within {KELVIN_RANGE[0]:g}-{KELVIN_RANGE[1]:g} K, got "
                              f"{temperature.min:g}-{temperature.max:g}",
                              field="simulation.randomization.light_color_temperature_k")
        self.config, self.seed = config, seed

    def roughness(self, count: int) -> np.ndarray:
        """Roughness of `count` meshes, uniform in the configured range."""
        rough = self.config.roughness
        return generator(self.seed, "simulation/randomization/roughness").uniform(rough.min, rough.max, count)

    def material_colors(self, count: int) -> np.ndarray | None:
        """Per-channel colour factors (count, 3) of `count` materials; None without `material_color`."""
        factor = self.config.material_color
        if factor is None:
            return None
        return generator(self.seed, "simulation/randomization/material_color").uniform(factor.min, factor.max,
                                                                                      (count, 3))

    def epoch(self, time: float) -> int:
        """Which draw of the lights holds at simulation time `time`."""
        if not self.config.during_run:
            return 0
        return math.floor(time / self.config.period + _EPOCH_TOLERANCE)

    def lights(self, authored: Sequence[RenderLight], epoch: int) -> list[RenderLight]:
        """The authored lights with the intensities and colours drawn for `epoch` (module docstring)."""
        config, count = self.config, len(authored)
        rng = generator(self.seed, f"simulation/randomization/lights/{epoch}")
        scale, temperature = config.light_intensity_scale, config.light_color_temperature_k
        # Scales and temperatures are drawn first whatever the options, so the default draws never change.
        scales = rng.uniform(scale.min, scale.max, count)
        kelvins = rng.uniform(temperature.min, temperature.max, count)
        base = np.array([light.intensity for light in authored], dtype=np.float64)
        if config.light_intensity is not None:
            per_unit = np.array([intensity_per_unit(light) for light in authored], dtype=np.float64)
            base = rng.uniform(config.light_intensity.min, config.light_intensity.max, count) * per_unit
        colors = np.array([light.color for light in authored], dtype=np.float64).reshape(count, 3)
        if config.light_color == "temperature":
            colors = colors * np.array([kelvin_to_rgb(float(k)) for k in kelvins]).reshape(count, 3)
        elif config.light_color == "random":
            colors = rng.random((count, 3))
        return [replace(light, intensity=float(b * s), color=tuple(c.tolist()))  # radius and position kept
                for light, b, s, c in zip(authored, base, scales, colors)]

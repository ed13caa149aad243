"""Domain randomization of the embedded backend: light intensity and colour temperature, material roughness.

Draws come from `core.seeding` generators named by what they randomize, so they depend only on
the master seed. Roughness is drawn once per static mesh when the scene is built. Lights are drawn at
the start (epoch 0) and, with `during_run`, again at the start of every `period` (epoch k at
t = k * period), each epoch from its own generator: the lights of any time follow from the seed alone,
and a restored state needs no generator state.

Colour temperature -> colour: the chromaticity of a black body (Planckian locus, Kim et al. 2002
cubic fit, valid for 1667-25000 K), as linear RGB with Rec. 709 / sRGB primaries and a D65 white,
scaled to unit luminance so the temperature changes hue, not brightness; it multiplies the light's
authored colour.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from core.config import RandomizationConfig
from core.errors import ConfigError
from core.seeding import generator
from simulation.render import PointLight

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

    def epoch(self, time: float) -> int:
        """Which draw of the lights holds at simulation time `time`."""
        if not self.config.during_run:
            return 0
        return math.floor(time / self.config.period + _EPOCH_TOLERANCE)

    def lights(self, authored: Sequence[PointLight], epoch: int) -> list[PointLight]:
        """The authored lights with the intensity scale and colour temperature drawn for `epoch`."""
        rng = generator(self.seed, f"simulation/randomization/lights/{epoch}")
        scale, temperature = self.config.light_intensity_scale, self.config.light_color_temperature_k
        scales = rng.uniform(scale.min, scale.max, len(authored))
        kelvins = rng.uniform(temperature.min, temperature.max, len(authored))
        return [PointLight(light.position, float(light.intensity * s),
                           tuple((np.asarray(light.color) * kelvin_to_rgb(float(k))).tolist()))
                for light, s, k in zip(authored, scales, kelvins)]

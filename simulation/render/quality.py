"""The ray caster's shading quality presets (render.quality): which lighting terms the shading loop adds.

- fast: the look every run had before the presets: hard shadows of point lights, a flat ambient term,
  Blinn-Phong highlights. The speed targets of the demo are measured here.
- default: indirect light from irradiance probes baked once per scene (irradiance.py) instead of the flat
  ambient term, soft shadows from the lights' real size (two shadow rays per light and point), GGX highlights,
  mip-mapped textures (no shimmering of distant floors).
- high: as default with more shadow rays and denser, longer-traced probes.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import InputError
from simulation.render.irradiance import ProbeSettings

QUALITIES = ("fast", "default", "high")


@dataclass(frozen=True)
class ShadingQuality:
    shadow_samples: int = 1  # shadow rays per point light and point; 1: hard shadows from the light's centre
    ggx: bool = False  # GGX microfacet highlights (else normalised Blinn-Phong)
    probes: ProbeSettings | None = None  # indirect light from baked probes, replacing the ambient term; None: flat
    mipmaps: bool = False  # bilinear textures filtered by distance (trilinear mip-mapping)

    def __post_init__(self) -> None:
        if self.shadow_samples < 1:
            raise InputError(f"must be >= 1, got {self.shadow_samples}", "shading quality", "shadow_samples")


PRESETS = {
    "fast": ShadingQuality(),
    "default": ShadingQuality(shadow_samples=2, ggx=True, probes=ProbeSettings(), mipmaps=True),
    "high": ShadingQuality(shadow_samples=16, ggx=True, probes=ProbeSettings(spacing=0.2, rays=192, bounces=4),
                           mipmaps=True),
}


def preset(name: str) -> ShadingQuality:
    """The preset named `name` (one of QUALITIES)."""
    if name not in PRESETS:
        raise InputError(f"unknown quality {name!r}; one of {', '.join(QUALITIES)}", "render", "quality")
    return PRESETS[name]

"""Exposure and tone mapping: scene-linear colour -> display-linear colour in [0, 1], before sRGB encoding.

A frame's linear colour is scaled by its exposure, then mapped by the tone curve:
- fixed exposure: scale 2^ev (ev 0 leaves the shaded radiance as it is);
- auto exposure: the frame's log-average luminance (Reinhard et al. 2002, "Photographic tone reproduction")
  is brought to middle grey, times 2^ev (exposure compensation), within AUTO_STOPS of no change. Metering
  uses only the frame itself (no state carried from frame to frame), so a replay that restarts from a
  checkpoint exposes every frame as the original run did;
- tone curve "clip" clips to [0, 1]; "filmic" is the ACES filmic fit of Narkowicz (2015), with its 0.6
  input scale, which rolls highlights off towards white instead of clipping them (it reaches 1 only at
  about 12 x the exposed diffuse white).
The per-pixel loops are in kernels.py (`log_luminance_sum`, `tone_encode`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.errors import InputError

EXPOSURE_MODES = ("fixed", "auto")
TONE_MAPS = ("clip", "filmic")
MIDDLE_GREY = 0.18  # what auto exposure maps the frame's log-average luminance to
# Added to every luminance before the log, so black pixels (no light, black background) do not drag the
# log-average to -inf (Reinhard's delta).
LOG_FLOOR = 1e-4
# Auto exposure changes the scale by at most this many stops either way: a frame of nothing but black
# (or of a blinding light) is not amplified without bound.
AUTO_STOPS = 10.0


@dataclass(frozen=True)
class Exposure:
    """How a camera turns linear colour into display values (module docstring). The default, fixed
    exposure at ev 0 with clipping, renders the shaded linear colour as it is."""

    mode: str = "fixed"
    ev: float = 0.0
    tone_map: str = "clip"

    def __post_init__(self) -> None:
        if self.mode not in EXPOSURE_MODES:
            raise InputError(f"must be one of {EXPOSURE_MODES}, got {self.mode!r}", "exposure", "mode")
        if self.tone_map not in TONE_MAPS:
            raise InputError(f"must be one of {TONE_MAPS}, got {self.tone_map!r}", "exposure", "tone_map")
        if not math.isfinite(self.ev):
            raise InputError(f"must be finite, got {self.ev}", "exposure", "ev")

    @property
    def metered(self) -> bool:
        """The scale depends on the frame's pixels (they are metered before any is encoded)."""
        return self.mode == "auto"

    @property
    def filmic(self) -> bool:
        return self.tone_map == "filmic"

    def fixed_scale(self) -> np.float32:
        """The factor on linear colour of a fixed exposure."""
        return np.float32(2.0**self.ev)

    def auto_scale(self, log_sum: float, count: int) -> np.float32:
        """The factor on linear colour of an auto exposure, from the sum over `count` pixels of
        log(LOG_FLOOR + luminance) (kernels.log_luminance_sum)."""
        log_average = log_sum / max(count, 1)
        stops = math.log2(MIDDLE_GREY) - log_average / math.log(2.0)
        return np.float32(2.0 ** (min(max(stops, -AUTO_STOPS), AUTO_STOPS) + self.ev))

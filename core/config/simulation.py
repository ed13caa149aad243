"""The simulation (`simulation`): backend, physics rate, run length, recording rates and domain randomisation."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, field_validator, model_validator

from core.config.base import FloatRange, PositiveFloat, Strict

# Longest experiment or bootstrap accepted, s: one hour at 240 Hz is 864,000 physics steps whose state log is
# held in memory until the run ends.
MAX_DURATION_S = 3600.0


class RatesConfig(Strict):
    """Recording rates (architecture.md §4); camera rates live on each camera."""

    clock_hz: PositiveFloat = 240.0
    tf_hz: PositiveFloat = 120.0
    joint_states_hz: PositiveFloat = 120.0
    pose_hz: PositiveFloat = 60.0
    odom_hz: PositiveFloat = 60.0
    humans_hz: PositiveFloat = Field(30.0, description="humans/ skeleton (and optional vertex) frames")


class RandomizationConfig(Strict):
    """Domain randomisation of the embedded backend (simulation.embedded.randomization). GRADE's own
    settings: roughness {min: 0.1, max: 0.9}, light_intensity {min: 600, max: 4500}, light_color random,
    light_intensity_scale {min: 1, max: 1}."""

    light_intensity_scale: FloatRange = Field(
        default_factory=lambda: FloatRange(min=0.8, max=1.2),
        description="factor drawn per light, multiplying its authored intensity (or the light_intensity draw)")
    light_intensity: FloatRange | None = Field(
        None, description="absolute intensity drawn per light, replacing the authored one, in USD sphere-light "
                          "units (nits; each light keeps its radius), as GRADE draws it: 600-4500; unset: authored")
    light_color: Literal["temperature", "random", "authored"] = Field(
        "temperature", description="temperature: the authored colour times a black body of a temperature drawn from "
                                   "light_color_temperature_k; random: each channel U(0, 1), as GRADE draws it; "
                                   "authored: the colour as authored")
    light_color_temperature_k: FloatRange = Field(
        default_factory=lambda: FloatRange(min=4000, max=6500),
        description="colour temperature range, K, when light_color is temperature")
    roughness: FloatRange = Field(default_factory=lambda: FloatRange(min=0.3, max=0.9),
                                  description="roughness drawn per environment mesh (GRADE: 0.1-0.9)")
    material_color: FloatRange | None = Field(
        None, description="factor drawn per channel and per environment material (meshes sharing a colour or "
                          "texture share it), multiplying its linear colour or texture; unset: authored colours")
    during_run: StrictBool = Field(False, description="also re-randomise lights during the run")
    period: PositiveFloat = Field(5.0, description="seconds between re-randomisations when during_run")

    @model_validator(mode="after")
    def _check(self) -> RandomizationConfig:
        if self.light_intensity_scale.min < 0 or self.roughness.min < 0 or self.roughness.max > 1:
            raise ValueError("light_intensity_scale must be >= 0 and roughness within [0, 1]")
        for name in ("light_intensity", "material_color"):
            drawn = getattr(self, name)
            if drawn is not None and drawn.min < 0:
                raise ValueError(f"{name} must be >= 0")
        return self


class SimulationConfig(Strict):
    backend: Literal["embedded"] = Field("embedded", description="MuJoCo physics + Embree ray casting on the CPU")
    physics_hz: PositiveFloat = 240.0
    duration: Annotated[float, Field(gt=0, le=MAX_DURATION_S)] = Field(
        60.0, description=f"experiment length after the bootstrap, s (at most {MAX_DURATION_S:g})")
    bootstrap: Annotated[float, Field(ge=0, le=MAX_DURATION_S)] = Field(
        1.0, description=f"settling period before the start marker, s (at most {MAX_DURATION_S:g})")
    rates: RatesConfig = Field(default_factory=RatesConfig)
    randomization: RandomizationConfig = Field(default_factory=RandomizationConfig)

    @field_validator("backend", mode="before")
    @classmethod
    def _available_backend(cls, value: object) -> object:
        # The original GRADE ran on Isaac Sim, so configs may name 'isaac': say it is not available here
        # rather than pydantic's bare "Input should be 'embedded'".
        if value != "embedded":
            raise ValueError(f"backend {value!r} is not available in this version (only 'embedded')")
        return value

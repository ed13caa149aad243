"""Animated humans and animals (`humans`, `animals`): which clips, how many, and how their swept traces are
placed collision-free."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictBool, model_validator

from core.config.base import IntRange, NonNegFloat, PositiveFloat, PositiveInt, Strict, at_most
from core.config.paths import InputPath

MAX_ANIMATED = 1000  # humans, and animals, per experiment


class ClipWindowConfig(Strict):
    """Which part of a long SMPL-family clip (amass, smpl, cloth3d) becomes an animated asset. A whole
    walk sweeps metres of floor and fits in no room; GRADE keeps 50-500 frames of each sequence."""

    select: Literal["least_sweep", "random", "split", "whole"] = Field(
        "least_sweep", description="least_sweep: the window whose joints cover the shortest horizontal distance; "
                                   "random: one window drawn from the experiment seed; split: consecutive windows, "
                                   "each its own asset; whole: the entire clip")
    duration: PositiveFloat = Field(2.0, description="s per window (GRADE: 50-500 frames); a shorter clip is used "
                                                     "whole")
    max_windows: PositiveInt = Field(8, description="split: at most this many windows per clip, spread over it")


class GroundFitConfig(Strict):
    """How an animated asset stands on a terrain's uneven ground (environment kind terrain; a flat floor has no
    slope and no gaps). Its support is the lowest part of its swept trace (the feet over the whole clip): the
    asset stands at one height, resting its support on the highest ground under it."""

    max_slope_deg: Annotated[float, Field(ge=0, le=90)] = Field(
        15.0, description="reject a pose where the ground under any support point is steeper than this")
    max_gap: NonNegFloat = Field(0.1, description="m: reject a pose where any support point would float higher "
                                                  "than this above the ground under it")


class AnimatedConfig(Strict):
    """What humans and animals share: how many, and how their swept traces are placed collision-free."""

    paths: list[InputPath] = Field(default_factory=list, description="files or folders of animations")
    count: Annotated[IntRange, AfterValidator(at_most(MAX_ANIMATED, "humans"))] = Field(
        default_factory=lambda: IntRange(min=7, max=40))
    max_tries: PositiveInt = 99
    contact_threshold: Annotated[int, Field(ge=1, description="accept a trace with fewer FCL contacts than this")] = 200
    max_inside_fraction: Annotated[float, Field(ge=0, le=1)] = Field(
        0.02, description="reject a trace with more of its volume than this inside closed furniture: contact "
                          "counts alone depend on mesh density, so a coarse sofa would let a human stand in it")
    fps: PositiveFloat = 30.0
    reverse_playback: StrictBool = Field(True, description="play animations forward then backward to loop smoothly")
    ground: GroundFitConfig = Field(default_factory=GroundFitConfig)


class HumansConfig(AnimatedConfig):
    """Animated humans placed collision-free in the environment."""

    source: Literal["procedural", "amass", "smpl", "cloth3d", "gltf", "package"] = "procedural"
    body_model: InputPath | None = Field(None, description="folder with the user's licensed SMPL/SMPL-H model files")
    window: ClipWindowConfig = Field(default_factory=ClipWindowConfig)

    @model_validator(mode="after")
    def _paths_needed(self) -> HumansConfig:
        if self.source != "procedural" and not self.paths:
            raise ValueError(f"humans source {self.source!r} needs 'paths'")
        if self.source in ("amass", "smpl") and self.body_model is None:
            raise ValueError(f"humans source {self.source!r} needs 'body_model' (your licensed SMPL files)")
        return self


class AnimalsConfig(AnimatedConfig):
    """Animated animals placed like humans (after them, clear of them), with the semantic class animal."""

    source: Literal["procedural", "gltf", "package"] = Field(
        "procedural", description="procedural: striped quadrupeds walking in place or grazing; gltf: skinned, "
                                  "animated glTF files (first clip each); package: converted animated packages")
    count: Annotated[IntRange, AfterValidator(at_most(MAX_ANIMATED, "animals"))] = Field(
        default_factory=lambda: IntRange(min=0, max=0))

    @model_validator(mode="after")
    def _paths_needed(self) -> AnimalsConfig:
        if self.source != "procedural" and not self.paths:
            raise ValueError(f"animals source {self.source!r} needs 'paths'")
        return self

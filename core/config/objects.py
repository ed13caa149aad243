"""Flying objects (`flying_objects`): household objects moved through the scene as kinematic bodies."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, StrictBool, model_validator

from core.config.base import FloatRange, IntRange, Strict, at_most
from core.config.paths import InputPath

MAX_FLYING_OBJECTS = 1000  # per experiment


class FlyingObjectsConfig(Strict):
    """Household objects that fly through the scene as kinematic bodies."""

    source: Literal["procedural", "gso", "mesh", "package"] = "procedural"
    paths: list[InputPath] = Field(default_factory=list)
    count: Annotated[IntRange, AfterValidator(at_most(MAX_FLYING_OBJECTS, "flying objects"))] = Field(
        default_factory=lambda: IntRange(min=0, max=10))
    speed: FloatRange = Field(default_factory=lambda: FloatRange(min=0.1, max=0.6), description="m/s")
    angular_speed_deg: FloatRange = Field(default_factory=lambda: FloatRange(min=0.0, max=90.0))
    collision_check: StrictBool = False

    @model_validator(mode="after")
    def _paths_needed(self) -> FlyingObjectsConfig:
        if self.source != "procedural" and not self.paths:
            raise ValueError(f"flying object source {self.source!r} needs 'paths'")
        if self.speed.min < 0:
            raise ValueError("speed.min must be >= 0")
        return self

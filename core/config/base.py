"""What every config model shares: the strict base model, ranges, seeds and the number types of its fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictInt,
    model_serializer,
    model_validator,
)

# Seeds are stored as 32-bit signed integers by some consumers (USD int attributes such as scene.usda's
# grade:seed), so the master seed stays within that range everywhere.
MAX_SEED = 2**31 - 1
Seed = Annotated[StrictInt, Field(ge=0, le=MAX_SEED, description=f"0 <= seed <= {MAX_SEED}")]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
Vec3 = tuple[float, float, float]


class Strict(BaseModel):
    """Base for every config model: unknown keys are errors, assignments are validated."""

    # Booleans must be written true/false (StrictBool fields), and no float may be inf or nan.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    def unwritten_fields(self) -> frozenset[str]:
        """Fields that a dump leaves out and the input-path walk skips (core.config.paths): none, unless a
        model says otherwise."""
        return frozenset()

    @model_serializer(mode="wrap")
    def _dump_written(self, handler: SerializerFunctionWrapHandler) -> dict:
        # A model's unwritten fields stay out of its dumps (run.json), so that a dump validates again.
        data = handler(self)
        for name in self.unwritten_fields():
            data.pop(name, None)
        return data


class FloatRange(Strict):
    """An inclusive range [min, max] sampled uniformly."""

    min: float
    max: float

    @model_validator(mode="after")
    def _ordered(self) -> FloatRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must be <= max ({self.max})")
        return self


class IntRange(Strict):
    """An inclusive integer range [min, max]."""

    min: Annotated[int, Field(ge=0)]
    max: Annotated[int, Field(ge=0)]

    @model_validator(mode="after")
    def _ordered(self) -> IntRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must be <= max ({self.max})")
        return self


def at_most(cap: int, what: str) -> Callable[[IntRange], IntRange]:
    """A field validator for an IntRange of counts: refuses a max above `cap` (one `what` each adds placement and
    simulation time: far more than this runs for hours before it writes anything)."""

    def check(value: IntRange) -> IntRange:
        if value.max > cap:
            raise ValueError(f"at most {cap:,} {what} (got max {value.max:,})")
        return value

    return check


# Keys that earlier versions declared but no stage applied. They are not in the schema (a setting
# must do something); a config naming one gets this message instead of a "did you mean" hint.
NOT_AVAILABLE: dict[type[BaseModel], dict[str, str]] = {}

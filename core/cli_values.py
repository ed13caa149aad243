"""Checks of command-line number options shared by every stage's `cli.py` (typer callbacks).

click's FLOAT reads `nan`, `inf` and `1e400` (= inf), and its FloatRange lets NaN through any bound (NaN compares
false with everything), so a float option is only a number the commands can compute with once it passed `finite`.
"""

from __future__ import annotations

import math
from typing import TypeVar

import typer

Value = TypeVar("Value", float, tuple[float, ...], None)


def finite(param: typer.CallbackParam, value: Value) -> Value:
    """A float option's callback (`typer.Option(..., callback=finite)`), also for tuples of floats and optional
    options: a usage error (exit 2, naming the option) for NaN or an infinity."""
    numbers = value if isinstance(value, tuple) else (value,)
    if any(number is not None and not math.isfinite(number) for number in numbers):
        raise typer.BadParameter(f"expected a finite number, got {value}", param=param)
    return value

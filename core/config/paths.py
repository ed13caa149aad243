"""Input paths: the config fields that name data to read (a house, animations, a class map, ...).

A field annotated `InputPath` (or `InputPath | None`, `list[InputPath]`) holds paths relative to the config
file's folder. One walk over the models finds them all, so a new path field needs only its annotation:
`resolve_input_paths` makes them absolute, `input_paths` lists them for existence checks.
"""

from __future__ import annotations

import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic.fields import FieldInfo

from core.config.base import Strict


class _InputMarker:
    """The `Annotated` metadata that marks a path as input data."""

    def __repr__(self) -> str:
        return "InputPath"


INPUT = _InputMarker()
InputPath = Annotated[Path, INPUT]
M = TypeVar("M", bound=Strict)


def _marks_input(annotation: Any) -> bool:
    """Whether `annotation` holds an `InputPath` (inside Optional, list, ...)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is Annotated and INPUT in args[1:]:
        return True
    return any(_marks_input(arg) for arg in args)


def _is_input(field: FieldInfo) -> bool:
    # pydantic moves the metadata of a field annotated with a bare `InputPath` into `field.metadata`.
    return INPUT in field.metadata or _marks_input(field.annotation)


def _input_fields(model: Strict, prefix: str = "") -> Iterator[tuple[Strict, str, str]]:
    """(model, field name, key path) of every input-path field of `model` and of the models inside it (fields,
    list items, mapping values), in field order."""
    skipped = model.unwritten_fields()
    for name, field in type(model).model_fields.items():
        if name in skipped:
            continue
        key = f"{prefix}{name}"
        if _is_input(field):
            yield model, name, key
            continue
        value = getattr(model, name)
        items = (value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list)
                 else [(None, value)])
        for index, item in items:
            if isinstance(item, Strict):
                yield from _input_fields(item, f"{key}." if index is None else f"{key}.{index}.")


def input_paths(model: Strict) -> dict[str, Path]:
    """Every input path of `model` by key path (`humans.paths.0`), in field order."""
    found: dict[str, Path] = {}
    for owner, name, key in _input_fields(model):
        value = getattr(owner, name)
        if isinstance(value, list):
            found.update((f"{key}.{index}", path) for index, path in enumerate(value))
        elif isinstance(value, dict):
            found.update((f"{key}.{index}", path) for index, path in value.items())
        elif value is not None:
            found[key] = value
    return found


def resolve_input_paths(model: M, base: Path) -> M:
    """A copy of `model` with its relative input paths made absolute against `base` (the config file's folder)."""

    def absolute(path: Path) -> Path:
        return path if path.is_absolute() else (base / path).resolve()

    copy = model.model_copy(deep=True)
    for owner, name, _ in list(_input_fields(copy)):
        value = getattr(owner, name)
        if isinstance(value, list):
            setattr(owner, name, [absolute(path) for path in value])
        elif isinstance(value, dict):
            setattr(owner, name, {index: absolute(path) for index, path in value.items()})
        elif value is not None and not value.is_absolute():
            setattr(owner, name, absolute(value))
    return copy

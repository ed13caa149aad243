"""Schema tags of the JSON artifacts (read through core.formats.json_model) and validation.

Every JSON artifact carries `"schema": "grade.<kind>/<major>"`. A reader accepts its own kind at its own
major version; a file from a newer GRADE (a higher major) is refused with a message that says which
version was found and which is supported, instead of failing on some field further in.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from core.errors import InputError
from core.rundir import read_json

SCHEMA_FIELD = "schema"
_TAG = re.compile(r"grade\.([a-z0-9_]+)/(\d+)")
Model = TypeVar("Model", bound=BaseModel)


def schema_tag(kind: str, major: int) -> str:
    """The value of the `schema` field: "grade.<kind>/<major>"."""
    return f"grade.{kind}/{major}"


def check_schema(found: Any, kind: str, major: int, file: str | Path) -> None:
    """InputError unless `found` is the schema tag of `kind` at version `major`."""
    supported = schema_tag(kind, major)
    match = _TAG.fullmatch(found) if isinstance(found, str) else None
    if match is None or match[1] != kind:
        raise InputError(f"expected schema {supported!r}, found {found!r}", file, SCHEMA_FIELD)
    version = int(match[2])
    if version > major:
        raise InputError(f"schema version {found!r} is newer than this GRADE reads ({supported!r}); "
                         "update GRADE to read it", file, SCHEMA_FIELD)
    if version < major:
        raise InputError(f"schema version {found!r} is older than this GRADE reads ({supported!r}); "
                         "regenerate the file", file, SCHEMA_FIELD)


def validate(model: type[Model], data: Any, file: str | Path) -> Model:
    """`data` as `model`; InputError naming the file and the first invalid field otherwise."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], file, ".".join(str(part) for part in err["loc"]) or None) from exc


def schema_of(path: str | Path) -> str | None:
    """The `schema` tag of a JSON file, or None when it is unreadable or not a GRADE artifact (used to tell
    GRADE's folders from others before writing into one)."""
    try:
        data = read_json(path)
    except InputError:
        return None
    tag = data.get(SCHEMA_FIELD) if isinstance(data, dict) else None
    return tag if isinstance(tag, str) and _TAG.fullmatch(tag) else None

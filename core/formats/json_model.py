"""Versioned JSON artifacts: one base model and one writer and reader for all of them.

Every JSON artifact carries `"schema": "grade.<kind>/<major>"` as its first field. A format module
subclasses `JsonDocument` with its KIND and MAJOR and reads and writes its file through `read_json_model`
and `write_json_model`: the file appears atomically, and a bad file is one InputError paragraph naming the
file and the first invalid field (another kind or major version is refused before its fields are looked
at: core.formats.versions).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.errors import InputError
from core.formats.versions import SCHEMA_FIELD, check_schema, schema_tag, validate
from core.rundir import atomic_write_json, read_json


class JsonDocument(BaseModel):
    """A JSON artifact of schema `grade.<KIND>/<MAJOR>`; unknown keys are refused unless a subclass allows them."""

    model_config = ConfigDict(extra="forbid")
    KIND: ClassVar[str]
    MAJOR: ClassVar[int]

    schema_: str = Field(alias=SCHEMA_FIELD)

    @classmethod
    def schema_tag(cls) -> str:
        return schema_tag(cls.KIND, cls.MAJOR)

    @model_validator(mode="before")
    @classmethod
    def _tagged(cls, data: Any) -> Any:
        # A document built in code gets its kind's tag; one read from a file keeps the tag it was checked with.
        if isinstance(data, dict) and SCHEMA_FIELD not in data and "schema_" not in data:
            return {SCHEMA_FIELD: cls.schema_tag(), **data}
        return data


Document = TypeVar("Document", bound=JsonDocument)


def write_json_model(path: str | Path, document: JsonDocument) -> Path:
    """Write `document` to `path` atomically, fields in model order (the schema tag first)."""
    return atomic_write_json(path, document.model_dump(mode="json", by_alias=True))


def read_json_model(path: str | Path, model: type[Document], what: str | None = None) -> Document:
    """`path` read as `model`: its schema tag checked, then its fields validated. `what` names the file in
    the error when it is missing (default: its name)."""
    data = read_json(path, what or Path(path).name)
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", path)
    check_schema(data.get(SCHEMA_FIELD), model.KIND, model.MAJOR, path)
    return validate(model, data, path)

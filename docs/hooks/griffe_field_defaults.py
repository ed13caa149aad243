"""Griffe extension for the reference pages: a pydantic field whose limits are in its annotation,
`x: Annotated[int, Field(ge=1)] = Field(7, description="...")` (or `= 7`), reads as
`x: int = Field(7, description="...", ge=1)`. griffe-pydantic's static reading takes the Field of an Annotated
annotation alone and would lose the default and the description."""

from __future__ import annotations

from typing import Any

from griffe import Attribute, ExprCall, ExprKeyword, ExprSubscript, ExprTuple, Extension

ANNOTATED = {"typing.Annotated", "typing_extensions.Annotated"}
FIELD = "pydantic.Field"


def _is_field(expression: object) -> bool:
    return isinstance(expression, ExprCall) and expression.canonical_path == FIELD


class AnnotatedFieldDefaults(Extension):
    def on_attribute_instance(self, *, attr: Attribute, **_: Any) -> None:
        annotation = attr.annotation
        if not (isinstance(annotation, ExprSubscript) and annotation.canonical_path in ANNOTATED
                and isinstance(annotation.slice, ExprTuple)):
            return
        limits = [element for element in annotation.slice.elements[1:] if _is_field(element)]
        if not limits or attr.value is None:
            return
        keywords = [argument for limit in limits for argument in limit.arguments if isinstance(argument, ExprKeyword)]
        if _is_field(attr.value):
            attr.value.arguments = [*attr.value.arguments, *keywords]
        else:
            attr.value = ExprCall(function=limits[0].function, arguments=[attr.value, *keywords])
        attr.annotation = annotation.slice.elements[0]

"""How `grade ... --help` names arguments and option values: as a person writes them (`CONFIG`, `RUN...`, `[DIR]`,
`--out DIR`, `--min-box INT`, `--depth fast|lit`), not as typer prints Python types (`{CONFIG}`, `<list[Path]>`,
`<int range>`).

Typer builds its parameters itself, so `readable` re-classes each one of a built command tree to a subclass whose
only change is the help and usage text; parsing, validation and completion stay typer's.
"""

from __future__ import annotations

import typing
from pathlib import Path

from typer import _click
from typer.core import TyperArgument, TyperGroup, TyperOption

# Python types as option values are named in help; anything else is named by its type's name in capitals.
TYPE_NAMES: dict[type, str] = {int: "INT", float: "NUMBER", str: "TEXT", bool: "BOOL"}
PATH_NAMES = {"file": "FILE", "dir": "DIR", "path": "PATH"}


def value_name(param: TyperArgument | TyperOption) -> str:
    """What one value of `param` is: its choices (`fast|lit`), FILE/DIR/PATH, INT, NUMBER or TEXT."""
    described = param.type_descriptor
    if described.is_choice:
        return "|".join(str(getattr(choice, "value", choice)) for choice in described.choices or ())
    annotation = described.annotation
    if described.is_list:
        (annotation,) = typing.get_args(annotation)
    if isinstance(annotation, type) and issubclass(annotation, Path):
        return PATH_NAMES[described.path_type]
    return TYPE_NAMES.get(annotation, getattr(annotation, "__name__", "VALUE").upper())


class ReadableArgument(TyperArgument):
    """An argument named by its metavar (or its name in capitals): `CONFIG`, `RUN...`, and `[DIR]` when optional."""

    def _rich_display_name(self) -> str:
        name = self.metavar or (self.name or "").upper()
        return f"{name}..." if self.nargs != 1 else name

    def _usage_display_name(self) -> str:
        name = self._rich_display_name()
        return name if self.required else f"[{name}]"

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return None  # the name says it; typer would append '<path>'


class ReadableOption(TyperOption):
    """An option whose value is named by its metavar or `value_name`."""

    def display_type_rich(self, ctx: _click.Context) -> str | None:
        return self.metavar or value_name(self)


def readable(command: _click.Command) -> _click.Command:
    """Give every parameter of `command` and of its subcommands readable help names; returns `command`."""
    for param in command.params:
        if type(param) is TyperArgument:
            param.__class__ = ReadableArgument
        elif type(param) is TyperOption:
            param.__class__ = ReadableOption
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            readable(sub)
    return command

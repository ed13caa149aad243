"""mkdocs hook: the command-line reference, rendered from the `grade` typer app itself.

A page holding MARKER gets, in its place, every command's `--help` as `grade COMMAND --help` prints it, in the
order `grade --help` lists them; EXIT_CODES_MARKER becomes the table of exit codes (core.errors). Neither can drift
from the code.
"""

from __future__ import annotations

import typer.main
from typer.testing import CliRunner

from core.errors import EXIT_CODE_MEANINGS
from pipeline.cli import app

MARKER = "<!-- grade-cli-reference -->"
EXIT_CODES_MARKER = "<!-- grade-exit-codes -->"
PROG = "grade"
# A fixed terminal: the same page on every machine, lines as wide as the site's code blocks.
HELP_ENV = {"COLUMNS": "110", "NO_COLOR": "1", "TERM": "dumb"}


def _command_paths(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The path of this (click-style) command and of every subcommand below it, depth first, in their listed
    order. Typer vendors its own click, so groups are told by their interface, not by class."""
    paths = [path]
    if hasattr(command, "list_commands"):
        context = command.context_class(command, info_name=PROG)
        for name in command.list_commands(context):
            paths += _command_paths(command.get_command(context, name), (*path, name))
    return paths


def _help_text(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"], prog_name=PROG, env=HELP_ENV)
    if result.exit_code != 0:
        raise RuntimeError(f"`{PROG} {' '.join(path)} --help` exited {result.exit_code}: {result.output}")
    return result.output.rstrip()


def cli_reference() -> str:
    """Markdown: a section per command with its help text."""
    sections = []
    for path in _command_paths(typer.main.get_command(app)):
        title = " ".join((PROG, *path))
        level = "#" * min(2 + len(path), 4) if path else "##"
        sections.append(f"{level} `{title}`\n\n```text\n{_help_text(path)}\n```\n")
    return "\n".join(sections)


def exit_code_table() -> str:
    rows = [f"| {int(code)} | `{code.name}` | {meaning} |" for code, meaning in EXIT_CODE_MEANINGS.items()]
    return "\n".join(["| code | name (`core.errors.ExitCode`) | meaning |", "|---|---|---|", *rows])


def on_page_markdown(markdown: str, **_: object) -> str:
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, cli_reference())
    return markdown.replace(EXIT_CODES_MARKER, exit_code_table())

"""The `grade` command line: the root command, its commands loaded only when used, and the one error boundary.

Each command lives with its stage; `COMMANDS` names where, with the one-line help `grade --help` lists, so that
`grade --help` (and completing a command's name) imports none of them (tests/test_cli.py checks the lines against
the commands' own)."""

from __future__ import annotations

import atexit
import gc
import importlib
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, NamedTuple, NoReturn

import typer
from typer import _click
from typer.core import TyperGroup

from core.errors import EXIT_CODES_HELP, ExitCode, GradeError
from core.progress import configure_logging, console
from pipeline.cli_help import readable


class Command(NamedTuple):
    module: str
    attribute: str  # a typer.Typer (a command group) or a function (one command)
    summary: str  # its help's first line, as `grade --help` lists it


# In the order a dataset is made and used, which `grade --help` keeps.
COMMANDS: dict[str, Command] = {
    "demo": Command("pipeline.run_cli", "demo_command", "The CPU demo: configs/demo.yaml into runs/demo."),
    "convert": Command("asset_converters.cli", "convert_app", "Convert source datasets into USD asset packages."),
    "place": Command("placement.cli", "place_command", "Place humans, flying objects and the robot start."),
    "prepare": Command("pipeline.run_cli", "prepare_command", "Convert assets, place them and compose scene.usda."),
    "generate": Command("pipeline.run_cli", "generate_command", "Run one experiment end to end."),
    "batch": Command("pipeline.batch_cli", "batch_app", "Run a batch of experiments, or report its status."),
    "view": Command("postprocess.cli", "view_command", "Contact sheets, trajectory and IMU plots of a run."),
    "replay": Command("replay.cli", "replay_command", "Simulate a recorded run again, with new sensors if asked."),
    "postprocess": Command("postprocess.cli", "postprocess_command",
                           "Sensor noise, blur and rolling shutter; bag tools."),
    "export": Command("export.cli", "export_app",
                      "COCO/YOLO training sets, WebDataset shards, TUM RGB-D/EuRoC/KITTI sequences."),
    "evaluate": Command("evaluation.cli", "evaluate_app", "Evaluate SLAM trajectories against the ground truth."),
    "benchmark": Command("pipeline.benchmark_cli", "benchmark_app",
                         "Run SLAM methods on sequences and tabulate the results."),
    "config": Command("pipeline.config_cli", "config_app", "Validate and inspect experiment and batch configs."),
    "robot": Command("simulation.tiago.cli", "robot_app",
                     "Robots: inspect a URDF or MJCF, S-curve calibration and command-file driving."),
}


def load_command(name: str) -> _click.Command:
    """Import command `name`'s module and build its click command, with readable help."""
    spec = COMMANDS[name]
    target = getattr(importlib.import_module(spec.module), spec.attribute)
    if isinstance(target, typer.Typer):
        group = typer.main.get_group(target)
    else:
        single = typer.Typer(add_completion=False)
        single.command(name)(target)
        group = typer.main.get_command(single)
    group.rich_markup_mode = None  # plain click help, as the root's: '[viz]' in a help text is not markup
    for sub in getattr(group, "commands", {}).values():
        sub.rich_markup_mode = None
    return readable(group)


class LazyCommands(Mapping):
    """The root's commands by name, each built on first use."""

    def __init__(self) -> None:
        self._built: dict[str, _click.Command] = {}

    def __getitem__(self, name: str) -> _click.Command:
        if name not in COMMANDS:
            raise KeyError(name)
        if name not in self._built:
            self._built[name] = load_command(name)
        return self._built[name]

    def __iter__(self) -> Iterator[str]:
        return iter(COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS)


class LazyGroup(TyperGroup):
    """The root group: lists its commands from `COMMANDS` and imports one only to run it or show its help."""

    def __init__(self, **attrs: object) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands()

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(COMMANDS)

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, spec.summary) for name, spec in COMMANDS.items()])


app = typer.Typer(
    name="grade",
    cls=LazyGroup,
    help="""GRADE: generate realistic animated dynamic environments for robotics research.

    \b
    A first run (procedural assets, no download):
      grade demo && grade view runs/demo
    """,
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # -h as well as --help, for every command (click's contexts inherit it).
    context_settings={"max_content_width": 100, "help_option_names": ["-h", "--help"]},
    # Plain click help: flags shown as flags, choices listed, and '[viz]' in a help text is not taken
    # for rich markup.
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"grade {version('grade')}")
        raise typer.Exit()


@app.callback()
def _options(
    _version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                           help="Print the version and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug messages too.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Warnings and errors only, no progress bars.")]
    = False,
    log_file: Annotated[Path | None, typer.Option("--log-file", metavar="FILE", dir_okay=False,
                                                  help="Also append the messages to FILE.")] = None,
) -> None:
    """Options that apply before any command (grade -v|-q|--log-file FILE COMMAND ...)."""
    if verbose and quiet:
        raise GradeError("give -v (more messages) or -q (fewer), not both", field="-v/-q")
    configure_logging(1 if verbose else -1 if quiet else 0, log_file)


def _os_error_message(exc: OSError) -> str:
    """One line naming the path(s) and the OS reason: 'PATH: No space left on device'."""
    paths = " -> ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None)
    reason = exc.strerror or str(exc)
    return f"{paths}: {reason}" if paths else reason


def _exit_interrupted() -> NoReturn:
    """Say how to resume and leave at once. The command has cleaned up its outputs by now; Python's own exit would
    first wait for every worker thread still busy with the abandoned work (a frame rendering, say). Once, in a
    full test run, that wait never ended (not reproduced in 52 tries since, cause unknown)."""
    console.print("interrupted; rerun the same command to resume")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(ExitCode.INTERRUPTED)


def main() -> None:
    """Console-script entry point, the one error boundary (exit codes: core.errors.ExitCode): bad input and OS
    errors (read-only, permission denied, disk full, ...) become one plain-text paragraph and BAD_INPUT, Ctrl-C
    exits INTERRUPTED with how to resume; any other exception is a bug and keeps its traceback (CRASH)."""
    # The process ends after this. Its objects need no cyclic collection on the way out: without this, the
    # interpreter's last collections walk the whole heap (a quarter of a million objects after a run: 0.5 to 1 s
    # of a tiny `grade generate`'s 4, benchmarks/cli_startup.py). At exit, not here: a caller that runs main() in
    # its own process (a test) keeps collecting what it makes later.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    try:
        # Without standalone mode, click returns a command's typer.Exit code instead of raising it.
        code = app(standalone_mode=False)
        if code == ExitCode.INTERRUPTED:  # typer turns Ctrl-C into a returned 130 in this mode
            _exit_interrupted()
        if isinstance(code, int) and code:
            sys.exit(code)
    except GradeError as exc:
        console.print(f"error: {exc}", soft_wrap=True)
        sys.exit(exc.exit_code)
    except OSError as exc:
        console.print(f"error: {_os_error_message(exc)}", soft_wrap=True)
        sys.exit(ExitCode.BAD_INPUT)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        console.print("aborted")
        sys.exit(ExitCode.INTERRUPTED)
    except KeyboardInterrupt:
        _exit_interrupted()
    except typer.TyperException as exc:  # usage errors (bad option values) carry their own exit code
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            console.print(f"error: {exc.format_message()}")
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()

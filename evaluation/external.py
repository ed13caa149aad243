"""A user-installed SLAM method (DynaSLAM, RTAB-Map, VINS-Fusion, ...) run as a command on an exported sequence.

The method is a command template with the placeholders `{sequence}` (a `grade export tum|euroc` sequence
folder) and `{out}` (the runner folder), filled with shell-quoted paths and split like a shell would
(shlex), then run without a shell under a timeout; other literal braces must be doubled (`{{`, `}}`). The
command must write its trajectory in TUM format to `{out}/<trajectory name>`; it is read back to check it.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from core.errors import ConfigError, GradeError, InputError
from core.formats.tum import read_tum
from core.rundir import Stopwatch
from evaluation.runner import RunnerResult, record_run

METHOD = "external"
OUTPUT_LINES = 20  # of the command's output, quoted when it fails


def command_line(command: str, sequence: Path, out: Path) -> list[str]:
    """The template's arguments with the placeholders filled (ConfigError on an unknown placeholder)."""
    try:
        filled = command.format(sequence=shlex.quote(str(sequence)), out=shlex.quote(str(out)))
        arguments = shlex.split(filled)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"cannot fill the command template {command!r} ({exc}); its placeholders are "
                          "{sequence} and {out}, and other braces are written {{ and }}", None, "command") from None
    if not arguments:
        raise ConfigError("the command template is empty", None, "command")
    return arguments


def _tail(output: str | bytes | None) -> str:
    text = output.decode(errors="replace") if isinstance(output, bytes) else output or ""
    lines = text.rstrip().splitlines()[-OUTPUT_LINES:]
    return "\n".join(lines) if lines else "(no output)"


def run_external(command: str, sequence: Path, out: Path, trajectory_name: str, timeout_s: float) -> RunnerResult:
    """Run the command on `sequence`, wait at most `timeout_s` seconds, and record the TUM trajectory it wrote to
    `out`/`trajectory_name` in runner.json. A timeout, a non-zero exit or a missing or malformed trajectory raises
    GradeError (with the command's last output lines)."""
    arguments = command_line(command, Path(sequence), Path(out))
    clock = Stopwatch()
    try:
        finished = subprocess.run(arguments, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout_s,
                                  check=False)
    except subprocess.TimeoutExpired as exc:
        raise GradeError(f"the command did not finish within {timeout_s:g} s and was stopped: {shlex.join(arguments)}"
                         f"\nits last output:\n{_tail(exc.output)}") from None
    except OSError as exc:
        raise GradeError(f"cannot start the command {shlex.join(arguments)}: {exc.strerror}") from None
    seconds = clock.seconds()
    if finished.returncode != 0:
        raise GradeError(f"the command exited with status {finished.returncode}: {shlex.join(arguments)}\n"
                         f"its last output:\n{_tail(finished.stdout)}")
    trajectory = Path(out) / trajectory_name
    if not trajectory.is_file():
        raise GradeError(f"the command finished but wrote no trajectory {trajectory_name!r} in the output folder; "
                         f"its last output:\n{_tail(finished.stdout)}", trajectory)
    times, _ = read_tum(trajectory)  # InputError naming the line when it is not TUM
    if not len(times):
        raise InputError(f"the command exited 0 but wrote no poses into its trajectory; its last output:\n"
                         f"{_tail(finished.stdout)}", trajectory)
    settings = {"command": command, "arguments": arguments, "timeout_s": timeout_s}
    return record_run(out, METHOD, sequence, trajectory, len(times), len(times), seconds, settings)

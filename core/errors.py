"""Error types shared by every stage, and the exit codes of the `grade` command line.

Every error caused by bad input names the file and the field (key path) it came from, so the
CLI can print one paragraph and exit with code 2 without a traceback.
"""

from __future__ import annotations

import enum
from pathlib import Path


class ExitCode(enum.IntEnum):
    """The exit status of every `grade` command (their meanings: EXIT_CODE_MEANINGS, printed by `grade --help`)."""

    OK = 0
    CRASH = 1
    BAD_INPUT = 2
    CONVERT_FAILURES = 3
    BATCH_FAILURES = 4
    INTERRUPTED = 130  # the shell's code for a process ended by Ctrl-C (128 + SIGINT)


EXIT_CODE_MEANINGS = {
    ExitCode.OK: "success",
    ExitCode.CRASH: "unexpected error (a bug; Python's traceback follows)",
    ExitCode.BAD_INPUT: "bad input or usage, or an OS error (read-only, permission denied, disk full)",
    ExitCode.CONVERT_FAILURES: "grade convert: some inputs failed to convert; the others are converted",
    ExitCode.BATCH_FAILURES: "grade batch: some jobs failed after their retries; the others are complete",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C); run the same command again to resume",
}


def exit_code_help(*codes: ExitCode) -> str:
    """The meanings of `codes` (default: all) as a help text block for click ("\\b" keeps its lines as they are)."""
    return "\b\nExit status:\n" + "\n".join(f"  {int(code):<3}  {EXIT_CODE_MEANINGS[code]}" for code in codes or ExitCode)


EXIT_CODES_HELP = exit_code_help()


class GradeError(Exception):
    """Bad input or an unrecoverable stage failure with a user-facing message."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(self, message: str, file: str | Path | None = None, field: str | None = None):
        self.message = message
        self.file = str(file) if file is not None else None
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.field) if part)
        return f"{where}: {self.message}" if where else self.message


class ConfigError(GradeError):
    """A configuration file or override that does not validate."""


class InputError(GradeError):
    """A data file (JSON, npz, mesh, bag, ...) that is missing, malformed or degenerate."""


class BatchFailedError(GradeError):
    """Some jobs of a batch failed after their retries; the others are complete."""

    exit_code = ExitCode.BATCH_FAILURES

"""Error types shared by every stage.

Every error caused by bad input names the file and the field (key path) it came from, so the
CLI can print one paragraph and exit with code 2 without a traceback.
"""

from __future__ import annotations

from pathlib import Path


class GradeError(Exception):
    """Bad input or an unrecoverable stage failure with a user-facing message."""

    exit_code = 2

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

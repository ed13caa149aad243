"""Numeric CSV tables whose header row names the columns (a TIAGo trajectory, a wheel-speed recording): one
writer and one reader, which finds columns by name, in any order and case."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.errors import InputError
from core.rundir import atomic_write_text, read_utf8

# Significant digits written: a float64 time near an hour keeps its nanoseconds.
DIGITS = 9


def write_csv_table(path: str | Path, columns: Sequence[str], values: np.ndarray) -> Path:
    """`values` (rows x columns) under a header row of `columns` (atomic)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([f"{v:.{DIGITS}g}" for v in row] for row in values)
    return atomic_write_text(path, buffer.getvalue())


def read_csv_table(path: str | Path, required: Sequence[str], optional: Sequence[str] = (), min_rows: int = 1,
                   what: str = "table") -> dict[str, np.ndarray]:
    """Columns of a CSV file by name (as spelled in `required` and `optional`), as float arrays: every `required`
    column, and those of `optional` the header has. InputError naming the file and the first missing column or
    the line of a value that is not a number."""
    path = Path(path)
    try:
        rows = list(csv.reader(read_utf8(path, what).splitlines()))
    except OSError as exc:
        raise InputError(f"cannot read the {what} ({exc})", path) from exc
    if len(rows) < 1 + min_rows:
        raise InputError(f"expected a header row and at least {min_rows} sample{'s' if min_rows > 1 else ''}", path)
    header = [name.strip() for name in rows[0]]
    lower = [name.lower() for name in header]
    missing = [name for name in required if name.lower() not in lower]
    if missing:
        raise InputError(f"missing columns {missing}; found {header}", path, missing[0])
    wanted = [*required, *(name for name in optional if name.lower() in lower)]
    index = [lower.index(name.lower()) for name in wanted]
    values = np.empty((len(rows) - 1, len(wanted)))
    for i, row in enumerate(rows[1:]):
        try:
            values[i] = [float(row[j]) for j in index]
        except (ValueError, IndexError):
            raise InputError(f"expected numbers in columns {wanted}, got {row}", path, f"line {i + 2}") from None
    return dict(zip(wanted, values.T))

"""Helpers for per-point data stored as rows (C, N): numpy loops fastest along contiguous rows.

Indexing a row array with `x[:, index]`, or broadcasting (N, 3) arrays against (3,) or (N, 1), makes
numpy step through tiny inner loops; these helpers keep every loop along a whole row.
"""

from __future__ import annotations

import numpy as np


def put_columns(rows: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """rows[:, index] = values, one row at a time."""
    for target, source in zip(rows, values):
        target[index] = source


def rows_to_points(rows: np.ndarray) -> np.ndarray:
    """(C, N) rows as a C-contiguous (N, C) array (the layout Embree and images use)."""
    out = np.empty((rows.shape[1], rows.shape[0]), dtype=rows.dtype)
    for k, row in enumerate(rows):
        out[:, k] = row
    return out

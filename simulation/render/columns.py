"""Per-point data is stored as rows (C, N): numpy loops fastest along contiguous rows.

Indexing a row array with `x[:, index]`, or broadcasting (N, 3) arrays against (3,) or (N, 1), makes
numpy step through tiny inner loops; this helper keeps every loop along a whole row.
"""

from __future__ import annotations

import numpy as np


def put_columns(rows: np.ndarray, index: np.ndarray, values: np.ndarray) -> None:
    """rows[:, index] = values, one row at a time."""
    for target, source in zip(rows, values):
        target[index] = source

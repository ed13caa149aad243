"""Result tables of a SLAM benchmark, like the GRADE paper's Table 3: one row per method, one column per
sequence, each cell the mean and std over repetitions of the ATE RMSE and the missing time.

    results.csv   method, sequence, runs, failed, ate_rmse_mean_m, ate_rmse_std_m, missing_time_mean_s,
                  missing_time_std_s, tracked_fraction_mean  (one line per cell; empty values where no run
                  produced a trajectory)
    results.md    the table: "ATE cm (std) / missing s (std)" per cell, "failed" where every run failed

Std is the population std over the repetitions that produced a trajectory (0 for one).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.formats.slam_metrics import SlamMetrics
from core.rundir import atomic_write_text

CSV_FILE = "results.csv"
MARKDOWN_FILE = "results.md"
CM_PER_M = 100.0


@dataclass
class Cell:
    """The runs of one method on one sequence."""

    method: str
    sequence: str
    metrics: list[SlamMetrics] = field(default_factory=list)
    failed: int = 0  # runs without a trajectory (crash, timeout, nothing tracked)

    def summary(self) -> dict[str, float | int | None]:
        ate = np.array([m.ate.rmse for m in self.metrics])
        missing = np.array([m.missing_time_s for m in self.metrics])
        tracked = np.array([m.tracked_fraction for m in self.metrics])

        def stat(values: np.ndarray, how) -> float | None:
            return float(how(values)) if len(values) else None

        return {"runs": len(self.metrics) + self.failed, "failed": self.failed,
                "ate_rmse_mean_m": stat(ate, np.mean), "ate_rmse_std_m": stat(ate, np.std),
                "missing_time_mean_s": stat(missing, np.mean), "missing_time_std_s": stat(missing, np.std),
                "tracked_fraction_mean": stat(tracked, np.mean)}


def csv_text(cells: list[Cell]) -> str:
    out = io.StringIO()
    columns = ["method", "sequence", "runs", "failed", "ate_rmse_mean_m", "ate_rmse_std_m", "missing_time_mean_s",
               "missing_time_std_s", "tracked_fraction_mean"]
    writer = csv.DictWriter(out, columns, lineterminator="\n")
    writer.writeheader()
    for cell in cells:
        row = {"method": cell.method, "sequence": cell.sequence, **cell.summary()}
        writer.writerow({k: "" if v is None else (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
    return out.getvalue()


def markdown_text(cells: list[Cell], methods: list[str], sequences: list[str], title: str) -> str:
    by_key = {(c.method, c.sequence): c for c in cells}
    legend = ("ATE RMSE in cm (std) / missing time in s (std), over the runs that produced a trajectory; runs in "
              "parentheses when some failed.")
    lines = [f"# {title}", "", legend, "",
             "| method | " + " | ".join(sequences) + " |", "|---|" + "---|" * len(sequences)]
    for method in methods:
        row = []
        for sequence in sequences:
            cell = by_key.get((method, sequence))
            summary = cell.summary() if cell is not None else None
            if summary is None or summary["ate_rmse_mean_m"] is None:
                row.append("failed" if cell is not None and cell.failed else "-")
                continue
            text = (f"{summary['ate_rmse_mean_m'] * CM_PER_M:.2f} ({summary['ate_rmse_std_m'] * CM_PER_M:.2f}) / "
                    f"{summary['missing_time_mean_s']:.2f} ({summary['missing_time_std_s']:.2f})")
            if cell.failed:
                text += f" ({summary['runs'] - cell.failed}/{summary['runs']} runs)"
            row.append(text)
        lines.append(f"| {method} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def write_tables(folder: Path, cells: list[Cell], methods: list[str], sequences: list[str], title: str) -> list[Path]:
    """results.csv and results.md in `folder` (atomic)."""
    return [atomic_write_text(Path(folder) / CSV_FILE, csv_text(cells)),
            atomic_write_text(Path(folder) / MARKDOWN_FILE, markdown_text(cells, methods, sequences, title))]

"""`grade benchmark`: evaluation's `benchmark run` and the pipeline's `benchmark slam`, which runs methods over
sequences (pipeline/benchmark.py) and so lives above evaluation."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from core.progress import console
from evaluation.cli import benchmark_app
from pipeline.benchmark_config import load_slam_benchmark


@benchmark_app.command("slam")
def benchmark_slam(config: Annotated[Path, typer.Argument(metavar="CONFIG", help="SLAM benchmark YAML "
                                                          "(docs/guides/evaluate.md).")]) -> None:
    """Methods x sequences x repetitions: ATE and missing-time tables (CSV, Markdown), plots.

    \b
    Example:
      grade benchmark slam configs/slam-benchmark.yaml
    """
    benchmark = load_slam_benchmark(config)  # before the benchmark's imports: a bad config is refused at once
    from pipeline.benchmark import slam_benchmark

    result = slam_benchmark(benchmark)
    for table in result.tables:
        console.print(str(table), soft_wrap=True)
    sys.stdout.write(result.tables[-1].read_text(encoding="utf-8"))

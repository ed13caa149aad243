"""`grade evaluate ...` and `grade benchmark ...`: the evaluation commands, registered in pipeline/cli.py."""

from __future__ import annotations

import typer

evaluate_app = typer.Typer(help="Evaluate SLAM trajectories against the ground truth.", no_args_is_help=True)
benchmark_app = typer.Typer(help="Run SLAM methods on sequences and tabulate the results.", no_args_is_help=True)

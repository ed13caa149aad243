"""`grade batch run BATCH.yaml` (or `grade batch BATCH.yaml`) and `grade batch status DIR`."""

from __future__ import annotations

import enum
import typing
from pathlib import Path
from typing import Annotated

import typer
from typer import _click
from typer.core import TyperGroup

from core.config_io import validate_model
from core.errors import ExitCode, exit_code_help
from core.progress import console
from pipeline.batch_config import ExecutorConfig, load_batch


class RunByDefault(TyperGroup):
    """`grade batch BATCH.yaml ...`, the form before `run` and `status` were subcommands, still means `run`."""

    def resolve_command(self, ctx: _click.Context, args: list[str]) -> tuple:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().resolve_command(ctx, args)


batch_app = typer.Typer(
    cls=RunByDefault, no_args_is_help=True, subcommand_metavar="run|status ...",
    help="Run a batch of experiments, or report its status.\n\n`grade batch BATCH.yaml` is short for `grade batch run "
         "BATCH.yaml`.",
    epilog=exit_code_help(ExitCode.BAD_INPUT, ExitCode.BATCH_FAILURES))
# `grade batch run --executor`: the executor kinds of the batch document, as click choices.
ExecutorKind = enum.Enum("ExecutorKind", {kind: kind for kind in typing.get_args(
    ExecutorConfig.model_fields["kind"].annotation)}, type=str)


@batch_app.command("run", epilog=exit_code_help(ExitCode.BAD_INPUT, ExitCode.BATCH_FAILURES))
def batch_run(
    batch_file: Annotated[Path, typer.Argument(metavar="BATCH.yaml", help="The batch config.")],
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Batch folder (default: the config's "
                                             "output_dir).")] = None,
    executor: Annotated[ExecutorKind | None, typer.Option(
        "--executor", help="Where the jobs run (default: the config's executor.kind).")] = None,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="Jobs at a time.")] = None,
    address: Annotated[str | None, typer.Option("--address", metavar="auto|HOST:PORT",
                                                help="ray: the cluster to join.")] = None,
    pin_cores: Annotated[bool | None, typer.Option("--pin-cores/--no-pin-cores", help="local: run each worker's "
                                                   "jobs on cores of their own (Linux).")] = None,
) -> None:
    """Run the experiments of a batch config.

    Jobs are resumable and retried; a summary lists failures with their logs.

    \b
    Examples:
      grade batch run configs/grade-dataset.yaml --out datasets/grade --workers 2
      grade batch configs/grade-dataset.yaml --workers 8 --pin-cores
      grade batch run configs/grade-dataset.yaml --executor slurm
    """
    batch = load_batch(batch_file)  # before the executors' imports: a bad batch file is refused at once
    from pipeline.batch import run_batch

    changes = {"kind": executor.value if executor else None, "workers": workers, "ray_address": address,
               "pin_cores": pin_cores}
    data = batch.executor.model_dump() | {k: v for k, v in changes.items() if v is not None}
    settings = validate_model(ExecutorConfig, data, "--executor/--workers/--address/--pin-cores")
    state = run_batch(batch, batch_file, out, settings)
    console.print(f"batch complete: {len(state.jobs)} jobs in {Path(out or batch.output_dir)}", soft_wrap=True)


@batch_app.command("status")
def batch_status(
    folder: Annotated[Path, typer.Argument(metavar="DIR", help="The batch folder.")],
    follow: Annotated[bool, typer.Option("--follow", help="Show a live progress bar until the batch's driver "
                                                          "stops.")] = False,
) -> None:
    """Jobs done, running, failed and waiting in a batch folder.

    \b
    Example:
      grade batch status datasets/grade --follow
    """
    from pipeline.batch import report_status

    report_status(folder, follow)

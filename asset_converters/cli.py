"""`grade convert ...`: one command per source dataset, each converting a file or a whole folder."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from asset_converters.batch import BatchResult
from pipeline.progress import console

convert_app = typer.Typer(help="Convert source datasets into USD asset packages.", no_args_is_help=True)


def report(result: BatchResult) -> None:
    """Print the batch summary; exit 1 when any input failed."""
    console.print(f"converted {len(result.converted)}, skipped {len(result.skipped)} (already converted), "
                  f"failed {len(result.failed)}")
    if result.failed:
        table = Table("input", "error", title="failures", show_lines=True)
        for source, message in result.failed:
            table.add_row(str(source), message)
        console.print(table)
        raise typer.Exit(1)


# Converter commands are registered below, one per source dataset.

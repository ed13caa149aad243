"""Progress bars and logging used by every long-running stage."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")

# Progress and logs go to stderr so stdout stays parseable (e.g. `grade config show`).
# Messages carry user text (paths, config values): never parse it as rich markup ('[red]' in a file name).
console = Console(stderr=True, markup=False, highlight=False)


def _quiet() -> bool:
    return os.environ.get("GRADE_QUIET", "") not in ("", "0")


def get_logger(name: str) -> logging.Logger:
    """A logger under the `grade` hierarchy, printed through rich on stderr."""
    root = logging.getLogger("grade")
    if not root.handlers:
        handler = RichHandler(console=console, show_time=False, show_path=False, markup=False)
        root.addHandler(handler)
        root.setLevel(logging.WARNING if _quiet() else logging.INFO)
        root.propagate = False
    return root.getChild(name)


def configure_logging(verbosity: int, log_file: str | os.PathLike | None = None) -> None:
    """The command line's -v (debug messages) and -q (warnings and errors only, no progress bars; the
    processes it starts inherit it through GRADE_QUIET), and --log-file: every message of that level also
    appended to this file, as plain lines."""
    if verbosity < 0:
        os.environ["GRADE_QUIET"] = "1"
    root = get_logger("cli").parent
    root.setLevel(logging.DEBUG if verbosity > 0 else logging.WARNING if verbosity < 0 else logging.INFO)
    if log_file is not None:
        handler = logging.FileHandler(log_file, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)


_shown: list[Progress] = []  # progress displays on screen now, the latest last


class _Shown(Progress):
    """A Progress that `subtask` can add a bar to while it is on screen."""

    def start(self) -> None:
        super().start()
        _shown.append(self)

    def stop(self) -> None:
        if self in _shown:
            _shown.remove(self)
        super().stop()


def make_progress(*extra_columns) -> Progress:
    """A rich Progress with bar, counts, elapsed time and ETA (plus any extra columns)."""
    return _Shown(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        *extra_columns,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        disable=_quiet() or not sys.stderr.isatty() and os.environ.get("GRADE_PROGRESS") != "1",
        transient=False,
    )


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with make_progress() as progress:
        task = progress.add_task(description, total=total)
        for item in items:
            yield item
            progress.advance(task)


@contextmanager
def subtask(description: str, total: float | None) -> Iterator[Callable[[float], None]]:
    """A bar for one piece of a longer job (a Cycles frame's samples) on the progress display shown now
    (`grade generate`'s, `grade replay`'s), or on its own display when none is; yields `update(completed)`.
    The bar is removed from a shared display when the block ends."""
    if not _shown:
        with make_progress() as progress:
            task = progress.add_task(description, total=total)
            yield lambda completed: progress.update(task, completed=completed, refresh=True)
        return
    progress = _shown[-1]
    task = progress.add_task(description, total=total, info="")  # `info`: the shared displays' text column
    try:
        yield lambda completed: progress.update(task, completed=completed, refresh=True)
    finally:
        progress.remove_task(task)


@contextmanager
def progress_task(description: str, total: float | None, *extra_columns):
    """Context manager yielding `advance(n=1, **fields)` for a single-task progress bar."""
    with make_progress(*extra_columns) as progress:
        task = progress.add_task(description, total=total)

        def advance(n: float = 1, **fields) -> None:
            progress.update(task, advance=n, **fields)

        yield advance

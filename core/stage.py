"""One stage's transaction on its output folder: the run life cycle every writing command shares.

    with output_folder(run, what="run folder", wait=wait):       # one writer; stale partials removed
        stage = Stage(run, "record", input_hash, RECORD_OUTPUTS, force=force)
        if stage.done():                                          # complete for these inputs: skip
            return ...
        with stage.build(on_failure=mark_failed) as partial:      # build in a partial folder
            ...write the outputs into `partial`...
        # here the outputs are installed and MANIFEST.json, written last, lists them

`output_folder` holds the folder's writer lock (core.outputs: a second writer fails at once naming the holder,
or queues with `wait`) and removes the partial folders a killed writer of it left. `Stage.build` writes into a
new partial folder (core.rundir.new_partial): on success the outputs are moved into place and the manifest
(core.formats.manifest) is written last, so a folder is either complete for its inputs or redone; on failure
the partial folder is removed, nothing is installed, `on_failure` records the failure, and the error that
stopped the build is the one raised even when recording it fails too (a full disk fails both).

A stage owns either its whole folder (an asset package, a run's scene/: the folder is replaced atomically) or
some top-level names in a folder that other stages share (a recording's `outputs` in the run folder).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.formats.manifest import StageStatus, invalidate, stage_status, write_manifest
from core.formats.run_info import RunInfo, write_run_info
from core.outputs import LOCK_FILE, output_lock, process_start
from core.progress import get_logger
from core.rundir import PARTIAL_SUFFIX, atomic_directory, partial_folder

log = get_logger("stage")


@contextmanager
def output_folder(folder: str | Path, what: str = "output folder", wait: bool = False,
                  inputs: Iterable[str | Path] = (), discard_failed: bool = False) -> Iterator[Path]:
    """Hold `folder`'s writer lock for the `with` block (core.outputs.output_lock: the folder must be absent,
    empty or GRADE's, and apart from the `inputs` the command reads), after removing the partial folders an
    interrupted writer left in it. With `discard_failed`, a folder that held nothing when the block started is
    emptied again when the block fails (an error, not an interrupt, which the same command resumes): a rerun
    would not mend the error, so what was written would only be left to mistake for output; output_lock then
    removes the folder if it made it. Everything in it was written under our lock, so nothing foreign goes."""
    with output_lock(folder, wait=wait, what=what, inputs=inputs) as locked:
        _remove_stale_partials(locked)
        started = [entry.name for entry in locked.iterdir()] == [LOCK_FILE]
        try:
            yield locked
        except Exception:
            if discard_failed and started:
                keep_first_error(_empty, locked)
            raise


def _empty(folder: Path) -> None:
    """Remove everything in `folder` but its lock file."""
    for entry in folder.iterdir():
        if entry.name == LOCK_FILE:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _remove_stale_partials(folder: Path) -> None:
    """Remove the partial folders (`.*.partial`, core.rundir.new_partial) anywhere under `folder` that are older
    than this process: their writer is gone, since we hold the folder's lock. Nothing else is touched."""
    stale = [p for p in folder.rglob(f".*{PARTIAL_SUFFIX}") if p.is_dir() and p.stat().st_mtime < process_start()]
    removed: list[Path] = []
    for entry in sorted(stale, key=lambda p: len(p.parts)):
        if not any(parent in removed for parent in entry.parents):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)


def _install(partial: Path, folder: Path, names: tuple[str, ...]) -> None:
    """Move the finished outputs `names` from `partial` into `folder`, replacing older ones (the stage's earlier
    run wrote them)."""
    for name in names:
        source, target = partial / name, folder / name
        if not source.exists():
            continue
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        os.replace(source, target)


def keep_first_error(cleanup: Callable[..., object], *args: object) -> None:
    """Run a cleanup step after a failure; if it fails too, log it and let the original error be the one
    reported."""
    try:
        cleanup(*args)
    except Exception as exc:  # noqa: BLE001 - any cleanup failure is secondary to the error being raised
        log.warning("cleaning up after the failure also failed: %s", exc)


def record_failure(run: Path, info: RunInfo, exc: BaseException) -> None:
    """run.json of a recording that stopped (a Stage.build `on_failure`): interrupted (Ctrl-C) or failed, with
    the error."""
    info.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
    info.error = None if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
    write_run_info(run, info)


@dataclass
class Stage:
    """A stage's output in `folder`: complete when its MANIFEST.json names stage `name` and `input_hash` and
    its files are all there. `outputs`: the top-level names the stage writes in a folder other stages share
    (only those are installed and listed); None: the stage owns the whole folder. `name` is read when the
    manifest is written, so a stage that learns what it built while building (a package's kind) may set it."""

    folder: Path
    name: str
    input_hash: str
    outputs: tuple[str, ...] | None = None
    force: bool = False  # redo it even when complete (--force)

    def done(self) -> bool:
        """Whether the stage can be skipped: complete for these inputs, and not forced."""
        return not self.force and stage_status(self.folder, self.input_hash) is StageStatus.COMPLETE

    @contextmanager
    def build(self, on_failure: Callable[[BaseException], object] | None = None) -> Iterator[Path]:
        """The partial folder to write the outputs into (module docstring); `on_failure(error)` runs when the
        block or the install fails, then the error is raised again."""
        try:
            if self.outputs is None:
                with atomic_directory(self.folder) as partial:
                    yield partial
                    write_manifest(partial, self.name, self.input_hash)
                return
            invalidate(self.folder)
            with partial_folder(self.folder, self.name) as partial:
                yield partial
                _install(partial, self.folder, self.outputs)
            write_manifest(self.folder, self.name, self.input_hash, include=self.outputs)
        except BaseException as exc:
            if on_failure is not None:
                keep_first_error(on_failure, exc)
            raise

"""Output folders: one writer at a time, and never a folder that holds someone else's files.

Every command that writes a folder (a run, an asset package folder, a view) first checks it: the
folder must be absent, empty, or already a GRADE output; then an exclusive lock (`.grade.lock`, an
advisory `flock`) is held for the whole command, so a second writer fails at once with the holder's
pid and start time (or waits for it with `wait=True`). The lock file stays in the folder afterwards:
it marks the folder as GRADE's, so an interrupted command's folder is recognised on the next run. In a folder
that several jobs share (an asset cache) each package has a lock of its own (`package_lock`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from core.assets.layout import META_FILE
from core.errors import ConfigError, GradeError
from core.formats.export import EXPORT_FILE
from core.formats.manifest import MANIFEST
from core.formats.run_info import RUN_FILE
from core.formats.versions import schema_of
from core.rundir import PARTIAL_SUFFIX

LOCK_FILE = ".grade.lock"
# Files whose `schema` field says the folder was written by GRADE (a run, an asset package, a stage).
MARKER_FILES = (RUN_FILE, META_FILE, MANIFEST, EXPORT_FILE)
# Hidden names of GRADE's atomic writes in progress (core.rundir): a file's .tmp, a folder's .partial / .old.
TEMP_SUFFIXES = (".tmp", PARTIAL_SUFFIX, ".old")
_TEMP_NAME = "[a-z0-9_]{8}"  # the random part of tempfile.mkdtemp's names
# Partial folders older than this process are stale (core.stage removes them): a live writer of the same
# folder would hold its lock, and the ones this process makes come after it started.
_process_start = time.time()


def process_start() -> float:
    """When this process started (time.time()); a forked child (a process pool's worker, a fork server's child)
    starts its own clock, or it would take the partial folders of a writer killed after the fork for its own."""
    return _process_start


def _restart_clock() -> None:
    global _process_start
    _process_start = time.time()


os.register_at_fork(after_in_child=_restart_clock)


class BusyError(GradeError):
    """Another process holds the output folder's lock."""


def _is_ours(folder: Path, depth: int = 4) -> bool:
    """A GRADE output: it holds our lock file or a JSON artifact with a GRADE schema, or it only holds such
    folders (a converter's --out, an asset cache: packages up to `depth` levels down) and our hidden temp files."""
    if (folder / LOCK_FILE).is_file() or any(
            (folder / name).is_file() and schema_of(folder / name) for name in MARKER_FILES):
        return True
    if depth == 0:
        return False
    entries = [e for e in folder.iterdir()
               if not (e.name.startswith(".") and e.name.endswith((*TEMP_SUFFIXES, LOCK_FILE)))]
    return all(e.is_dir() and _is_ours(e, depth - 1) for e in entries)


def check_output_folder(folder: str | Path, what: str = "output folder") -> Path:
    """`folder` if it may be written: absent, empty, or already a GRADE output. Anything else holds
    files we did not create, so it is refused (nothing is deleted, with or without --force)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise GradeError(f"{what} is an existing file, not a folder; choose another path", folder)
    try:
        foreign = folder.is_dir() and any(folder.iterdir()) and not _is_ours(folder)
    except FileNotFoundError:  # removed while looked at: its writer finished with nothing in it (output_lock)
        foreign = False
    if foreign:
        raise GradeError(
            f"{what} is not empty and was not written by GRADE (no {', '.join(MARKER_FILES)} or {LOCK_FILE}); "
            "refusing to write into it so none of its files are replaced or deleted. Choose an "
            "empty or new folder", folder)
    return folder


def check_apart(output: str | Path, inputs: Iterable[str | Path], what: str = "output folder",
                field: str = "--out") -> None:
    """Refuse an output that lies inside an input (or is one), and an input inside the output: a command never
    writes into what it reads, and never replaces or removes it with its output (`output`'s removal of partial
    folders and failed outputs would reach it). Symlinks are resolved, so a link to the run is the run."""
    target = Path(output).resolve()
    for source in inputs:
        resolved = Path(source).resolve()
        if target == resolved or resolved in target.parents:
            raise ConfigError(f"the {what} is or lies inside the input {source} ({resolved}); a command never writes "
                              "into what it reads: choose an output outside it", output, field)
        if target in resolved.parents:
            raise ConfigError(f"the input {source} ({resolved}) lies inside the {what}; a command never writes "
                              "around what it reads: choose an output outside it", output, field)


def _holder(lock: Path) -> str:
    try:
        info = json.loads(lock.read_text(encoding="utf-8"))
        started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(info["started"])))
        return f"process {int(info['pid'])} (started {started}, command: {info.get('command', '?')})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"


def _acquire(lock: Path, wait: bool, what: str, folder: Path) -> int:
    """An fd holding the exclusive flock of `lock`."""
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:  # the holder removed its empty folder just now: make it again
            folder.mkdir(parents=True, exist_ok=True)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                raise BusyError(f"{what} is being written by {_holder(lock)}; wait for it to finish, or run "
                                "again with --wait to queue behind it", folder) from None
            raise
        # The holder may have removed the lock file (and its empty folder) while we waited: lock the
        # file that is there now instead.
        try:
            if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                return fd
        except FileNotFoundError:
            folder.mkdir(parents=True, exist_ok=True)
        os.close(fd)


@contextmanager
def output_lock(folder: str | Path, wait: bool = False, what: str = "output folder",
                inputs: Iterable[str | Path] = ()) -> Iterator[Path]:
    """Hold the exclusive writer lock of `folder` (created when needed) for the `with` block; `inputs`, what the
    command reads, may not lie inside it nor it inside them (`check_apart`), checked before anything is made.

    The lock is an advisory `flock` on a file opened without truncation, so the holder's pid, start time
    and command stay readable for the message a second writer prints (the `filelock` package truncates
    the file on every attempt, which would erase them); the OS releases it if the process dies. A folder
    this call created and that holds nothing but the lock at the end is removed again, and so is a lock file this
    call added to a marked GRADE folder (a run that `grade postprocess` failed on) when the block fails: the
    folder is left as it was, and its marker files still say whose it is."""
    check_apart(folder, inputs, what)
    folder = check_output_folder(folder, what)
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / LOCK_FILE
    added = not lock.exists() and any(schema_of(folder / name) for name in MARKER_FILES if (folder / name).is_file())
    fd = _acquire(lock, wait, what, folder)
    failed = False
    try:
        holder = {"pid": os.getpid(), "started": time.time(), "command": " ".join(sys.argv[:3])}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        yield folder
    except BaseException:
        failed = True
        raise
    finally:
        if created and [p.name for p in folder.iterdir()] == [LOCK_FILE]:
            lock.unlink()
            folder.rmdir()
        elif added and failed:
            lock.unlink(missing_ok=True)  # removed while held: a waiter then locks a new file (_acquire)
        os.close(fd)  # releases the flock


@contextmanager
def package_lock(package: str | Path) -> Iterator[Path]:
    """Hold the writer lock of one package in a shared folder (an asset cache), waiting for it: a file
    `.<name>.grade.lock` beside the package while it is held, so that jobs sharing the folder convert each package
    once and different packages at the same time. The holder first removes the package's partial builds
    (atomic_directory's `.<name>.XXXXXXXX.partial` beside it): their writer held this lock, so it is gone."""
    package = Path(package)
    created = not package.parent.exists()
    package.parent.mkdir(parents=True, exist_ok=True)
    lock = package.parent / f".{package.name}{LOCK_FILE}"
    fd = _acquire(lock, True, "asset package", package.parent)
    try:
        built = re.compile(re.escape(f".{package.name}.") + _TEMP_NAME + re.escape(PARTIAL_SUFFIX))
        for entry in package.parent.iterdir():
            if entry.is_dir() and built.fullmatch(entry.name):
                shutil.rmtree(entry, ignore_errors=True)
        yield package
    finally:
        # Removed while still held: a waiter that then gets the old file's lock sees it gone and locks a new one
        # (_acquire), so the package folder is left as the conversion left it, without lock files beside it.
        lock.unlink(missing_ok=True)
        if created:
            with contextlib.suppress(OSError):  # not empty: another job's package or lock is there
                package.parent.rmdir()
        os.close(fd)

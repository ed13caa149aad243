"""`grade` run as a user runs it, in its own process, without paying Python's start-up and the imports (~1 s for
the CLI, ~3 s for a command that records) on each of the suite's ~300 calls.

Every call is a fresh process forked from a multiprocessing forkserver that imported every module of the project
once (the CLI imports a command's module, and that module its heavy ones, only when the command runs), with
the environment the console script gets (GRADE_QUIET, COLUMNS). The child changes to the caller's folder,
sends its file descriptors 1 and 2 (C libraries' output too) to files, and runs `pipeline.cli.main` with the
arguments; its exit status is the CLI's, and an exception the CLI lets through prints its traceback and exits 1
as the console script would.
"""

from __future__ import annotations

import functools
import gc
import multiprocessing
import multiprocessing.forkserver
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "asset_converters", "placement", "simulation", "replay", "postprocess", "export", "evaluation",
            "pipeline")
CLI_ENV = {"GRADE_QUIET": "1", "COLUMNS": "200"}
_CONTEXT = multiprocessing.get_context("forkserver")
# The forkserver and each child take this process's sys.path. Importing bpy in a test puts Blender's
# scripts/modules first on it, where a `bpy` package shadows the real one (a child's `import bpy` then fails
# with "No module named '_bpy'"), so they get the path as it was before any test ran.
_CLEAN_SYS_PATH = list(sys.path)


@functools.cache
def _start_server() -> None:
    """Start this process's forkserver, once, with the CLI imported under the CLI's environment (the console is
    made when pipeline.cli is imported and reads COLUMNS then)."""
    saved = {key: os.environ.get(key) for key in CLI_ENV}
    saved_path = sys.path[:]
    os.environ.update(CLI_ENV)
    sys.path[:] = _CLEAN_SYS_PATH
    try:
        multiprocessing.forkserver.set_forkserver_preload(["pipeline.cli", *project_modules()])
        multiprocessing.forkserver.ensure_running()
    finally:
        sys.path[:] = saved_path
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def project_modules() -> list[str]:
    """Every module of the project's packages (none imports an optional extra at module level)."""
    files = sorted(p.relative_to(ROOT).with_suffix("") for package in PACKAGES for p in (ROOT / package).rglob("*.py"))
    return [".".join(f.parts[:-1] if f.name == "__init__" else f.parts) for f in files if f.name != "__main__"]


def run_in_child(call: Callable[[], object], stdout: str, stderr: str) -> int:
    """In a forked child: file descriptors 1 and 2 (C libraries' output too) to the files `stdout` and `stderr`,
    then `call()`; its exit status as the interpreter gives it (an exception other than SystemExit goes on)."""
    gc.freeze()  # the server's imports live as long as the child: its collections need not walk them
    for fd, path in ((1, stdout), (2, stderr)):
        target = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    try:
        call()
    except SystemExit as exc:  # as the interpreter does: an int is the status, anything else is printed, status 1
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def _child(args: list[str], cwd: str, stdout: str, stderr: str, sys_path: list[str]) -> None:
    sys.path[:] = sys_path
    os.environ.update(CLI_ENV)
    os.chdir(cwd)
    sys.argv = ["grade", *args]
    from pipeline.cli import main

    os._exit(run_in_child(main, stdout, stderr))


def run_cli(args: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    """Run `grade ARGS` in `cwd`; raises subprocess.TimeoutExpired (after killing it) past `timeout` seconds."""
    _start_server()
    with tempfile.TemporaryDirectory(prefix="grade-cli-") as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        out.touch()
        err.touch()
        process = _CONTEXT.Process(target=_child, args=(list(args), str(cwd), str(out), str(err), _CLEAN_SYS_PATH))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(["grade", *args], timeout)
        return subprocess.CompletedProcess(["grade", *args], process.exitcode,
                                           out.read_text(errors="replace"), err.read_text(errors="replace"))

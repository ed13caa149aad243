"""A user-installed SLAM method (DynaSLAM, RTAB-Map, VINS-Fusion, ...) run as a command on an exported sequence.

The method is a command template with the placeholders `{sequence}` (a `grade export tum|euroc` sequence
folder) and `{out}` (the runner folder), filled with shell-quoted paths and split like a shell would
(shlex), then run without a shell under a timeout; other literal braces must be doubled (`{{`, `}}`). The
command must write its trajectory in TUM format to `{out}/<trajectory name>`; it is read back to check it.

The command runs in a session (and process group) of its own, its input empty, its output and errors read
from a pipe into `{out}/method.log` (in a partial folder until it is done, so a failed run leaves none). The log
keeps the first LOG_HEAD_BYTES and the last TAIL_BYTES of the output, with a line saying how much was left out
between: a method that prints without end fills neither the disk nor GRADE's memory, and the last lines, quoted
when the method fails, are always there. When the command exits, or at the timeout or Ctrl-C, every process left
in its group (a server or viewer it started) is sent SIGTERM, then SIGKILL after STOP_GRACE_S; the command's own
exit status is what counts, and output still held open by a process that left the group is not waited for.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import BinaryIO

from core.errors import ConfigError, GradeError, InputError
from core.formats.tum import read_tum
from core.rundir import Stopwatch, partial_folder
from evaluation.runner import RunnerResult, record_run

METHOD = "external"
LOG_FILE = "method.log"  # the command's output and errors, in the runner folder
OUTPUT_LINES = 20  # of the command's output, quoted when it fails
TAIL_BYTES = 64 * 1024  # read back from the end of the log for those lines, and kept past the head
LOG_HEAD_BYTES = 64 * 1024 * 1024  # of the command's output kept from its start; a verbose method prints ~1 MB/min
READ_BYTES = 1024 * 1024  # read from the pipe at a time
POLL_S = 0.02  # the longest wait for output before the command's exit is checked again
LINE_CHARS = 200  # of each quoted line (a method may print a megabyte on one line)
STOP_GRACE_S = 2.0  # between SIGTERM and SIGKILL to what is left of the command's process group
# Terminal escapes (colours, cursor moves) and other control characters, left out of the quoted lines.
_CONTROL = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|[\x00-\x08\x0b-\x1f\x7f]")


def command_line(command: str, sequence: Path, out: Path) -> list[str]:
    """The template's arguments with the placeholders filled (ConfigError on an unknown placeholder)."""
    try:
        filled = command.format(sequence=shlex.quote(str(sequence)), out=shlex.quote(str(out)))
        arguments = shlex.split(filled)
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"cannot fill the command template {command!r} ({exc}); its placeholders are "
                          "{sequence} and {out}, and other braces are written {{ and }}", None, "command") from None
    if not arguments:
        raise ConfigError("the command template is empty", None, "command")
    return arguments


def _tail(log: Path) -> str:
    """The last OUTPUT_LINES non-blank lines of the log (each cut at LINE_CHARS characters), read from its last
    TAIL_BYTES, without terminal escapes; "(no output)" when there are none."""
    try:
        with open(log, "rb") as handle:
            handle.seek(max(handle.seek(0, os.SEEK_END) - TAIL_BYTES, 0))
            data = handle.read(TAIL_BYTES)
    except OSError:
        data = b""
    lines = [_CONTROL.sub("", line).rstrip() for line in data.decode(errors="replace").splitlines()]
    lines = [line if len(line) <= LINE_CHARS else f"{line[:LINE_CHARS]} ... (cut)"
             for line in lines if line.strip()][-OUTPUT_LINES:]
    return "\n".join(lines) or "(no output)"


class CappedLog:
    """The command's output as it arrives: its first LOG_HEAD_BYTES written to the log, then only its last
    TAIL_BYTES kept (in memory), appended with a note of what was left out when the log is finished."""

    def __init__(self, sink: BinaryIO) -> None:
        self.sink, self.written, self.dropped, self.tail = sink, 0, 0, bytearray()

    def add(self, data: bytes) -> None:
        head = data[:max(LOG_HEAD_BYTES - self.written, 0)]
        self.sink.write(head)
        self.written += len(head)
        self.tail += data[len(head):]
        if len(self.tail) > TAIL_BYTES:
            self.dropped += len(self.tail) - TAIL_BYTES
            del self.tail[:-TAIL_BYTES]

    def finish(self) -> None:
        if self.dropped:
            self.sink.write(f"\n[grade: {self.dropped} bytes of the command's output left out here; the log keeps its "
                            f"first {LOG_HEAD_BYTES} and last {TAIL_BYTES} bytes]\n".encode())
        self.sink.write(self.tail)


def _drain(pipe: int, log: CappedLog, wait_s: float) -> bool:
    """Move what the pipe holds into the log, waiting at most `wait_s` seconds for something to arrive; False at
    the end of the output (every writer closed it)."""
    if not select.select([pipe], [], [], wait_s)[0]:
        return True
    data = os.read(pipe, READ_BYTES)
    log.add(data)
    return bool(data)


def _wait(process: subprocess.Popen, pipe: int, log: CappedLog, timeout_s: float) -> int | None:
    """The command's exit status, or None when it is still running after `timeout_s` seconds; its output is moved
    into the log meanwhile. Only the command itself is waited for, not the end of its output: a process it left
    behind may hold the pipe open."""
    deadline = time.monotonic() + timeout_s
    while (code := process.poll()) is None:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        if not _drain(pipe, log, min(POLL_S, left)):  # the output ended: only the exit is left to wait for
            try:
                return process.wait(max(deadline - time.monotonic(), 0))
            except subprocess.TimeoutExpired:
                return None
    return code


def _read_rest(pipe: int, log: CappedLog) -> None:
    """What the pipe still holds once the command's group was stopped; a writer that left the group (a daemon of
    its own session) may keep it open, so nothing more is waited for."""
    os.set_blocking(pipe, False)
    try:
        while data := os.read(pipe, READ_BYTES):
            log.add(data)
    except BlockingIOError:
        pass


def _signal_group(group: int, signum: int) -> bool:
    """Send `signum` to the process group; False when no process is left in it (or none may be signalled)."""
    try:
        os.killpg(group, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _group_alive(group: int) -> bool:
    """Whether a process of the group still runs. A process that ended but was not reaped (a zombie) still counts
    for kill(); where /proc lists processes, zombies are told apart: an orphan is reaped by PID 1, which in a
    container is often a program that never does."""
    if not _signal_group(group, 0):
        return False
    proc = Path("/proc")
    if not (proc / "self" / "stat").is_file():
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_bytes().rpartition(b")")[2].split()  # after "pid (name)": state, ppid, pgrp, ...
        except OSError:  # ended while listed
            continue
        if len(fields) > 2 and int(fields[2]) == group and fields[0] not in (b"Z", b"X"):
            return True
    return False


def stop_group(process: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> None:
    """End every process of the command's group (the command too, if it still runs): SIGTERM, then SIGKILL to
    those left after `grace_s` seconds; the command is reaped. The group id stays the command's while any member
    is alive (POSIX reuses no process group id before the group ends), so no other process is signalled."""
    group = process.pid
    if _signal_group(group, signal.SIGTERM) and not _ended(process, group, grace_s):
        _signal_group(group, signal.SIGKILL)
        _ended(process, group, grace_s)  # killed: gone within moments
    process.wait()


def _ended(process: subprocess.Popen, group: int, seconds: float) -> bool:
    """Wait at most `seconds` for the group to end; whether it did."""
    deadline = time.monotonic() + seconds
    while True:
        process.poll()  # reaps the command once it exits, so that it leaves the group
        if not _group_alive(group):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def run_external(command: str, sequence: Path, out: Path, trajectory_name: str, timeout_s: float) -> RunnerResult:
    """Run the command on `sequence`, wait at most `timeout_s` seconds, and record the TUM trajectory it wrote to
    `out`/`trajectory_name` in runner.json, its output in `out`/method.log. A timeout, a non-zero exit or a
    missing, malformed or empty trajectory raises GradeError (with the command's last output lines)."""
    out = Path(out)
    arguments = command_line(command, Path(sequence), out)
    shown = shlex.join(arguments)
    with partial_folder(out, LOG_FILE) as partial:
        log = partial / LOG_FILE
        clock = Stopwatch()
        with open(log, "wb") as sink:
            try:
                process = subprocess.Popen(arguments, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                           stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as exc:
                raise GradeError(f"cannot start the command {shown}: {exc.strerror}") from None
            output = CappedLog(sink)
            with process.stdout:
                try:
                    code = _wait(process, process.stdout.fileno(), output, timeout_s)
                    seconds = clock.seconds()
                finally:  # its leftovers once it exited; all of it at the timeout or on Ctrl-C
                    stop_group(process)
                    _read_rest(process.stdout.fileno(), output)
                    output.finish()
        if code is None:
            raise GradeError(f"the command did not finish within {timeout_s:g} s and was stopped (with every process "
                             f"it started): {shown}\nits last output:\n{_tail(log)}")
        if code != 0:
            status = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            raise GradeError(f"the command {status}: {shown}\nits last output:\n{_tail(log)}")
        trajectory = out / trajectory_name
        if trajectory.exists() and not trajectory.is_file():
            raise GradeError("the command finished but its trajectory is not a regular file (a folder, FIFO, device "
                             f"or socket); its last output:\n{_tail(log)}", trajectory)
        if not trajectory.is_file():
            raise GradeError(f"the command finished but wrote no trajectory {trajectory_name!r} in the output folder; "
                             f"its last output:\n{_tail(log)}", trajectory)
        times, _ = read_tum(trajectory)  # InputError naming the line when it is not TUM
        if not len(times):
            raise InputError("the command exited 0 but wrote no poses into its trajectory (the file is empty or holds "
                             f"only comments); its last output:\n{_tail(log)}", trajectory)
        os.replace(log, out / LOG_FILE)
    settings = {"command": command, "arguments": arguments, "timeout_s": timeout_s, "log": LOG_FILE}
    return record_run(out, METHOD, sequence, trajectory, len(times), len(times), seconds, settings)

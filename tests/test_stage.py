"""The run/stage transaction (core.stage) on a real file system: resume, --force, one writer, the first error,
read-only folders, and never a file GRADE did not write."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.errors import ExitCode, GradeError
from core.formats.manifest import MANIFEST, StageStatus, read_manifest, stage_status
from core.outputs import LOCK_FILE, BusyError
from core.stage import Stage, output_folder
from tests.conftest import ROOT, run_grade
from tests.test_output_safety import tmpfs

OUTPUTS = ("data", "notes.txt")
STALE_AGE_S = 3600  # a partial folder's age that makes it older than this test process


def build_outputs(partial: Path, text: str) -> None:
    (partial / "data").mkdir()
    (partial / "data" / "a.txt").write_text(text)
    (partial / "notes.txt").write_text(text)


def files(folder: Path) -> dict[str, str]:
    """Every file under `folder` (hidden ones too) with its text."""
    return {p.relative_to(folder).as_posix(): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()
            and p.name != LOCK_FILE}


def complete_stage(folder: Path, text: str = "v1", input_hash: str = "h1") -> Stage:
    stage = Stage(folder, "test", input_hash, OUTPUTS)
    with stage.build() as partial:
        build_outputs(partial, text)
    return stage


def test_a_build_installs_its_outputs_and_writes_the_manifest_last(tmp_path):
    run = tmp_path / "run"
    with output_folder(run):
        stage = complete_stage(run)
    assert stage.done() and stage_status(run, "h1", verify_hashes=True) is StageStatus.COMPLETE
    manifest = read_manifest(run)
    assert manifest.stage == "test" and sorted(manifest.files) == ["data/a.txt", "notes.txt"]
    assert not Stage(run, "test", "h2", OUTPUTS).done()  # other inputs: stale
    assert sorted(p.name for p in run.iterdir()) == [LOCK_FILE, MANIFEST, "data", "notes.txt"]


def test_a_failed_build_installs_nothing_records_the_failure_and_resumes(tmp_path):
    run = tmp_path / "run"
    failures: list[BaseException] = []
    with output_folder(run):
        stage = Stage(run, "test", "h1", OUTPUTS)
        with pytest.raises(RuntimeError, match="killed"), stage.build(on_failure=failures.append) as partial:
            build_outputs(partial, "half")
            raise RuntimeError("killed")
        assert [str(e) for e in failures] == ["killed"]
        assert sorted(p.name for p in run.iterdir()) == [LOCK_FILE]  # no outputs, no manifest, no partial
        assert not stage.done()
        complete_stage(run, "whole")
    assert files(run)["data/a.txt"] == "whole" and stage.done()


def test_a_rerun_of_a_complete_stage_rebuilds_only_with_force(tmp_path):
    run = tmp_path / "run"
    with output_folder(run):
        complete_stage(run, "v1")
        assert Stage(run, "test", "h1", OUTPUTS).done()
        forced = Stage(run, "test", "h1", OUTPUTS, force=True)
        assert not forced.done()
        with forced.build() as partial:
            build_outputs(partial, "v2")
    assert files(run)["notes.txt"] == "v2" and stage_status(run, "h1", verify_hashes=True) is StageStatus.COMPLETE


def test_a_failed_rebuild_leaves_no_complete_looking_folder(tmp_path):
    run = tmp_path / "run"
    with output_folder(run):
        stage = complete_stage(run)
        with pytest.raises(ValueError), stage.build():
            raise ValueError("stopped")
    assert stage_status(run, "h1") is StageStatus.INCOMPLETE  # invalidated before the rebuild began


def test_stale_partials_are_removed_and_files_grade_did_not_write_are_kept(tmp_path):
    run = tmp_path / "run"
    with output_folder(run):
        complete_stage(run)
    stale = [run / ".test.abcd1234.partial", run / "assets" / ".pkg.efgh5678.partial"]  # a killed writer's
    for folder in stale:
        (folder / "gt").mkdir(parents=True)
        os.utime(folder, (os.stat(folder).st_atime - STALE_AGE_S,) * 2)
    theirs = {"my notes.md": "keep", "assets/.notes.partial": "a file, not a partial folder",
              ".cache/x.partial": "keep", "assets/pkg/asset.usda": "keep"}
    for name, text in theirs.items():
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_text(text)
    with output_folder(run):
        complete_stage(run, "v2", "h2")
    assert not any(folder.exists() for folder in stale)
    assert files(run) == {**theirs, MANIFEST: (run / MANIFEST).read_text(), "data/a.txt": "v2", "notes.txt": "v2"}


def test_a_folder_holding_other_files_is_refused_untouched(tmp_path):
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "holiday.jpg").write_bytes(b"\xff\xd8")
    (foreign / ".old.abcd1234.partial").mkdir()
    with pytest.raises(GradeError, match="not written by GRADE"), output_folder(foreign):
        pass
    assert sorted(p.name for p in foreign.iterdir()) == [".old.abcd1234.partial", "holiday.jpg"]


HOLDER = """
import sys
from pathlib import Path
from core.stage import output_folder

with output_folder(sys.argv[1], what="run folder"):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes it
    Path(sys.argv[2]).write_text("released")
"""


@contextmanager
def lock_holder(folder: Path, marker: Path):
    """A separate process holding `folder`'s writer lock until the block ends; it writes `marker` just before
    it lets go."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), str(marker)], cwd=ROOT,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "held"
        yield process
    finally:
        process.stdin.close()
        process.wait()


def wait_until_blocked_on(lock: Path, patience_s: float = 120.0) -> None:
    """Return once /proc/locks lists a process blocked on `lock`'s flock (a "->" line for its inode): an event,
    not a guess at how long a thread takes to start. `patience_s` only turns a hang into a failure."""
    inode = f":{os.stat(lock).st_ino} "
    deadline = time.monotonic() + patience_s
    while not any(line.split(":", 1)[1].lstrip().startswith("->") and inode in line
                  for line in Path("/proc/locks").read_text().splitlines()):
        assert time.monotonic() < deadline, f"nothing queued on {lock} within {patience_s:g} s"
        time.sleep(0.005)


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="needs /proc/locks to see the waiter queue")
def test_a_second_writer_is_refused_naming_the_holder_and_wait_queues_behind_it(tmp_path):
    run, marker = tmp_path / "run", tmp_path / "marker"
    seen: list[str] = []

    def queued() -> None:
        with output_folder(run, what="run folder", wait=True):
            seen.append(marker.read_text())

    with lock_holder(run, marker) as holder:
        with pytest.raises(BusyError, match=f"process {holder.pid}"), output_folder(run, what="run folder"):
            pass
        waiter = threading.Thread(target=queued)
        waiter.start()
        wait_until_blocked_on(run / LOCK_FILE)  # the holder lets go only once the waiter queues behind it
    waiter.join()
    assert seen == ["released"]  # it got the lock only once the holder had finished


def test_the_first_error_is_kept_when_recording_the_failure_fails_too(tmp_path, caplog):
    def failing_record(_: BaseException) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    run = tmp_path / "run"
    with output_folder(run):
        stage = Stage(run, "test", "h1", OUTPUTS)
        with pytest.raises(RuntimeError, match="the real failure"), stage.build(on_failure=failing_record):
            raise RuntimeError("the real failure")
        assert sorted(p.name for p in run.iterdir()) == [LOCK_FILE]
    assert "No space left on device" in caplog.text  # reported, but second


def test_a_whole_folder_stage_replaces_its_folder_only_when_complete(tmp_path):
    package = tmp_path / "pkg"
    stage = Stage(package, "convert", "h1")
    with stage.build() as partial:
        (partial / "asset.usda").write_text("v1")
        stage.name = "convert/object"  # learnt while building
    assert read_manifest(package).stage == "convert/object" and stage.done()
    with pytest.raises(ValueError), Stage(package, "convert", "h2").build() as partial:
        (partial / "asset.usda").write_text("half")
        raise ValueError("bad mesh")
    assert (package / "asset.usda").read_text() == "v1" and stage.done()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pkg"]


def read_only(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


def test_a_folder_turned_read_only_mid_build_keeps_the_old_outputs_and_the_os_error(tmp_path):
    with tmpfs(tmp_path / "disk", "size=1m") as disk:
        run = disk / "run"  # not locked here: a file open for writing (the lock) would keep the disk writable
        stage = complete_stage(run, "v1")
        before = files(run)
        failures: list[BaseException] = []
        rebuild = Stage(run, "test", "h2", OUTPUTS)
        with pytest.raises(OSError) as raised, rebuild.build(on_failure=failures.append) as partial:
            build_outputs(partial, "v2")
            read_only(disk)
        assert raised.value.errno == errno.EROFS and failures == [raised.value]
        after = {k: v for k, v in files(run).items() if not k.startswith(".")}  # the partial can't be removed
        del before[MANIFEST]  # removed as the rebuild began: the old outputs no longer look complete
        assert after == before and not rebuild.done() and not stage.done()


def test_a_read_only_output_folder_is_a_one_paragraph_error_exit_2(tmp_path):
    with tmpfs(tmp_path / "disk", "size=1m") as disk:
        read_only(disk)
        result = run_grade("convert", "procedural", "--out", str(disk / "assets"), "--humans", "1")
        assert not any(disk.iterdir())
    assert result.returncode == ExitCode.BAD_INPUT, result.stderr
    assert "Traceback" not in result.stderr and os.strerror(errno.EROFS) in result.stderr

"""Run folders under real conditions: two writers at once, Ctrl-C, a folder whose run.json and manifest
disagree, stale partial folders, read-only and full disks. Every `grade` here is a real process."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from core.formats.manifest import StageStatus, read_manifest, stage_status, write_manifest
from core.formats.run_info import read_run_info
from core.outputs import LOCK_FILE
from core.recording import Recording
from pipeline.generate import RECORD_OUTPUTS
from tests.conftest import CONFIGS, assert_refused, copy_run, run_grade, with_default_sigint

pytestmark = pytest.mark.slow

TINY = ["simulation.duration=0.5", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
        "flying_objects.count={min: 0, max: 0}", "robot.sensors.cameras.0.width=64",
        "robot.sensors.cameras.0.height=48"]
# Long enough that a second process starts while the first still records.
LONGER = [s for s in TINY if not s.startswith("simulation.duration")] + ["simulation.duration=2"]
STARTUP_TIMEOUT_S = 120
GRADE = [sys.executable, "-m", "pipeline.cli"]


def grade_args(out: Path, assets: Path, overrides: list[str], *extra: str) -> list[str]:
    sets = [a for s in [*overrides, f"assets_dir={assets}"] for a in ("--set", s)]
    return [*GRADE, "generate", str(CONFIGS / "demo.yaml"), "--out", str(out), *sets,
            *extra]


def env() -> dict[str, str]:
    return {**os.environ, "GRADE_QUIET": "1", "COLUMNS": "200"}


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`args` (a `python -m pipeline.cli` command line) run to its end, in a process forked from the suite's
    CLI server (tests/cli_process.py): no start-up to pay where the test needs no handle on the process."""
    assert args[:3] == GRADE
    return run_grade(*args[3:], cwd=cwd)


@contextmanager
def stopped(process: subprocess.Popen) -> Iterator[None]:
    """`process` paused (SIGSTOP) for the block: a writer that holds its lock however long the test takes."""
    process.send_signal(signal.SIGSTOP)
    try:
        yield
    finally:
        process.send_signal(signal.SIGCONT)


def wait_for_lock_waiter(process: subprocess.Popen) -> None:
    """Until `process` is blocked waiting for a flock (a `->` line of /proc/locks names the waiters)."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S  # only bounds a failing run
    while not any(line.split()[1] == "->" and line.split()[5] == str(process.pid)
                  for line in Path("/proc/locks").read_text().splitlines()):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)


@pytest.fixture(scope="module")
def assets(asset_cache, tiny_run) -> Path:
    """The session's asset cache, holding every package the runs below use once the tiny run is recorded (the
    demo's seed, house and procedural sets): they record without converting."""
    return asset_cache


def wait_for_lock_holder(run_dir: Path, process: subprocess.Popen) -> None:
    """Until `process` holds the run folder's lock (its pid is in the lock file)."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        try:
            if json.loads((run_dir / LOCK_FILE).read_text())["pid"] == process.pid:
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.05)
    pytest.fail("the first grade generate never took the lock")


def assert_complete_and_valid(run_dir: Path) -> None:
    assert stage_status(run_dir, verify_hashes=True) is StageStatus.COMPLETE
    recording = Recording.open(run_dir)
    assert recording.info.status == "complete"
    assert len(recording.camera("camera")) > 0


def test_two_writers_one_records_the_other_exits_2_at_once(tmp_path, assets):
    run_dir = tmp_path / "run"
    first = subprocess.Popen(grade_args(run_dir, assets, LONGER), cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    wait_for_lock_holder(run_dir, first)
    with stopped(first):  # the lock stays held: a second writer that waited for it would never return
        second = run(grade_args(run_dir, assets, LONGER), tmp_path)
    assert second.returncode == 2, second.stderr
    assert "being written by process" in second.stderr and str(first.pid) in second.stderr
    assert "--wait" in second.stderr and "Traceback" not in second.stderr
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert_complete_and_valid(run_dir)


def test_wait_queues_behind_the_writer_then_finds_the_run_done(tmp_path, assets):
    run_dir = tmp_path / "run"
    first = subprocess.Popen(grade_args(run_dir, assets, LONGER), cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    wait_for_lock_holder(run_dir, first)
    with stopped(first):  # still recording while the second queues behind it
        second = subprocess.Popen(grade_args(run_dir, assets, LONGER, "--wait"), cwd=tmp_path, env=env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_lock_waiter(second)
    _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    out, err = second.communicate(timeout=600)
    assert second.returncode == 0, err
    assert "up to date" in out + err
    assert_complete_and_valid(run_dir)


def test_ctrl_c_says_how_to_resume_and_the_rerun_completes(tmp_path, assets):
    run_dir = tmp_path / "run"
    process = subprocess.Popen(with_default_sigint(grade_args(run_dir, assets, LONGER)), cwd=tmp_path, env=env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not any(run_dir.glob(".record.*.partial/gt")) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    # A shell shows both as $? = 130: an exit(130), or Python re-raising SIGINT on itself at shutdown, which it
    # does when a KeyboardInterrupt surfaced inside a native library's callback even though grade handled it.
    assert process.returncode in (130, -signal.SIGINT), err
    assert "interrupted; rerun the same command to resume" in err and "Traceback" not in err
    assert read_run_info(run_dir).status == "interrupted"
    assert not any(run_dir.glob(".*.partial"))
    assert stage_status(run_dir) is StageStatus.INCOMPLETE
    again = run(grade_args(run_dir, assets, LONGER), tmp_path)
    assert again.returncode == 0, again.stderr
    assert_complete_and_valid(run_dir)


def test_run_json_that_disagrees_with_the_manifest_is_recorded_again(tmp_path, assets):
    """A complete manifest beside a run.json that says 'failed' (what two racing writers once produced)."""
    run_dir = tmp_path / "run"
    assert run(grade_args(run_dir, assets, TINY), tmp_path).returncode == 0
    info = json.loads((run_dir / "run.json").read_text())
    info.update(status="failed", sim_time_end=None)
    (run_dir / "run.json").write_text(json.dumps(info))
    write_manifest(run_dir, "record", read_manifest(run_dir).input_hash, include=RECORD_OUTPUTS)
    # What a killed writer leaves: a recording partial and a half-built scene folder.
    stale = [run_dir / ".record.partial", run_dir / ".scene.abc123.partial"]
    for folder in stale:
        (folder / "gt").mkdir(parents=True)
        old = time.time() - 3600
        os.utime(folder, (old, old))
    result = run(grade_args(run_dir, assets, TINY), tmp_path)
    assert result.returncode == 0, result.stderr
    assert "recording again" in result.stderr
    assert_complete_and_valid(run_dir)
    assert not any(folder.exists() for folder in stale)


@contextmanager
def tmpfs(folder: Path, options: str):
    """A small tmpfs at `folder` (needs root; skips with the reason where mounting is not allowed)."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True, check=False,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_read_only_output_folder_is_a_one_paragraph_error(tmp_path, assets):
    with tmpfs(tmp_path / "ro", "ro,size=1m") as readonly:
        result = run(grade_args(readonly / "run", assets, TINY), tmp_path)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert str(readonly / "run") in result.stderr and os.strerror(errno.EROFS) in result.stderr


def test_full_disk_while_recording_reports_the_real_error_and_leaves_no_recording(tmp_path, assets):
    # Big frames, so the recording, not the small scene folder, is what fills the disk.
    overrides = [s for s in LONGER if "cameras.0" not in s]
    with tmpfs(tmp_path / "small", "size=2m") as small:
        result = run(grade_args(small / "run", assets, overrides), tmp_path)
        leftovers = sorted(p.name for p in (small / "run").iterdir())
        status = json.loads((small / "run" / "run.json").read_text())["status"] if "run.json" in leftovers else None
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert os.strerror(errno.ENOSPC) in result.stderr
    assert not any(name.endswith(".partial") for name in leftovers) and "MANIFEST.json" not in leftovers
    assert status in (None, "failed")


# ---------------------------------------------------------------- outputs apart from inputs; nothing left behind
# Commands that read a run (or bag) and write a folder or file, on a private copy of the session's tiny run: a
# refusal exits 2 naming the file and field, and every file under the test's folder (the run, the output's place)
# is as it was, hidden ones included (a lock file, a partial folder).


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root` (symlinks not followed) with its content's hash ("dir" for a folder)."""
    return {str(p.relative_to(root)): "dir" if p.is_dir() and not p.is_symlink() else
            hashlib.sha256(os.readlink(p).encode() if p.is_symlink() else p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def private_run(tiny_run, tmp_path) -> Path:
    """tmp_path/runs/run, a copy of the tiny run, and tmp_path/link, a symlink to it."""
    run_dir = copy_run(tiny_run, tmp_path / "runs" / "run")
    (tmp_path / "link").symlink_to(run_dir)
    return run_dir


def garble(path: Path) -> None:
    """Zero the middle of a file, keeping its size (the run's manifest still lists it): an unreadable image."""
    data = bytearray(path.read_bytes())
    data[40:-20] = bytes(len(data) - 60)
    path.write_bytes(bytes(data))


# (command, the --out (or --rerun) argument named in the message); {run} the run, {link} a symlink to it,
# {runs} the folder holding it.
INSIDE = {
    "export coco into the run": ("export coco {run} --out {run}/coco", "{run}/coco"),
    "export tum onto the run": ("export tum {run} --out {run}", "{run}"),
    "export yolo of a link into its run": ("export yolo {link} --out {run}/yolo", "{run}/yolo"),
    "export webdataset through a link": ("export webdataset {run} --out {link}/wds", "{link}/wds"),
    "export euroc around the run": ("export euroc {run} --out {runs}", "{runs}"),
    "export kitti into gt": ("export kitti {run} --out {run}/gt", "{run}/gt"),
    "evaluate slam into the run": ("evaluate slam --gt {run} --est {run}/gt/camera/poses.tum --out {run}", "{run}"),
    "benchmark run into the run": ("benchmark run kiss-icp {run} --out {run}/slam", "{run}/slam"),
    "postprocess a bag into itself": ("postprocess {run}/bags/demo --imu --out {run}/bags/demo/noisy",
                                      "{run}/bags/demo/noisy"),
    "view into gt": ("view {run} --out {run}/gt", "{run}/gt"),
    "view around the run": ("view {run} --out {runs}", "{runs}"),
    "view's rerun file onto run.json": ("view {run} --out {runs}/view --rerun {link}/run.json", "{link}/run.json"),
    "replay through a link": ("replay {run} --out {link}/replay", "{link}/replay"),
}


@pytest.mark.parametrize("case", sorted(INSIDE))
def test_an_output_inside_its_input_or_around_it_is_refused(case, private_run, tmp_path):
    command, named = INSIDE[case]
    places = {"run": private_run, "link": tmp_path / "link", "runs": private_run.parent}
    before = snapshot(tmp_path)
    result = run_grade(*command.format(**places).split(), cwd=tmp_path)
    assert_refused(result, "lies inside", named.format(**places))
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(("command", "frame"), [
    ("postprocess {run} --depth gaussian --blur", "rgb"),
    ("export coco {run} --out {out}", "instance"),
    ("export tum {run} --out {out}", "depth"),
    ("export kitti {run} --out {out}", "rgb"),
])
def test_a_failure_midway_leaves_the_run_as_it_was_and_no_output(command, frame, private_run, tmp_path):
    """The last frame is unreadable, so the earlier ones were written when the command fails."""
    last = max((private_run / "gt" / "camera" / frame).iterdir())
    original = last.read_bytes()
    garble(last)
    before = snapshot(tmp_path)
    result = run_grade(*command.format(run=private_run, out=tmp_path / "out").split(), cwd=tmp_path)
    assert_refused(result, str(last), "not a readable")  # "image", or "PNG image" where its chunks are checked
    assert snapshot(tmp_path) == before
    last.write_bytes(original)  # mended, the same command completes from a clean start
    again = run_grade(*command.format(run=private_run, out=tmp_path / "out").split(), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert not list(tmp_path.rglob("*.partial"))


def test_a_failed_slam_method_leaves_no_output_folder(private_run, tmp_path):
    """The method wrote into the folder the command made, then failed: nothing of it stays."""
    before = snapshot(tmp_path)
    result = run_grade("benchmark", "run", "external", str(private_run), "--out", str(tmp_path / "slam"), "--command",
                       "sh -c 'echo 0 0 0 0 0 0 0 1 > {out}/trajectory.tum; exit 3'", cwd=tmp_path)
    assert_refused(result, "exited with status 3")
    assert snapshot(tmp_path) == before


def test_refused_postprocess_leaves_no_lock_in_the_run(private_run, tmp_path):
    before = snapshot(tmp_path)
    assert_refused(run_grade("postprocess", str(private_run), cwd=tmp_path), "nothing to apply")
    assert_refused(run_grade("postprocess", str(private_run), "--imu", "--out", str(tmp_path / "x"), cwd=tmp_path),
                   "--out")
    assert snapshot(tmp_path) == before


def test_orbslam3_options_are_checked_before_the_vocabulary_is_built(private_run, tmp_path):
    before = snapshot(tmp_path)
    started = time.monotonic()
    result = run_grade("benchmark", "run", "orbslam3", str(private_run), "--out", str(tmp_path / "slam"),
                       "--build-vocabulary", "--mode", "stereo", cwd=tmp_path)
    assert_refused(result, "--right-camera")
    assert time.monotonic() - started < 60  # no vocabulary built (it takes tens of seconds)
    assert snapshot(tmp_path) == before


def test_a_killed_export_resumes_with_the_same_command(private_run, tmp_path):
    out = tmp_path / "out"
    args = [*GRADE, "export", "coco", str(private_run), "--out", str(out)]
    process = subprocess.Popen(args, cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not (out / "export.json").is_file() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.kill()  # SIGKILL: no handler runs, so the folder stays as the export left it, to be resumed
    process.wait()
    assert (out / "export.json").is_file()
    again = run(args, tmp_path)
    assert again.returncode == 0, again.stderr
    assert json.loads((out / "export.json").read_text())["complete"] is True


def test_a_killed_postprocess_left_nothing_in_use_and_the_rerun_restarts_cleanly(private_run, tmp_path):
    args = [*GRADE, "postprocess", str(private_run), "--preset", "grade-paper"]
    process = subprocess.Popen(args, cwd=tmp_path, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gt = private_run / "gt"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not any(gt.glob(".postprocess.*.partial/camera/rgb_blur/*")) and time.monotonic() < deadline:
        assert process.poll() is None, "post-processing ended before it could be killed"
        time.sleep(0.01)
    process.kill()  # SIGKILL: frames written so far stay in the partial folder, none in the run's own places
    process.wait()
    assert not (gt / "camera" / "rgb_blur").exists() and not (gt / "postprocess.json").exists()
    again = run(args, tmp_path)
    assert again.returncode == 0, again.stderr
    assert not list(gt.glob(".*.partial"))  # the killed writer's partial folder is removed by the next one
    frames = len(list((gt / "camera" / "rgb").iterdir()))
    assert len(list((gt / "camera" / "rgb_blur").iterdir())) == frames and (gt / "postprocess.json").is_file()

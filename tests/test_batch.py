"""`grade batch` on tiny real experiments: a 2-sequence batch on the local pool, a driver killed mid-run and
started again, the same batch on a real local Ray instance and on submitit's local executor (identical ground
truth), and a failing sequence that is retried, then reported, while the others finish."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import yaml

from asset_converters.procedural.demo import ENVIRONMENT_ID
from core.errors import ExitCode
from core.formats.batch_state import JobNode, read_batch_state
from core.formats.dataset_card import read_dataset_card
from core.formats.manifest import StageStatus, stage_status
from core.formats.run_layout import ASSETS_DIR
from core.outputs import LOCK_FILE, package_lock
from core.recording import Recording
from pipeline.batch import batch_status, this_node
from tests.conftest import CONFIGS, ROOT, run_grade

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

# Enough for two workers at once, or for a finished job beside one cut off by the kill.
SEEDS = PAIR = [1, 2]
FOLLOW_TIMEOUT_S = 30
DRIVER_TIMEOUT_S = 300  # only bounds a failing run
POLL_S = 0.2


def tiny_experiment(folder: Path) -> Path:
    data = yaml.safe_load((CONFIGS / "demo.yaml").read_text())
    data["simulation"].update(duration=0.25, bootstrap=0.25)
    data["robot"]["sensors"]["cameras"][0].update(width=64, height=48)
    data["humans"]["count"] = {"min": 1, "max": 1}
    data["flying_objects"]["count"] = {"min": 1, "max": 1}
    data["exploration"] = {"planner": "waypoints", "waypoints": [[9, 9, 1.5]]}
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def write_batch(folder: Path, exports: tuple[str, ...] = (), seeds: list[int] = SEEDS, **executor) -> Path:
    tiny_experiment(folder)
    path = folder / "batch.yaml"
    path.write_text(yaml.safe_dump({"base": "tiny.yaml", "seeds": seeds, "output_dir": str(folder / "out"),
                                    "executor": {"workers": 2, **executor}, "exports": list(exports)}))
    return path


def ground_truth(out: Path, seeds: list[int] = SEEDS) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for seed in seeds for p in sorted(out.glob(f"default-seed{seed}/gt/**/*")) if p.is_file()}


def start_driver(batch: Path, log: Path, env: Mapping[str, str] = os.environ) -> subprocess.Popen:
    """`grade batch BATCH` as a user starts it, in a process group of its own (os.killpg kills it with its local
    jobs), its output in `log`."""
    with open(log, "wb") as output:
        return subprocess.Popen([sys.executable, "-m", "pipeline.cli", "batch", str(batch)], cwd=ROOT,
                                env={**env, "GRADE_QUIET": "1"}, stdout=output, stderr=subprocess.STDOUT,
                                start_new_session=True)


def wait_for(what: str, ready: Callable[[], bool], driver: subprocess.Popen, log: Path) -> None:
    """Poll real state until `ready()`; fail when the driver exits first or DRIVER_TIMEOUT_S passes."""
    deadline = time.monotonic() + DRIVER_TIMEOUT_S
    while not ready():
        if driver.poll() is not None or time.monotonic() > deadline:
            pytest.fail(f"{what}: not seen (driver exit status {driver.poll()}):\n{log.read_text()[-3000:]}")
        time.sleep(POLL_S)


def test_a_batch_runs_every_sequence_on_the_local_pool(local_batch):
    assert batch_status(local_batch) == {"done": [f"default-seed{s}" for s in SEEDS], "running": [], "failed": [],
                                   "remaining": []}
    for seed in SEEDS:
        run = local_batch / f"default-seed{seed}"
        assert stage_status(run, verify_hashes=True) is StageStatus.COMPLETE
        assert Recording.open(run).info.master_seed == seed
    # one shared, content-addressed asset cache: the procedural assets converted once per seed
    assert (local_batch / "assets").is_dir() and not any((local_batch / f"default-seed{s}" / "assets").exists() for s in SEEDS)
    jobs = read_batch_state(local_batch).jobs.values()
    assert {job.status for job in jobs} == {"done"}
    assert [job.node for job in jobs] == [JobNode(host=socket.gethostname())] * len(SEEDS)  # each ran here
    result = run_grade("batch", "status", str(local_batch))
    assert result.returncode == 0 and "2/2 done" in result.stdout + result.stderr
    names = ", ".join(f"default-seed{s}" for s in SEEDS)
    assert f"  ran on {socket.gethostname()}: {names}\n" in result.stdout + result.stderr
    coco = json.loads((local_batch / "exports" / "coco" / "annotations" / "instances_all.json").read_text())
    assert {image["sequence"] for image in coco["images"]} == {f"default-seed{s}" for s in SEEDS}
    # one dataset card for the batch, beside the export's own
    assert [run.path for run in read_dataset_card(local_batch).runs] == [f"default-seed{s}" for s in SEEDS]
    assert read_dataset_card(local_batch / "exports" / "coco").format == "coco"


# A local Ray instance runs one sequence (its start-up is the cost; tests/test_batch_ray_cluster.py runs both on
# a cluster), submitit's local executor both.
@pytest.mark.parametrize(("executor", "seeds"), [("ray", [1]), ("submitit-local", PAIR)])
def test_ray_and_submitit_give_the_same_ground_truth(local_batch, tmp_path, executor, seeds):
    # The local batch's converted assets (content-addressed): the jobs here only record, the executor being what
    # is tested.
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ASSETS_DIR).symlink_to(local_batch / ASSETS_DIR, target_is_directory=True)
    result = run_grade("batch", str(write_batch(tmp_path, seeds=seeds, kind=executor)))
    assert result.returncode == 0, result.stderr
    expected = ground_truth(local_batch, seeds)
    assert expected and ground_truth(tmp_path / "out", seeds) == expected


def test_a_slurm_job_names_its_node():
    """slurmd gives every job the name of its node; a local job has only its host's."""
    assert this_node({"SLURMD_NODENAME": "gpu-07"}) == JobNode(host=socket.gethostname(), id="gpu-07")
    assert this_node({"SLURMD_NODENAME": "gpu-07"}).label() == f"{socket.gethostname()} (node gpu-07)"
    assert this_node({}).label() == socket.gethostname()


def seed_environment(out: Path, seed: int) -> Path:
    """The first package a sequence converts in the batch's shared asset cache: its procedural house."""
    return out / ASSETS_DIR / f"procedural-seed{seed}" / "environment" / ENVIRONMENT_ID


def test_a_killed_driver_resumes_without_redoing_finished_jobs(local_batch, tmp_path):
    batch, log = write_batch(tmp_path, seeds=PAIR, workers=1), tmp_path / "driver.log"
    first = tmp_path / "out" / "default-seed1"
    # The local batch's converted assets but the second sequence's house, which the second job must convert.
    shutil.copytree(local_batch / ASSETS_DIR, tmp_path / "out" / ASSETS_DIR, ignore=shutil.ignore_patterns(LOCK_FILE))
    shutil.rmtree(seed_environment(tmp_path / "out", PAIR[1]))
    # Holding the second sequence's first package lock keeps the driver mid-batch, whatever the machine's speed:
    # the first sequence finishes, the second waits for the lock until the driver is killed.
    with package_lock(seed_environment(tmp_path / "out", PAIR[1])):
        driver = start_driver(batch, log)
        wait_for("the first sequence finished", lambda: stage_status(first) is StageStatus.COMPLETE, driver, log)
        follow = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "batch", "status", str(tmp_path / "out"),
                                   "--follow"], cwd=ROOT, env={**os.environ, "GRADE_QUIET": "1"},
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        running = run_grade("batch", "status", str(tmp_path / "out"))
        assert "(driver running)" in running.stderr and "[" in running.stderr, running.stderr
        assert driver.poll() is None
        os.killpg(driver.pid, signal.SIGKILL)  # the driver and its running job, mid-batch
        driver.wait()
    cut_off = tmp_path / "out" / f"default-seed{PAIR[1]}"
    assert stage_status(cut_off) is not StageStatus.COMPLETE  # killed before it recorded
    followed = follow.communicate(timeout=FOLLOW_TIMEOUT_S)[0]  # --follow ends when the driver is gone
    assert follow.returncode == 0 and "(driver not running)" in followed, followed
    assert stage_status(first) is StageStatus.COMPLETE
    finished = {p: p.stat().st_mtime_ns for p in first.rglob("*") if p.is_file() and p.name != ".grade.lock"}
    result = run_grade("batch", str(batch))
    assert result.returncode == 0, result.stderr
    assert {p: p.stat().st_mtime_ns for p in finished} == finished  # the finished job was not redone
    for seed in PAIR:
        assert stage_status(tmp_path / "out" / f"default-seed{seed}", verify_hashes=True) is StageStatus.COMPLETE
    assert ground_truth(tmp_path / "out", PAIR) == ground_truth(local_batch, PAIR)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pins two jobs to a core each: needs 2 cores")
def test_a_failing_sequence_is_retried_then_reported(local_batch, tmp_path):
    tiny_experiment(tmp_path)
    # The good job records with the local batch's converted assets (the same seed's): the failure is what is tested.
    shutil.copytree(local_batch / ASSETS_DIR, tmp_path / "out" / ASSETS_DIR, ignore=shutil.ignore_patterns(LOCK_FILE))
    (tmp_path / "broken.json").write_text("{not a 3D-Front house")
    batch = tmp_path / "batch.yaml"
    batch.write_text(yaml.safe_dump({
        "base": "tiny.yaml", "seeds": [1], "output_dir": str(tmp_path / "out"),
        # Pinned: the two jobs start together, each on a core of its own.
        "executor": {"workers": 2, "retries": 1, "threads_per_job": 1, "pin_cores": True},
        "variants": [{"name": "good"},  # a house file that is not a house: the job fails when it converts it
                     {"name": "broken", "set": {"environment.source": "front3d",
                                                "environment.path": str(tmp_path / "broken.json")}}]}))
    result = run_grade("batch", str(batch))
    assert result.returncode == ExitCode.BATCH_FAILURES and "1 of 2 jobs failed: broken-seed1 after 2 attempts" in result.stderr
    assert "logs/broken-seed1.log" in result.stderr and "Traceback" not in result.stderr
    state = read_batch_state(tmp_path / "out")
    assert state.jobs["good-seed1"].status == "done" and state.jobs["broken-seed1"].status == "failed"
    log = (tmp_path / "out" / "logs" / "broken-seed1.log").read_text()
    assert log.count("--- grade generate") == 2  # tried, then retried once
    first_cores = {(tmp_path / "out" / "logs" / f"{name}.log").read_text().splitlines()[0].rsplit("(cores ", 1)[1]
                   for name in ("good-seed1", "broken-seed1")}
    assert first_cores == {f"{core})" for core in sorted(os.sched_getaffinity(0))[:2]}
    assert Recording.open(tmp_path / "out" / "good-seed1").complete
    assert json.loads((tmp_path / "out" / "batch.json").read_text())["jobs"]["broken-seed1"]["attempts"] == 2


def test_a_pinned_job_and_its_threads_run_on_its_cores(tmp_path):
    """pipeline.pinned sets the affinity before the module runs, so threads the job starts inherit it."""
    (tmp_path / "probe.py").write_text(
        "import os, sys, threading\n"
        "seen = []\n"
        "thread = threading.Thread(target=lambda: seen.append(sorted(os.sched_getaffinity(0))))\n"
        "thread.start(); thread.join()\n"
        "print(sorted(os.sched_getaffinity(0)), seen[0], sys.argv[1:])\n")
    core = max(os.sched_getaffinity(0))
    result = subprocess.run([sys.executable, "-m", "pipeline.pinned", str(core), "probe", "--flag", "x"],
                            capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])})
    assert result.stdout.strip() == f"[{core}] [{core}] ['--flag', 'x']"


def test_pinning_refuses_more_cores_than_the_machine_has(tmp_path):
    tiny_experiment(tmp_path)
    batch = tmp_path / "batch.yaml"
    too_many = len(os.sched_getaffinity(0)) + 1
    batch.write_text(yaml.safe_dump({"base": "tiny.yaml", "output_dir": str(tmp_path / "out"),
                                     "executor": {"workers": too_many, "pin_cores": True, "threads_per_job": 1}}))
    result = run_grade("batch", str(batch))
    assert result.returncode == 2 and "pin_cores" in result.stderr and f"need {too_many} cores" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()  # refused before any write
    ray = run_grade("batch", str(batch), "--executor", "ray")
    assert ray.returncode == 2 and "pin_cores applies to the local pool only" in ray.stderr

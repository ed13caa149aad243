"""`grade batch --executor slurm` on a real single-host SLURM cluster (tests/slurm_cluster.py): jobs go through
submitit to slurmctld and run under slurmd, and give the local pool's ground truth; a job cancelled with
`scancel` while it runs is retried, the finished job beside it is left alone, and every run ends complete.

Skipped with the reason where SLURM is not installed or we are not root (a user's machine); failed instead
under GRADE_REQUIRE_CLUSTER=1 (CI, whose .ci/run installs the packages)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from core.formats.batch_state import read_batch_state
from core.formats.manifest import StageStatus, stage_status
from core.formats.run_layout import ASSETS_DIR
from core.outputs import LOCK_FILE, TEMP_SUFFIXES, package_lock
from pipeline.batch import batch_status
from tests.slurm_cluster import SlurmCluster, missing_programs, slurm_cluster
from tests.test_batch import (
    DRIVER_TIMEOUT_S,
    PAIR,
    ground_truth,
    seed_environment,
    start_driver,
    wait_for,
    write_batch,
)

pytestmark = [pytest.mark.slow, pytest.mark.heavy]

# CI sets this so that a machine without SLURM fails these tests instead of skipping them.
REQUIRE_CLUSTER = os.environ.get("GRADE_REQUIRE_CLUSTER", "") == "1"
# Two 1-CPU jobs at once on the cluster's 2 CPUs, each asking for less memory than the node offers.
SLURM = {"kind": "slurm", "workers": 2, "cpus_per_job": 1, "threads_per_job": 1, "slurm_mem_gb": 1, "retries": 1}
# slurmstepd's line in a cancelled job's error stream: "*** JOB <id> ON <node> CANCELLED AT <time> ***".
CANCELLED = "CANCELLED AT"


@pytest.fixture(scope="session")
def slurm(tmp_path_factory) -> Iterator[SlurmCluster]:
    """A one-node, 2-CPU SLURM cluster for the session (pytest-xdist runs this module on one worker)."""
    missing = missing_programs()
    reason = (f"SLURM is not installed ({', '.join(missing)} not found; on Debian: apt-get install slurmctld slurmd "
              "slurm-client munge)" if missing else
              "the test SLURM cluster runs its daemons as root" if os.geteuid() != 0 else None)
    if reason:
        if REQUIRE_CLUSTER:
            pytest.fail(f"{reason}; GRADE_REQUIRE_CLUSTER=1 requires it", pytrace=False)
        pytest.skip(reason)
    with slurm_cluster(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


@contextmanager
def grade_batch(slurm: SlurmCluster, batch: Path, log: Path) -> Iterator[subprocess.Popen]:
    """`grade batch BATCH` in a process of its own that reaches the cluster (SLURM_CONF), its output in `log`;
    killed if it is still running when the block ends (a failed test)."""
    driver = start_driver(batch, log, slurm.env)
    try:
        yield driver
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()


def slurm_job_logs(out: Path, stream: str) -> dict[str, str]:
    """Each SLURM job's output ("out") or error ("err") stream, which srun writes into submitit's folder
    (<id>_0_log.<stream>), by job id."""
    return {p.name.split("_")[0]: p.read_text(errors="replace")
            for p in (out / "submitit").glob(f"*_0_log.{stream}")}


def assert_complete_and_clean(out: Path, local: Path) -> None:
    """Every run complete (each MANIFEST hash checked), the local pool's ground truth, no write left half-done."""
    for seed in PAIR:
        assert stage_status(out / f"default-seed{seed}", verify_hashes=True) is StageStatus.COMPLETE
    expected = ground_truth(local, PAIR)
    assert expected and ground_truth(out, PAIR) == expected
    leftovers = [p for p in out.rglob("*") if p.name.endswith(TEMP_SUFFIXES)]
    assert not leftovers


def test_a_batch_on_slurm_gives_the_local_pools_ground_truth(slurm, local_batch, tmp_path):
    log, out = tmp_path / "driver.log", tmp_path / "out"
    # The local batch's converted assets (content-addressed): the jobs here only record, the executor being what
    # is tested (the other test's jobs convert theirs).
    out.mkdir()
    (out / ASSETS_DIR).symlink_to(local_batch / ASSETS_DIR, target_is_directory=True)
    with grade_batch(slurm, write_batch(tmp_path, seeds=PAIR, **SLURM), log) as driver:
        assert driver.wait(DRIVER_TIMEOUT_S) == 0, log.read_text()
    state = read_batch_state(out)
    assert {name: (job.status, job.attempts) for name, job in state.jobs.items()} == {
        f"default-seed{seed}": ("done", 1) for seed in PAIR}
    assert {job.node.id for job in state.jobs.values()} == {slurm.node}  # as slurmd named it to each job
    # Each sequence was a SLURM job of its own, named after it, that ran on the cluster's node.
    scripts = sorted((out / "submitit").glob("*_submission.sh"))
    assert sorted(line for script in scripts for line in script.read_text().splitlines()
                  if line.startswith("#SBATCH --job-name=")) == [f"#SBATCH --job-name=default-seed{s}" for s in PAIR]
    jobs = slurm_job_logs(out, "out")
    assert len(jobs) == len(PAIR)
    for job_id, output in jobs.items():  # submitit's first line in the job, from SLURM's environment variables
        assert f"JobEnvironment(job_id={job_id}, hostname={slurm.node}," in output
    assert slurm.job_ids() == []
    assert_complete_and_clean(out, local_batch)


def test_a_cancelled_job_is_retried_and_the_finished_one_is_left_alone(slurm, local_batch, tmp_path):
    batch, out, log = write_batch(tmp_path, seeds=PAIR, **SLURM), tmp_path / "out", tmp_path / "driver.log"
    finished, cut = out / f"default-seed{PAIR[0]}", out / f"default-seed{PAIR[1]}"
    # The first sequence's assets are the local batch's (content-addressed): its job only records. Holding the
    # second sequence's first asset package keeps its job running on the node, its run folder locked, whatever the
    # machine's speed: the first sequence finishes meanwhile.
    first_assets = seed_environment(out, PAIR[0]).parents[1]
    first_assets.parent.mkdir(parents=True)
    first_assets.symlink_to(seed_environment(local_batch, PAIR[0]).parents[1], target_is_directory=True)
    held = ExitStack()
    held.enter_context(package_lock(seed_environment(out, PAIR[1])))
    with held, grade_batch(slurm, batch, log) as driver:
        wait_for("the first job done and the second running", lambda: (
            stage_status(finished) is StageStatus.COMPLETE and batch_status(out)["running"] == [cut.name]
            and len(slurm.job_ids(cut.name)) == 1), driver, log)
        untouched = {p: p.stat().st_mtime_ns for p in finished.rglob("*") if p.is_file() and p.name != LOCK_FILE}
        (cancelled,) = slurm.job_ids(cut.name)
        slurm.run("scancel", cancelled)
        wait_for("the cancelled job submitted again", lambda: read_batch_state(out).jobs[cut.name].attempts == 2,
                   driver, log)
        assert stage_status(cut) is not StageStatus.COMPLETE  # cancelled before it recorded
        held.close()  # the package released, the second attempt goes on
        assert driver.wait(DRIVER_TIMEOUT_S) == 0, log.read_text()
    state = read_batch_state(out)
    assert {name: (job.status, job.attempts) for name, job in state.jobs.items()} == {
        finished.name: ("done", 1), cut.name: ("done", 2)}
    assert CANCELLED in slurm_job_logs(out, "err")[cancelled]  # a real cancel, by the controller
    assert (out / "logs" / f"{cut.name}.log").read_text().count("--- grade generate") == 2
    assert {p: p.stat().st_mtime_ns for p in untouched} == untouched  # the finished run was not redone
    assert_complete_and_clean(out, local_batch)

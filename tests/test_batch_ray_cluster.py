"""`grade batch` on a real Ray cluster of two nodes on this machine (ray.cluster_utils.Cluster: a head and a worker
node, one CPU each, and jobs of one CPU, so that two jobs at a time run one on each node): two jobs land one on
each node; the worker node lost mid-batch (its raylet and every process under it killed at once, as when a machine
dies) costs only its job's attempt, which the driver's retry redoes on the head, while nothing complete is touched
and no corrupt run or partial folder is left, and `grade batch status` says where each job ran; a driver killed
mid-batch and started again finishes the batch on the cluster; every run is the local pool's, byte for byte.

Skips with the reason where Ray is not installed; fails instead under GRADE_REQUIRE_CLUSTER=1 (CI).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from core.formats.batch_state import BATCH_FILE, read_batch_state
from core.formats.manifest import StageStatus, stage_status
from core.formats.run_layout import ASSETS_DIR
from core.outputs import LOCK_FILE, package_lock
from core.rundir import PARTIAL_SUFFIX
from pipeline.batch import batch_status
from tests.conftest import copy_run, run_grade
from tests.test_batch import (
    DRIVER_TIMEOUT_S,
    ground_truth,
    seed_environment,
    start_driver,
    wait_for,
    write_batch,
)

pytestmark = [pytest.mark.slow, pytest.mark.heavy, pytest.mark.skipif(not sys.platform.startswith("linux"),
                                                     reason="finds a node's processes in /proc (Linux)")]

REQUIRE_CLUSTER = os.environ.get("GRADE_REQUIRE_CLUSTER", "") == "1"
SEEDS = [1, 2]
# One CPU per node and per job: two jobs at a time, one on each node, whatever the scheduler's order.
NODE_CPUS = 1
# The head notices a lost node within a second or two (Ray's defaults: 5 missed checks of 3 s).
HEALTH_CHECKS = {"health_check_period_ms": 500, "health_check_failure_threshold": 3}
OBJECT_STORE_BYTES = 80 * 1024 * 1024  # the jobs pass nothing through it


def _ray_cluster_utils():
    try:
        import ray.cluster_utils
    except ImportError as exc:
        reason = f"Ray is not installed ({exc}): pip install -e '.[cluster]'"
        if REQUIRE_CLUSTER:
            pytest.fail(f"{reason}; GRADE_REQUIRE_CLUSTER=1 requires it", pytrace=False)
        pytest.skip(reason)
    return ray.cluster_utils


class RayCluster:
    """A head and a worker node of one CPU each, in a temporary folder of their own: Ray's sockets, logs and
    the `ray_current_cluster` address file it writes for ray.init, so that no other Ray on the machine finds
    (or loses) this one."""

    def __init__(self, folder: Path, utils):
        self.folder = folder
        with ray_temp_dir(self.folder):
            self.cluster = utils.Cluster(initialize_head=True, head_node_args={
                "num_cpus": NODE_CPUS, "temp_dir": str(folder / "ray"), "include_dashboard": False,
                "object_store_memory": OBJECT_STORE_BYTES, "_system_config": HEALTH_CHECKS})
            self.worker = self.cluster.add_node(num_cpus=NODE_CPUS, object_store_memory=OBJECT_STORE_BYTES)
        self.head = self.cluster.head_node

    @property
    def address(self) -> str:
        return self.cluster.address

    def kill_worker(self) -> list[str]:
        """Lose the worker node as a machine is lost: its raylet and every process under it (Ray's workers, the
        jobs they run) stopped, then SIGKILLed together, so that none reacts to another's death; the command
        lines of the processes killed."""
        raylet = self.worker.all_processes["raylet"][0].process.pid
        tree: list[int] = []
        while (now := process_tree(raylet)) != tree:  # frozen: a stopped process starts no other
            tree = now
            for pid in tree:
                _signal(pid, signal.SIGSTOP)
        commands = [command_line(pid) for pid in tree]
        for pid in tree:
            _signal(pid, signal.SIGKILL)
        self.cluster.remove_node(self.worker, allow_graceful=False)  # reaps the raylet, our child
        return commands

    def shutdown(self) -> None:
        with ray_temp_dir(self.folder):
            self.cluster.shutdown()
        shutil.rmtree(self.folder, ignore_errors=True)


@contextmanager
def ray_temp_dir(folder: Path) -> Iterator[None]:
    """$RAY_TMPDIR set to `folder`: Ray writes, and removes, the address file in $RAY_TMPDIR/ray whatever temp_dir
    its nodes are given."""
    (folder / "ray").mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAY_TMPDIR", str(folder))
        yield


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:  # it exited meanwhile
        pass


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:  # it exited meanwhile
        return ""


def process_tree(pid: int) -> list[int]:
    """`pid` and every process under it, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])  # the name in () may hold spaces
        except OSError:  # it exited meanwhile
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo.extend(children.get(tree[-1], []))
    return sorted(tree)


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    utils = _ray_cluster_utils()  # skips, or fails, before anything is made
    # A short folder: Ray's Unix sockets live in it, and a socket's path must fit in 107 bytes.
    folder = Path(tempfile.mkdtemp(prefix="grade-ray-"))
    try:
        ray_cluster = RayCluster(folder, utils)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # Ray stops what it started when the process exits
        raise
    try:
        yield ray_cluster
    finally:
        ray_cluster.shutdown()


def cluster_batch(folder: Path, address: str, seeds: list[int]) -> Path:
    return write_batch(folder, seeds=seeds, kind="ray", ray_address=address, cpus_per_job=NODE_CPUS, retries=1)


def headers(log: Path) -> list[str]:
    """The first line of each attempt in a job's log (run_job's), which names the attempt's node."""
    return [line for line in log.read_text().splitlines() if line.startswith("--- grade generate")]


def partly_done(local_batch: Path, out: Path, redone: list[int]) -> dict[Path, int]:
    """A batch found part done in `out`: the local batch's converted assets (content-addressed) and its runs of the
    SEEDS not in `redone`, whose houses are removed from the assets; the modification times of the files of the
    packages and runs copied (a run's lock file aside: each writer of it, a job that finds it complete too, notes
    itself in it)."""
    shutil.copytree(local_batch / ASSETS_DIR, out / ASSETS_DIR, ignore=shutil.ignore_patterns(LOCK_FILE))
    kept = [out / ASSETS_DIR]
    for seed in SEEDS:
        if seed in redone:
            shutil.rmtree(seed_environment(out, seed))
        else:
            name = f"default-seed{seed}"
            kept.append(copy_run(local_batch / name, out / name))
    return {p: p.stat().st_mtime_ns for folder in kept for p in folder.rglob("*")
            if p.is_file() and p.name != LOCK_FILE}


def running(out: Path) -> list[str]:
    """The jobs whose run folder a job has locked now, once the driver has written batch.json."""
    return sorted(batch_status(out)["running"]) if (out / BATCH_FILE).is_file() else []


def test_jobs_run_on_both_nodes_and_a_lost_worker_costs_only_its_attempt(cluster, local_batch, tmp_path):
    out = tmp_path / "out"
    # Only the asset packages the runs share are complete: both runs are recorded, both houses converted.
    complete = partly_done(local_batch, out, SEEDS)
    assert complete
    names = [f"default-seed{seed}" for seed in SEEDS]
    batch, log = cluster_batch(tmp_path, cluster.address, SEEDS), tmp_path / "driver.log"
    with ExitStack() as held:
        # Holding their houses' package locks keeps the two jobs mid-run (run folder locked, assets being made).
        for seed in SEEDS:
            held.enter_context(package_lock(seed_environment(out, seed)))
        driver = start_driver(batch, log)
        try:
            # Two jobs running at once hold both nodes' CPUs: one of them runs on the worker.
            wait_for("two jobs running", lambda: running(out) == names, driver, log)
            first = {name: headers(out / "logs" / f"{name}.log")[-1] for name in names}
            lost = [name for name in names if f"(node {cluster.worker.node_id})" in first[name]]
            # one job on each node
            assert len(lost) == 1 and sum(f"(node {cluster.head.node_id})" in line for line in first.values()) == 1
            assert stage_status(out / lost[0]) is not StageStatus.COMPLETE
            killed = cluster.kill_worker()
            # the lost job's own process died with its node (an orphan would go on and finish its run)
            assert any(f"generate {out / 'jobs' / lost[0]}.yaml" in command for command in killed), killed
            wait_for("the lost job tried again", lambda: read_batch_state(out).jobs[lost[0]].attempts == 2, driver,
                     log)
        except BaseException:
            if driver.poll() is None:
                os.killpg(driver.pid, signal.SIGKILL)
            raise
    assert driver.wait(timeout=DRIVER_TIMEOUT_S) == 0, log.read_text()
    state = read_batch_state(out)
    for job in state.jobs.values():
        assert job.status == "done" and stage_status(Path(job.run), verify_hashes=True) is StageStatus.COMPLETE
        assert job.node.id == cluster.head.node_id  # the worker node is gone
    assert state.jobs[lost[0]].attempts == 2
    attempts = headers(out / "logs" / f"{lost[0]}.log")
    assert [f"(node {cluster.worker.node_id})" in attempts[0], f"(node {cluster.head.node_id})" in attempts[1]] == [
        True, True]
    assert {p: p.stat().st_mtime_ns for p in complete} == complete  # the complete packages untouched
    assert not [p for p in out.rglob(f"*{PARTIAL_SUFFIX}")]  # no partial folder left
    assert ground_truth(out, SEEDS) == ground_truth(local_batch, SEEDS)  # the local pool's, byte for byte
    assert {job.node.host for job in state.jobs.values()} == {socket.gethostname()}
    status = run_grade("batch", "status", str(out))
    assert status.returncode == 0, status.stderr
    lines = (status.stdout + status.stderr).splitlines()
    ran = [line for line in lines if line.startswith("  ran on ")]
    assert ran == [f"  ran on {socket.gethostname()} (node {cluster.head.node_id}): {', '.join(names)}"], lines


def test_a_driver_killed_mid_batch_resumes_on_the_cluster(cluster, local_batch, tmp_path):
    """The driver killed while a job runs on the cluster, then started again: the batch finishes, the complete
    run untouched."""
    out = tmp_path / "out"
    redone = SEEDS[:1]
    complete = partly_done(local_batch, out, redone)
    assert any(p.name == "MANIFEST.json" and p.parent.name == f"default-seed{SEEDS[1]}" for p in complete)
    batch, log = cluster_batch(tmp_path, cluster.address, SEEDS), tmp_path / "driver.log"
    with package_lock(seed_environment(out, redone[0])):
        driver = start_driver(batch, log)
        try:
            wait_for("the job running", lambda: running(out) == [f"default-seed{redone[0]}"], driver, log)
        finally:
            os.killpg(driver.pid, signal.SIGKILL)  # the driver alone: its jobs run under the cluster's raylets
            driver.wait()
    # Ray ends a dead driver's tasks; a job process that outlives its task finishes its run, which the new
    # driver's job waits for (the run folder's lock) and then finds complete.
    result = run_grade("batch", str(batch))
    assert result.returncode == 0, result.stderr
    for seed in SEEDS:
        assert stage_status(out / f"default-seed{seed}", verify_hashes=True) is StageStatus.COMPLETE
    assert {p: p.stat().st_mtime_ns for p in complete} == complete
    assert not [p for p in out.rglob(f"*{PARTIAL_SUFFIX}")]
    assert ground_truth(out, SEEDS) == ground_truth(local_batch, SEEDS)

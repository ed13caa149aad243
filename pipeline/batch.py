"""`grade batch BATCH.yaml`: every experiment of a batch (base x seeds x variants) as a job on an executor, with
retries, resume and a summary; `grade batch status DIR` reports where a batch stands.

Layout of the batch folder (BatchConfig.output_dir, or --out):

    assets/                 the shared asset cache: each source converted once (content-addressed packages,
                            locked while converted, so concurrent jobs wait for each other's conversions)
    jobs/<name>.yaml        each job's resolved experiment (its own output folder, the shared cache)
    logs/<name>.log         each job's output, every attempt appended
    <name>/                 each job's run folder (a complete recording, post-processed when configured)
    batch.json              the jobs and their attempts (core.formats.batch_state)
    exports/<format>/       the `exports` of every run (COCO, YOLO, TUM RGB-D, EuRoC), once all jobs are done
    DATASET.md              the dataset card of the whole batch (its runs, assets, sensors, classes, licences),
                            written once all jobs are done (each export folder has its own)

A job is `grade generate jobs/<name>.yaml` in a process of its own: generate skips a recording that is complete
for the same inputs (its record hash: config, class map, scene, assets) and redoes an interrupted or failed one,
so a rerun of the batch after a crash or Ctrl-C finishes what is left and never uses a half-written output. A
failed job is retried up to `executor.retries` times; a job that still fails is reported with its log, and the
others carry on. Executors: a local pool of `workers` processes, Ray tasks (`ray_address`, or a local
instance), or submitit jobs (SLURM, or its local executor); none is a scheduler of ours.
"""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from core.config_io import dump_yaml
from core.errors import BatchFailedError, ConfigError, GradeError
from core.formats.batch_state import (
    BATCH_FILE,
    BatchState,
    JobNode,
    JobState,
    read_batch_state,
    write_batch_state,
)
from core.formats.dataset_card import write_dataset_card
from core.formats.manifest import StageStatus, stage_status
from core.formats.run_layout import ASSETS_DIR
from core.outputs import output_lock
from core.progress import console, progress_task
from core.rundir import atomic_write_text
from pipeline.batch_config import BatchConfig, ExecutorConfig, expand_batch
from simulation.render.raycast import THREADS_ENV

JOBS_DIR, LOGS_DIR, EXPORTS_DIR = "jobs", "logs", "exports"
LOG_TAIL_LINES = 5
SLURM_NODE_ENV = "SLURMD_NODENAME"  # set by slurmd in every job: the node it runs on


@dataclass(frozen=True)
class BatchJob:
    """One experiment of the batch: its config file, run folder and log file (all absolute), and the threads
    it may use."""

    name: str
    config: Path
    run: Path
    log: Path
    threads: int = 2
    cores: tuple[int, ...] = ()  # the CPU cores it runs on (executor.pin_cores); () = any


@dataclass(frozen=True)
class JobOutcome:
    """How one attempt of a job ended: its exit status, and the node it ran on."""

    code: int
    node: JobNode


def this_node(environ: Mapping[str, str] = os.environ) -> JobNode:
    """The node this process runs on: the host name, and inside a SLURM job the node's SLURM name."""
    return JobNode(host=socket.gethostname(), id=environ.get(SLURM_NODE_ENV))


def run_job(job: BatchJob, node: JobNode | None = None) -> JobOutcome:
    """Run one job (`grade generate`) in a process of its own, its output appended to its log (each attempt's
    first line names its node: default this_node()); its exit status and node. A top-level function, so Ray
    and submitit can ship it to their workers."""
    node = node or this_node()
    job.log.parent.mkdir(parents=True, exist_ok=True)
    with open(job.log, "a", encoding="utf-8") as log:
        where = f" (cores {','.join(map(str, job.cores))})" if job.cores else ""
        log.write(f"--- grade generate {job.config} --out {job.run} on {node.label()}{where}\n")
        log.flush()
        # --wait: a run folder still locked by a killed driver's orphaned job is waited for, not refused.
        threads = str(job.threads)  # the renderer's, numba's and BLAS's threads: the job's share of the cores
        env = {**os.environ, "GRADE_QUIET": "1", THREADS_ENV: threads, "NUMBA_NUM_THREADS": threads,
               "OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads}
        pinned = ["pipeline.pinned", ",".join(map(str, job.cores))] if job.cores else []
        code = subprocess.run([sys.executable, "-m", *pinned, "pipeline.cli", "generate", str(job.config), "--out",
                               str(job.run), "--wait"], stdout=log, stderr=subprocess.STDOUT, env=env,
                              check=False).returncode
    return JobOutcome(code, node)


def run_ray_job(job: BatchJob) -> JobOutcome:
    """`run_job` in a Ray task, on the node Ray names by its node id (a machine can hold several)."""
    import ray

    return run_job(job, JobNode(host=socket.gethostname(), id=ray.get_runtime_context().get_node_id()))


def job_threads(executor: ExecutorConfig) -> int:
    """Threads per job: the configured count, else a local job's share of the cores, else cpus_per_job."""
    if executor.threads_per_job is not None:
        return executor.threads_per_job
    if executor.kind == "local":
        return max(1, (os.cpu_count() or 1) // executor.workers)
    return executor.cpus_per_job


def batch_jobs(batch: BatchConfig, batch_file: Path, out: Path, threads: int = 2) -> list[BatchJob]:
    """Every (variant, seed) experiment as a job: its resolved config written to out/jobs/<name>.yaml, with the
    run folder out/<name> and the shared asset cache out/assets."""
    jobs = []
    for config in expand_batch(batch, batch_file):
        run = (out / config.name).resolve()
        config = config.model_copy(update={"output_dir": run, "assets_dir": (out / ASSETS_DIR).resolve()})
        path = atomic_write_text(out / JOBS_DIR / f"{config.name}.yaml", dump_yaml(config))
        jobs.append(BatchJob(config.name, path.resolve(), run, (out / LOGS_DIR / f"{config.name}.log").resolve(),
                             threads))
    return jobs


class CoreSlots:
    """Disjoint sets of `threads` CPU cores, one per local worker: a job takes a set while it runs."""

    def __init__(self, workers: int, threads: int):
        if not hasattr(os, "sched_setaffinity"):
            raise ConfigError("pinning jobs to cores needs Linux (CPU affinity)", "executor", "pin_cores")
        available = sorted(os.sched_getaffinity(0))
        if workers * threads > len(available):
            raise ConfigError(f"{workers} workers x {threads} threads per job need {workers * threads} cores, "
                              f"this machine lets us use {len(available)}: lower workers or threads_per_job, or "
                              "leave pin_cores off", "executor", "pin_cores")
        self._free: queue.Queue[tuple[int, ...]] = queue.Queue()
        for worker in range(workers):
            self._free.put(tuple(available[worker * threads:(worker + 1) * threads]))

    def run(self, job: BatchJob) -> JobOutcome:
        """`run_job` on a free set of cores (there is one per worker, so one is always free)."""
        cores = self._free.get_nowait()
        try:
            return run_job(replace(job, cores=cores))
        finally:
            self._free.put(cores)


@contextmanager
def job_runner(executor: ExecutorConfig, out: Path, slots: CoreSlots | None = None
               ) -> Iterator[Callable[[BatchJob], Future]]:
    """A `submit(job) -> Future[JobOutcome]` on the configured executor, shut down on leaving; local jobs run on
    `slots` when given (executor.pin_cores)."""
    if executor.kind == "local":
        run = slots.run if slots is not None else run_job
        with ThreadPoolExecutor(executor.workers) as pool:  # each job is a process; a thread waits on it
            yield lambda job: pool.submit(run, job)
        return
    if executor.kind == "ray":
        try:
            import ray
        except ImportError:
            raise GradeError("the Ray executor needs the `cluster` extra: pip install -e '.[cluster]'") from None
        started = not ray.is_initialized()
        if started:
            if executor.ray_address is None:
                # "local": an instance of our own, even where a `ray start` on this machine left its address for
                # ray.init to find.
                ray.init(address="local", num_cpus=executor.workers * executor.cpus_per_job,
                         include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=executor.ray_address, log_to_driver=False)
        # No retries of Ray's own: an attempt lost with its node fails, and executor.retries redoes it, counted in
        # batch.json like any other failed attempt.
        remote = ray.remote(num_cpus=executor.cpus_per_job, num_gpus=executor.gpus_per_job,
                            max_retries=0)(run_ray_job)
        try:
            yield lambda job: remote.remote(job).future()
        finally:
            if started:
                ray.shutdown()
        return
    try:
        import submitit
    except ImportError:
        raise GradeError("the SLURM executor needs the `cluster` extra: pip install -e '.[cluster]'") from None
    folder = out / "submitit"
    if executor.kind == "slurm":
        def start(job: BatchJob) -> submitit.Job:
            # An executor per submission, so that each SLURM job is named after its sequence (squeue --name).
            cluster = submitit.AutoExecutor(folder=folder, cluster="slurm")
            cluster.update_parameters(name=job.name, timeout_min=executor.slurm_time_min,
                                      cpus_per_task=executor.cpus_per_job, mem_gb=executor.slurm_mem_gb,
                                      slurm_partition=executor.slurm_partition,
                                      gpus_per_node=int(executor.gpus_per_job))
            return cluster.submit(run_job, job)
    else:
        cluster = submitit.LocalExecutor(folder=folder)
        cluster.update_parameters(timeout_min=executor.slurm_time_min)

        def start(job: BatchJob) -> submitit.Job:
            return cluster.submit(run_job, job)
    # submitit jobs are waited on by threads, so all executors hand back the same futures.
    with ThreadPoolExecutor(executor.workers) as waiters:
        yield lambda job: waiters.submit(lambda: start(job).result())


def _tail(log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines() if log.is_file() else []
    return " | ".join(line.strip() for line in lines[-LOG_TAIL_LINES:] if line.strip()) or "(no output)"


def run_batch(batch: BatchConfig, batch_file: Path, out: Path | None = None,
              executor: ExecutorConfig | None = None) -> BatchState:
    """Run every job of `batch` (module docstring) into `out` (default: its output_dir); returns the final state.
    BatchFailedError listing the failed jobs and their logs when any job still failed after its retries."""
    out = Path(out or batch.output_dir)
    executor = executor or batch.executor
    threads = job_threads(executor)
    slots = CoreSlots(executor.workers, threads) if executor.pin_cores else None  # refused before any write
    with output_lock(out, what="batch folder"):
        jobs = batch_jobs(batch, batch_file, out, threads)
        state = BatchState(executor=executor.kind, jobs={j.name: JobState(run=str(j.run), config=str(j.config),
                                                                          log=str(j.log)) for j in jobs})
        write_batch_state(out, state)
        with progress_task(f"batch ({executor.kind}, {executor.workers} at a time)", len(jobs)) as advance, \
                job_runner(executor, out, slots) as submit:
            # Every job is submitted: generate returns at once for a recording complete for the same inputs,
            # and redoes a stale or interrupted one.
            waiting = {submit(job): job for job in jobs}
            for job in jobs:
                state.jobs[job.name].status, state.jobs[job.name].attempts = "running", 1
            write_batch_state(out, state)
            while waiting:
                future = next(as_completed(waiting))
                job = waiting.pop(future)
                entry = state.jobs[job.name]
                try:
                    outcome = future.result()
                    code, entry.node = outcome.code, outcome.node
                except Exception as exc:  # noqa: BLE001 - an executor's failure is one job's failure, reported
                    code, entry.error = -1, f"{type(exc).__name__}: {exc}"
                if code == 0:
                    entry.status, entry.error = "done", None
                    advance(1)
                elif entry.attempts <= executor.retries:
                    entry.attempts += 1
                    entry.error = entry.error or f"exit status {code}: {_tail(job.log)}"
                    waiting[submit(job)] = job
                else:
                    entry.status = "failed"
                    entry.error = entry.error if code == -1 else f"exit status {code}: {_tail(job.log)}"
                    advance(1)
                write_batch_state(out, state)
    failed = {name: entry for name, entry in state.jobs.items() if entry.status == "failed"}
    if not failed:
        export_runs(batch.exports, [job.run for job in jobs], out / EXPORTS_DIR)
        write_batch_card(out, [job.run for job in jobs], {fmt: out / EXPORTS_DIR / fmt for fmt in batch.exports})
    if failed:
        lines = "; ".join(f"{name} after {entry.attempts} attempts ({entry.error}; log {entry.log})"
                          for name, entry in failed.items())
        raise BatchFailedError(f"{len(failed)} of {len(jobs)} jobs failed: {lines}. The others are complete; run the "
                         "same command again to retry the failed ones", out)
    return state


def export_runs(formats: list[str], runs: list[Path], folder: Path) -> None:
    """Each format's export of all `runs` into folder/<format> (the `grade export` defaults; resumable)."""
    from export.coco import export_coco
    from export.common import open_sequences
    from export.euroc import export_euroc
    from export.kitti import export_kitti
    from export.shards import export_webdataset
    from export.tum import export_tum
    from export.yolo import export_yolo

    for fmt in formats:
        target = folder / fmt
        if fmt == "coco":
            export_coco(open_sequences(runs), target)
        elif fmt == "yolo":
            export_yolo(open_sequences(runs), target)
        elif fmt == "tum":
            export_tum(runs, target)
        elif fmt == "webdataset":
            export_webdataset(open_sequences(runs), target)
        elif fmt == "kitti":
            export_kitti(runs, target)
        else:
            export_euroc(runs, target)


def write_batch_card(out: Path, runs: list[Path], exports: dict[str, Path]) -> Path:
    """out/DATASET.md: one dataset card for the whole batch (export.card.batch_card)."""
    from export.card import batch_card

    return write_dataset_card(out, batch_card(out, runs, exports))


def batch_status(out: Path) -> dict[str, list[str]]:
    """Jobs by status: done (a complete recording), running (its run folder is locked), failed (batch.json says
    so), remaining; from the run folders themselves, so it is right after a crash too."""
    if not (out / BATCH_FILE).is_file():
        raise ConfigError("not a batch folder (no batch.json): give the folder `grade batch` wrote into", out)
    state = read_batch_state(out)
    groups: dict[str, list[str]] = {"done": [], "running": [], "failed": [], "remaining": []}
    for name, entry in state.jobs.items():
        run = Path(entry.run)
        if stage_status(run) is StageStatus.COMPLETE:
            groups["done"].append(name)
        elif _locked(run):
            groups["running"].append(name)
        elif entry.status == "failed":
            groups["failed"].append(name)
        else:
            groups["remaining"].append(name)
    return groups


def _locked(run: Path) -> bool:
    """Whether a process holds the run folder's writer lock (a running job)."""
    from core.outputs import BusyError

    if not run.is_dir():
        return False
    try:
        with output_lock(run, what="run folder"):
            return False
    except BusyError:
        return True


STATUS_BAR_WIDTH = 30  # characters of the text bar of `grade batch status`
FOLLOW_PERIOD_S = 2.0  # how often `grade batch status --follow` looks again


def status_bar(done: int, total: int, width: int = STATUS_BAR_WIDTH) -> str:
    """'[#########.....]  60%': a plain-text bar that reads the same in a terminal and in a log file."""
    filled = round(width * done / total) if total else width
    return f"[{'#' * filled}{'.' * (width - filled)}] {100 * done / total if total else 100:3.0f}%"


def batch_running(out: Path) -> bool:
    """Whether a `grade batch` driver holds the batch folder (the batch is being run now)."""
    from core.outputs import BusyError

    try:
        with output_lock(out, what="batch folder"):
            return False
    except BusyError:
        return True


def follow_status(out: Path, period: float = FOLLOW_PERIOD_S) -> None:
    """A live bar of finished jobs while a driver runs the batch; returns when the driver stops."""
    groups = batch_status(out)
    total = sum(len(v) for v in groups.values())
    with progress_task(f"batch {out.name}", total) as advance:
        done = 0
        while True:
            now = len(groups["done"])
            advance(now - done)
            done = now
            if not batch_running(out):
                return
            time.sleep(period)
            groups = batch_status(out)


def jobs_by_node(state: BatchState) -> dict[str, list[str]]:
    """The jobs by the node their last finished attempt ran on (JobNode.label), in the order of the jobs."""
    nodes: dict[str, list[str]] = {}
    for name, entry in state.jobs.items():
        if entry.node is not None:
            nodes.setdefault(entry.node.label(), []).append(name)
    return nodes


def report_status(out: Path, follow: bool = False) -> None:
    """Counts by status with a text bar, the jobs by the node they ran on, and each failure with its log; with
    `follow`, first a live bar until the batch's driver stops."""
    if follow:
        follow_status(out)
    groups = batch_status(out)
    total = sum(len(v) for v in groups.values())
    driver = "running" if batch_running(out) else "not running"
    console.print(f"{out}: {status_bar(len(groups['done']), total)} {len(groups['done'])}/{total} done, "
                  f"{len(groups['running'])} running, {len(groups['failed'])} failed, "
                  f"{len(groups['remaining'])} remaining (driver {driver})", soft_wrap=True)
    state = read_batch_state(out)
    for label, names in jobs_by_node(state).items():
        console.print(f"  ran on {label}: {', '.join(names)}", soft_wrap=True)
    for name in groups["failed"]:
        console.print(f"  failed {name}: {state.jobs[name].error} (log {state.jobs[name].log})", soft_wrap=True)

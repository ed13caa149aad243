"""`grade batch`'s executor efficiency: sequences per CPU-hour with 1 and 2 workers, and their ratio.

The batch is the demo shortened to --duration simulated seconds (640x480 camera) crossed with --sequences seeds.
Each worker count runs it into a fresh folder under --out on the local pool, every job rendering on one thread
(`threads_per_job: 1`) and, where the machine has a core per worker, pinned to its worker's cores (`pin_cores`).
Two figures per worker count:
- sequences per CPU-hour: sequences divided by the CPU time of the jobs (user + system of the finished job
  processes, from getrusage(RUSAGE_CHILDREN)). The executor's efficiency is the ratio of 2 workers' figure to 1
  worker's: 1.0 means running jobs side by side costs no extra CPU per sequence (target >= 0.9). This is what
  carries over to a cluster, where each worker has cores of its own;
- sequences per (wall) hour, and the absolute scaling from 1 to 2 workers. Pinned, each worker's job and all
  its threads stay on cores of their own, as on a cluster node per worker; unpinned (more threads than cores),
  the workers share the cores and the figure is this machine's throughput, not the executor's.
On a virtual machine the host may take CPU time back ("steal", from /proc/stat on Linux): the cores left to the
jobs are printed with each run.

    .venv/bin/python benchmarks/batch_scaling.py [--out runs/bench/batch] [--sequences 4] [--duration 2]
                                                 [--threads-per-job 1] [--cache DIR] [--smoke]

--cache DIR: the batch's asset cache starts with copies of the packages DIR holds for its experiments (converted
into DIR first where it lacks them), so the warm-up batch converts nothing. --smoke: one 0.25 s sequence (seed 42,
1 human, 1 flying object, a 96x72 camera; the tests' tiny run's assets) per worker count, and with --cache no
warm-up batch: the figures mean nothing.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import time
from pathlib import Path

import yaml

from core.outputs import LOCK_FILE
from pipeline.batch import run_batch
from pipeline.batch_config import ExecutorConfig, expand_batch, load_batch
from pipeline.prepare import convert_assets

ROOT = Path(__file__).resolve().parents[1]
PROC_STAT = Path("/proc/stat")
STEAL_FIELD = 8  # of the "cpu" line: user nice system idle iowait irq softirq steal ...
WORKER_COUNTS = (1, 2)
EFFICIENCY_TARGET = 0.9
SMOKE_SEEDS = [42]
SMOKE_EXPERIMENT = {"simulation": {"bootstrap": 0.25}, "humans": {"count": {"min": 1, "max": 1}},
                    "flying_objects": {"count": {"min": 1, "max": 1}}}
SMOKE_CAMERA = {"width": 96, "height": 72}


def steal_seconds() -> float | None:
    """CPU seconds the hypervisor has taken from this machine since boot (all cores), if the OS says."""
    if not PROC_STAT.exists():
        return None
    fields = PROC_STAT.read_text().splitlines()[0].split()
    return int(fields[STEAL_FIELD]) / os.sysconf("SC_CLK_TCK") if len(fields) > STEAL_FIELD else None


def seed_cache(batch, batch_file: Path, cache: Path, assets: Path) -> None:
    """Copy the packages of the batch's experiments that `cache` already holds into the batch's cache `assets`
    (converting into `cache` what it lacks first: quick when it has them)."""
    for config in expand_batch(batch, batch_file):
        environment, humans, objects = convert_assets(config, cache)
        for package in (environment, *humans, *objects):
            target = assets / package.relative_to(cache)
            if not target.exists():
                shutil.copytree(package, target, ignore=shutil.ignore_patterns(LOCK_FILE))


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "batch")
    parser.add_argument("--sequences", type=int, default=4)
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--threads-per-job", type=int, default=1, help="render threads of every job")
    parser.add_argument("--cache", type=Path, default=None, help="asset cache to copy the batch's packages from")
    parser.add_argument("--smoke", action="store_true", help="one tiny sequence per worker count (meaningless figures)")
    args = parser.parse_args()
    os.environ.setdefault("GRADE_QUIET", "1")
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    experiment = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    seeds = list(range(1, args.sequences + 1))
    if args.smoke:
        args.sequences, args.duration, seeds = len(SMOKE_SEEDS), 0.25, SMOKE_SEEDS
        for section, values in SMOKE_EXPERIMENT.items():
            experiment.setdefault(section, {}).update(values)
        experiment["robot"]["sensors"]["cameras"][0].update(SMOKE_CAMERA)
    experiment["simulation"]["duration"] = args.duration
    (args.out / "experiment.yaml").write_text(yaml.safe_dump(experiment))
    (args.out / "batch.yaml").write_text(yaml.safe_dump({"base": "experiment.yaml", "seeds": seeds}))
    batch = load_batch(args.out / "batch.yaml")
    if args.cache is not None:
        seed_cache(batch, args.out / "batch.yaml", args.cache, args.out / "warm-up" / "assets")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    # The shared asset cache is filled once beforehand, so neither worker count pays for the conversions (--smoke
    # with --cache: filled from it alone).
    if not (args.smoke and args.cache is not None):
        run_batch(batch, args.out / "batch.yaml", args.out / "warm-up", ExecutorConfig(workers=1))
    shutil.copytree(args.out / "warm-up" / "assets", args.out / "assets")
    cpu_rates, wall_rates = {}, {}
    pinned = max(WORKER_COUNTS) * args.threads_per_job <= cores
    for workers in WORKER_COUNTS:
        folder = args.out / f"workers{workers}"
        shutil.copytree(args.out / "assets", folder / "assets")
        start, cpu, stolen = time.perf_counter(), children_cpu_seconds(), steal_seconds()
        run_batch(batch, args.out / "batch.yaml", folder, ExecutorConfig(
            workers=workers, threads_per_job=args.threads_per_job, pin_cores=pinned))
        seconds, cpu = time.perf_counter() - start, children_cpu_seconds() - cpu
        cpu_rates[workers], wall_rates[workers] = args.sequences / cpu * 3600, args.sequences / seconds * 3600
        left = "" if stolen is None else (f"; the host took {(steal_seconds() - stolen) / seconds:.2f} of the "
                                          f"{os.cpu_count()} cores on average (steal)")
        print(f"{workers} worker(s){' pinned' if pinned else ''}: {args.sequences} sequences of {args.duration:g} s in "
              f"{seconds:.1f} s wall, {cpu:.1f} CPU s = {cpu_rates[workers]:.0f} sequences per CPU-hour, "
              f"{wall_rates[workers]:.0f} per hour{left}")
    efficiency = cpu_rates[2] / cpu_rates[1]
    verdict = "meets" if efficiency >= EFFICIENCY_TARGET else "misses"
    print(f"executor efficiency (sequences per CPU-hour, 2 workers / 1): {efficiency:.2f} ({verdict} the "
          f">= {EFFICIENCY_TARGET} target)")
    shared = "" if pinned else ", unpinned: the workers share them"
    print(f"absolute scaling 1 -> 2 workers: {wall_rates[2] / wall_rates[1]:.2f}x on {cores} cores{shared}")


if __name__ == "__main__":
    main()

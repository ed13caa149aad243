"""Sequences per hour of `grade batch` on the local pool with 1 and 2 workers, and the scaling ratio.

The batch is the demo shortened to --duration simulated seconds (default 2 s, 640x480 camera) crossed with
--sequences seeds; each worker count runs it into a fresh folder under --out, timed end to end (conversions,
placement, simulation, recording; one process per job). Two setups are measured, one after the other:
- the executor's scaling (target >= 1.8x): each worker brings a core of its own, as a cluster node per worker or a
  machine with more cores than workers would: every job renders on one thread (`threads_per_job: 1`) and its
  threads (physics and exploration, the render and writer threads, Embree's builds) stay on its worker's core
  (`pin_cores`), so one worker leaves the second core idle and two use both;
- this machine's throughput with `grade batch`'s defaults: the cores divided among the workers, unpinned. One job
  alone already keeps ~1.4 of the 2 cores busy, so two workers cannot double it here.
`--threads-per-job N` and/or `--pin-cores` measure just that one setup instead.

On a virtual machine the host may take CPU time back ("steal", read from /proc/stat on Linux): the cores
left to the jobs are printed with each run, since no executor can scale past them.

    .venv/bin/python benchmarks/batch_scaling.py [--out runs/bench/batch] [--sequences 4] [--duration 2]
                                                 [--threads-per-job N] [--pin-cores]
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import yaml

from pipeline.batch import run_batch
from pipeline.batch_config import ExecutorConfig, load_batch

ROOT = Path(__file__).resolve().parents[1]
PROC_STAT = Path("/proc/stat")
STEAL_FIELD = 8  # of the "cpu" line: user nice system idle iowait irq softirq steal ...


def steal_seconds() -> float | None:
    """CPU seconds the hypervisor has taken from this machine since boot (all cores), if the OS says."""
    if not PROC_STAT.exists():
        return None
    fields = PROC_STAT.read_text().splitlines()[0].split()
    return int(fields[STEAL_FIELD]) / os.sysconf("SC_CLK_TCK") if len(fields) > STEAL_FIELD else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "batch")
    parser.add_argument("--sequences", type=int, default=4)
    parser.add_argument("--duration", type=float, default=2.0)
    parser.add_argument("--threads-per-job", type=int, default=None,
                        help="render threads of every job (default: the cores divided by the workers)")
    parser.add_argument("--pin-cores", action="store_true",
                        help="run each worker's jobs on cores of their own (executor.pin_cores)")
    args = parser.parse_args()
    os.environ.setdefault("GRADE_QUIET", "1")
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    experiment = yaml.safe_load((ROOT / "configs" / "demo.yaml").read_text())
    experiment["simulation"]["duration"] = args.duration
    (args.out / "experiment.yaml").write_text(yaml.safe_dump(experiment))
    (args.out / "batch.yaml").write_text(yaml.safe_dump({"base": "experiment.yaml",
                                                         "seeds": list(range(1, args.sequences + 1))}))
    batch = load_batch(args.out / "batch.yaml")
    setups = [("executor scaling (a core per worker: 1 render thread per job, pinned)", 1, True),
              ("this machine's throughput (grade batch's defaults: the cores divided among the workers)", None, False)]
    if args.threads_per_job is not None or args.pin_cores:
        title = f"render threads per job: {args.threads_per_job or 'cores / workers'}"
        setups = [(title + (", pinned" if args.pin_cores else ""), args.threads_per_job, args.pin_cores)]
    for index, (title, threads, pin) in enumerate(setups):
        print(f"== {title}")
        rates = {}
        for workers in (1, 2):
            start, stolen = time.perf_counter(), steal_seconds()
            run_batch(batch, args.out / "batch.yaml", args.out / f"setup{index}-workers{workers}", ExecutorConfig(
                workers=workers, threads_per_job=threads, pin_cores=pin))
            seconds = time.perf_counter() - start
            rates[workers] = args.sequences / seconds * 3600
            left = "" if stolen is None else (f"; the host took {(steal_seconds() - stolen) / seconds:.2f} of the "
                                              f"{os.cpu_count()} cores on average (steal)")
            print(f"{workers} worker(s): {args.sequences} sequences of {args.duration:g} s in {seconds:.1f} s = "
                  f"{rates[workers]:.0f} sequences/hour{left}")
        print(f"scaling 1 -> 2 workers: {rates[2] / rates[1]:.2f}x on {os.cpu_count()} cores")

if __name__ == "__main__":
    main()

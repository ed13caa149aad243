"""ORB-SLAM3 (RGB-D) on a static and a dynamic demo sequence (one person vs ten walking in the flat, the same
UAV mission otherwise): ATE RMSE, missing time and ORB-SLAM3's frames per second, through `grade benchmark slam`.

The sequences are recorded into --out/sequences (cached); the vocabulary is PYORBSLAM3_VOCAB's ORBvoc.txt when
set, else one built from the static sequence's frames (10 x 3 words: enough to track, less discriminative
than ORB-SLAM3's own). Results are redone each time (--out/results is cleared).

    .venv/bin/python benchmarks/slam.py [--out runs/bench/slam] [--repetitions 1] [--cache DIR] [--set key=value ...]
                                        [--smoke]

--smoke: two 0.25 s sequences (1 and 3 people; a 160x120 camera, as ORB-SLAM3 throws on much smaller images; the
tests' tiny run's assets): the figures mean nothing.
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from core.formats.runner import RUNNER_FILE, read_runner_record
from pipeline.benchmark import slam_benchmark
from pipeline.benchmark_config import SlamBenchmarkConfig, SlamMethod, SlamSequence

ROOT = Path(__file__).resolve().parents[1]
HUMANS = {"static": 1, "dynamic": 10}
SMOKE_HUMANS = {"static": 1, "dynamic": 3}
SMOKE_RUN = ["simulation.duration=0.25", "simulation.bootstrap=0.25", "flying_objects.count={min: 1, max: 1}",
             "robot.sensors.cameras.0.width=160", "robot.sensors.cameras.0.height=120"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "slam")
    parser.add_argument("--repetitions", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=None, help="asset cache (default: each sequence's own)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    os.environ.setdefault("GRADE_QUIET", "1")
    shutil.rmtree(args.out / "results", ignore_errors=True)
    humans, overrides = HUMANS, list(args.overrides)
    if args.smoke:
        humans, overrides, args.repetitions = SMOKE_HUMANS, [*SMOKE_RUN, *overrides], 1
    if args.cache is not None:
        overrides.append(f"assets_dir={args.cache.resolve()}")
    config = SlamBenchmarkConfig(
        name="static vs dynamic", output_dir=args.out, repetitions=args.repetitions,
        sequences=[SlamSequence(name=name, experiment=ROOT / "configs" / "demo.yaml",
                                set=[f"humans.count={{min: {count}, max: {count}}}", *overrides])
                   for name, count in humans.items()],
        methods=[SlamMethod(name="orbslam3-rgbd", runner="orbslam3", mode="rgbd")])
    result = slam_benchmark(config)
    print(f"on {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}")
    for cell in result.cells:
        summary = cell.summary()
        runs = sorted((args.out / "results" / cell.method / cell.sequence).glob("run*"))
        fps = [read_runner_record(run).fps for run in runs if (run / RUNNER_FILE).is_file()]
        if summary["ate_rmse_mean_m"] is None:
            print(f"{cell.method} on {cell.sequence} ({humans[cell.sequence]} people): every run failed")
            continue
        print(f"{cell.method} on {cell.sequence} ({humans[cell.sequence]} people): ATE RMSE "
              f"{summary['ate_rmse_mean_m'] * 100:.2f} cm, missing time {summary['missing_time_mean_s']:.2f} s "
              f"(tracked {summary['tracked_fraction_mean']:.1%}), {sum(fps) / max(len(fps), 1):.1f} frames/s, "
              f"{summary['runs']} runs ({summary['failed']} failed)")


if __name__ == "__main__":
    main()

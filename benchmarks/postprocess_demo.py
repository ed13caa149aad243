"""Time to post-process the demo recording with every step (`--preset grade-paper`: IMU noise, RealSense depth
noise, 0.02 s motion blur with 30 sub-poses, rolling shutter), relative to the time it took to record.

The demo (configs/demo.yaml, 11 s simulated, 640x480 at 30 Hz) is generated into --out first when it is not
there yet (cached afterwards), then post-processed with --force each time this runs.

    .venv/bin/python benchmarks/postprocess_demo.py [--out runs/bench/postprocess] [--cache DIR]
                                                    [--set key=value ...] [--smoke]

--smoke: a 0.25 s recording with a 96x72 camera (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from core.config import PostprocessConfig
from core.config_io import load_experiment
from core.recording import Recording
from pipeline.generate import generate
from postprocess.process_run import PRESETS, process_run

ROOT = Path(__file__).resolve().parents[1]
# --smoke: the demo at its smallest (the tests' tiny run's assets, so a shared --cache has them): 0.25 s, 1 human,
# 1 flying object, a 96x72 camera
SMOKE_RUN = ["simulation.duration=0.25", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
             "flying_objects.count={min: 1, max: 1}", "robot.sensors.cameras.0.width=96",
             "robot.sensors.cameras.0.height=72"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "postprocess")
    parser.add_argument("--cache", type=Path, default=None, help="asset cache (default: the run's)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    overrides = [*SMOKE_RUN, *args.overrides] if args.smoke else args.overrides
    generate(load_experiment(ROOT / "configs" / "demo.yaml", overrides), args.out, cache=args.cache)
    recording = Recording.open(args.out)
    recorded = recording.info.wall_seconds.get("simulate_and_record")
    frames = sum(len(recording.camera(name)) for name in recording.cameras)
    settings = PostprocessConfig.model_validate(PRESETS["grade-paper"])
    load = os.getloadavg()[0]
    start, cpu = time.perf_counter(), time.process_time()
    process_run(args.out, settings, force=True)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    print(f"post-processing the demo (grade-paper preset: IMU, depth, blur 30 sub-poses, rolling shutter): "
          f"{seconds:.1f} s for {frames} frames = {frames / seconds:.2f} frames/s ({cpu_seconds / frames * 1e3:.0f} ms "
          f"CPU per frame); load {load:.2f} -> {os.getloadavg()[0]:.2f}")
    if recorded:
        print(f"recording it took {recorded:.1f} s: post-processing costs {seconds / recorded:.2f}x the recording time")


if __name__ == "__main__":
    main()

"""Replay speed relative to the original recording, for teleport and physics replays of the demo.

The demo (configs/demo.yaml: 11 s simulated, a 640x480 camera at 30 Hz, two IMUs, ROS 2 bag) is generated into
--run when it is not there yet (cached afterwards); each replay is written to a fresh folder under --out and
timed end to end (scene load, stepping or teleporting, rendering, writing, the deviation report). Printed:
seconds, the ratio to the recording's own simulate-and-record time (run.json), and the deviation found.

    .venv/bin/python benchmarks/replay_speed.py [--run runs/bench/replay/run] [--out runs/bench/replay]
                                                [--cache DIR] [--set key=value ...] [--smoke]

--smoke: a 0.25 s recording with a 96x72 camera (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

from core.config_io import load_experiment
from core.recording import Recording
from pipeline.generate import generate
from replay.run import replay_run

ROOT = Path(__file__).resolve().parents[1]
# --smoke: the demo at its smallest (the tests' tiny run's assets, so a shared --cache has them): 0.25 s, 1 human,
# 1 flying object, a 96x72 camera
SMOKE_RUN = ["simulation.duration=0.25", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
             "flying_objects.count={min: 1, max: 1}", "robot.sensors.cameras.0.width=96",
             "robot.sensors.cameras.0.height=72"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=ROOT / "runs" / "bench" / "replay" / "run")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "replay")
    parser.add_argument("--cache", type=Path, default=None, help="asset cache (default: the run's)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    os.environ.setdefault("GRADE_QUIET", "1")
    overrides = [*SMOKE_RUN, *args.overrides] if args.smoke else args.overrides
    generate(load_experiment(ROOT / "configs" / "demo.yaml", overrides), args.run, cache=args.cache)
    recorded = Recording.open(args.run).info.wall_seconds.get("simulate_and_record")
    print(f"the demo's recording took {recorded:.1f} s on {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}")
    for mode in ("teleport", "physics"):
        out = args.out / mode
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        report = replay_run(args.run, out, mode=mode).report
        seconds = time.perf_counter() - start
        camera = report.cameras.get("camera")
        frames = f"{camera.identical_frames}/{camera.frames} frames identical" if camera else "no camera compared"
        print(f"{mode}: {seconds:.1f} s = {seconds / recorded:.2f}x the recording time; pose deviation max "
              f"{report.pose.max_translation:.2g} m, {frames}")


if __name__ == "__main__":
    main()

"""Real-time factor of the two-robot run (configs/multi-robot.yaml: a UAV and a TIAGo++ Omni exploring the
procedural flat, a 320x240 camera each at 30 Hz, an IMU each, ROS 2 bag), beside each robot alone in the same
scene and settings (the others' configs are the two-robot config with one robot), so the cost of the second
robot shows. Each run is recorded afresh into --out; printed per run: simulated seconds, the simulate-and-record
wall seconds (run.json) and their ratio, the real-time factor (above 1: faster than real time).

    .venv/bin/python benchmarks/multi_robot.py [--out runs/bench/multi-robot] [--cache DIR] [--set key=value ...]
                                               [--smoke]

--smoke: 0.25 s simulated, 1 human, 1 flying object, 96x72 cameras (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import os
import shutil
from pathlib import Path

from core.config_io import load_experiment
from pipeline.generate import generate

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "multi-robot.yaml"
SMOKE_RUN = ["simulation.duration=0.25", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
             "flying_objects.count={min: 1, max: 1}",
             *(f"robots.{robot}.sensors.cameras.0.{key}" for robot in (0, 1) for key in ("width=96", "height=72"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "multi-robot")
    parser.add_argument("--cache", type=Path, default=None, help="asset cache (default: --out/assets)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    os.environ.setdefault("GRADE_QUIET", "1")
    assets = args.cache or args.out / "assets"
    overrides = [*SMOKE_RUN, *args.overrides] if args.smoke else args.overrides
    two = load_experiment(CONFIG, [*overrides, f"assets_dir={assets}"])
    runs = {"uav + tiago": two}
    for index, name in enumerate(two.robot_names):  # each robot alone: the list with only its entry
        runs[f"{name} alone"] = load_experiment(CONFIG, [*overrides, f"assets_dir={assets}",
                                                         f"robots=[{two.robots[index].model_dump_json()}]"])
    print(f"{os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}")
    for label, config in runs.items():
        out = args.out / label.replace(" ", "_").replace("+", "and")
        shutil.rmtree(out, ignore_errors=True)
        info = generate(config, out).info
        simulated = info.sim_time_end - info.sim_time_start
        wall = info.wall_seconds["simulate_and_record"]
        print(f"{label:14s} {simulated:6.2f} s simulated in {wall:7.2f} s: real-time factor {simulated / wall:.3f}")


if __name__ == "__main__":
    main()

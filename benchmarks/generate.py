"""End-to-end time of the demo (`grade demo` = configs/demo.yaml) with the per-stage split and the
real-time factor of the simulate-and-record stage.

Stages: convert (procedural assets, from an empty cache), place + compose, simulate + record. Inside
simulate + record, time spent rendering camera frames, stepping physics, and everything else
(exploration planning, bags, ground-truth files, state log) is measured by wrapping the backend's
`render` and `step`.

    .venv/bin/python benchmarks/generate.py [--out runs/bench/generate] [--set key=value ...]
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

from core.config_io import load_experiment
from pipeline.generate import generate
from pipeline.prepare import convert_assets, place_and_compose
from simulation.embedded import EmbeddedBackend

ROOT = Path(__file__).resolve().parents[1]


class Timer:
    def __init__(self) -> None:
        self.seconds, self.calls = 0.0, 0

    def wrap(self, method):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1
        return timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "generate")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    args = parser.parse_args()
    config = load_experiment(ROOT / "configs" / "demo.yaml", args.overrides)
    shutil.rmtree(args.out, ignore_errors=True)
    cache = args.out / "assets"

    start = time.perf_counter()
    environment, humans, objects = convert_assets(config, cache)
    convert = time.perf_counter() - start
    start = time.perf_counter()
    place_and_compose(config, environment, humans, objects, args.out)
    place = time.perf_counter() - start

    render, step = Timer(), Timer()
    EmbeddedBackend.render = render.wrap(EmbeddedBackend.render)
    EmbeddedBackend.step = step.wrap(EmbeddedBackend.step)
    start = time.perf_counter()
    result = generate(config, args.out, cache=cache)
    record = time.perf_counter() - start
    info = result.info
    sim_time = info.sim_time_end
    total = convert + place + record
    camera = config.robot.sensors.cameras[0]
    print(f"demo: {config.name}, {sim_time:.1f} s simulated ({config.simulation.bootstrap:g} s bootstrap), "
          f"{camera.width}x{camera.height} camera at {camera.rate_hz:g} Hz, "
          f"{info.frame_counts.get(f'camera/{camera.name}', 0)} frames; load {os.getloadavg()[0]:.2f}")
    print(f"{'stage':<34}{'seconds':>9}{'share':>8}")
    rows = [("convert (procedural assets)", convert), ("place + compose", place),
            ("simulate + record", record),
            ("  rendering (camera frames)", render.seconds), ("  physics steps", step.seconds),
            ("  exploration, bags, gt files", record - render.seconds - step.seconds)]
    for name, seconds in rows:
        print(f"{name:<34}{seconds:9.2f}{seconds / total:8.1%}")
    print(f"{'total':<34}{total:9.2f}")
    print(f"render calls: {render.calls} (a frame shared by the explorer and the recorder renders once); "
          f"real-time factor of simulate + record: {sim_time / record:.2f}x; end to end: {sim_time / total:.2f}x")
    print(f"mission: {info.mission}")


if __name__ == "__main__":
    main()

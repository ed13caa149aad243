"""Frames per second of `grade export coco` (RLE masks, keypoints) and `grade export yolo` (detect, segment)
at 640x480, on the demo recording (configs/demo.yaml: 640x480 at 30 Hz).

The recording is generated into --run first when it is not there yet (cached afterwards); each export is
written to a fresh folder under --out and timed from the call to its return (labelling, image hard links,
annotation files). COCO is timed with and without GRADE's bad-frame filter, which decodes every frame's RGB
and depth besides its instance image; the COCO run uses the default `coco` categories and the nyu40 ones
(every class, walls and floors included: the most masks per frame).

    .venv/bin/python benchmarks/export_speed.py [--run runs/bench/export/run] [--out runs/bench/export]
                                                [--cache DIR] [--set key=value ...] [--smoke]

--smoke: a 0.25 s recording with a 96x72 camera (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from core.config_io import load_experiment
from export.annotate import Filters
from export.coco import export_coco
from export.common import DEFAULT_SPLIT, open_sequences
from export.yolo import export_yolo
from pipeline.generate import generate

ROOT = Path(__file__).resolve().parents[1]
# --smoke: the demo at its smallest (the tests' tiny run's assets, so a shared --cache has them): 0.25 s, 1 human,
# 1 flying object, a 96x72 camera
SMOKE_RUN = ["simulation.duration=0.25", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
             "flying_objects.count={min: 1, max: 1}", "robot.sensors.cameras.0.width=96",
             "robot.sensors.cameras.0.height=72"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, default=ROOT / "runs" / "bench" / "export" / "run")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "export")
    parser.add_argument("--cache", type=Path, default=None, help="asset cache (default: the run's)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    os.environ.setdefault("GRADE_QUIET", "1")  # no progress bars in the timings
    overrides = [*SMOKE_RUN, *args.overrides] if args.smoke else args.overrides
    generate(load_experiment(ROOT / "configs" / "demo.yaml", overrides), args.run, cache=args.cache)
    sequences = open_sequences([args.run])
    camera = sequences[0].recording.camera(sequences[0].cameras[0])
    frames = sum(len(s.recording.camera(c)) for s in sequences for c in s.cameras)
    print(f"{frames} frames of {camera[0].width}x{camera[0].height} on {os.cpu_count()} cores; "
          f"load {os.getloadavg()[0]:.2f}")
    cases: list[tuple[str, Callable[[Path], dict[str, int]]]] = [
        ("coco, RLE masks + keypoints, coco categories", lambda out: export_coco(sequences, out)),
        ("coco, RLE masks + keypoints, no bad-frame filter",
         lambda out: export_coco(sequences, out, filters=Filters(bad_frames=False))),
        ("coco, RLE masks, nyu40 categories (every class)",
         lambda out: export_coco(sequences, out, categories="nyu40", filters=Filters(bad_frames=False))),
        ("yolo detect", lambda out: export_yolo(sequences, out, split=DEFAULT_SPLIT)),
        ("yolo segment", lambda out: export_yolo(sequences, out, task="segment", split=DEFAULT_SPLIT)),
        ("yolo segment, nyu40 categories",
         lambda out: export_yolo(sequences, out, task="segment", categories="nyu40",
                                 filters=Filters(bad_frames=False))),
    ]
    for index, (name, run) in enumerate(cases):
        out = args.out / f"case{index}"
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        counts = run(out)
        seconds = time.perf_counter() - start
        print(f"{name}: {frames / seconds:.0f} frames/s ({seconds:.2f} s; {counts})")


if __name__ == "__main__":
    main()

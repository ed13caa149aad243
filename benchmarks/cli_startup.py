"""How long `grade` takes to answer before any work: `grade --help`, and one command's `--help` (which imports
that command's module); and a whole tiny `grade generate` (0.5 s at 96x72, one person and one flying object, the
asset cache warm), start to exit, where the process's own start-up and way out weigh as much as the run. Each is
run --repeats times as a fresh process, as a shell runs it (the venv's console script); printed: median and
fastest wall time. The issue's target: `grade --help` under 0.5 s.

    .venv/bin/python benchmarks/cli_startup.py [--repeats 15] [--cache DIR] [--smoke]

--smoke: one run of each (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRADE = Path(sys.executable).parent / "grade"
DEMO = Path(__file__).resolve().parents[1] / "configs" / "demo.yaml"
CASES = (["--help"], ["generate", "--help"], ["export", "coco", "--help"])
TINY = ["simulation.duration=0.5", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
        "flying_objects.count={min: 1, max: 1}", "robot.sensors.cameras.0.width=96",
        "robot.sensors.cameras.0.height=72", "exploration.planner=waypoints", "exploration.waypoints=[[9, 9, 1.5]]"]


def wall_times(args: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([str(GRADE), *args], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def tiny_generate(cache: Path, out: Path) -> list[str]:
    """`grade generate` of the tiny demo into `out`, recorded again each time (--force)."""
    overrides = [arg for override in [*TINY, f"assets_dir={cache}"] for arg in ("--set", override)]
    return ["generate", str(DEMO), "--out", str(out), "--force", *overrides]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--cache", type=Path, help="asset cache (default: a temporary folder)")
    parser.add_argument("--smoke", action="store_true", help="one run of each (meaningless figures)")
    args = parser.parse_args()
    repeats = 1 if args.smoke else args.repeats
    wall_times(["--help"], 1 if args.smoke else 2)  # page the interpreter and packages in first, as a shell would have
    with tempfile.TemporaryDirectory(prefix="grade-startup-") as scratch:
        generate = tiny_generate(args.cache or Path(scratch) / "assets", Path(scratch) / "run")
        wall_times(generate, 1)  # fills the asset cache
        print(f"{'command':<28} {'median s':>9} {'fastest s':>10}")
        for label, command, runs in [*((" ".join(c), c, repeats) for c in CASES),
                                     ("generate (tiny, 0.75 s)", generate, max(1, repeats // 3))]:
            times = wall_times(command, runs)
            print(f"{'grade ' + label:<28} {statistics.median(times):>9.3f} {min(times):>10.3f}")


if __name__ == "__main__":
    main()

"""How long `grade` takes to answer before any work: `grade --help`, and one command's `--help` (which imports
that command's module). Each is run --repeats times as a fresh process, as a shell runs it (the venv's console
script); printed: median and fastest wall time. The issue's target: `grade --help` under 0.5 s.

    .venv/bin/python benchmarks/cli_startup.py [--repeats 15] [--smoke]

--smoke: one run of each (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

GRADE = Path(sys.executable).parent / "grade"
CASES = (["--help"], ["generate", "--help"], ["export", "coco", "--help"])


def wall_times(args: list[str], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([str(GRADE), *args], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="one run of each (meaningless figures)")
    args = parser.parse_args()
    repeats = 1 if args.smoke else args.repeats
    wall_times(["--help"], 1 if args.smoke else 2)  # page the interpreter and packages in first, as a shell would have
    print(f"{'command':<28} {'median s':>9} {'fastest s':>10}")
    for args in CASES:
        times = wall_times(args, repeats)
        print(f"{'grade ' + ' '.join(args):<28} {statistics.median(times):>9.3f} {min(times):>10.3f}")


if __name__ == "__main__":
    main()

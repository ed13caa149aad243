"""How long and how much memory `grade` takes to refuse a hostile input: YAML bombs and cycles, nesting thousands
deep, a 10 MB line, batches whose expansion would be huge, a config that is a FIFO or /dev/zero, a live run
without its ROS master. Each case runs as a fresh process, as a shell runs it (the venv's console script); printed:
its wall time, its peak resident memory and its exit status, then the slowest and the largest. The issue's
bound: about 2 s and 200 MB each.

    .venv/bin/python benchmarks/refusals.py [--smoke]

--smoke: three cases (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

GRADE = Path(sys.executable).parent / "grade"
DEMO = Path(__file__).resolve().parents[1] / "configs" / "demo.yaml"
BOUND_S, BOUND_MB = 2.0, 200.0


def alias_bomb(width: int, depth: int) -> str:
    text = "a0: &a0 [" + ", ".join(["x"] * width) + "]\n"
    return text + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]\n" for i in range(1, depth))


def batch(seeds: list[int], variants: list[dict]) -> str:
    listed = ", ".join("{" + ", ".join(f"{k}: {v}" for k, v in variant.items()) + "}" for variant in variants)
    return f"base: {DEMO}\nseeds: {seeds}\nvariants: [{listed}]\n"


# name: what to put at the config's path (its text, or a function making it there); `batch ...` cases run
# `grade batch`, the others `grade config validate`.
YAML: dict[str, str | Callable[[Path], None]] = {
    "alias bomb (10^9 values)": alias_bomb(10, 9),
    "alias cycle": "a: &a [*a]\n",
    "lists nested 5000 deep": "a: " + "[" * 5000 + "]" * 5000 + "\n",
    "maps nested 3000 deep": "a: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
    "150,000 values": "a: [" + "1, " * 150_000 + "]\n",
    "a 10 MB line": "a: " + "x" * 10_000_000 + "\n",
    "a FIFO": lambda path: os.mkfifo(path),
    "/dev/zero": lambda path: path.symlink_to("/dev/zero"),
    "batch, count 10^8": batch([1], [{"name": "v", "count": 100_000_000}]),
    "batch, 200 seeds x 200 variants": batch(list(range(200)), [{"name": f"v{i}"} for i in range(200)]),
    "batch, no seeds": batch([], [{"name": "v"}]),
}
SMOKE = ("alias bomb (10^9 values)", "a FIFO", "batch, count 10^8")


def refuse(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall s, peak resident MB and exit status of `grade ARGS`."""
    start = time.perf_counter()
    process = subprocess.Popen([str(GRADE), *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(process.pid, 0)  # reaps it, with its own peak memory
    process.returncode = os.waitstatus_to_exitcode(status)  # so that Popen does not wait for it again
    return time.perf_counter() - start, usage.ru_maxrss / 1024, process.returncode


def cases(folder: Path, smoke: bool) -> list[tuple[str, list[str], dict[str, str]]]:
    """Each case's name, command and environment, its input written under `folder`."""
    made = []
    for index, (name, content) in enumerate(YAML.items()):
        if smoke and name not in SMOKE:
            continue
        path = folder / f"case{index}.yaml"
        if callable(content):
            content(path)
        else:
            path.write_text(content)
        command = "batch" if name.startswith("batch") else "config"
        made.append((name, [command, *(["validate"] if command == "config" else []), str(path)], dict(os.environ)))
    if not smoke:
        nowhere = {**os.environ, "ROS_MASTER_URI": "http://127.0.0.1:9"}  # the discard port: nothing answers
        made.append(("live run, no ROS master", ["generate", str(DEMO), "--out", str(folder / "run"), "--live", "ros1"],
                     nowhere))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="three cases (meaningless figures)")
    args = parser.parse_args()
    subprocess.run([str(GRADE), "--help"], check=True, capture_output=True)  # page the interpreter in, as a shell has
    with tempfile.TemporaryDirectory(prefix="grade-refusals-") as scratch:
        results = [(name, *refuse(command, env)) for name, command, env in cases(Path(scratch), args.smoke)]
    print(f"{'hostile input':<34} {'wall s':>7} {'peak MB':>8} {'exit':>5}")
    for name, wall, peak, code in results:
        over = "  over the bound" if wall > BOUND_S or peak > BOUND_MB else ""
        print(f"{name:<34} {wall:>7.2f} {peak:>8.0f} {code:>5}{over}")
    slowest, largest = max(results, key=lambda r: r[1]), max(results, key=lambda r: r[2])
    print(f"slowest: {slowest[1]:.2f} s ({slowest[0]}); largest: {largest[2]:.0f} MB ({largest[0]}); "
          f"bound {BOUND_S:g} s, {BOUND_MB:g} MB")


if __name__ == "__main__":
    main()

"""Mean relative trajectory error of the lightweight TIAGo++ Omni model against the physical one,
on the paper's command set.

Run: .venv/bin/python benchmarks/tiago_mre.py [--model lightweight] [--reference physical] [--s-curve NET.npz]
     [--smoke]

Both models start at rest and follow each 4 s command through the same S-curve follower: 20
speeds from 0.05 to 1.0 m/s along x, y and the x-y diagonal, and 20 yaw rates from 0.05 to 1.5
rad/s. Per run, the relative error is the end-point distance over the reference's displacement
(the yaw difference over the reference's yaw turned, for rotations); the table gives the mean and
standard deviation over each group's 20 runs (see simulation.tiago.drive). --smoke: each group's fastest command
alone (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from core.formats.s_curve import load_network
from core.progress import progress_task
from simulation.tiago.drive import compare_models, paper_commands


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="lightweight", choices=["lightweight", "physical"])
    parser.add_argument("--reference", default="physical", choices=["lightweight", "physical"])
    parser.add_argument("--s-curve", type=Path, default=None, help="calibrated network (default: built-in)")
    parser.add_argument("--smoke", action="store_true", help="one command per group (meaningless figures)")
    args = parser.parse_args()
    network = load_network(args.s_curve) if args.s_curve is not None else None
    groups = paper_commands()
    if args.smoke:
        groups = {group: twists[-1:] for group, twists in groups.items()}
    per_group = len(next(iter(groups.values())))
    started = time.perf_counter()
    with progress_task("command runs", sum(len(t) for t in groups.values())) as advance:
        table = compare_models(args.model, args.reference, network, groups, lambda: advance())
    elapsed = time.perf_counter() - started
    print(f"relative trajectory error, {args.model} vs {args.reference} (4 s commands from rest, {per_group} per "
          "group)")
    print(f"{'group':<10}{'mean %':>10}{'std %':>10}")
    for group, (mean, std) in table.items():
        print(f"{group:<10}{100 * mean:>10.2f}{100 * std:>10.2f}")
    print(f"wall time {elapsed:.1f} s for {sum(len(t) for t in groups.values())} command pairs")


if __name__ == "__main__":
    main()

"""Placement speed: 40 human candidates in an environment, the robot start and flying objects.

Prints candidate poses tested per second, the acceptance rate and the total time (target: 40
candidates in under 10 s on a 2-core machine). By default it builds the procedural demo assets
(environment, 6 humans, 4 objects) in a temporary folder; give --env and --humans to use others.

    .venv/bin/python benchmarks/place_humans.py [--env PACKAGE --humans DIR] [--count 40] [--seed 0] [--smoke]

--smoke: a one-room procedural flat without furniture, 2 humans and 1 object, 4 candidates (the figures mean
nothing).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("GRADE_QUIET", "1")  # before the project's loggers are made

from core.config import FlyingObjectsConfig, HumansConfig, IntRange, RobotConfig
from placement.humans import load_human, place_humans
from placement.place import list_packages, place_scene
from placement.world import load_placement_world

# --smoke's procedural assets (build_demo_assets' arguments) and candidates
SMOKE_ASSETS, SMOKE_COUNT = {"rooms": 1, "furniture": 0, "humans": 2, "objects": 1}, 4


def demo_assets(folder: Path, smoke: bool = False) -> tuple[Path, list[Path], list[Path]]:
    from asset_converters.procedural import build_demo_assets

    demo = build_demo_assets(folder, seed=0, **(SMOKE_ASSETS if smoke else {}))
    return demo.environment, demo.humans, demo.objects


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", type=Path, help="environment package (default: procedural demo)")
    parser.add_argument("--humans", type=Path, help="folder of animated packages (default: procedural demo)")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    if args.smoke:
        args.count = SMOKE_COUNT

    with tempfile.TemporaryDirectory() as tmp:
        if args.env and args.humans:
            environment, humans, objects = args.env, list_packages(args.humans, "animated"), []
        else:
            print("building the procedural demo assets ...", flush=True)
            environment, humans, objects = demo_assets(Path(tmp), args.smoke)
        config = HumansConfig(count=IntRange(min=args.count, max=args.count))

        start = time.perf_counter()
        world = load_placement_world(environment)
        loaded = time.perf_counter()
        placed, rejected, _, candidates = place_humans(world, humans, config, args.seed)
        humans_done = time.perf_counter()
        flying = FlyingObjectsConfig(count=IntRange(min=len(objects), max=len(objects)))
        scene = place_scene(environment, humans, objects, config, flying, RobotConfig(), args.seed)
        end = time.perf_counter()
        triangles = sorted(len(load_human(h).trace.faces) for h in humans)

    tries = sum(h.tries for h in placed) + sum(r.tries for r in rejected)
    placing = humans_done - loaded
    print(f"environment  {environment.name}: {len(world.collision.faces)} collision triangles, "
          f"{len(world.tiles.objects)} tiles, {len(world.solids)} closed pieces, floor {world.polygon.area:.1f} m^2, "
          f"loaded in {loaded - start:.2f} s")
    print(f"humans       {len(humans)} packages, trace triangles {triangles}")
    print(f"candidates   {candidates}, placed {len(placed)}, acceptance rate {len(placed) / max(candidates, 1):.0%}")
    print(f"placing      {placing:.2f} s (with loading the traces): {candidates / placing:.1f} candidates/s, "
          f"{tries} poses tested = {tries / placing:.0f} poses/s")
    print(f"total        place_scene end to end (world, robot, humans, {len(scene.placement.flying_objects)} "
          f"flying objects): {end - humans_done:.2f} s")


if __name__ == "__main__":
    main()

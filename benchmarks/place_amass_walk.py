"""How a long mocap clip fits a real house with and without windowing (humans.window).

Converts a 3D-Front house JSON (without furniture models) and an AMASS/SMPL sequence with a synthetic
body-shaped SMPL model (the real one cannot be shipped), once whole and once per window setting, and prints
each package's sweep (largest horizontal distance between two joints over the clip), its trace's footprint,
the conversion time and how many of N copies placement lands in the house.

    .venv/bin/python benchmarks/place_amass_walk.py [--house JSON] [--sequence NPZ] [--count 7] [--seed 0] [--smoke]

--smoke: the house's smallest room alone, the clip at 5 fps, the whole clip and the default window, one copy
(the figures mean nothing).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the synthetic model builder shared with the tests
os.environ.setdefault("GRADE_QUIET", "1")  # before the project's loggers are made

import numpy as np
from smpl_fixtures import build_body_model, save_npz

from asset_converters.front3d import convert_house
from asset_converters.smpl import convert_sequence
from asset_converters.smpl.windows import horizontal_diameter
from core.assets.layout import ANIMATION_FILE
from core.config import ClipWindowConfig, HumansConfig, IntRange
from placement.humans import load_human, place_humans
from placement.world import load_placement_world

REALDATA = ROOT.parent / "shared" / "realdata"
HOUSE = REALDATA / "front3d" / "0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json"
SEQUENCE = REALDATA / "amass" / "cmu_01_01_smpl_poses.npz"
WINDOWS = {"whole": ClipWindowConfig(select="whole"), "least_sweep 2 s (default)": ClipWindowConfig(),
           "least_sweep 3 s": ClipWindowConfig(duration=3.0), "least_sweep 4 s": ClipWindowConfig(duration=4.0)}
FPS = 30.0  # the converter's default
SMOKE_ROOM, SMOKE_FPS, SMOKE_WINDOWS = "Bathroom-771", 5.0, ("whole", "least_sweep 2 s (default)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--house", type=Path, default=HOUSE)
    parser.add_argument("--sequence", type=Path, default=SEQUENCE)
    parser.add_argument("--count", type=int, default=7, help="humans to place (GRADE: 7-40)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    room, fps, windows = None, FPS, WINDOWS
    if args.smoke:
        room, fps, args.count = SMOKE_ROOM, SMOKE_FPS, 1
        windows = {name: WINDOWS[name] for name in SMOKE_WINDOWS}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        save_npz(build_body_model(), tmp / "models" / "SMPL_NEUTRAL.npz")
        world = load_placement_world(convert_house(args.house, tmp / "house", room=room))
        print(f"house {args.house.name}: floor {world.polygon.area:.1f} m^2; sequence {args.sequence.name}")
        humans = HumansConfig(count=IntRange(min=args.count, max=args.count))
        for name, window in windows.items():
            start = time.perf_counter()
            package = convert_sequence(args.sequence, tmp / name.replace(" ", "_"), tmp / "models", fps=fps,
                                       window=window)
            seconds = time.perf_counter() - start
            asset = load_human(package)
            joints = np.load(package / ANIMATION_FILE)["joint_positions"]
            placed, _, _, candidates = place_humans(world, [package], humans, args.seed)
            first, stop = asset.meta.source.options["frames"]
            print(f"{name:26s} frames {first:4d}-{stop:4d}: sweep {horizontal_diameter(joints):5.2f} m, trace "
                  f"footprint {asset.trace.extents[0]:.2f} x {asset.trace.extents[1]:.2f} m, converted in "
                  f"{seconds:5.2f} s; placed {len(placed)} of {candidates}")


if __name__ == "__main__":
    main()

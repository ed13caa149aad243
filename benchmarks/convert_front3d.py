"""Convert a 3D-Front house and print the conversion time and the package size per file.

    .venv/bin/python benchmarks/convert_front3d.py [HOUSE.json] [--future-models DIR] [--room ID] [--smoke]

--smoke: the sample house's smallest room alone (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from asset_converters.front3d import convert_house

REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
DEFAULT_HOUSE = REALDATA / "front3d" / "0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json"
MB = 1024 * 1024
SMOKE_ROOM = "Bathroom-771"  # the sample house's room with the fewest pieces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("house", nargs="?", type=Path, default=DEFAULT_HOUSE)
    parser.add_argument("--future-models", type=Path, default=None)
    parser.add_argument("--room", default=None)
    parser.add_argument("--smoke", action="store_true", help="one small room (meaningless figures)")
    args = parser.parse_args()
    if args.smoke:
        args.room = args.room or SMOKE_ROOM
    with tempfile.TemporaryDirectory() as tmp:
        start, cpu_start = time.perf_counter(), time.process_time()  # benchmark timing only, never written to data
        package = convert_house(args.house, Path(tmp) / "house", future_models=args.future_models, room=args.room)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        files = sorted(p for p in package.rglob("*") if p.is_file())
        total = sum(p.stat().st_size for p in files)
        print(f"house: {args.house.name}" + (f" room {args.room}" if args.room else ""))
        print(f"conversion time: {elapsed:.2f} s wall, {cpu:.2f} s CPU (the machine may be shared)")
        print(f"package size: {total / MB:.3f} MB")
        for file in files:
            print(f"  {file.relative_to(package).as_posix():<20} {file.stat().st_size / MB:8.3f} MB")


if __name__ == "__main__":
    main()

"""Benchmark: convert the real AMASS sample with a synthetic full-size SMPL model.

The model has the real SMPL's sizes (6890 vertices, 13776 faces, 24 joints, 207 pose blend shapes) and is
generated here (the real one cannot be shipped). Prints conversion time and package size for both
representations. Usage: python benchmarks/convert_amass.py [--sample PATH] [--fps 30] [--smoke]

--smoke: a small model (12 x 16 rings and segments) and the sample resampled to 5 fps (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the synthetic model builder shared with the tests

from smpl_fixtures import build_model, save_npz

from asset_converters.smpl import convert_sequence, load_body_model, read_sequence, resample
from asset_converters.smpl.rig import body_animation
from asset_converters.smpl.sequences import UP_ROTATIONS, fit_joints

SAMPLE = ROOT.parent / "shared" / "realdata" / "amass" / "dmpl_sample.npz"
RINGS, SEGMENTS = 84, 82  # 84 * 82 + 2 = 6890 vertices, 2 * 84 * 82 = 13776 faces: SMPL's counts
SMOKE_RINGS, SMOKE_SEGMENTS, SMOKE_FPS = 12, 16, 5.0


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path, default=SAMPLE)
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    rings, segments = (SMOKE_RINGS, SMOKE_SEGMENTS) if args.smoke else (RINGS, SEGMENTS)
    if args.smoke:
        args.fps = SMOKE_FPS
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        model = build_model(rings=rings, segments=segments)
        save_npz(model, tmp / "models" / "SMPL_FEMALE.npz")
        print(f"model: {len(model['v_template'])} vertices, {len(model['f'])} faces, "
              f"posedirs {model['posedirs'].shape}")
        for representation in ("skeleton", "points"):
            # The SMPL part alone (read, resample, forward pass / rig), then the whole conversion, whose
            # rest is the shared package writer (USD, animation.npz and the swept-volume trace).
            wall, cpu = time.perf_counter(), time.process_time()
            seq = resample(read_sequence(args.sample), args.fps)
            body = load_body_model(tmp / "models" / "SMPL_FEMALE.npz")
            anim = body_animation("bench", body, seq.betas, fit_joints(seq.poses, body.joint_count), seq.trans, seq.fps,
                                  UP_ROTATIONS["z"], representation)
            rig_wall, rig_cpu = time.perf_counter() - wall, time.process_time() - cpu
            wall, cpu = time.perf_counter(), time.process_time()
            out = convert_sequence(args.sample, tmp / representation, tmp / "models", fps=args.fps,
                                   representation=representation)
            total_wall, total_cpu = time.perf_counter() - wall, time.process_time() - cpu
            sizes = {f.name: f.stat().st_size for f in sorted(out.iterdir()) if f.is_file()}
            detail = ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in sizes.items() if size > 10_000)
            print(f"{representation:8s}: {anim.frame_count} frames; conversion {total_wall:6.2f} s wall / "
                  f"{total_cpu:6.2f} s CPU (SMPL part {rig_wall:.2f} s wall / {rig_cpu:.2f} s CPU); "
                  f"package {folder_size(out) / 1e6:6.2f} MB ({detail})")


if __name__ == "__main__":
    main()

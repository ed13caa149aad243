"""Frames per second of motion blur + rolling shutter (postprocess.blur.blur_and_shutter) at 640x480.

Frame: a random-textured room-like view (slanted floor, back wall, two boxes in front, a patch of no
return); 30 sub-poses, exposure 20 ms, readout 15 ms, depth-aware model, so every row averages up to 30 poses
of its own. Two camera motions (--motion): `uav-limits`, the UAV at its limits (0.5 m/s while pitching at
40 deg/s and yawing at 30 deg/s), and `fast`, a hand-held-like 1.5 m/s and 3.2 rad/s, where a pixel's source
moves about 40 px over the exposure and the path average takes all 30 samples. The cost grows with the motion
(about one sample per pixel of path). The first call (numba compilation or cache load) is not measured.

Frame times vary a lot when other processes share the cores, so the median is printed beside the mean,
with the process CPU time per frame (steadier) and the load average (1 min) before and after.

    .venv/bin/python benchmarks/blur.py [--frames N] [--sub-poses S] [--model depth_aware|homography]
                                        [--motion uav-limits|fast|both] [--smoke]

--smoke: one frame of 2 sub-poses per motion (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import os
import time

import cv2
import numpy as np

from core.seeding import generator
from postprocess import blur

SEED = 0
WIDTH, HEIGHT = 640, 480
K = np.array([[525.0, 0, 319.5], [0, 525.0, 239.5], [0, 0, 1]])
MOTION_SPAN_S = 0.1  # the camera's motion is given as its rotation vector and translation over this span
MOTIONS = {
    # pitch 40 deg/s about the optical x axis, yaw 30 deg/s about the optical y axis (down), 0.5 m/s
    "uav-limits": ((np.radians(40) * MOTION_SPAN_S, np.radians(30) * MOTION_SPAN_S, 0.0), (0.04, 0.0, 0.03)),
    "fast": ((-0.1, -0.3, 0.05), (-0.12, 0.03, -0.08)),  # 3.2 rad/s, 1.5 m/s
}


def frame(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(rgb uint8, depth float32 m) of the benchmark view."""
    rows = np.arange(HEIGHT, dtype=np.float32)[:, None]
    depth = np.full((HEIGHT, WIDTH), 6.0, np.float32)  # back wall
    below = rows > 200  # the floor 1.2 m below the camera, seen from row 200 down
    depth = np.where(below, np.minimum(6.0, 1.2 * 525.0 / np.maximum(rows - 239.5, 1e-3)), depth)
    depth[150:330, 80:260] = 2.0
    depth[220:420, 380:560] = 3.5
    depth[:40, 500:] = 0  # no return
    noise = rng.integers(0, 256, (HEIGHT // 4, WIDTH // 4, 3), dtype=np.uint8)
    rgb = cv2.resize(noise, (WIDTH, HEIGHT), interpolation=cv2.INTER_LINEAR)
    return rgb, depth.astype(np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--sub-poses", type=int, default=30)
    parser.add_argument("--model", choices=blur.MODELS, default="depth_aware")
    parser.add_argument("--motion", choices=[*MOTIONS, "both"], default="both")
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    if args.smoke:
        args.frames, args.sub_poses = 1, 2
    rgb, depth = frame(generator(SEED, "benchmark.blur"))
    for name in MOTIONS if args.motion == "both" else [args.motion]:
        measure(name, rgb, depth, args)


def measure(motion: str, rgb: np.ndarray, depth: np.ndarray, args: argparse.Namespace) -> None:
    rotation, translation = MOTIONS[motion]
    start = np.eye(4)
    start[:3, :3] = cv2.Rodrigues(np.array(rotation, dtype=np.float64).reshape(3, 1))[0]
    start[:3, 3] = translation
    pose_at = blur.interpolate_pose(np.array([-MOTION_SPAN_S, 0.0]), np.stack([start, np.eye(4)]))

    def one() -> blur.BlurResult:
        return blur.blur_and_shutter(rgb, depth, K, pose_at, 0.0, 0.02, 0.015, args.sub_poses, args.model, 2.0)

    one()  # compile or load the kernels
    load_before = os.getloadavg()[0]
    times, cpu = [], time.process_time()
    for _ in range(args.frames):
        began = time.perf_counter()
        one()
        times.append(time.perf_counter() - began)
    cpu = (time.process_time() - cpu) / args.frames
    mean, median = float(np.mean(times)), float(np.median(times))
    print(f"{motion}: {WIDTH}x{HEIGHT}, {args.sub_poses} sub-poses, {args.model}, blur + rolling shutter: "
          f"{1 / mean:.1f} fps "
          f"({mean * 1000:.0f} ms/frame wall, median {median * 1000:.0f} ms, {cpu * 1000:.0f} ms CPU) "
          f"on {os.cpu_count()} cores; load {load_before:.2f} -> {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""Seconds for IMU noise (postprocess.imu_noise.apply_imu_noise) on a million 200 Hz samples of a robot at rest,
the best of --repeats calls (the first may pay for page faults). The target is well under a second: a long
recording's IMU stream is noised in about the time it takes to read it.

Times vary when other processes share the cores, so the load average (1 min) is printed beside them.

    .venv/bin/python benchmarks/imu_noise.py [--samples 1000000] [--repeats 2] [--smoke]

--smoke: 1000 samples, once (the figure means nothing).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from core.config import ImuNoiseConfig
from postprocess.imu_noise import apply_imu_noise

RATE_HZ = 200.0
GRAVITY = 9.81  # m/s^2 on z: the accelerometer of a robot at rest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figure)")
    args = parser.parse_args()
    if args.smoke:
        args.samples, args.repeats = 1000, 1
    stamps = np.arange(args.samples) / RATE_HZ
    accel = np.tile([0.0, 0.0, GRAVITY], (args.samples, 1))
    gyro = np.zeros((args.samples, 3))
    best = np.inf
    for seed in range(args.repeats):
        start = time.perf_counter()
        apply_imu_noise(stamps, accel, gyro, ImuNoiseConfig(), np.random.default_rng(seed))
        best = min(best, time.perf_counter() - start)
    print(f"{args.samples} samples: {best:.3f} s (best of {args.repeats}); load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

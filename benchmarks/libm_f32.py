"""The shading loop's specular power exp(log(x) e) through libm's expf and logf against the inlined port
(simulation/render/libm_f32.py): nanoseconds per value on one thread, on the random n.h and exponents of a
tile's worth of points, and whether the two agree. `--all` also compares the port with libm on all 2^32 float32
inputs of each function (about three minutes here) and prints how many differ (NaN results count as equal).

    .venv/bin/python benchmarks/libm_f32.py [--all] [--smoke]

--smoke: 1024 values once, and with --all the first 2^16 inputs of each function (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numba import njit

from core.seeding import generator
from simulation.render.libm_f32 import exp_f32, log_f32

POINTS = 65536  # a tile
REPEATS = 50
CHUNK = 1 << 25
INPUTS = 1 << 32
SMOKE_POINTS, SMOKE_REPEATS, SMOKE_INPUTS = 1024, 1, 1 << 16


@njit(nogil=True)
def _power_libm(out, x, e):
    for k in range(len(x)):
        out[k] = np.exp(np.log(x[k]) * e[k])


@njit(nogil=True)
def _power_port(out, x, e):
    for k in range(len(x)):
        out[k] = exp_f32(log_f32(x[k]) * e[k])


@njit(nogil=True)
def _apply(out, x, which, port):
    for k in range(len(x)):
        if which == 0:
            out[k] = log_f32(x[k]) if port else np.log(x[k])
        else:
            out[k] = exp_f32(x[k]) if port else np.exp(x[k])


def _ns_per_value(function, out, *args, repeats: int = REPEATS) -> float:
    function(out, *args)
    start = time.perf_counter()
    for _ in range(repeats):
        function(out, *args)
    return (time.perf_counter() - start) / repeats / len(out) * 1e9


def _mismatches(which: int, inputs: int = INPUTS) -> int:
    """How many of the first `inputs` float32 bit patterns the port and libm differ on."""
    count = 0
    for start in range(0, inputs, CHUNK):
        x = np.arange(start, min(start + CHUNK, inputs), dtype=np.uint64).astype(np.uint32).view(np.float32)
        ours, libm = np.empty_like(x), np.empty_like(x)
        _apply(ours, x, which, True)
        _apply(libm, x, which, False)
        count += int(np.count_nonzero((ours.view(np.uint32) != libm.view(np.uint32))
                                      & ~(np.isnan(ours) & np.isnan(libm))))
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="compare on every float32 input")
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    points, repeats, inputs = (SMOKE_POINTS, SMOKE_REPEATS, SMOKE_INPUTS) if args.smoke else (POINTS, REPEATS, INPUTS)
    rng = generator(0, "benchmarks/libm_f32")
    x = rng.uniform(1e-12, 1.0, points).astype(np.float32)
    e = rng.uniform(1.0, 256.0, points).astype(np.float32)
    libm, port = np.empty_like(x), np.empty_like(x)
    libm_ns = _ns_per_value(_power_libm, libm, x, e, repeats=repeats)
    port_ns = _ns_per_value(_power_port, port, x, e, repeats=repeats)
    same = np.array_equal(libm.view(np.uint32), port.view(np.uint32))
    print(f"exp(log(x) e): libm {libm_ns:.1f} ns/value, inlined port {port_ns:.1f} ns/value "
          f"({libm_ns / port_ns:.1f}x); same bits on all {points} values: {same}")
    if args.all:
        of = "2^32" if inputs == INPUTS else f"the first {inputs}"
        for which, name in enumerate(("logf", "expf")):
            print(f"{name}: {_mismatches(which, inputs)} of {of} float32 inputs differ from libm's")


if __name__ == "__main__":
    main()

"""glibc's expf and logf as written out for the shading loop (simulation/render/libm_f32.py), against the libm
this process runs: numba's np.exp and np.log of a float32 call its expf and logf.

Where that libm is glibc's x86-64 FMA build (the one the port follows) the two must agree bit for bit: on the
inputs the shading loop passes to logf (n.h is clamped to [1e-12, 1]), every float32 of [0.5, 1] and every 7th
of [2^-40, 0.5]; on every input whose expf is subnormal, on every 16th float32 of [-110, 0] (exp(log(n.h) e) for
exponents e >= 0) and on random bit patterns of every kind (negative, subnormal, inf, NaN: NaN results need only
both be NaN);
`benchmarks/libm_f32.py --all` compares all 2^32 inputs of each. Elsewhere (another libm build or CPU) the port
must be within one unit in the last place of the float64 result rounded to float32.
"""

from __future__ import annotations

import platform
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from core.seeding import generator
from simulation.render.libm_f32 import exp_f32, log_f32

CHUNK = 1 << 24  # float32 inputs per call


def _cpu_has_fma() -> bool:
    cpuinfo = Path("/proc/cpuinfo")
    return cpuinfo.exists() and " fma " in f" {cpuinfo.read_text().replace(chr(10), ' ')} "


GLIBC_FMA_BUILD = platform.machine() == "x86_64" and platform.libc_ver()[0] == "glibc" and _cpu_has_fma()


@njit(nogil=True)
def _ported(x, which):
    out, log = np.empty_like(x), which == "log"
    for k in range(len(x)):
        out[k] = log_f32(x[k]) if log else exp_f32(x[k])
    return out


@njit(nogil=True)
def _libm(x, which):
    out, log = np.empty_like(x), which == "log"
    for k in range(len(x)):
        out[k] = np.log(x[k]) if log else np.exp(x[k])
    return out


def _check(bits: np.ndarray, which: str) -> None:
    x = bits.astype(np.uint32).view(np.float32)
    ours = _ported(x, which)
    if GLIBC_FMA_BUILD:
        expected = _libm(x, which)
        same = (ours.view(np.uint32) == expected.view(np.uint32)) | (np.isnan(ours) & np.isnan(expected))
    else:
        with np.errstate(all="ignore"):
            expected = (np.log if which == "log" else np.exp)(x.astype(np.float64)).astype(np.float32)
            gap = np.abs(ours.view(np.int32).astype(np.int64) - expected.view(np.int32).astype(np.int64))
        same = (gap <= 1) | (np.isnan(ours) & np.isnan(expected)) | (ours == expected)
    assert same.all(), f"{which}: {np.count_nonzero(~same)} inputs differ, e.g. {x[~same][:5]}"


def _bit_range(first: float, last: float) -> range:
    """The float32 bit patterns from `first` to `last` (same sign), in order of magnitude."""
    a, b = (int(np.float32(v).view(np.uint32)) for v in (first, last))
    return range(min(a, b), max(a, b) + 1)


def _check_range(bits: range, which: str, stride: int = 1) -> None:
    """Every `stride`-th bit pattern of `bits`, in chunks on two threads (the compiled loops release the GIL)."""
    starts = range(bits.start, bits.stop, CHUNK * stride)
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda start: _check(np.arange(start, min(start + CHUNK * stride, bits.stop), stride,
                                                     dtype=np.int64), which), starts))


def test_log_matches_libm_across_every_input_the_shading_loop_passes():
    # Every mantissa once (the table and polynomial of [0.5, 1]); the other exponents only add k ln 2.
    _check_range(_bit_range(0.5, 1.0), "log")
    _check_range(_bit_range(2.0**-40, 0.5), "log", stride=7)  # down to below the loop's clamp at 1e-12


def test_exp_matches_libm_where_it_is_subnormal_and_across_the_lobe_range():
    _check_range(_bit_range(-87.0, -104.5), "exp")  # subnormal results, the underflow to 0 and beyond it
    _check_range(_bit_range(-0.0, -110.0), "exp", stride=16)


@pytest.mark.parametrize("which", ["log", "exp"])
def test_matches_libm_on_random_bits_of_every_kind(which):
    rng = generator(0, f"tests/libm_f32/{which}")
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 88.0, 88.72, 89.0, -103.97, -104.0, 1e-45, 1e-38,
               np.finfo(np.float32).max, np.finfo(np.float32).tiny]
    bits = np.concatenate([rng.integers(0, 2**32, CHUNK, dtype=np.int64),
                           np.array(special, np.float32).view(np.uint32).astype(np.int64)])
    _check(bits, which)

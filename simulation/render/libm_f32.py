"""glibc's float32 `expf` and `logf`, written out so that the shading loop compiles them inline.

The shading loop raises n.h to each material's Blinn-Phong exponent, exp(log(x) e), once per point and light.
Called from compiled code, libm's expf and logf took about a third of the shading time without shadow rays; inlined,
the pair takes about 3x less time (benchmarks/libm_f32.py). These are glibc's own algorithms and tables
(sysdeps/ieee754/flt-32/e_expf.c and e_logf.c, from Arm's optimized-routines, unchanged since glibc 2.28), their
multiply-adds fused as glibc's x86-64 FMA build fuses them (read from its machine code), so they return what that
build returns, bit for bit: the images are the same as with libm's calls. All 2^32 float32 inputs of each agree
with glibc 2.36's (`benchmarks/libm_f32.py --all`; tests/test_libm_f32.py checks every input the shading loop can
pass to logf and samples the rest). The images also no longer depend on which libm a machine runs.

The fused multiply-adds are LLVM's `llvm.fma` (one instruction on CPUs with FMA, a correctly rounded libm call on
the others), the bit casts LLVM's `bitcast`: numba offers neither as a function.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from core.jit_cache import flush_stale_caches


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once (float64)."""
    double = ir.DoubleType()

    def codegen(context, builder, signature, args):
        function = builder.module.declare_intrinsic("llvm.fma", [double], ir.FunctionType(double, [double] * 3))
        return builder.call(function, args)

    return types.float64(types.float64, types.float64, types.float64), codegen


def _bitcast(source: types.Type, target: types.Type, target_ir: ir.Type):
    """An intrinsic that reinterprets the bits of a `source` value as a `target` value of the same size."""

    @intrinsic
    def cast(typingctx, value):
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], target_ir)

        return target(source), codegen

    return cast


_float32_bits = _bitcast(types.float32, types.uint32, ir.IntType(32))
_bits_float32 = _bitcast(types.uint32, types.float32, ir.FloatType())
_float64_bits = _bitcast(types.float64, types.uint64, ir.IntType(64))
_bits_float64 = _bitcast(types.uint64, types.float64, ir.DoubleType())

_hex = float.fromhex

# expf: exp(x) = 2^(k/N) 2^(r/N), N = 32 (glibc's __exp2f_data: tab, shift_scaled, invln2_scaled, poly_scaled).
# Entry i of the table is the bits of 2^(i/N) less i << (52 - 5), so that adding k << 47 scales it by 2^(k/N).
_EXP_TABLE = np.array([
    0x3FF0000000000000, 0x3FEFD9B0D3158574, 0x3FEFB5586CF9890F, 0x3FEF9301D0125B51,
    0x3FEF72B83C7D517B, 0x3FEF54873168B9AA, 0x3FEF387A6E756238, 0x3FEF1E9DF51FDEE1,
    0x3FEF06FE0A31B715, 0x3FEEF1A7373AA9CB, 0x3FEEDEA64C123422, 0x3FEECE086061892D,
    0x3FEEBFDAD5362A27, 0x3FEEB42B569D4F82, 0x3FEEAB07DD485429, 0x3FEEA47EB03A5585,
    0x3FEEA09E667F3BCD, 0x3FEE9F75E8EC5F74, 0x3FEEA11473EB0187, 0x3FEEA589994CCE13,
    0x3FEEACE5422AA0DB, 0x3FEEB737B0CDC5E5, 0x3FEEC49182A3F090, 0x3FEED503B23E255D,
    0x3FEEE89F995AD3AD, 0x3FEEFF76F2FB5E47, 0x3FEF199BDD85529C, 0x3FEF3720DCEF9069,
    0x3FEF5818DCFBA487, 0x3FEF7C97337B9B5F, 0x3FEFA4AFA2A490DA, 0x3FEFD0765B6E4540,
], np.uint64)
_EXP_INDEX_MASK = np.uint64(31)
_EXP_SCALE_SHIFT = np.uint64(47)
_EXP_INV_LN2_N = _hex("0x1.71547652b82fep+5")  # N / ln 2
_EXP_SHIFT = _hex("0x1.8p+52")  # adding it rounds to an integer, ties to even
_EXP_C0, _EXP_C1, _EXP_C2 = _hex("0x1.c6af84b912394p-20"), _hex("0x1.ebfce50fac4f3p-13"), _hex("0x1.62e42ff0c52d6p-6")
_EXP_BIG_TOP = np.uint32(0x42B)  # the top 12 bits of 88.0f: beyond, the special cases
_EXP_NAN_TOP = np.uint32(0x7F8)  # those of inf
_EXP_OVERFLOW = np.float32(_hex("0x1.62e42ep6"))  # log(2^128)
_EXP_UNDERFLOW = np.float32(_hex("-0x1.9fe368p6"))  # log(2^-150)

# logf: log(x) = log(z / c) + log(c) + k ln 2, N = 16 subintervals (glibc's __logf_data: invc, logc, ln2, poly).
_LOG_INVC = np.array([_hex(h) for h in (
    "0x1.661ec79f8f3bep+0", "0x1.571ed4aaf883dp+0", "0x1.49539f0f010b0p+0", "0x1.3c995b0b80385p+0",
    "0x1.30d190c8864a5p+0", "0x1.25e227b0b8ea0p+0", "0x1.1bb4a4a1a343fp+0", "0x1.12358f08ae5bap+0",
    "0x1.0953f419900a7p+0", "0x1.0000000000000p+0", "0x1.e608cfd9a47acp-1", "0x1.ca4b31f026aa0p-1",
    "0x1.b2036576afce6p-1", "0x1.9c2d163a1aa2dp-1", "0x1.886e6037841edp-1", "0x1.767dcf5534862p-1")])
_LOG_LOGC = np.array([_hex(h) for h in (
    "-0x1.57bf7808caadep-2", "-0x1.2bef0a7c06ddbp-2", "-0x1.01eae7f513a67p-2", "-0x1.b31d8a68224e9p-3",
    "-0x1.6574f0ac07758p-3", "-0x1.1aa2bc79c8100p-3", "-0x1.a4e76ce8c0e5ep-4", "-0x1.1973c5a611cccp-4",
    "-0x1.252f438e10c1ep-5", "0x0.0p+0", "0x1.aa5aa5df25984p-5", "0x1.c5e53aa362eb4p-4",
    "0x1.526e57720db08p-3", "0x1.bc2860d224770p-3", "0x1.1058bc8a07ee1p-2", "0x1.4043057b6ee09p-2")])
_LOG_LN2 = _hex("0x1.62e42fefa39efp-1")
_LOG_A0, _LOG_A1, _LOG_A2 = _hex("-0x1.00ea348b88334p-2"), _hex("0x1.5575b0be00b6ap-2"), _hex("-0x1.ffffef20a4123p-2")
_LOG_OFF = np.uint32(0x3F330000)  # the subintervals are centred near 1: [OFF, 2 OFF) in bits
_LOG_ONE = np.uint32(0x3F800000)
_LOG_MIN_NORMAL = np.uint32(0x00800000)
_LOG_NORMAL_SPAN = np.uint32(0x7F800000 - 0x00800000)
_LOG_INF = np.uint32(0x7F800000)
_LOG_NAN_FROM = np.uint32(0xFF000000)  # ix * 2 at and beyond: NaN
_LOG_SIGN = np.uint32(0x80000000)
_LOG_EXPONENT = np.uint32(0xFF800000)
_LOG_SUBNORMAL_SCALE = np.float32(2.0**23)
_LOG_SUBNORMAL_BIAS = np.uint32(23 << 23)
_F0 = np.float32(0.0)
_F_INF = np.float32(np.inf)
_F_NAN = np.float32(np.nan)


@njit(cache=True, nogil=True, inline="always")
def exp_f32(x):
    """glibc's expf(x) of a float32."""
    top = (_float32_bits(x) >> np.uint32(20)) & np.uint32(0x7FF)
    if top >= _EXP_BIG_TOP:  # |x| >= 88, or NaN
        if x == -_F_INF:
            return _F0
        if top >= _EXP_NAN_TOP:
            return x + x
        if x > _EXP_OVERFLOW:
            return _F_INF
        if x < _EXP_UNDERFLOW:
            return _F0
    xd = np.float64(x)
    kd = _fma(_EXP_INV_LN2_N, xd, _EXP_SHIFT)
    ki = _float64_bits(kd)
    kd -= _EXP_SHIFT
    r = _fma(_EXP_INV_LN2_N, xd, -kd)
    scale = _bits_float64(_EXP_TABLE[ki & _EXP_INDEX_MASK] + (ki << _EXP_SCALE_SHIFT))
    z = _fma(_EXP_C0, r, _EXP_C1)
    y = _fma(z, r * r, _fma(r, _EXP_C2, 1.0))
    return np.float32(y * scale)


@njit(cache=True, nogil=True, inline="always")
def log_f32(x):
    """glibc's logf(x) of a float32."""
    ix = _float32_bits(x)
    if ix == _LOG_ONE:
        return _F0
    if np.uint32(ix - _LOG_MIN_NORMAL) >= _LOG_NORMAL_SPAN:  # below the smallest normal, inf or NaN
        if np.uint32(ix * np.uint32(2)) == 0:
            return -_F_INF
        if ix == _LOG_INF:
            return x
        if (ix & _LOG_SIGN) or np.uint32(ix * np.uint32(2)) >= _LOG_NAN_FROM:
            return _F_NAN  # of a negative number or NaN
        ix = np.uint32(_float32_bits(np.float32(x * _LOG_SUBNORMAL_SCALE)) - _LOG_SUBNORMAL_BIAS)
    tmp = np.uint32(ix - _LOG_OFF)
    i = (tmp >> np.uint32(19)) & np.uint32(15)
    k = np.int32(tmp) >> np.int32(23)
    z = np.float64(_bits_float32(np.uint32(ix - (tmp & _LOG_EXPONENT))))
    r = _fma(z, _LOG_INVC[i], -1.0)
    y0 = _fma(np.float64(k), _LOG_LN2, _LOG_LOGC[i])
    r2 = r * r
    y = _fma(r2, _LOG_A0, _fma(r, _LOG_A1, _LOG_A2))
    return np.float32(_fma(r2, y, r + y0))


flush_stale_caches(__name__)  # see core.jit_cache

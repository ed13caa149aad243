"""Ray batches traced as Embree 8-ray packets from compiled loops (numba), without the GIL.

embreex traces one ray at a time (rtcIntersect1); packets of 8 neighbouring camera rays, marked coherent,
share their BVH traversal (Embree's frustum traversal), which takes a frame's camera rays about 2.5x less
time here. The hits are the same bit for bit as one ray at a time (the same robust triangle test per lane;
tests/test_render.py checks them against embreex). Occlusion tests skip rays whose reach is not positive: such a ray's interval is empty, so Embree
reports it unblocked anyway (shading gives points facing away from a light a zero-length ray), and a ray of
negative reach (a point within the shadow bias of a light) counts as blocked, as embreex reports it.

A packet is Embree's RTCRayHit8 (embree4/rtcore_ray.h): structure-of-arrays fields of 8 lanes each, the ray
(org_x, org_y, org_z, tnear, dir_x, dir_y, dir_z, time, tfar, mask, id, flags) then the hit (Ng_x, Ng_y,
Ng_z, u, v, primID, geomID, instID[1], and instPrimID[1] where Embree has instance arrays), 32-byte aligned.
The Embree functions come in as ctypes function objects (embree.packet_functions), so the compiled loops
are cached like the other kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

LANES = 8
_ALIGN = 32  # bytes: RTC_ALIGN(32) of RTCRayHit8
_FIELDS = 21  # 4-byte fields of RTCRayHit8 (with instPrimID)
# Field index of each member (times LANES: its first lane's float32 index).
_ORG_X, _ORG_Y, _ORG_Z, _TNEAR, _DIR_X, _DIR_Y, _DIR_Z, _TIME, _TFAR, _MASK, _ID, _FLAGS = range(12)
_NG_X, _NG_Y, _NG_Z, _U, _V, _PRIM, _GEOM, _INST = range(12, 20)
_INVALID = np.uint32(0xFFFFFFFF)  # RTC_INVALID_GEOMETRY_ID; also the all-lanes ray mask
_VALID, _INACTIVE = np.int32(-1), np.int32(0)
_F0 = np.float32(0.0)


def packet() -> tuple[np.ndarray, np.ndarray]:
    """A zeroed, aligned RTCRayHit8 as float32 lanes and its valid mask (int32 lanes), for one thread's use."""
    return _aligned(np.float32, _FIELDS * LANES), _aligned(np.int32, LANES)


def _aligned(dtype: type, count: int) -> np.ndarray:
    item = np.dtype(dtype).itemsize
    raw = np.zeros(count + _ALIGN // item, dtype)
    start = (-raw.ctypes.data % _ALIGN) // item
    return raw[start:start + count]


@njit(cache=True, nogil=True, inline="always")
def _load_ray(lanes, bits, k, origins, directions, tfar, i):
    lanes[_ORG_X * LANES + k], lanes[_ORG_Y * LANES + k] = origins[i, 0], origins[i, 1]
    lanes[_ORG_Z * LANES + k], lanes[_TNEAR * LANES + k] = origins[i, 2], _F0
    lanes[_DIR_X * LANES + k], lanes[_DIR_Y * LANES + k] = directions[i, 0], directions[i, 1]
    lanes[_DIR_Z * LANES + k], lanes[_TIME * LANES + k] = directions[i, 2], _F0
    lanes[_TFAR * LANES + k] = tfar[i]
    bits[_MASK * LANES + k], bits[_ID * LANES + k], bits[_FLAGS * LANES + k] = _INVALID, 0, 0


@njit(cache=True, nogil=True)
def intersect(function, scene, origins, directions, tfar, lanes, valid, arguments):
    """Nearest hits of rays (origins, directions (N, 3), tfar (N,)) as embreex's INTERSECT output: tfar
    (unchanged where nothing is hit), geomID and primID (-1: none), u, v and Ng (0 where nothing is hit).
    `function` is rtcIntersect8, `scene` the RTCScene address, `lanes`/`valid` a `packet()`, `arguments` the
    address of RTCIntersectArguments (embree.PacketFunctions.coherent)."""
    n = len(tfar)
    t, geometry, prim = np.empty(n, np.float32), np.empty(n, np.int32), np.empty(n, np.int32)
    u, v, normal = np.empty(n, np.float32), np.empty(n, np.float32), np.empty((n, 3), np.float32)
    bits = lanes.view(np.uint32)
    for first in range(0, n, LANES):
        count = min(LANES, n - first)
        for k in range(LANES):
            if k >= count:
                valid[k] = _INACTIVE
                continue
            valid[k] = _VALID
            _load_ray(lanes, bits, k, origins, directions, tfar, first + k)
            for field in (_NG_X, _NG_Y, _NG_Z, _U, _V):
                lanes[field * LANES + k] = _F0
            bits[_PRIM * LANES + k], bits[_GEOM * LANES + k], bits[_INST * LANES + k] = _INVALID, _INVALID, _INVALID
        function(valid.ctypes.data, scene, lanes.ctypes.data, arguments)
        for k in range(count):
            i = first + k
            t[i], u[i], v[i] = lanes[_TFAR * LANES + k], lanes[_U * LANES + k], lanes[_V * LANES + k]
            prim[i], geometry[i] = np.int32(bits[_PRIM * LANES + k]), np.int32(bits[_GEOM * LANES + k])
            normal[i, 0], normal[i, 1] = lanes[_NG_X * LANES + k], lanes[_NG_Y * LANES + k]
            normal[i, 2] = lanes[_NG_Z * LANES + k]
    return t, geometry, prim, u, v, normal


@njit(cache=True, nogil=True)
def occluded(function, scene, origins, directions, tfar, lanes, valid, arguments):
    """Whether something lies on each ray within (0, tfar]; rays of tfar <= 0 are not traced: blocked where
    tfar < 0 and not where tfar is 0, as embreex's one-ray loop reports them.
    `function` is rtcOccluded8, `scene` the RTCScene address, `lanes`/`valid` a `packet()`, `arguments` the
    address of RTCOccludedArguments."""
    n = len(tfar)
    blocked = np.zeros(n, np.bool_)
    bits = lanes.view(np.uint32)
    rays = np.empty(LANES, np.int64)
    i = 0
    while i < n:
        count = 0
        while count < LANES and i < n:  # the next LANES rays that reach anywhere
            blocked[i] = tfar[i] < _F0  # as embreex reports a ray of negative reach
            if tfar[i] > _F0:
                _load_ray(lanes, bits, count, origins, directions, tfar, i)
                rays[count] = i
                valid[count] = _VALID
                count += 1
            i += 1
        if count == 0:
            break
        for k in range(count, LANES):
            valid[k] = _INACTIVE
        function(valid.ctypes.data, scene, lanes.ctypes.data, arguments)
        for k in range(count):
            # Embree sets tfar to -inf on the rays it finds blocked.
            blocked[rays[k]] = lanes[_TFAR * LANES + k] < _F0
    return blocked

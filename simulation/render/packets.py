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

from core.jit_cache import flush_stale_caches

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
def load_lane(lanes, bits, k, ox, oy, oz, dx, dy, dz, reach):
    """Lane `k` of a packet: the ray from (ox, oy, oz) along (dx, dy, dz) over (0, reach]."""
    lanes[_ORG_X * LANES + k], lanes[_ORG_Y * LANES + k] = ox, oy
    lanes[_ORG_Z * LANES + k], lanes[_TNEAR * LANES + k] = oz, _F0
    lanes[_DIR_X * LANES + k], lanes[_DIR_Y * LANES + k] = dx, dy
    lanes[_DIR_Z * LANES + k], lanes[_TIME * LANES + k] = dz, _F0
    lanes[_TFAR * LANES + k] = reach
    bits[_MASK * LANES + k], bits[_ID * LANES + k], bits[_FLAGS * LANES + k] = _INVALID, 0, 0


@njit(cache=True, nogil=True, inline="always")
def _load_ray(lanes, bits, k, origins, directions, tfar, i):
    load_lane(lanes, bits, k, origins[i, 0], origins[i, 1], origins[i, 2], directions[i, 0], directions[i, 1],
              directions[i, 2], tfar[i])


@njit(cache=True, nogil=True, inline="always")
def _clear_hit(lanes, bits, k):
    for field in (_NG_X, _NG_Y, _NG_Z, _U, _V):
        lanes[field * LANES + k] = _F0
    bits[_PRIM * LANES + k], bits[_GEOM * LANES + k], bits[_INST * LANES + k] = _INVALID, _INVALID, _INVALID


@njit(cache=True, nogil=True, inline="always")
def _set_inactive(valid, first):
    """Lanes `first`.. of a packet take no part in the next query."""
    for k in range(first, LANES):
        valid[k] = _INACTIVE


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
            _clear_hit(lanes, bits, k)
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
    """Whether something lies on each ray within (0, tfar] (`occluded_into`, into a new array)."""
    blocked = np.empty(len(tfar), np.bool_)
    occluded_into(blocked, len(tfar), function, scene, origins, directions, tfar, lanes, valid, arguments,
                  np.empty(LANES, np.int64))
    return blocked


@njit(cache=True, nogil=True, inline="always")
def occluded_into(blocked, n, function, scene, origins, directions, tfar, lanes, valid, arguments, lane_ray):
    """Writes into blocked[:n] whether something lies on each of the first `n` rays (origins, directions (., 3),
    tfar (.,)) within (0, tfar]; rays of tfar <= 0 are not traced: blocked where tfar < 0 and not where tfar is 0, as embreex's
    one-ray loop reports them. `function` is rtcOccluded8, `scene` the RTCScene address, `lanes`/`valid` a
    `packet()`, `arguments` the address of RTCOccludedArguments, `lane_ray` (LANES,) int64 scratch."""
    bits = lanes.view(np.uint32)
    i = 0
    while i < n:
        count = 0
        while count < LANES and i < n:  # the next LANES rays that reach anywhere
            blocked[i] = tfar[i] < _F0  # as embreex reports a ray of negative reach
            if tfar[i] > _F0:
                _load_ray(lanes, bits, count, origins, directions, tfar, i)
                lane_ray[count] = i
                valid[count] = _VALID
                count += 1
            i += 1
        if count == 0:
            break
        _set_inactive(valid, count)
        function(valid.ctypes.data, scene, lanes.ctypes.data, arguments)
        for k in range(count):
            blocked[lane_ray[k]] = lanes[_TFAR * LANES + k] < _F0  # Embree sets tfar to -inf on a blocked ray


@njit(cache=True, nogil=True)
def camera_hits(function, scene, local, offset, tfar, rotation, eye, lanes, valid, arguments, geometry_faces,
                face_mesh):
    """A camera's rays made, traced and compacted to their hits in one loop.

    Ray i has the unit direction `rotation` (3, 3) float32 times local[:, i] (optical frame, (3, N)) and starts
    `offset[i]` along it from `eye` (on the near plane), reaching `tfar[i]` further; the world directions are
    computed row by row as camera.linear_map does, so they equal numpy's bit for bit. `function` is
    rtcIntersect8 (see `intersect`). Returns the directions (3, N) and, for the rays that hit, in ray order:
    ray index, face (geometry_faces[geomID] + primID), mesh (face_mesh[face]), u, v, t and Embree's
    unnormalised geometric normal (hits, 3)."""
    n = len(tfar)
    components = np.empty((3, n), np.float32)
    hit_rays, face, mesh = np.empty(n, np.int64), np.empty(n, np.intp), np.empty(n, np.intp)
    u, v, t, normal = np.empty(n, np.float32), np.empty(n, np.float32), np.empty(n, np.float32), np.empty((n, 3), np.float32)
    bits = lanes.view(np.uint32)
    hits = 0
    for first in range(0, n, LANES):
        count = min(LANES, n - first)
        _set_inactive(valid, count)
        for k in range(count):
            i = first + k
            x, y, z = local[0, i], local[1, i], local[2, i]
            d0 = (x * rotation[0, 0] + y * rotation[0, 1]) + z * rotation[0, 2]
            d1 = (x * rotation[1, 0] + y * rotation[1, 1]) + z * rotation[1, 2]
            d2 = (x * rotation[2, 0] + y * rotation[2, 1]) + z * rotation[2, 2]
            components[0, i], components[1, i], components[2, i] = d0, d1, d2
            near = offset[i]
            load_lane(lanes, bits, k, d0 * near + eye[0], d1 * near + eye[1], d2 * near + eye[2], d0, d1, d2, tfar[i])
            _clear_hit(lanes, bits, k)
            valid[k] = _VALID
        function(valid.ctypes.data, scene, lanes.ctypes.data, arguments)
        for k in range(count):
            if bits[_PRIM * LANES + k] == _INVALID:
                continue
            f = geometry_faces[np.int32(bits[_GEOM * LANES + k])] + np.int32(bits[_PRIM * LANES + k])
            hit_rays[hits], face[hits], mesh[hits] = first + k, f, face_mesh[f]
            t[hits], u[hits], v[hits] = lanes[_TFAR * LANES + k], lanes[_U * LANES + k], lanes[_V * LANES + k]
            normal[hits, 0], normal[hits, 1] = lanes[_NG_X * LANES + k], lanes[_NG_Y * LANES + k]
            normal[hits, 2] = lanes[_NG_Z * LANES + k]
            hits += 1
    return (components, hit_rays[:hits], face[:hits], mesh[:hits], u[:hits], v[:hits], t[:hits], normal[:hits])


flush_stale_caches(__name__)  # see core.jit_cache

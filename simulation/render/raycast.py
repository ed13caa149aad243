"""Trace ray batches through Embree: nearest hits and occlusion tests.

Batches trace as Embree ray packets in compiled loops that release the GIL (packets.py), so a batch traces
while other threads keep working: the renderer's tile workers each trace their own tiles' camera rays
(`trace_camera`) and shadow rays (the shading loop, through an `occlusion_query`); `intersect` splits one batch
into a contiguous chunk per thread of a small pool and `trace_occlusion` tests a batch for blockers.
Results do not depend on the split: every ray is traced independently. Scenes are embreex scenes (their
Embree handle is traced); ray arrays may be any (N, 3) float32 views, e.g. transposed (3, N) rows. The
thread count is 2, or GRADE_THREADS where set (`grade batch` gives each job its share of the cores).
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import cache
from itertools import pairwise

import numpy as np
from embreex.rtcore_scene import EmbreeScene

from simulation.render import packets
from simulation.render.camera import RayTable
from simulation.render.embree import packet_functions, scene_handle

THREADS_ENV = "GRADE_THREADS"  # set by `grade batch` for its jobs: the cores each job may use
RAY_THREADS = max(1, int(os.environ.get(THREADS_ENV, "2")))  # this 2-core machine's default
# Below this many rays per chunk the thread hand-off costs more than it saves.
_MIN_RAYS_PER_CHUNK = 8192
_NO_HIT = -1
# Batches not finished yet, so that geometry is never changed under them (set updates are atomic under the GIL).
_in_flight: set[Future] = set()


@dataclass(frozen=True)
class Hits:
    """Nearest hits: distance along the ray (inf: none), geometry and primitive (-1: none), barycentrics u, v,
    and the triangle's normal.

    Embree's barycentrics weight the triangle's vertices as (1 - u - v, u, v); its geometric normal is
    cross(v1 - v0, v2 - v0), unnormalised: outward for counter-clockwise faces.
    """

    t: np.ndarray  # (N,) float32
    geometry: np.ndarray  # (N,) int32
    prim: np.ndarray  # (N,) int32
    u: np.ndarray  # (N,) float32
    v: np.ndarray  # (N,) float32
    normal: np.ndarray  # (N, 3) float32


@cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="embree")


def _chunks(n: int, threads: int) -> list[tuple[int, int]]:
    count = max(1, min(threads, n // _MIN_RAYS_PER_CHUNK))
    bounds = [n * k // count for k in range(count + 1)]
    return [(a, b) for a, b in pairwise(bounds) if b > a]


def drain() -> None:
    """Wait until no pooled ray batch is running or queued (e.g. those a failed call left behind)."""
    wait(list(_in_flight))


def _run(scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray,
         query: str) -> dict | np.ndarray:
    """One batch's nearest hits as embreex's INTERSECT output (a dict of hit arrays), or whether each ray is
    blocked (OCCLUDED)."""
    functions, handle, (lanes, valid) = packet_functions(), scene_handle(scene), packets.packet()
    origins, directions = origins.astype(np.float32, copy=False), directions.astype(np.float32, copy=False)
    tfar = tfar.astype(np.float32, copy=False)
    if query == "OCCLUDED":
        return packets.occluded(functions.occluded, handle, origins, directions, tfar, lanes, valid,
                                functions.coherent)
    t, geometry, prim, u, v, normal = packets.intersect(functions.intersect, handle, origins, directions, tfar,
                                                        lanes, valid, functions.coherent)
    return {"tfar": t, "geomID": geometry, "primID": prim, "u": u, "v": v, "Ng": normal}


def _hits(parts: list[dict]) -> Hits:
    """Hits from embreex's INTERSECT outputs of consecutive chunks of one batch."""
    if not parts:
        return Hits(*(np.zeros(0, dtype) for dtype in (np.float32, np.int32, np.int32, np.float32, np.float32)),
                    np.zeros((0, 3), np.float32))

    def join(key: str) -> np.ndarray:
        return parts[0][key] if len(parts) == 1 else np.concatenate([p[key] for p in parts])

    t, prim = join("tfar"), join("primID")
    t[prim == _NO_HIT] = np.inf
    return Hits(t, join("geomID"), prim, join("u"), join("v"), join("Ng"))


@dataclass(frozen=True)
class CameraHits:
    """A camera's rays traced (packets.camera_hits): their world directions and, for the rays that hit, in ray
    order, the ray, face and mesh (RenderScene.table numbering), barycentrics, distance and unnormalised normal."""

    components: np.ndarray  # (3, R) float32
    rays: np.ndarray  # (N,) int64
    face: np.ndarray  # (N,) intp
    mesh: np.ndarray  # (N,) intp
    u: np.ndarray
    v: np.ndarray
    t: np.ndarray
    normal: np.ndarray  # (N, 3) float32


def trace_camera(scene: EmbreeScene, table: RayTable, geometry_faces: np.ndarray, face_mesh: np.ndarray) -> CameraHits:
    """The nearest hits of a camera's rays, made from their table and traced in the calling thread; Embree's
    geometry and primitive are turned into faces of a table whose geometry g starts at face geometry_faces[g]."""
    functions, handle, (lanes, valid) = packet_functions(), scene_handle(scene), packets.packet()
    return CameraHits(*packets.camera_hits(functions.intersect, handle, table.local, table.offset, table.tfar,
                                           table.rotation, table.eye, lanes, valid, functions.coherent,
                                           geometry_faces, face_mesh))


@dataclass(frozen=True)
class OcclusionQuery:
    """What compiled loops need to trace occlusion packets against one scene from one thread: rtcOccluded8, the
    scene handle, a packet of their own and the coherent query arguments (packets.occluded's arguments)."""

    function: object
    handle: int
    lanes: np.ndarray
    valid: np.ndarray
    arguments: int


def occlusion_query(scene: EmbreeScene) -> OcclusionQuery:
    functions, (lanes, valid) = packet_functions(), packets.packet()
    return OcclusionQuery(functions.occluded, scene_handle(scene), lanes, valid, functions.coherent)


def trace_occlusion(scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray) -> np.ndarray:
    """Whether something lies in the way of each ray within (0, tfar], traced in the calling thread."""
    if not len(tfar):
        return np.zeros(0, dtype=bool)
    return _run(scene, origins, directions, tfar, "OCCLUDED")


def intersect(scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray,
              threads: int = RAY_THREADS) -> Hits:
    """Nearest hit of each ray within (0, tfar], the batch split over `threads` pool threads."""
    futures = [_pool(threads).submit(_run, scene, origins[a:b], directions[a:b], tfar[a:b], "INTERSECT")
               for a, b in _chunks(len(tfar), threads)]
    for future in futures:
        _in_flight.add(future)
        future.add_done_callback(_in_flight.discard)
    return _hits([f.result() for f in futures])

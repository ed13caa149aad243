"""Trace ray batches through embreex: nearest hits and occlusion tests, on a small thread pool.

embreex releases the GIL inside `EmbreeScene.run`, so batches run on worker threads while the caller
keeps working: a batch is split into one contiguous chunk per thread, or, when the caller queues many
batches (tiles), kept whole so the threads take batches in turn. Results do not depend on the split:
every ray is traced independently. Ray arrays may be any (N, 3) float32 views, e.g. transposed (3, N) rows.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from functools import cache
from itertools import pairwise

import numpy as np
from embreex.rtcore_scene import EmbreeScene

RAY_THREADS = 2
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


def _chunks(n: int, threads: int, split: bool) -> list[tuple[int, int]]:
    count = max(1, min(threads, n // _MIN_RAYS_PER_CHUNK)) if split else 1
    bounds = [n * k // count for k in range(count + 1)]
    return [(a, b) for a, b in pairwise(bounds) if b > a]


def _submit(scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray, query: str,
            threads: int, split: bool) -> list[Future]:
    origins, directions = origins.astype(np.float32, copy=False), directions.astype(np.float32, copy=False)
    tfar = np.array(tfar, dtype=np.float32)  # a fresh copy: embreex writes hit distances into it
    output = 1 if query == "INTERSECT" else 0
    futures = [_pool(threads).submit(scene.run, origins[a:b], directions[a:b], tfar[a:b], query, output)
               for a, b in _chunks(len(tfar), threads, split)]
    for future in futures:
        _in_flight.add(future)
        future.add_done_callback(_in_flight.discard)
    return futures


def drain() -> None:
    """Wait until no ray batch is running or queued (e.g. those a failed render left behind)."""
    wait(list(_in_flight))


class PendingHits:
    """An intersection batch running on the ray threads; `result()` waits for it."""

    def __init__(self, scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray,
                 threads: int = RAY_THREADS, split: bool = True):
        self._futures = _submit(scene, origins, directions, tfar, "INTERSECT", threads, split)

    def result(self) -> Hits:
        parts = [f.result() for f in self._futures]

        def join(key: str) -> np.ndarray:
            return parts[0][key] if len(parts) == 1 else np.concatenate([p[key] for p in parts])

        if not parts:
            return Hits(*(np.zeros(0, dtype) for dtype in (np.float32, np.int32, np.int32, np.float32, np.float32)),
                        np.zeros((0, 3), np.float32))
        t, prim = join("tfar"), join("primID")
        t[prim == _NO_HIT] = np.inf
        return Hits(t, join("geomID"), prim, join("u"), join("v"), join("Ng"))


class PendingOcclusion:
    """An occlusion batch running on the ray threads; `result()` is a boolean per ray (something in the way)."""

    def __init__(self, scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray,
                 threads: int = RAY_THREADS, split: bool = True):
        self._futures = _submit(scene, origins, directions, tfar, "OCCLUDED", threads, split)

    def result(self) -> np.ndarray:
        parts = [f.result() for f in self._futures]
        if not parts:
            return np.zeros(0, dtype=bool)
        return (parts[0] if len(parts) == 1 else np.concatenate(parts)) != _NO_HIT


def intersect(scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray,
              threads: int = RAY_THREADS) -> Hits:
    """Nearest hit of each ray within (0, tfar]."""
    return PendingHits(scene, origins, directions, tfar, threads).result()

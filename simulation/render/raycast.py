"""Thin layer over embreex: build an Embree scene from triangles, intersect / occlusion-test rays.

embreex releases the GIL inside `EmbreeScene.run`, so a batch of rays is split into contiguous chunks
run on a small thread pool. Results do not depend on the split: every ray is traced independently.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from itertools import pairwise

import numpy as np
from embreex.mesh_construction import TriangleMesh
from embreex.rtcore import EmbreeDevice
from embreex.rtcore_scene import EmbreeScene

RAY_THREADS = 2
# Below this many rays per chunk the thread hand-off costs more than it saves.
_MIN_RAYS_PER_CHUNK = 8192
_NO_HIT = -1


@dataclass(frozen=True)
class Hits:
    """Nearest hits: distance along the ray (inf: none), primitive index (-1: none), barycentrics u, v.

    Embree's barycentrics weight the triangle's vertices as (1 - u - v, u, v).
    """

    t: np.ndarray  # (N,) float32
    prim: np.ndarray  # (N,) int32
    u: np.ndarray  # (N,) float32
    v: np.ndarray  # (N,) float32

    @classmethod
    def empty(cls, n: int) -> Hits:
        return cls(np.full(n, np.inf, np.float32), np.full(n, _NO_HIT, np.int32), np.zeros(n, np.float32),
                   np.zeros(n, np.float32))


@cache
def _device() -> EmbreeDevice:
    # One device (and so one Embree worker pool for BVH builds) shared by every scene.
    return EmbreeDevice()


@cache
def _pool(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="embree")


def index_tuples(faces: np.ndarray) -> np.ndarray:
    """Faces as a 1-D object array of (i, j, k) tuples, the fastest input for TriangleMesh.

    embreex copies the index and vertex arrays element by element through Python indexing; rows that
    are already Python tuples (and vertices that are Python floats) make that copy ~2.5x faster. Build
    this once per topology and pass it to `build_scene`.
    """
    out = np.empty(len(faces), dtype=object)
    out[:] = list(map(tuple, np.asarray(faces, dtype=np.int64).tolist()))
    return out


def build_scene(vertices: np.ndarray, faces: np.ndarray) -> EmbreeScene:
    """A committed Embree scene holding one triangle geometry (primitive ids = face rows).

    `faces` is an (F, 3) integer array or the output of `index_tuples`.
    """
    scene = EmbreeScene(_device())
    if faces.dtype != object:
        faces = index_tuples(faces)
    TriangleMesh(scene, np.asarray(vertices, dtype=np.float32).astype(object), faces)
    _commit(scene)
    return scene


def _commit(scene: EmbreeScene) -> None:
    # embreex commits lazily on the first run(); doing it here keeps the threaded runs from racing on it.
    scene.run(np.zeros((1, 3), np.float32), np.array([[0.0, 0.0, 1.0]], np.float32), query="OCCLUDED")


def _chunks(n: int, threads: int) -> list[tuple[int, int]]:
    count = max(1, min(threads, n // _MIN_RAYS_PER_CHUNK))
    bounds = [n * k // count for k in range(count + 1)]
    return list(pairwise(bounds))


def _as_rays(origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray) -> tuple[np.ndarray, ...]:
    return (np.ascontiguousarray(origins, dtype=np.float32), np.ascontiguousarray(directions, dtype=np.float32),
            np.array(tfar, dtype=np.float32))  # a fresh copy: embreex writes hit distances into it


class PendingHits:
    """An intersection batch running on the ray threads; `result()` waits for it."""

    def __init__(self, scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray,
                 threads: int = RAY_THREADS):
        origins, directions, tfar = _as_rays(origins, directions, tfar)
        self._n = len(origins)
        self._futures = [_pool(threads).submit(scene.run, origins[a:b], directions[a:b], tfar[a:b], "INTERSECT", 1)
                         for a, b in _chunks(self._n, threads) if b > a]

    def result(self) -> Hits:
        if self._n == 0:
            return Hits.empty(0)
        parts = [f.result() for f in self._futures]
        prim = np.concatenate([p["primID"] for p in parts]).astype(np.int32, copy=False)
        t = np.concatenate([p["tfar"] for p in parts])
        t[prim < 0] = np.inf
        return Hits(t, prim, np.concatenate([p["u"] for p in parts]), np.concatenate([p["v"] for p in parts]))


class PendingOcclusion:
    """An occlusion batch running on the ray threads; `result()` is a boolean per ray (something in the way)."""

    def __init__(self, scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray,
                 threads: int = RAY_THREADS):
        origins, directions, tfar = _as_rays(origins, directions, tfar)
        self._n = len(origins)
        self._futures = [_pool(threads).submit(scene.run, origins[a:b], directions[a:b], tfar[a:b], "OCCLUDED")
                         for a, b in _chunks(self._n, threads) if b > a]

    def result(self) -> np.ndarray:
        if self._n == 0:
            return np.zeros(0, dtype=bool)
        return np.concatenate([f.result() for f in self._futures]) != _NO_HIT


def intersect(scene: EmbreeScene, origins: np.ndarray, directions: np.ndarray, tfar: np.ndarray,
              threads: int = RAY_THREADS) -> Hits:
    """Nearest hit of each ray within (0, tfar]."""
    return PendingHits(scene, origins, directions, tfar, threads).result()


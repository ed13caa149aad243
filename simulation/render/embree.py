"""Embree scenes built and updated through the Embree library itself, traced through embreex.

embreex traces a batch of rays in C without the GIL, but its TriangleMesh copies geometry into Embree one
element at a time through Python indexing (~25 ms for the 30k triangles of ten humans, every frame) and
cannot update geometry. Here the Embree 4 library that embreex loaded is called through ctypes: geometry
buffers are allocated by Embree and filled from numpy in one copy, a deforming mesh is updated in place
and recommitted (Embree rebuilds only the BVH of the geometry that changed, with the GIL released), and
the scene handle is the one inside an `embreex.rtcore_scene.EmbreeScene`, whose `run` traces it as usual.

Reading that handle relies on the layout of embreex's EmbreeScene object (rtcore_scene.pxd: the RTCScene
pointer, then `is_committed`, then the device); `_binding` checks the layout before first use.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.metadata
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
from embreex.rtcore import EmbreeDevice
from embreex.rtcore_scene import EmbreeScene

from core.errors import GradeError

# Values from embree4/rtcore_common.h, rtcore_buffer.h, rtcore_geometry.h and rtcore_scene.h.
_GEOMETRY_TYPE_TRIANGLE = 0
_BUFFER_TYPE_INDEX = 0
_BUFFER_TYPE_VERTEX = 1
_FORMAT_UINT3 = 0x5003
_FORMAT_FLOAT3 = 0x9003
_SCENE_FLAG_DYNAMIC = 1 << 0
_SCENE_FLAG_ROBUST = 1 << 2  # what embreex's own scenes use: keeps hits identical to them
BUILD_QUALITY_LOW = 0  # fastest rebuilds: the small top-level BVH over geometries that change every frame
BUILD_QUALITY_MEDIUM = 1  # rebuilt every frame yet traced by many rays: the dynamic meshes
BUILD_QUALITY_HIGH = 2  # slower build, faster traversal: for geometry built once
_ITEM_BYTES = 12  # one float3 vertex or one uint3 triangle
# rtcore_ray.h / rtcore_common.h: the query flag that makes Embree trace a packet with its coherent (frustum)
# traversal, and every feature enabled (what rtcInitIntersectArguments sets).
_RAY_QUERY_FLAG_COHERENT = 1 << 16
_FEATURE_FLAG_ALL = 0xFFFFFFFF
_LAYOUT_PROBE = 0x5EED1E55  # written to EmbreeScene.is_committed to find it in memory

_SIGNATURES = {
    "rtcNewGeometry": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int]),
    "rtcSetNewGeometryBuffer": (ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_int,
                                                  ctypes.c_size_t, ctypes.c_size_t]),
    "rtcUpdateGeometryBuffer": (None, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]),
    "rtcSetGeometryBuildQuality": (None, [ctypes.c_void_p, ctypes.c_int]),
    "rtcCommitGeometry": (None, [ctypes.c_void_p]),
    "rtcAttachGeometry": (ctypes.c_uint, [ctypes.c_void_p, ctypes.c_void_p]),
    "rtcReleaseGeometry": (None, [ctypes.c_void_p]),
    "rtcSetSceneFlags": (None, [ctypes.c_void_p, ctypes.c_int]),
    "rtcSetSceneBuildQuality": (None, [ctypes.c_void_p, ctypes.c_int]),
    "rtcCommitScene": (None, [ctypes.c_void_p]),
    "rtcGetSceneDevice": (ctypes.c_void_p, [ctypes.c_void_p]),
    "rtcReleaseDevice": (None, [ctypes.c_void_p]),
    "rtcGetDeviceError": (ctypes.c_int, [ctypes.c_void_p]),
}


def _library_candidates() -> list[str]:
    """Where the Embree 4 library that embreex uses may be, most certain first: the one mapped into this
    process (Linux), the one shipped inside the embreex wheel (any platform's layout), the system one."""
    maps = Path("/proc/self/maps")
    loaded = []
    if maps.exists():
        paths = {line.split(maxsplit=5)[-1] for line in maps.read_text().splitlines() if line.count(" ") >= 5}
        loaded = sorted(path for path in paths if "embree4" in Path(path).name)
    try:
        files = importlib.metadata.files("embreex") or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    bundled = [str(f.locate()) for f in files if "embree4" in f.name and f.suffix in (".so", ".4", ".dylib", ".dll")]
    system = ctypes.util.find_library("embree4")
    return loaded + bundled + ([system] if system else [])


def _first_field(obj: object) -> int:
    """The pointer stored first after an extension object's header (a cdef class's first attribute)."""
    return ctypes.c_void_p.from_address(id(obj) + object.__basicsize__).value


@dataclass(frozen=True)
class _Binding:
    lib: ctypes.CDLL
    device: EmbreeDevice  # one device (and Embree thread pool) for every scene
    device_handle: int  # its RTCDevice

    def check(self, what: str) -> None:
        error = self.lib.rtcGetDeviceError(self.device_handle)
        if error:
            raise GradeError(f"Embree failed to {what} (RTCError {error})")


@cache
def _binding() -> _Binding:
    candidates = _library_candidates()
    if not candidates:
        raise GradeError("cannot find the Embree 4 library of embreex (the renderer needs embreex >= 4)")
    lib = ctypes.CDLL(candidates[0])
    for name, (restype, argtypes) in _SIGNATURES.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    device = EmbreeDevice()
    probe = EmbreeScene(device)
    probe.is_committed = _LAYOUT_PROBE
    fields = id(probe) + object.__basicsize__
    pointer = ctypes.sizeof(ctypes.c_void_p)
    layout_ok = (type(probe).__basicsize__ == object.__basicsize__ + 3 * pointer
                 and ctypes.c_int.from_address(fields + pointer).value == _LAYOUT_PROBE
                 and ctypes.c_void_p.from_address(fields + 2 * pointer).value == id(device))
    if layout_ok:
        scene_device = lib.rtcGetSceneDevice(_first_field(probe))
        layout_ok = scene_device == _first_field(device)
        lib.rtcReleaseDevice(scene_device)
    probe.is_committed = 0
    if not layout_ok:
        raise GradeError("unsupported embreex build: its EmbreeScene layout differs from embreex 4.4 "
                         "(simulation/render/embree.py reads the scene handle from it)")
    return _Binding(lib, device, _first_field(device))


class _QueryArguments(ctypes.Structure):
    """RTCIntersectArguments, which RTCOccludedArguments matches field for field (the last is its occluded
    callback)."""

    _fields_ = [("flags", ctypes.c_uint32), ("feature_mask", ctypes.c_uint32), ("context", ctypes.c_void_p),
                ("filter", ctypes.c_void_p), ("callback", ctypes.c_void_p)]


@dataclass(frozen=True)
class PacketFunctions:
    """rtcIntersect8 and rtcOccluded8 as ctypes function objects that compiled code can call (packets.py):
    (valid mask, RTCScene, RTCRayHit8 or RTCRay8, arguments), every pointer as an address; `coherent` is
    the address of query arguments that mark the rays coherent.

    Camera rays of neighbouring pixels and shadow rays of a tile's points towards one light are coherent:
    Embree then traces a packet's rays down the BVH together (its frustum traversal) instead of one by one,
    which takes a frame's camera rays 2.5x and its shadow rays 1.2x less time here. The hits are the same
    bit for bit (the same triangle test per ray; tests/test_render.py compares the two).
    """

    intersect: ctypes._CFuncPtr
    occluded: ctypes._CFuncPtr
    coherent: int
    arguments: _QueryArguments  # what `coherent` points to, kept alive here


@cache
def packet_functions() -> PacketFunctions:
    lib = _binding().lib
    prototype = ctypes.CFUNCTYPE(None, *[ctypes.c_size_t] * 4)

    def function(name: str) -> ctypes._CFuncPtr:
        return prototype(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)

    arguments = _QueryArguments(flags=_RAY_QUERY_FLAG_COHERENT, feature_mask=_FEATURE_FLAG_ALL)
    return PacketFunctions(function("rtcIntersect8"), function("rtcOccluded8"), ctypes.addressof(arguments),
                           arguments)


def scene_handle(scene: EmbreeScene) -> int:
    """The committed RTCScene inside an embreex scene (the layout `_binding` checked), committed here if
    embreex has not (as its own `run` would)."""
    binding = _binding()
    handle = _first_field(scene)
    if not scene.is_committed:
        binding.lib.rtcCommitScene(handle)
        binding.check("build its BVH")
        scene.is_committed = 1
    return handle


class SharedScene:
    """An Embree scene of triangle geometries, ids 0, 1, ... in the order added; trace `embree` with embreex.

    Geometry may be updated between commits, never while rays are in flight.
    """

    def __init__(self, dynamic: bool):
        self._binding = binding = _binding()
        self._lib = binding.lib
        self.embree = EmbreeScene(binding.device)
        self._scene = _first_field(self.embree)
        # The dynamic flag makes Embree keep one BVH per geometry under a small top level, so a commit
        # rebuilds only the geometries that changed.
        self._lib.rtcSetSceneFlags(self._scene, _SCENE_FLAG_ROBUST | (_SCENE_FLAG_DYNAMIC if dynamic else 0))
        self._lib.rtcSetSceneBuildQuality(self._scene, BUILD_QUALITY_LOW if dynamic else BUILD_QUALITY_HIGH)
        self._geometries: list[tuple[int, np.ndarray]] = []  # (handle, vertex buffer view) per geometry id

    def add(self, vertices: np.ndarray, faces: np.ndarray, quality: int) -> int:
        """Attach a triangle geometry; returns its id (hits report it as geomID, faces as primID)."""
        lib = self._lib
        geometry = lib.rtcNewGeometry(self._binding.device_handle, _GEOMETRY_TYPE_TRIANGLE)
        vertex_buffer = self._buffer(geometry, _BUFFER_TYPE_VERTEX, _FORMAT_FLOAT3, ctypes.c_float, len(vertices))
        vertex_buffer[:] = vertices
        index_buffer = self._buffer(geometry, _BUFFER_TYPE_INDEX, _FORMAT_UINT3, ctypes.c_uint32, len(faces))
        index_buffer[:] = faces
        lib.rtcSetGeometryBuildQuality(geometry, quality)
        lib.rtcCommitGeometry(geometry)
        geometry_id = lib.rtcAttachGeometry(self._scene, geometry)
        self._binding.check("attach a triangle geometry")
        lib.rtcReleaseGeometry(geometry)  # the scene keeps its own reference for as long as it lives
        self._geometries.append((geometry, vertex_buffer))
        return geometry_id

    def _buffer(self, geometry: int, kind: int, fmt: int, ctype: type, count: int) -> np.ndarray:
        """A numpy view (count, 3) of a new buffer that Embree allocates and frees with the geometry."""
        address = self._lib.rtcSetNewGeometryBuffer(geometry, kind, 0, fmt, _ITEM_BYTES, count)
        if not address:
            self._binding.check("allocate a geometry buffer")
            raise GradeError(f"Embree could not allocate a buffer of {count} items")
        return np.ctypeslib.as_array(ctypes.cast(address, ctypes.POINTER(ctype)), shape=(count, 3))

    def set_vertices(self, geometry_id: int, vertices: np.ndarray) -> None:
        """New vertex positions (same count and faces) for a geometry; takes effect at the next commit."""
        geometry, buffer = self._geometries[geometry_id]
        buffer[:] = vertices
        self._lib.rtcUpdateGeometryBuffer(geometry, _BUFFER_TYPE_VERTEX, 0)
        self._lib.rtcCommitGeometry(geometry)

    def commit(self) -> None:
        """Build the BVH of what changed (on Embree's threads, the GIL released)."""
        self._lib.rtcCommitScene(self._scene)
        self._binding.check("build its BVH")
        self.embree.is_committed = 1  # embreex would otherwise commit again inside run()

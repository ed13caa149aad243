"""A minimal binary glTF 2.0 (GLB) writer: one buffer, one bufferView per accessor or image, so that the
procedural animals reach their package through the same glTF converter as a user's file."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from core.rundir import atomic_write_bytes

FLOAT, UNSIGNED_SHORT, UNSIGNED_INT = 5126, 5123, 5125
_DTYPES = {FLOAT: "<f4", UNSIGNED_SHORT: "<u2", UNSIGNED_INT: "<u4"}
_COMPONENTS = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}
_ALIGN = 4  # bytes: every bufferView and chunk starts on a 4-byte boundary
_JSON_CHUNK, _BIN_CHUNK = 0x4E4F534A, 0x004E4942


class GlbWriter:
    """Collects accessors, images and the JSON document (nodes, meshes, skins, animations set by the caller)."""

    def __init__(self) -> None:
        self.binary = bytearray()
        self.doc: dict = {"asset": {"version": "2.0", "generator": "grade procedural"}, "bufferViews": [],
                          "accessors": []}

    def _view(self, data: bytes) -> int:
        self.binary += b"\0" * (-len(self.binary) % _ALIGN)
        self.doc["bufferViews"].append({"buffer": 0, "byteOffset": len(self.binary), "byteLength": len(data)})
        self.binary += data
        return len(self.doc["bufferViews"]) - 1

    def accessor(self, array: np.ndarray, kind: str, component: int = FLOAT, bounds: bool = False) -> int:
        """An accessor over `array` ((count, components) or (count, 4, 4) for MAT4, stored column-major)."""
        array = np.asarray(array)
        if kind == "MAT4":
            array = array.transpose(0, 2, 1)
        data = np.ascontiguousarray(array, dtype=_DTYPES[component]).reshape(len(array), _COMPONENTS[kind])
        accessor = {"bufferView": self._view(data.tobytes()), "componentType": component, "type": kind,
                    "count": len(data)}
        if bounds:  # POSITION accessors and animation inputs must carry their min and max
            accessor["min"], accessor["max"] = data.min(axis=0).tolist(), data.max(axis=0).tolist()
        self.doc["accessors"].append(accessor)
        return len(self.doc["accessors"]) - 1

    def image(self, png: bytes) -> int:
        """An embedded PNG image; returns its texture index."""
        self.doc.setdefault("images", []).append({"bufferView": self._view(png), "mimeType": "image/png"})
        self.doc.setdefault("textures", []).append({"source": len(self.doc["images"]) - 1})
        return len(self.doc["textures"]) - 1

    def write(self, path: str | Path) -> Path:
        """The GLB file, written atomically; the same document gives the same bytes."""
        self.doc["buffers"] = [{"byteLength": len(self.binary)}]
        text = json.dumps(self.doc, separators=(",", ":"), sort_keys=True).encode()
        text += b" " * (-len(text) % _ALIGN)
        binary = bytes(self.binary) + b"\0" * (-len(self.binary) % _ALIGN)
        total = 12 + 8 + len(text) + 8 + len(binary)
        header = struct.pack("<4sII", b"glTF", 2, total) + struct.pack("<II", len(text), _JSON_CHUNK)
        return atomic_write_bytes(path, header + text + struct.pack("<II", len(binary), _BIN_CHUNK) + binary)

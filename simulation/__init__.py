"""Simulation backends (DESIGN.md §5): the backend protocol (simulation.backend), the embedded backend
(simulation.embedded), physics (simulation.physics), robots (simulation.robots) and the ray-cast renderer
(simulation.render).

The names below are imported on first use, so importing a subpackage (`simulation.physics`) loads only
what it needs: not the renderer, not the backends.
"""

from __future__ import annotations

import importlib

__all__ = [
    "BOX_2D_DTYPE", "BOX_3D_DTYPE", "NO_HIT_DEPTH", "Backend", "Camera", "CameraParams", "EmbeddedBackend", "Frame",
    "ImuReading", "InstanceInfo", "LidarScan", "MeshState", "PointLight", "RenderMaterial", "RenderMesh",
    "RenderOptions", "RenderScene", "load_backend", "look_at", "render_frame",
]
_BACKEND = ("Backend", "ImuReading", "InstanceInfo", "LidarScan", "load_backend")
# name -> the module that defines it
_LAZY = {name: "simulation.backend" if name in _BACKEND else "simulation.render" for name in __all__}
_LAZY["EmbeddedBackend"] = "simulation.embedded"


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'simulation' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

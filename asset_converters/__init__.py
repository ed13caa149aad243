"""Source datasets -> USD asset packages (DESIGN.md §2).

Public surface: package metadata and loading, the in-memory parts converters produce, the package
writers, and USD read helpers used by later stages. Names are imported on first use, so the CLI
starts without loading trimesh and pxr.
"""

from importlib import import_module

_EXPORTS = {
    "load_animation": "animated", "posed_meshes": "animated", "skin_vertices": "animated",
    "write_animated_package": "animated", "write_environment_package": "environment",
    "write_object_package": "objects", "AssetMeta": "package", "SourceInfo": "package", "load_meta": "package",
    "package_status": "package", "Animation": "parts", "Light": "parts", "Material": "parts",
    "PointCacheMesh": "parts", "SceneMesh": "parts", "SkinnedMesh": "parts", "read_meshes": "usd_io",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'asset_converters' has no attribute {name!r}")
    return getattr(import_module(f"asset_converters.{_EXPORTS[name]}"), name)

"""Source datasets -> USD asset packages (DESIGN.md §2).

Public surface: package metadata and loading, the in-memory parts converters produce, the package
writers, and USD read helpers used by later stages.
"""

from asset_converters.animated import load_animation, posed_meshes, skin_vertices, write_animated_package
from asset_converters.environment import write_environment_package
from asset_converters.objects import write_object_package
from asset_converters.package import AssetMeta, SourceInfo, load_meta, package_status
from asset_converters.parts import Animation, Light, Material, PointCacheMesh, SceneMesh, SkinnedMesh
from asset_converters.usd_io import read_meshes

__all__ = [
    "Animation", "AssetMeta", "Light", "Material", "PointCacheMesh", "SceneMesh", "SkinnedMesh", "SourceInfo",
    "load_animation", "load_meta", "package_status", "posed_meshes", "read_meshes", "skin_vertices",
    "write_animated_package", "write_environment_package", "write_object_package",
]

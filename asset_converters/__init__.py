"""Source datasets -> USD asset packages (DESIGN.md §2).

Public surface: the package metadata (`meta.json`, defined in core.formats.asset_meta) and its loading,
the in-memory parts converters produce, the package writers, the batch job builders per source dataset,
animation posing (`joint_world_transforms`, `posed_meshes`, `skin_vertices`) and USD read helpers used
by later stages. Names are imported on first use, so the CLI starts without loading trimesh and pxr.
"""

from importlib import import_module

# name -> the module that defines it
_EXPORTS = {
    **{name: "asset_converters.animated" for name in (
        "joint_world_transforms", "load_animation", "posed_meshes", "skin_vertices", "write_animated_package")},
    "write_environment_package": "asset_converters.environment", "write_object_package": "asset_converters.objects",
    **{name: "core.formats.asset_meta" for name in ("AssetMeta", "SourceInfo", "load_meta")},
    "package_status": "asset_converters.package",
    **{name: "asset_converters.parts" for name in (
        "Animation", "DistantLight", "Light", "Material", "PointCacheMesh", "SceneMesh", "SkinnedMesh")},
    "read_meshes": "asset_converters.usd_io",
    # batch conversion: jobs per source dataset, run with progress (`grade convert`, `grade prepare`)
    **{name: "asset_converters.batch" for name in ("BatchResult", "Job", "run_jobs")},
    "convert_app": "asset_converters.cli", "demo_jobs": "asset_converters.procedural",
    **{name: "asset_converters.procedural.outdoor" for name in ("IN_PLACE_MOTIONS", "animal_jobs", "terrain_job")},
    "TerrainOptions": "asset_converters.procedural.terrain",
    "front3d_jobs": "asset_converters.front3d", "gso_jobs": "asset_converters.gso",
    **{name: "asset_converters.mesh" for name in ("MeshOptions", "mesh_jobs")},
    **{name: "asset_converters.smpl" for name in ("cloth3d_jobs", "sequence_jobs")},
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'asset_converters' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)

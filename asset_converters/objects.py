"""Object packages (flying objects, GSO, generic meshes): USD, convex collision hull, meta."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import trimesh

from asset_converters.environment import validate_meshes
from asset_converters.package import CONVERTER_VERSION, write_package
from asset_converters.usd_io import add_material, add_mesh, create_stage, set_semantic_label
from core.assets.layout import COLLISION_FILE, PACKAGE_ROOT, PACKAGE_STAGE
from core.assets.parts import SceneMesh
from core.errors import InputError
from core.formats.asset_meta import AssetMeta, ObjectInfo, SourceInfo
from core.formats.scene_layout import prim_name


def write_object_package(meshes: list[SceneMesh], label: str, out: str | Path, source: SourceInfo,
                         input_hash: str) -> Path:
    """An object: its meshes under /asset (labelled), `collision.stl` = convex hull of all of them."""
    out = Path(out)
    validate_meshes(meshes, f"object {out.name!r}")
    vertices = np.concatenate([m.vertices for m in meshes])
    hull = trimesh.Trimesh(vertices, process=False).convex_hull if len(vertices) >= 4 else None
    if hull is None or hull.volume <= 1e-12:
        raise InputError("degenerate mesh: its convex hull has no volume", f"object {out.name!r}", "vertices")

    def build(folder: Path) -> AssetMeta:
        stage = create_stage(folder / PACKAGE_STAGE)
        set_semantic_label(stage.GetPrimAtPath(PACKAGE_ROOT), label)
        labels = {PACKAGE_ROOT: label}
        for mesh in meshes:
            path = f"{PACKAGE_ROOT}/{prim_name(mesh.name)}"
            material = add_material(stage, mesh.material, folder)
            add_mesh(stage, path, mesh.vertices, mesh.faces, mesh.uvs, material, label)
            labels[path] = label
        stage.GetRootLayer().Save()
        hull.export(folder / COLLISION_FILE)
        lo, hi = vertices.min(axis=0), vertices.max(axis=0)
        return AssetMeta(
            id=out.name, kind="object", converter=source.dataset, converter_version=CONVERTER_VERSION,
            source=source, semantic_labels=labels,
            object=ObjectInfo(extents=tuple(map(float, hi - lo)), center=tuple(map(float, (hi + lo) / 2))),
        )

    return write_package(out, input_hash, build)

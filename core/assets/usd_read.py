"""Reading an asset package's USD stage back: every mesh as world-space triangles with its material and
semantic label, skinned meshes posed by UsdSkel. Placement and the simulation build their worlds from it.

Labels are read from Isaac Sim's `semantics:labels:class` or, failing that, the legacy
`semantic:Semantics:params:semanticData` attribute (the converters write both).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pxr import Usd, UsdGeom, UsdShade, UsdSkel

from core.errors import InputError

LABEL_ATTR = "semantics:labels:class"  # UsdSemantics.LabelsAPI, a token array
LEGACY_LABEL_ATTR = "semantic:Semantics:params:semanticData"  # the older Semantics schema, a string

def get_semantic_label(prim: Usd.Prim) -> str | None:
    """The nearest semantic label on the prim or its ancestors."""
    while prim and prim.IsValid():
        attr = prim.GetAttribute(LABEL_ATTR)
        if attr and attr.HasAuthoredValue() and len(attr.Get()):
            return str(attr.Get()[0])
        legacy = prim.GetAttribute(LEGACY_LABEL_ATTR)
        if legacy and legacy.HasAuthoredValue():
            return str(legacy.Get())
        prim = prim.GetParent()
    return None


@dataclass
class StageMesh:
    """A triangle mesh read back from a stage, in the stage's world frame."""

    prim_path: str
    vertices: np.ndarray
    faces: np.ndarray
    uvs: np.ndarray | None
    base_color: tuple[float, float, float]
    texture: Path | None
    roughness: float
    semantic_label: str | None


def _material_of(prim: Usd.Prim, layer_dir: Path) -> tuple[tuple[float, float, float], Path | None, float]:
    material, _ = UsdShade.MaterialBindingAPI(prim).ComputeBoundMaterial()
    color, texture, roughness = (0.7, 0.7, 0.7), None, 0.6
    if not material:
        return color, texture, roughness
    shader = material.ComputeSurfaceSource()[0]
    if not shader:
        return color, texture, roughness
    if (r := shader.GetInput("roughness")) and r.Get() is not None:
        roughness = float(r.Get())
    diffuse = shader.GetInput("diffuseColor")
    if diffuse:
        if diffuse.HasConnectedSource():
            source = diffuse.GetConnectedSources()[0][0].source
            tex = UsdShade.Shader(source.GetPrim()).GetInput("file")
            if tex and tex.Get() is not None:
                asset = tex.Get()
                resolved = asset.resolvedPath or str(layer_dir / asset.path)
                texture = Path(resolved)
        elif diffuse.Get() is not None:
            color = tuple(float(c) for c in diffuse.Get())
    return color, texture, roughness


def triangulate(counts: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Fan-triangulate polygons given USD faceVertexCounts and faceVertexIndices."""
    counts = np.asarray(counts, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    if np.all(counts == 3):
        return indices.reshape(-1, 3)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    tris = [(indices[s], indices[s + i], indices[s + i + 1]) for s, c in zip(starts, counts) for i in range(1, c - 1)]
    return np.array(tris, dtype=np.int64).reshape(-1, 3)


def read_meshes(path: str | Path, time: float | None = None) -> list[StageMesh]:
    """Every Mesh prim of a stage as world-space triangles with material and label.

    Skinned meshes are returned posed at `time` (UsdSkel evaluated); point caches at `time`.
    """
    path = Path(path)
    stage = Usd.Stage.Open(str(path))
    if stage is None:
        raise InputError("cannot open USD stage", path)
    code = Usd.TimeCode.Default() if time is None else Usd.TimeCode(time)
    xform_cache = UsdGeom.XformCache(code)
    skinned = skinned_points(stage, code)
    meshes = []
    for prim in stage.Traverse():
        if not prim.IsA(UsdGeom.Mesh):
            continue
        mesh = UsdGeom.Mesh(prim)
        prim_path = str(prim.GetPath())
        if prim_path in skinned:
            points = skinned[prim_path]  # UsdSkel gives skel-space points; SkelRoot xform applies below
        else:
            points = np.asarray(mesh.GetPointsAttr().Get(code), dtype=np.float64)
        world = np.asarray(xform_cache.GetLocalToWorldTransform(prim), dtype=np.float64).T
        points = points @ world[:3, :3].T + world[:3, 3]
        faces = triangulate(mesh.GetFaceVertexCountsAttr().Get(), mesh.GetFaceVertexIndicesAttr().Get())
        st = UsdGeom.PrimvarsAPI(prim).GetPrimvar("st")
        uvs = np.asarray(st.Get(), dtype=np.float64) if st and st.HasValue() else None
        color, texture, roughness = _material_of(prim, path.parent)
        meshes.append(StageMesh(prim_path, points, faces, uvs, color, texture, roughness, get_semantic_label(prim)))
    return meshes


def skinned_points(stage: Usd.Stage, time: Usd.TimeCode) -> dict[str, np.ndarray]:
    """UsdSkel-evaluated points (skeleton space) of every skinned mesh on the stage."""
    cache = UsdSkel.Cache()
    result = {}
    for prim in stage.Traverse():
        if not prim.IsA(UsdSkel.Root):
            continue
        root = UsdSkel.Root(prim)
        cache.Populate(root, Usd.TraverseInstanceProxies())
        for binding in cache.ComputeSkelBindings(root, Usd.TraverseInstanceProxies()):
            query = cache.GetSkelQuery(binding.GetSkeleton())
            transforms = query.ComputeSkinningTransforms(time)
            for target in binding.GetSkinningTargets():
                mesh = UsdGeom.Mesh(target.GetPrim())
                points = mesh.GetPointsAttr().Get(time)
                if target.ComputeSkinnedPoints(transforms, points, time):
                    result[str(target.GetPrim().GetPath())] = np.asarray(points, dtype=np.float64)
    return result

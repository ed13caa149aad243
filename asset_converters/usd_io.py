"""Writing the USD side of asset packages with usd-core (pxr).

Stages are Z-up with metersPerUnit = 1 and a default prim `/asset`, so a scene can reference a
package without knowing its internals. Semantic labels are written both as Isaac Sim's
`semantics:labels:class` (UsdSemantics.LabelsAPI) and the legacy `semantic:Semantics:params:*`
attributes, so Replicator annotators see them in either Isaac Sim generation. Reading a stage back is
core.assets.usd_read.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from pxr import Gf, Sdf, Usd, UsdGeom, UsdLux, UsdShade, UsdSkel, Vt

from core.assets.layout import PACKAGE_ROOT, TEXTURES_DIR
from core.assets.parts import Animation, DistantLight, Light, Material
from core.assets.skinning import joint_world_transforms, skin_vertices
from core.assets.usd_read import LABEL_ATTR, LEGACY_LABEL_ATTR
from core.errors import InputError
from core.formats.scene_layout import prim_name


def create_stage(path: str | Path, fps: float | None = None, frame_count: int | None = None) -> Usd.Stage:
    stage = Usd.Stage.CreateNew(str(path))
    UsdGeom.SetStageUpAxis(stage, UsdGeom.Tokens.z)
    UsdGeom.SetStageMetersPerUnit(stage, 1.0)
    root = UsdGeom.Xform.Define(stage, PACKAGE_ROOT)
    stage.SetDefaultPrim(root.GetPrim())
    if fps is not None:
        stage.SetTimeCodesPerSecond(fps)
        stage.SetFramesPerSecond(fps)
        stage.SetStartTimeCode(0)
        stage.SetEndTimeCode(max((frame_count or 1) - 1, 0))
    return stage


def set_semantic_label(prim: Usd.Prim, label: str) -> None:
    prim.CreateAttribute(LABEL_ATTR, Sdf.ValueTypeNames.TokenArray).Set([label])
    prim.CreateAttribute("semantic:Semantics:params:semanticType", Sdf.ValueTypeNames.String).Set("class")
    prim.CreateAttribute(LEGACY_LABEL_ATTR, Sdf.ValueTypeNames.String).Set(label)


def add_material(stage: Usd.Stage, material: Material, package_dir: Path) -> UsdShade.Material:
    """A UsdPreviewSurface material; a texture file is copied into the package's textures/."""
    path = f"{PACKAGE_ROOT}/materials/{prim_name(material.name)}"
    existing = stage.GetPrimAtPath(path)
    if existing:
        return UsdShade.Material(existing)
    mat = UsdShade.Material.Define(stage, path)
    shader = UsdShade.Shader.Define(stage, f"{path}/surface")
    shader.CreateIdAttr("UsdPreviewSurface")
    shader.CreateInput("roughness", Sdf.ValueTypeNames.Float).Set(float(material.roughness))
    shader.CreateInput("metallic", Sdf.ValueTypeNames.Float).Set(float(material.metallic))
    color_input = shader.CreateInput("diffuseColor", Sdf.ValueTypeNames.Color3f)
    color_input.Set(Gf.Vec3f(*material.base_color))
    if material.texture is not None:
        source = Path(material.texture)
        if not source.is_file():
            raise InputError("texture file not found", source)
        textures = package_dir / TEXTURES_DIR
        textures.mkdir(exist_ok=True)
        target = textures / f"{prim_name(material.name)}{source.suffix.lower()}"
        shutil.copyfile(source, target)
        reader = UsdShade.Shader.Define(stage, f"{path}/st_reader")
        reader.CreateIdAttr("UsdPrimvarReader_float2")
        reader.CreateInput("varname", Sdf.ValueTypeNames.Token).Set("st")
        tex = UsdShade.Shader.Define(stage, f"{path}/texture")
        tex.CreateIdAttr("UsdUVTexture")
        tex.CreateInput("file", Sdf.ValueTypeNames.Asset).Set(f"./{TEXTURES_DIR}/{target.name}")
        tex.CreateInput("st", Sdf.ValueTypeNames.Float2).ConnectToSource(reader.ConnectableAPI(), "result")
        tex.CreateInput("wrapS", Sdf.ValueTypeNames.Token).Set("repeat")
        tex.CreateInput("wrapT", Sdf.ValueTypeNames.Token).Set("repeat")
        color_input.ConnectToSource(tex.ConnectableAPI(), "rgb")
    mat.CreateSurfaceOutput().ConnectToSource(shader.ConnectableAPI(), "surface")
    return mat


def _set_mesh_topology(mesh: UsdGeom.Mesh, faces: np.ndarray, uvs: np.ndarray | None) -> None:
    faces = np.asarray(faces, dtype=np.int32)
    mesh.CreateFaceVertexCountsAttr(Vt.IntArray.FromNumpy(np.full(len(faces), 3, dtype=np.int32)))
    mesh.CreateFaceVertexIndicesAttr(Vt.IntArray.FromNumpy(faces.reshape(-1)))
    mesh.CreateSubdivisionSchemeAttr(UsdGeom.Tokens.none)
    if uvs is not None:
        st = UsdGeom.PrimvarsAPI(mesh).CreatePrimvar("st", Sdf.ValueTypeNames.TexCoord2fArray, UsdGeom.Tokens.vertex)
        st.Set(Vt.Vec2fArray.FromNumpy(np.asarray(uvs, dtype=np.float32)))


def add_mesh(stage: Usd.Stage, path: str, vertices: np.ndarray, faces: np.ndarray, uvs: np.ndarray | None,
             material: UsdShade.Material | None, label: str | None, double_sided: bool = False) -> UsdGeom.Mesh:
    mesh = UsdGeom.Mesh.Define(stage, path)
    points = np.asarray(vertices, dtype=np.float32)
    mesh.CreatePointsAttr(Vt.Vec3fArray.FromNumpy(points))
    mesh.CreateExtentAttr([Gf.Vec3f(*points.min(axis=0).tolist()), Gf.Vec3f(*points.max(axis=0).tolist())])
    mesh.CreateDoubleSidedAttr(double_sided)
    _set_mesh_topology(mesh, faces, uvs)
    if material is not None:
        UsdShade.MaterialBindingAPI.Apply(mesh.GetPrim()).Bind(material)
    if label:
        set_semantic_label(mesh.GetPrim(), label)
    return mesh


def add_light(stage: Usd.Stage, light: Light | DistantLight) -> UsdLux.SphereLight | UsdLux.DistantLight:
    if isinstance(light, DistantLight):
        return _add_distant_light(stage, light)
    lux = UsdLux.SphereLight.Define(stage, f"{PACKAGE_ROOT}/lights/{prim_name(light.name)}")
    lux.CreateIntensityAttr(float(light.intensity))
    lux.CreateColorAttr(Gf.Vec3f(*light.color))
    lux.CreateRadiusAttr(float(light.radius))
    UsdGeom.XformCommonAPI(lux).SetTranslate(Gf.Vec3d(*light.position))
    return lux


def _add_distant_light(stage: Usd.Stage, light: DistantLight) -> UsdLux.DistantLight:
    lux = UsdLux.DistantLight.Define(stage, f"{PACKAGE_ROOT}/lights/{prim_name(light.name)}")
    lux.CreateIntensityAttr(float(light.intensity))
    lux.CreateColorAttr(Gf.Vec3f(*light.color))
    lux.CreateAngleAttr(float(light.angle))
    # A distant light shines along its local -Z: turn its +Z towards the light.
    towards = Gf.Rotation(Gf.Vec3d(0.0, 0.0, 1.0), Gf.Vec3d(*map(float, light.direction)))
    UsdGeom.Xformable(lux).AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(towards.GetQuat())
    return lux


def _gf_matrix(m: np.ndarray) -> Gf.Matrix4d:
    return Gf.Matrix4d(np.asarray(m, dtype=np.float64).T.tolist())  # column- to row-vector convention


def joint_paths(names: list[str], parents: np.ndarray) -> list[str]:
    """UsdSkel joint paths ('pelvis', 'pelvis/spine', ...) from names and parent indices."""
    paths: list[str] = []
    for j, name in enumerate(names):
        leaf = prim_name(name)
        paths.append(leaf if parents[j] < 0 else f"{paths[parents[j]]}/{leaf}")
    return paths


def add_skel_animation(stage: Usd.Stage, anim: Animation, package_dir: Path, bake_points: bool = False) -> str:
    """Write the skeleton, its time-sampled SkelAnimation and the skinned meshes under /asset/<name>.

    With `bake_points`, skinned meshes are written as time-sampled points instead (no UsdSkel
    binding), for consumers that do not evaluate UsdSkel. Point caches are always time-sampled.
    Returns the SkelRoot path.
    """
    root_path = f"{PACKAGE_ROOT}/{prim_name(anim.name)}"
    skel_root = UsdSkel.Root.Define(stage, root_path)
    set_semantic_label(skel_root.GetPrim(), anim.semantic_label)
    paths = joint_paths(anim.joint_names, anim.parents)
    skeleton = UsdSkel.Skeleton.Define(stage, f"{root_path}/skeleton")
    skeleton.CreateJointsAttr(paths)
    skeleton.CreateJointNamesAttr([str(n) for n in anim.joint_names])
    bind = np.asarray(anim.bind_world, dtype=np.float64)
    skeleton.CreateBindTransformsAttr(Vt.Matrix4dArray([_gf_matrix(m) for m in bind]))
    rest_local = np.array([bind[j] if p < 0 else np.linalg.inv(bind[p]) @ bind[j] for j, p in enumerate(anim.parents)])
    skeleton.CreateRestTransformsAttr(Vt.Matrix4dArray([_gf_matrix(m) for m in rest_local]))

    skel_anim = UsdSkel.Animation.Define(stage, f"{root_path}/animation")
    skel_anim.CreateJointsAttr(paths)
    translations, rotations = skel_anim.CreateTranslationsAttr(), skel_anim.CreateRotationsAttr()
    scales = skel_anim.CreateScalesAttr()
    scales.Set(Vt.Vec3hArray([Gf.Vec3h(1, 1, 1)] * len(paths)))
    for frame in range(anim.frame_count):
        translations.Set(Vt.Vec3fArray.FromNumpy(anim.local_translations[frame].astype(np.float32)), frame)
        q = anim.local_rotations[frame]
        rotations.Set(Vt.QuatfArray([Gf.Quatf(float(w), float(x), float(y), float(z)) for w, x, y, z in q]), frame)
    UsdSkel.BindingAPI.Apply(skeleton.GetPrim()).CreateAnimationSourceRel().SetTargets([skel_anim.GetPath()])

    world = joint_world_transforms(anim) if bake_points else None
    for mesh in anim.skinned:
        material = add_material(stage, mesh.material, package_dir)
        path = f"{root_path}/{prim_name(mesh.name)}"
        if bake_points:
            frames = np.stack([skin_vertices(mesh, world[f], bind) for f in range(anim.frame_count)])
            _add_points_mesh(stage, path, frames, mesh.faces, mesh.uvs, material)
            continue
        usd_mesh = add_mesh(stage, path, mesh.rest_vertices, mesh.faces, mesh.uvs, material, None)
        binding = UsdSkel.BindingAPI.Apply(usd_mesh.GetPrim())
        binding.CreateSkeletonRel().SetTargets([skeleton.GetPath()])
        k = mesh.joint_indices.shape[1]
        binding.CreateJointIndicesPrimvar(False, k).Set(Vt.IntArray.FromNumpy(mesh.joint_indices.astype(np.int32).ravel()))
        binding.CreateJointWeightsPrimvar(False, k).Set(
            Vt.FloatArray.FromNumpy(mesh.joint_weights.astype(np.float32).ravel()))
        binding.CreateGeomBindTransformAttr(Gf.Matrix4d(1.0))
    for cache in anim.point_caches:
        material = add_material(stage, cache.material, package_dir)
        _add_points_mesh(stage, f"{root_path}/{prim_name(cache.name)}", cache.points, cache.faces, cache.uvs, material)
    return root_path


def _add_points_mesh(stage: Usd.Stage, path: str, frames: np.ndarray, faces: np.ndarray, uvs: np.ndarray | None,
                     material: UsdShade.Material) -> UsdGeom.Mesh:
    mesh = add_mesh(stage, path, frames[0], faces, uvs, material, None)
    points = mesh.GetPointsAttr()
    for frame, pts in enumerate(frames):
        points.Set(Vt.Vec3fArray.FromNumpy(np.asarray(pts, dtype=np.float32)), frame)
    lo, hi = frames.reshape(-1, 3).min(axis=0), frames.reshape(-1, 3).max(axis=0)
    mesh.GetExtentAttr().Set([Gf.Vec3f(*lo.tolist()), Gf.Vec3f(*hi.tolist())])
    return mesh

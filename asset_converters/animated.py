"""Animated asset packages: skinning in numpy, the swept-volume trace, writing and loading.

`animation.npz` holds everything needed to pose the asset without USD: the skeleton
(joint names, parents, bind transforms), per-frame local rotations/translations, joint world
positions, root trajectory, and each mesh's skinning data or point cache. The simulation poses
humans from it; `asset.usdc` carries the same animation as UsdSkel for Isaac Sim.
"""

from __future__ import annotations

from pathlib import Path

import manifold3d
import numpy as np
import trimesh

from asset_converters.package import CONVERTER_VERSION, write_package
from asset_converters.parts import Animation, Material, PointCacheMesh, SkinnedMesh
from asset_converters.usd_io import add_skel_animation, create_stage
from core.errors import InputError
from core.formats.asset_meta import AnimationInfo, AssetMeta, SourceInfo
from core.formats.manifest import StageStatus, stage_status
from core.geometry import forward_kinematics
from core.rundir import load_npz_checked

# Hulls thinner than this (a few vertices in a plane) add nothing to the trace but slivers.
MIN_HULL_VOLUME = 1e-9  # m^3
# The trace is simplified to this tolerance: posed vertices may lie up to this far outside it.
TRACE_TOLERANCE = 0.002  # m


def joint_world_transforms(anim: Animation) -> np.ndarray:
    """(N, J, 4, 4) world transforms of every joint in every frame."""
    return forward_kinematics(anim.parents, anim.local_rotations, anim.local_translations)


def skin_vertices(mesh: SkinnedMesh, joint_world: np.ndarray, bind_world: np.ndarray) -> np.ndarray:
    """Linear blend skinning of one frame: v' = sum_k w_k G_jk inv(B_jk) v."""
    skinning = joint_world @ np.linalg.inv(bind_world)  # (J, 4, 4)
    per_vertex = np.einsum("vk,vkij->vij", mesh.joint_weights, skinning[mesh.joint_indices])
    return np.einsum("vij,vj->vi", per_vertex[:, :3, :3], mesh.rest_vertices) + per_vertex[:, :3, 3]


def posed_meshes(anim: Animation, frame: int, world: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """(vertices, faces) of every mesh of the animation at `frame`."""
    world = joint_world_transforms(anim) if world is None else world
    out = [(skin_vertices(m, world[frame], anim.bind_world), m.faces) for m in anim.skinned]
    out += [(c.points[frame], c.faces) for c in anim.point_caches]
    return out


def _vertex_groups(anim: Animation, world: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(mesh index, vertex ids) groups that move nearly rigidly: one per dominant joint for skinned
    meshes, one per nearest joint (in the first frame) for point caches. Each group's convex hull
    over a window of frames is one solid trace piece."""
    groups = []
    for i, mesh in enumerate(anim.skinned):
        dominant = mesh.joint_indices[np.arange(len(mesh.joint_indices)), mesh.joint_weights.argmax(axis=1)]
        groups += [(i, np.flatnonzero(dominant == j)) for j in np.unique(dominant)]
    joints = world[0, :, :3, 3]
    for i, cache in enumerate(anim.point_caches, start=len(anim.skinned)):
        nearest = np.linalg.norm(cache.points[0][:, None, :] - joints[None], axis=2).argmin(axis=1)
        groups += [(i, np.flatnonzero(nearest == j)) for j in np.unique(nearest)]
    return groups


def swept_trace(anim: Animation, window: int = 4) -> trimesh.Trimesh:
    """The volume swept by the whole animation: union of convex hulls of each rigid-ish vertex group
    over consecutive windows of frames. Every posed vertex of every frame lies inside it."""
    world = joint_world_transforms(anim)
    frames = [posed_meshes(anim, f, world) for f in range(anim.frame_count)]
    groups = _vertex_groups(anim, world)
    hulls = []
    for start in range(0, anim.frame_count, window):
        # Overlap windows by one frame so the motion between windows is covered too.
        chunk = frames[start : min(start + window + 1, anim.frame_count)]
        for mesh_index, ids in groups:
            points = np.concatenate([chunk_frame[mesh_index][0][ids] for chunk_frame in chunk])
            hull = manifold3d.Manifold.hull_points(points.astype(np.float64))
            if hull.volume() > MIN_HULL_VOLUME:
                hulls.append(hull)
    if not hulls:
        raise InputError(f"animation {anim.name!r}: the trace is empty (degenerate meshes?)")
    union = manifold3d.Manifold.batch_boolean(hulls, manifold3d.OpType.Add).simplify(TRACE_TOLERANCE)
    result = union.to_mesh()
    return trimesh.Trimesh(np.asarray(result.vert_properties)[:, :3], np.asarray(result.tri_verts), process=False)


def validate_animation(anim: Animation) -> None:
    """Shapes and values that every consumer relies on; raises InputError naming the field."""
    n, j = anim.frame_count, len(anim.joint_names)
    checks = [
        (anim.fps > 0, "fps", f"must be > 0, got {anim.fps}"),
        (n >= 1, "local_rotations", "needs at least one frame"),
        (anim.parents.shape == (j,), "parents", f"shape {anim.parents.shape} != ({j},)"),
        (anim.bind_world.shape == (j, 4, 4), "bind_world", f"shape {anim.bind_world.shape} != ({j}, 4, 4)"),
        (anim.local_rotations.shape == (n, j, 4), "local_rotations", f"shape {anim.local_rotations.shape} != ({n}, {j}, 4)"),
        (anim.local_translations.shape == (n, j, 3), "local_translations",
         f"shape {anim.local_translations.shape} != ({n}, {j}, 3)"),
        (all(p < i for i, p in enumerate(anim.parents)), "parents", "every parent must come before its child"),
        (bool(anim.skinned or anim.point_caches), "meshes", "the animation drives no mesh"),
    ]
    for ok, field, message in checks:
        if not ok:
            raise InputError(message, f"animation {anim.name!r}", field)
    for mesh in anim.skinned:
        v = len(mesh.rest_vertices)
        if v == 0 or len(mesh.faces) == 0:
            raise InputError("empty mesh", f"animation {anim.name!r}", f"skinned.{mesh.name}")
        if mesh.joint_indices.shape != mesh.joint_weights.shape or mesh.joint_indices.shape[0] != v:
            raise InputError("joint_indices/joint_weights must both be (V, K)", f"animation {anim.name!r}", mesh.name)
        if mesh.joint_indices.max() >= j or mesh.joint_indices.min() < 0:
            raise InputError("joint index out of range", f"animation {anim.name!r}", f"skinned.{mesh.name}")
    for cache in anim.point_caches:
        if cache.points.ndim != 3 or cache.points.shape[0] != n or cache.points.shape[2] != 3:
            raise InputError(f"points must be ({n}, V, 3), got {cache.points.shape}", f"animation {anim.name!r}",
                             f"point_caches.{cache.name}")


def write_animated_package(anim: Animation, out: str | Path, source: SourceInfo, input_hash: str,
                           representation: str = "skeleton", trace_window: int = 4) -> Path:
    """Write an animated package: asset.usdc, animation.npz, trace.stl, meta.json, manifest."""
    validate_animation(anim)

    def build(folder: Path) -> AssetMeta:
        stage = create_stage(folder / "asset.usdc", anim.fps, anim.frame_count)
        root = add_skel_animation(stage, anim, folder, bake_points=representation == "points")
        stage.GetRootLayer().Save()
        world = joint_world_transforms(anim)
        lowest = min(v[:, 2].min() for f in range(anim.frame_count) for v, _ in posed_meshes(anim, f, world))
        trace = swept_trace(anim, trace_window)
        trace.export(folder / "trace.stl")
        save_animation_npz(folder / "animation.npz", anim, world)
        return AssetMeta(
            id=out.name, kind="animated", converter=source.dataset, converter_version=CONVERTER_VERSION,
            source=source, semantic_labels={root: anim.semantic_label},
            animation=AnimationInfo(
                fps=anim.fps, frame_count=anim.frame_count, duration=anim.frame_count / anim.fps,
                joint_names=list(anim.joint_names), ground_offset=float(-lowest),
                root_trajectory=[tuple(float(c) for c in p) for p in world[:, 0, :3, 3]],
                motions={k: (int(a), int(b)) for k, (a, b) in anim.motions.items()},
                representation=representation, trace_window=trace_window,
            ),
        )

    out = Path(out)
    return write_package(out, input_hash, build)


def save_animation_npz(path: Path, anim: Animation, world: np.ndarray) -> None:
    arrays: dict[str, np.ndarray] = {
        "fps": np.array(anim.fps),
        "joint_names": np.array(anim.joint_names),
        "parents": anim.parents.astype(np.int32),
        "bind_world": anim.bind_world.astype(np.float64),
        "local_rotations": anim.local_rotations.astype(np.float64),
        "local_translations": anim.local_translations.astype(np.float64),
        "joint_positions": world[:, :, :3, 3].astype(np.float32),
        "root_trajectory": world[:, 0, :3, 3].astype(np.float64),
        "semantic_label": np.array(anim.semantic_label),
        "skinned_names": np.array([m.name for m in anim.skinned]),
        "cache_names": np.array([c.name for c in anim.point_caches]),
    }
    for i, m in enumerate(anim.skinned):
        arrays |= {f"skinned{i}_rest_vertices": m.rest_vertices, f"skinned{i}_faces": m.faces.astype(np.int32),
                   f"skinned{i}_joint_indices": m.joint_indices.astype(np.int32),
                   f"skinned{i}_joint_weights": m.joint_weights.astype(np.float32),
                   f"skinned{i}_color": np.array(m.material.base_color)}
        if m.uvs is not None:
            arrays[f"skinned{i}_uvs"] = m.uvs.astype(np.float32)
    for i, c in enumerate(anim.point_caches):
        arrays |= {f"cache{i}_points": c.points.astype(np.float32), f"cache{i}_faces": c.faces.astype(np.int32),
                   f"cache{i}_color": np.array(c.material.base_color)}
        if c.uvs is not None:
            arrays[f"cache{i}_uvs"] = c.uvs.astype(np.float32)
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **arrays)


def load_animation(package: str | Path) -> Animation:
    """The Animation stored in a complete animated package (textures are referenced, not loaded)."""
    package = Path(package)
    if stage_status(package) is not StageStatus.COMPLETE:
        raise InputError("not a complete asset package; convert it again", package)
    data = load_npz_checked(package / "animation.npz", ["fps", "joint_names", "parents", "bind_world",
                                                        "local_rotations", "local_translations"])
    textures = sorted((package / "textures").glob("*")) if (package / "textures").is_dir() else []

    def material(prefix: str, name: str) -> Material:
        match = [t for t in textures if t.stem == name]
        return Material(name, tuple(data[f"{prefix}_color"].tolist()), match[0] if match else None)

    skinned = [
        SkinnedMesh(str(name), data[f"skinned{i}_rest_vertices"], data[f"skinned{i}_faces"],
                    data[f"skinned{i}_joint_indices"], data[f"skinned{i}_joint_weights"],
                    material(f"skinned{i}", str(name)), data.get(f"skinned{i}_uvs"))
        for i, name in enumerate(data["skinned_names"])
    ]
    caches = [
        PointCacheMesh(str(name), data[f"cache{i}_points"], data[f"cache{i}_faces"],
                       material(f"cache{i}", str(name)), data.get(f"cache{i}_uvs"))
        for i, name in enumerate(data["cache_names"])
    ]
    return Animation(
        name=package.name, fps=float(data["fps"]), joint_names=[str(n) for n in data["joint_names"]],
        parents=data["parents"].astype(np.int64), bind_world=data["bind_world"],
        local_rotations=data["local_rotations"], local_translations=data["local_translations"],
        skinned=skinned, point_caches=caches, semantic_label=str(data["semantic_label"]),
    )

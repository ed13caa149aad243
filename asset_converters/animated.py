"""Writing animated asset packages: the animation checked, its swept-volume trace, `asset.usdc` (UsdSkel,
for Isaac Sim) and `animation.npz` (core.assets.animation, which the simulation poses humans from).
"""

from __future__ import annotations

from pathlib import Path

import manifold3d
import numpy as np
import trimesh

from asset_converters.package import CONVERTER_VERSION, write_package
from asset_converters.usd_io import add_skel_animation, create_stage
from core.assets.animation import save_animation
from core.assets.layout import PACKAGE_STAGE, TRACE_FILE
from core.assets.parts import Animation
from core.assets.skinning import joint_world_transforms, posed_meshes
from core.errors import InputError
from core.formats.asset_meta import AnimationInfo, AssetMeta, SourceInfo
from core.geometry import canonical_mesh

# Hulls thinner than this (a few vertices in a plane) add nothing to the trace but slivers.
MIN_HULL_VOLUME = 1e-9  # m^3
# The trace is simplified to this tolerance: posed vertices may lie up to this far outside it.
TRACE_TOLERANCE = 0.002  # m


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
    vertices, faces = canonical_mesh(np.asarray(result.vert_properties)[:, :3], np.asarray(result.tri_verts))
    return trimesh.Trimesh(vertices, faces, process=False)


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
        stage = create_stage(folder / PACKAGE_STAGE, anim.fps, anim.frame_count)
        root = add_skel_animation(stage, anim, folder, bake_points=representation == "points")
        stage.GetRootLayer().Save()
        world = joint_world_transforms(anim)
        lowest = min(v[:, 2].min() for f in range(anim.frame_count) for v, _ in posed_meshes(anim, f, world))
        trace = swept_trace(anim, trace_window)
        trace.export(folder / TRACE_FILE)
        save_animation(folder, anim, world)
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

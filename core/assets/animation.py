"""`animation.npz`: everything needed to pose an animated asset without USD.

It holds the skeleton (joint names, parents, bind transforms), per-frame local rotations/translations,
joint world positions, the root trajectory, and each mesh's skinning data or point cache. The converters
write it beside `asset.usdc` (which carries the same animation as UsdSkel for Isaac Sim); the simulation
poses humans from it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from core.assets.layout import ANIMATION_FILE, TEXTURES_DIR
from core.assets.parts import Animation, Material, PointCacheMesh, SkinnedMesh
from core.rundir import load_npz_checked


def save_animation(folder: Path, anim: Animation, world: np.ndarray) -> Path:
    """Write `folder/animation.npz` for `anim` posed by `world` (its joint world transforms)."""
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
    path = Path(folder) / ANIMATION_FILE
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **arrays)
    return path


def load_animation(package: str | Path) -> Animation:
    """The Animation stored in an animated package (textures are referenced, not loaded). The caller has
    checked the package complete: `load_meta` and the scene reader refuse one without a valid manifest."""
    package = Path(package)
    data = load_npz_checked(package / ANIMATION_FILE, ["fps", "joint_names", "parents", "bind_world",
                                                       "local_rotations", "local_translations"])
    textures_dir = package / TEXTURES_DIR
    textures = sorted(textures_dir.glob("*")) if textures_dir.is_dir() else []

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

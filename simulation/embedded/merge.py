"""Merge the meshes of one placed asset (a human's body, clothes and shoes) into a single render mesh.

Instance images and boxes must show one id per person, and the renderer gives each mesh its own id,
so the parts become one mesh whose material samples a texture atlas: each textured part's texture,
repeated over the whole-number range of its UVs (UVs wrap), and a one-texel patch of each untextured
part's colour, side by side. Every patch gets a one-texel border copied from its opposite edge, so
bilinear lookups at patch edges see what the repeating original texture would give.
The merged mesh takes the roughness and metallic of its largest part (by face count).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core.color import linear_to_srgb
from core.errors import InputError
from simulation.render import RenderMaterial

MAX_TILES = 16  # repeats of a texture per axis in the atlas; more would blow up its size
_PAD = 1  # border texels around each patch
_SRGB_LEVELS = 255


@dataclass
class Part:
    """One mesh of an asset in the asset's frame, with its material."""

    name: str
    vertices: np.ndarray  # (V, 3)
    faces: np.ndarray  # (F, 3)
    base_color: tuple[float, float, float]  # linear RGB
    texture: np.ndarray | None = None  # (H, W, 3) uint8 sRGB
    uvs: np.ndarray | None = None  # (V, 2)
    roughness: float = 0.6
    metallic: float = 0.0


@dataclass(frozen=True)
class MergedMesh:
    faces: np.ndarray  # (F, 3) into the concatenated vertices of the parts, in order
    uvs: np.ndarray | None
    material: RenderMaterial
    vertex_counts: tuple[int, ...]


def _srgb8(color: Sequence[float]) -> np.ndarray:
    return np.round(linear_to_srgb(color) * _SRGB_LEVELS).astype(np.uint8)


def _patch(part: Part) -> tuple[np.ndarray, np.ndarray | None]:
    """(padded patch image, integer UV origin (u0, v1) or None for a solid colour)."""
    if part.texture is None:
        return np.pad(np.broadcast_to(_srgb8(part.base_color), (1, 1, 3)), ((_PAD, _PAD), (_PAD, _PAD), (0, 0)),
                      mode="edge"), None
    if part.uvs is None:
        raise InputError("a textured mesh needs texture coordinates", f"mesh {part.name!r}", "uvs")
    low, high = np.floor(part.uvs.min(axis=0)), np.ceil(part.uvs.max(axis=0))
    tiles = np.maximum(high - low, 1).astype(int)
    if tiles.max() > MAX_TILES:
        raise InputError(f"texture coordinates span {tiles.tolist()} repeats; merging this asset's meshes "
                         f"supports at most {MAX_TILES} per axis", f"mesh {part.name!r}", "uvs")
    tiled = np.tile(part.texture[..., :3], (tiles[1], tiles[0], 1))
    # v grows upwards: the patch's top row is v = low_v + tiles_v.
    return np.pad(tiled, ((_PAD, _PAD), (_PAD, _PAD), (0, 0)), mode="wrap"), np.array([low[0], low[1] + tiles[1]])


def merge_parts(parts: Sequence[Part]) -> MergedMesh:
    """One mesh (faces, UVs, material with an atlas texture) from several parts; a single part is kept as is."""
    if not parts:
        raise InputError("an asset needs at least one mesh", "asset", "meshes")
    counts = tuple(len(p.vertices) for p in parts)
    largest = max(parts, key=lambda p: len(p.faces))
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    faces = np.concatenate([np.asarray(p.faces, dtype=np.int64) + off for p, off in zip(parts, offsets)])
    if len(parts) == 1:
        only = parts[0]
        material = RenderMaterial(tuple(only.base_color), only.texture, only.roughness, only.metallic)
        return MergedMesh(faces, only.uvs if only.texture is not None else None, material, counts)

    patches = [_patch(p) for p in parts]
    height = max(image.shape[0] for image, _ in patches)
    width = sum(image.shape[1] for image, _ in patches)
    atlas = np.zeros((height, width, 3), dtype=np.uint8)
    uvs, column = [], 0
    for part, (image, origin) in zip(parts, patches):
        h, w = image.shape[:2]
        atlas[:h, column:column + w] = image
        if origin is None:  # every vertex samples the colour texel's centre
            centre = np.array([(column + _PAD + 0.5) / width, 1.0 - (_PAD + 0.5) / height])
            uvs.append(np.broadcast_to(centre, (len(part.vertices), 2)))
        else:
            tex_h, tex_w = part.texture.shape[:2]
            x = column + _PAD + (part.uvs[:, 0] - origin[0]) * tex_w
            y = _PAD + (origin[1] - part.uvs[:, 1]) * tex_h  # texel rows from the atlas top
            uvs.append(np.stack([x / width, 1.0 - y / height], axis=1))
        column += w
    material = RenderMaterial(tuple(largest.base_color), atlas, largest.roughness, largest.metallic)
    return MergedMesh(faces, np.concatenate(uvs), material, counts)


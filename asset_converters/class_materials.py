"""Built-in procedural materials per semantic class, for meshes that come without a texture.

A mesh's label is resolved to a class of the global class map (core.formats.class_map); the class names a
look: the procedural patterns it may take (asset_converters.procedural.textures), a colour ramp, a
roughness range and the size of one texture tile on the surface. Each material draws its pattern, its
colour on the ramp and its roughness from the generator it is given, so two chairs differ while the same
generator name and seed give the same chair. A source colour (a 3D-Front material's `color`) replaces the
ramp, and a source description (its `contentType`, e.g. "flooring - hardwood") picks the pattern.

Texture UVs come from the geometry (`planar_uvs`: each triangle projected on the plane it faces most), in
metres divided by the tile size, so a tile has the same size on every mesh whatever its source UVs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh

from asset_converters.procedural.shapes import triplanar
from asset_converters.procedural.textures import Color, make_texture, ramp_color, save_png
from core.assets.parts import Material
from core.formats.class_map import DEFAULT_CLASS_MAP, ClassMap

RAMP_JITTER = 0.08  # per-channel deviation from a class's colour ramp
TINT_JITTER = 0.06  # per-channel relative deviation from a source colour, so instances of one material differ


@dataclass(frozen=True)
class ClassLook:
    patterns: tuple[str, ...]  # names in procedural.textures.PATTERNS, one drawn per material
    low: Color  # colour ramp (sRGB 0..1) the material's colour is drawn on
    high: Color
    roughness: tuple[float, float]  # uniform range
    tile: float  # metres of surface per texture tile


_WOOD = ClassLook(("wood",), (0.40, 0.26, 0.15), (0.82, 0.68, 0.52), (0.35, 0.7), 1.0)
_FABRIC = ClassLook(("fabric",), (0.25, 0.25, 0.30), (0.85, 0.78, 0.68), (0.8, 0.95), 0.5)
_BEDDING = ClassLook(("fabric",), (0.60, 0.60, 0.66), (0.96, 0.94, 0.90), (0.8, 0.95), 0.5)
_CERAMIC = ClassLook(("noise",), (0.86, 0.86, 0.86), (0.98, 0.98, 0.98), (0.1, 0.3), 0.5)
_PLASTER = ClassLook(("noise",), (0.78, 0.75, 0.70), (0.96, 0.94, 0.90), (0.7, 0.95), 1.5)
DEFAULT_LOOK = ClassLook(("wood", "noise"), (0.35, 0.30, 0.25), (0.80, 0.75, 0.70), (0.4, 0.8), 0.5)
LOOKS: dict[str, ClassLook] = {
    "floor": ClassLook(("wood", "checker"), (0.55, 0.42, 0.30), (0.88, 0.80, 0.70), (0.3, 0.6), 1.0),
    "wall": _PLASTER,
    "ceiling": ClassLook(("noise",), (0.90, 0.90, 0.88), (0.98, 0.98, 0.97), (0.85, 0.95), 2.0),
    "otherstructure": ClassLook(("noise",), (0.85, 0.84, 0.80), (0.97, 0.96, 0.94), (0.5, 0.8), 1.0),
    "door": _WOOD, "window": ClassLook(("noise",), (0.80, 0.82, 0.85), (0.95, 0.96, 0.97), (0.2, 0.4), 1.0),
    "sofa": _FABRIC, "curtain": _FABRIC, "floor_mat": _FABRIC, "blinds": _FABRIC,
    "bed": _BEDDING, "pillow": _BEDDING,
    "chair": ClassLook(("wood", "fabric"), (0.30, 0.22, 0.16), (0.80, 0.70, 0.58), (0.4, 0.85), 0.5),
    **dict.fromkeys(("table", "desk", "cabinet", "bookshelf", "shelves", "dresser", "night_stand"), _WOOD),
    "counter": ClassLook(("noise",), (0.55, 0.55, 0.55), (0.92, 0.90, 0.88), (0.15, 0.4), 1.0),
    "lamp": ClassLook(("noise",), (0.85, 0.80, 0.70), (0.98, 0.95, 0.90), (0.3, 0.6), 0.5),
    "television": ClassLook(("noise",), (0.04, 0.04, 0.05), (0.14, 0.14, 0.16), (0.1, 0.3), 0.5),
    **dict.fromkeys(("refrigerator", "toilet", "sink", "bathtub"), _CERAMIC),
}
# Words of a source material description -> pattern, first match wins ("antique tiles" -> checker).
DESCRIPTION_PATTERNS = (("wood", "wood"), ("parquet", "wood"), ("tile", "checker"), ("wallpaper", "stripes"),
                        ("paint", "noise"), ("plaster", "noise"), ("mud", "noise"), ("stone", "noise"),
                        ("marble", "noise"), ("concrete", "noise"), ("fabric", "fabric"), ("cloth", "fabric"))


def class_look(label: str, class_map: ClassMap = DEFAULT_CLASS_MAP) -> ClassLook:
    """The look of the class `label` resolves to (DEFAULT_LOOK for classes without one of their own)."""
    return LOOKS.get(class_map.resolve(label, "environment") or "", DEFAULT_LOOK)


def description_pattern(description: str) -> str | None:
    """The pattern a material description names, if any."""
    text = description.lower()
    return next((pattern for word, pattern in DESCRIPTION_PATTERNS if word in text), None)


def class_material(rng: np.random.Generator, name: str, look: ClassLook, texture_dir: Path,
                   tint: Color | None = None, pattern: str | None = None) -> Material:
    """A material with a procedural texture saved as `texture_dir/<name>.png`: `pattern` (else one of the
    look's), in `tint` nudged by a few percent (else a colour on the look's ramp)."""
    chosen = pattern or look.patterns[int(rng.integers(len(look.patterns)))]
    if tint is None:
        color = ramp_color(rng, look.low, look.high, RAMP_JITTER)
    else:
        nudged = np.asarray(tint) * (1.0 + rng.uniform(-TINT_JITTER, TINT_JITTER, 3))
        color = tuple(float(c) for c in np.clip(nudged, 0.0, 1.0))
    roughness = float(rng.uniform(*look.roughness))
    path = save_png(make_texture(rng, chosen, color), texture_dir / f"{name}.png")
    return Material(name, color, path, roughness)


def planar_uvs(vertices: np.ndarray, faces: np.ndarray, tile: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unshared vertices, faces and UVs of a mesh for a procedural texture of `tile` metres per tile."""
    return triplanar(trimesh.Trimesh(vertices, faces, process=False), tile)

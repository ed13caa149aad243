"""Semantic classes of 3D-Front pieces: defaults, the user's remapping file, and the `semantics.json` document
(core.formats.semantics).

A piece's raw category is its 3D-FUTURE category (model_info.json), else the house's own
furniture `category`/`title`, else its architecture `type`. The default class is a lower-case,
underscore-joined form of it (architecture types are first merged, e.g. WallInner -> wall). A user
mapping {raw category or default class: class} (case-insensitive keys) overrides the default.
"""

from __future__ import annotations

import re
from pathlib import Path

from core.errors import InputError
from core.formats.semantics import BACKGROUND, BACKGROUND_ID, Semantics
from core.rundir import read_json

UNKNOWN_FURNITURE = "others"  # 3D-Front's own name for uncategorised furniture

ARCHITECTURE_CLASSES = {
    "floor": "floor", "customizedfloor": "floor",
    "ceiling": "ceiling", "customizedceiling": "ceiling",
    "wallinner": "wall", "wallouter": "wall", "walltop": "wall", "wallbottom": "wall", "front": "wall",
    "back": "wall", "slabside": "wall", "pocket": "wall", "customizedfeaturewall": "wall",
    "extrusioncustomizedbackgroundwall": "wall", "extrusioncustomizedceilingmodel": "ceiling",
    "slabtop": "slab", "slabbottom": "slab",
    "door": "door", "window": "window", "baseboard": "baseboard", "hole": "opening",
}
FLOOR_CLASS = "floor"
CEILING_CLASS = "ceiling"


def snake(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def architecture_class(mesh_type: str) -> str:
    return ARCHITECTURE_CLASSES.get(mesh_type.lower(), snake(mesh_type) or "architecture")


def furniture_class(raw: str) -> str:
    return snake(raw) or UNKNOWN_FURNITURE


def load_label_map(path: str | Path | None) -> dict[str, str]:
    """The user's {raw category: class} JSON object, keys lower-cased; {} without a file."""
    if path is None:
        return {}
    path = Path(path)
    data = read_json(path, "label mapping file")
    if not isinstance(data, dict):
        raise InputError("expected a JSON object {raw category: class}", path)
    mapping = {}
    for key, value in data.items():
        if not isinstance(value, str) or not value.strip():
            raise InputError("expected a non-empty class name", path, key)
        mapping[key.lower()] = value.strip()
    return mapping


def apply_label_map(raw: str, default: str, mapping: dict[str, str]) -> str:
    return mapping.get(raw.lower(), mapping.get(default.lower(), default))


def semantics_document(prim_paths: list[str], classes: list[str], raws: list[str], mapping: dict[str, str],
                       stats: dict[str, int]) -> Semantics:
    """Class ids, prim -> class and prim -> raw category.

    Ids number the sorted union of the mapping's classes and the classes present, so houses
    converted with the same mapping file share ids.
    """
    names = sorted(set(classes) | set(mapping.values()))
    return Semantics(
        classes={BACKGROUND: BACKGROUND_ID, **{name: i for i, name in enumerate(names, start=BACKGROUND_ID + 1)}},
        prims=dict(zip(prim_paths, classes, strict=True)),
        raw_categories=dict(zip(prim_paths, raws, strict=True)),
        conversion=stats,
    )

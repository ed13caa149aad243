"""`semantics.json` of a 3D-Front environment package (schema "grade.semantics/1"): model, writer and reader.

It holds the semantic class ids, each prim's class, each prim's raw category (its 3D-FUTURE category, else
the house's furniture category or title, else its architecture type) and the conversion's counts. The
front3d converter builds it (asset_converters/front3d_labels.py): ids number the sorted classes from 1
after the background's 0, so houses converted with one mapping file share ids.
"""

from __future__ import annotations

from pathlib import Path

from core.assets.layout import SEMANTICS_FILE
from core.formats.json_model import JsonDocument, read_json_model, write_json_model

BACKGROUND = "background"
BACKGROUND_ID = 0  # unlabelled pixels


class Semantics(JsonDocument):
    KIND, MAJOR = "semantics", 1

    classes: dict[str, int]  # class -> id, the background first
    prims: dict[str, str]  # prim path -> class
    raw_categories: dict[str, str]  # prim path -> raw category
    conversion: dict[str, int]  # what the conversion counted (skipped meshes, missing textures, ...)


def write_semantics(package: str | Path, document: Semantics) -> Path:
    return write_json_model(Path(package) / SEMANTICS_FILE, document)


def read_semantics(package: str | Path) -> Semantics:
    return read_json_model(Path(package) / SEMANTICS_FILE, Semantics)

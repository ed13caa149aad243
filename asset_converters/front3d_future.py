"""3D-FUTURE furniture models and 3D-FRONT texture folders on disk, and the box used without a model.

A 3D-FUTURE folder holds `<jid>/raw_model.obj` + `<jid>/texture.png` per model and an index
`model_info.json` (a list of {model_id, category, super-category, ...}). A 3D-FRONT texture folder
holds `<id>/texture.png` per architecture material.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trimesh

from asset_converters.front3d_house import HouseMaterial
from core.errors import InputError
from core.rundir import read_json

MODEL_FILE = "raw_model.obj"
TEXTURE_FILE = "texture.png"
MODEL_INFO_FILE = "model_info.json"


@dataclass
class FurnitureModel:
    vertices: np.ndarray  # (V, 3) in the model's local frame, Y up
    faces: np.ndarray
    uvs: np.ndarray | None
    texture: Path


@dataclass
class ModelInfo:
    category: str | None
    super_category: str | None


def load_model_info(folder: Path) -> dict[str, ModelInfo]:
    """model_id -> categories; an absent index gives no categories (labels then come from the house)."""
    path = folder / MODEL_INFO_FILE
    if not path.is_file():
        return {}
    entries = read_json(path, MODEL_INFO_FILE)
    if not isinstance(entries, list):
        raise InputError("expected a list of models", path)
    info = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("model_id"), str):
            raise InputError("expected an object with a string model_id", path, f"[{i}].model_id")
        category, super_category = entry.get("category"), entry.get("super-category")
        info[entry["model_id"]] = ModelInfo(category if isinstance(category, str) and category else None,
                                            super_category if isinstance(super_category, str) else None)
    return info


def model_files(folder: Path, jid: str) -> tuple[Path, Path]:
    return folder / jid / MODEL_FILE, folder / jid / TEXTURE_FILE


def load_future_model(folder: Path, jid: str, house: Path, where: str) -> FurnitureModel:
    """The furniture's OBJ with its UVs and texture; a missing or unreadable file names the house field."""
    obj, texture = model_files(folder, jid)
    for file in (obj, texture):
        if not file.is_file():
            raise InputError(f"3D-FUTURE model file {file} not found", house, f"{where}.jid")
    try:
        mesh = trimesh.load(obj, file_type="obj", force="mesh", process=False)
    except Exception as exc:  # trimesh raises many types on corrupt files
        raise InputError(f"cannot read OBJ ({type(exc).__name__}: {exc})", obj) from exc
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        raise InputError("empty mesh: no faces", obj)
    uvs = getattr(mesh.visual, "uv", None)
    if uvs is not None and len(uvs) != len(mesh.vertices):
        uvs = None
    return FurnitureModel(np.asarray(mesh.vertices, dtype=np.float64), np.asarray(mesh.faces, dtype=np.int64),
                          None if uvs is None else np.asarray(uvs, dtype=np.float64), texture)


def bbox_box(size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A box standing in for a furniture model of bbox `size` (w, h, d), in the model's local frame.

    3D-FUTURE models are authored with their origin at the centre of their footprint and their
    bottom at y = 0: in the shared sample every floor-standing piece (sofa, chairs, tables, beds) has
    pos.y = 0 on a floor at y = 0, and wall shelves sit at pos.y > 0. So the box spans x and z
    symmetrically and y from 0 to h.
    """
    box = trimesh.creation.box(extents=size)
    vertices = np.asarray(box.vertices, dtype=np.float64) + [0.0, size[1] / 2.0, 0.0]
    return vertices, np.asarray(box.faces, dtype=np.int64)


def find_texture(folder: Path, material: HouseMaterial) -> Path | None:
    """`<folder>/<material jid>/texture.png`, else the folder named in the material's texture URL."""
    candidates = [material.jid]
    if material.texture_url:
        parts = material.texture_url.rstrip("/").split("/")
        if len(parts) >= 2:
            candidates.append(parts[-2])
    for name in candidates:
        if name and (path := folder / name / TEXTURE_FILE).is_file():
            return path
    return None

"""3D-Front houses -> environment packages (DESIGN.md §2), one house or one room at a time.

Architecture comes from the house's `mesh` entries, furniture from 3D-FUTURE models when a model
folder is given, else from boxes of each entry's bbox size. Everything is placed by the rooms'
children (pos, rot x/y/z/w, scale) and turned from 3D-Front's Y up to Z up. The package gets a
`semantics.json` (class ids, prim -> class, prim -> raw category) next to the usual files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from asset_converters.batch import Job, hash_inputs
from asset_converters.environment import write_environment_package
from asset_converters.front3d_future import (
    MODEL_INFO_FILE,
    FurnitureModel,
    ModelInfo,
    bbox_box,
    find_texture,
    load_future_model,
    load_model_info,
    model_files,
)
from asset_converters.front3d_house import ArchMesh, FurnitureEntry, House, Placement, Room, load_house
from asset_converters.front3d_labels import (
    FLOOR_CLASS,
    SEMANTICS_FILE,
    UNKNOWN_FURNITURE,
    apply_label_map,
    architecture_class,
    furniture_class,
    load_label_map,
    semantics_document,
)
from asset_converters.parts import Material, SceneMesh
from core.errors import InputError
from core.formats.asset_meta import SourceInfo
from core.geometry import Y_UP_TO_Z_UP
from core.progress import get_logger
from core.rundir import atomic_write_json, sha256_file

log = get_logger("convert.front3d")

CONVERTER = "3d-front"
BOX_MATERIAL = Material("furniture_box", base_color=(0.55, 0.5, 0.45))
DEFAULT_ARCH_MATERIAL = Material("architecture_default")
Z_UP = np.block([[Y_UP_TO_Z_UP, np.zeros((3, 1))], [np.zeros((1, 3)), np.ones((1, 1))]])


@dataclass
class _Sources:
    """Optional inputs next to the house: model folder (+ its index), texture folder, label mapping."""

    future_models: Path | None
    textures: Path | None
    label_map: dict[str, str]
    model_info: dict[str, ModelInfo] = field(default_factory=dict)
    models: dict[str, FurnitureModel] = field(default_factory=dict)  # jid -> loaded model, loaded once


@dataclass
class _Piece:
    mesh: SceneMesh
    raw_category: str


def _place(vertices: np.ndarray, faces: np.ndarray, transform: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Local Y-up vertices -> world Z-up; mirrored placements (negative scale) keep outward winding."""
    world = Z_UP @ transform
    placed = vertices @ world[:3, :3].T + world[:3, 3]
    return placed, faces[:, ::-1] if np.linalg.det(world[:3, :3]) < 0 else faces


def _arch_material(house: House, mesh: ArchMesh, sources: _Sources, stats: dict[str, int]) -> Material:
    material = house.materials.get(mesh.material or "")
    if material is None:
        stats["meshes_without_material"] += 1
        return DEFAULT_ARCH_MATERIAL
    color = material.color or DEFAULT_ARCH_MATERIAL.base_color
    texture = None
    if sources.textures is not None and mesh.uvs is not None:
        texture = find_texture(sources.textures, material)
        # Most materials are plain colours; only a material naming a texture URL expects a file.
        stats["textures_missing"] += texture is None and bool(material.texture_url)
    name = f"{material.uid}{'_tex' if texture else ''}"
    return Material(name, base_color=color, texture=texture)


def _arch_piece(house: House, room: Room, placement: Placement, sources: _Sources,
                stats: dict[str, int]) -> _Piece | None:
    mesh = house.meshes[placement.ref]
    if len(mesh.faces) == 0:
        stats["empty_meshes_skipped"] += 1
        return None
    vertices, faces = _place(mesh.vertices, mesh.faces, placement.transform)
    default = architecture_class(mesh.type)
    label = apply_label_map(mesh.type, default, sources.label_map)
    scene_mesh = SceneMesh(f"{room.instance_id}_{mesh.type or 'mesh'}", vertices, faces, label, "architecture",
                           _arch_material(house, mesh, sources, stats), mesh.uvs, is_floor=default == FLOOR_CLASS)
    return _Piece(scene_mesh, mesh.type)


def _furniture_geometry(house: House, entry: FurnitureEntry, sources: _Sources,
                        stats: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, Material] | None:
    folder = sources.future_models
    # Entries 3D-Front marks valid must have their model in the folder; others fall back to a box.
    if folder is not None and (entry.valid or model_files(folder, entry.jid)[0].is_file()):
        if entry.jid not in sources.models:
            sources.models[entry.jid] = load_future_model(folder, entry.jid, house.path, entry.where)
        model = sources.models[entry.jid]
        stats["furniture_models"] += 1
        texture = model.texture if model.uvs is not None else None  # an OBJ without UVs cannot map it
        return model.vertices, model.faces, model.uvs, Material(f"future_{entry.jid}", texture=texture)
    if entry.size is None:
        stats["furniture_without_size_skipped"] += 1
        return None
    stats["furniture_boxes"] += 1
    vertices, faces = bbox_box(entry.size)
    return vertices, faces, None, BOX_MATERIAL


def _furniture_piece(house: House, room: Room, placement: Placement, sources: _Sources,
                     stats: dict[str, int]) -> _Piece | None:
    entry = house.furniture[placement.ref]
    geometry = _furniture_geometry(house, entry, sources, stats)
    if geometry is None:
        return None
    local, faces, uvs, material = geometry
    vertices, faces = _place(local, faces, placement.transform)
    info = sources.model_info.get(entry.jid)
    raw = (info.category if info else None) or entry.category or UNKNOWN_FURNITURE
    default = furniture_class(raw)
    label = apply_label_map(raw, default, sources.label_map)
    return _Piece(SceneMesh(f"{room.instance_id}_{default}", vertices, faces, label, "furniture", material, uvs),
                  raw)


def select_rooms(house: House, room: str | None) -> list[Room]:
    if room is None:
        return house.rooms
    for candidate in house.rooms:
        if candidate.instance_id == room:
            return [candidate]
    valid = ", ".join(r.instance_id for r in house.rooms)
    raise InputError(f"no room {room!r}; valid room ids: {valid}", house.path, "room")


def house_pieces(house: House, rooms: list[Room], sources: _Sources) -> tuple[list[_Piece], dict[str, int]]:
    """Every placed architecture mesh and furniture piece of `rooms`, Z up, with counts of fallbacks."""
    stats = dict.fromkeys(("architecture_meshes", "furniture_models", "furniture_boxes",
                           "furniture_without_size_skipped", "empty_meshes_skipped", "meshes_without_material",
                           "textures_missing"), 0)
    stats["dangling_furniture_refs_skipped"] = sum(len(room.dangling) for room in rooms)
    pieces, counters = [], {}
    for room in rooms:
        for placement in room.children:
            build = _arch_piece if placement.ref in house.meshes else _furniture_piece
            piece = build(house, room, placement, sources, stats)
            if piece is None:
                continue
            base = piece.mesh.name
            piece.mesh.name = f"{base}_{counters.get(base, 0)}"
            counters[base] = counters.get(base, 0) + 1
            stats["architecture_meshes"] += piece.mesh.category == "architecture"
            pieces.append(piece)
    return pieces, stats


def _log_fallbacks(house: House, stats: dict[str, int]) -> None:
    messages = {
        "furniture_boxes": "furniture pieces placed as bbox boxes (no 3D-FUTURE model)",
        "furniture_without_size_skipped": "furniture pieces skipped (no model and no bbox)",
        "dangling_furniture_refs_skipped": "furniture children skipped (uid not in the house's furniture list)",
        "empty_meshes_skipped": "architecture meshes skipped (no faces)",
        "meshes_without_material": "architecture meshes with an unknown material (default colour)",
        "textures_missing": "architecture meshes whose texture is not in the texture folder (colour used)",
    }
    found = [f"{stats[key]} {text}" for key, text in messages.items() if stats[key]]
    if found:
        log.warning("%s: %s", house.path.name, "; ".join(found))


def _check_folder(path: str | Path | None, what: str) -> Path | None:
    if path is None:
        return None
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{what} folder not found", path)
    return path


def _options(future_models: Path | None, textures: Path | None, room: str | None) -> dict:
    # Model and texture folders are identified by path: hashing every model a house uses on each
    # re-run would cost more than the conversion (3D-FUTURE is a fixed release).
    return {"room": room, "future_models": str(future_models.resolve()) if future_models else None,
            "textures": str(textures.resolve()) if textures else None}


def _input_files(json_path: Path, future_models: Path | None, labels: str | Path | None) -> list[Path]:
    files = [json_path] + ([Path(labels)] if labels else [])
    if future_models is not None and (future_models / MODEL_INFO_FILE).is_file():
        files.append(future_models / MODEL_INFO_FILE)
    return files


def convert_house(json_path: str | Path, out: str | Path, future_models: str | Path | None = None,
                  textures: str | Path | None = None, room: str | None = None, labels: str | Path | None = None,
                  input_hash: str | None = None) -> Path:
    """Convert one house (or one of its rooms) into an environment package at `out`."""
    json_path = Path(json_path)
    models_dir, textures_dir = _check_folder(future_models, "3D-FUTURE model"), _check_folder(textures, "texture")
    sources = _Sources(models_dir, textures_dir, load_label_map(labels))
    if models_dir is not None:
        sources.model_info = load_model_info(models_dir)
    house = load_house(json_path)
    pieces, stats = house_pieces(house, select_rooms(house, room), sources)
    if not pieces:
        raise InputError("nothing to convert: no placed architecture or furniture", json_path, "scene.room")
    _log_fallbacks(house, stats)
    options = _options(models_dir, textures_dir, room)
    files = _input_files(json_path, models_dir, labels)
    source = SourceInfo(dataset=CONVERTER, files={f.name: sha256_file(f) for f in files},
                        options={**options, "labels": str(labels) if labels else None})

    def write_semantics(folder: Path, prim_paths: list[str]) -> None:
        document = semantics_document(prim_paths, [p.mesh.semantic_label for p in pieces],
                                      [p.raw_category for p in pieces], sources.label_map, stats)
        atomic_write_json(folder / SEMANTICS_FILE, document)

    return write_environment_package([p.mesh for p in pieces], [], out, source,
                                     input_hash or hash_inputs(CONVERTER, files, options), write_semantics)


def front3d_jobs(path: str | Path, out_dir: str | Path, future_models: str | Path | None = None,
                 textures: str | Path | None = None, room: str | None = None,
                 labels: str | Path | None = None) -> list[Job]:
    """One job per house JSON (`path` is a file or a folder of them); packages go to out_dir/<house>."""
    path, out_dir = Path(path), Path(out_dir)
    models_dir, textures_dir = _check_folder(future_models, "3D-FUTURE model"), _check_folder(textures, "texture")
    load_label_map(labels)  # a bad mapping file fails once, before any house
    if path.is_dir():
        houses = sorted(path.glob("*.json"))
        if not houses:
            raise InputError("no .json house files in the folder", path)
    elif path.is_file():
        houses = [path]
    else:
        raise InputError("no such file or folder", path)
    options = _options(models_dir, textures_dir, room)
    jobs = []
    for house in houses:
        def run(out: Path, input_hash: str, house: Path = house) -> Path:
            return convert_house(house, out, models_dir, textures_dir, room, labels, input_hash)

        name = house.stem if room is None else f"{house.stem}_{room}"
        jobs.append(Job(house, out_dir / name, hash_inputs(CONVERTER, _input_files(house, models_dir, labels), options),
                        run))
    return jobs

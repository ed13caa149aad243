"""3D-Front houses -> environment packages (architecture.md §2), one house or one room at a time.

Architecture comes from the house's `mesh` entries, furniture from 3D-FUTURE models when a model
folder is given, else from boxes of each entry's bbox size. Everything is placed by the rooms'
children (pos, rot x/y/z/w, scale) and turned from 3D-Front's Y up to Z up. The package gets a
`semantics.json` (class ids, prim -> class, prim -> raw category) next to the usual files.

Surfaces: an architecture mesh whose material has a texture in the 3D-FRONT texture folder gets it; a
furniture model gets its 3D-FUTURE texture; every other mesh (no texture folder, a texture not found,
furniture boxes, models without UVs) gets its class's procedural material (asset_converters.class_materials)
in its 3D-Front material's colour when that is not plain white, drawn from the generator
`convert/front3d/<house uid>/material/<key>` under `seed`: meshes sharing a house material share one
material, each furniture piece has its own. Lights: front3d_lights (ceiling lights in every room, lamps).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from asset_converters.batch import Job, hash_inputs
from asset_converters.class_materials import class_look, class_material, description_pattern, planar_uvs
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
from asset_converters.front3d_house import ArchMesh, FurnitureEntry, House, HouseMaterial, Placement, Room, load_house
from asset_converters.front3d_labels import (
    CEILING_CLASS,
    FLOOR_CLASS,
    UNKNOWN_FURNITURE,
    apply_label_map,
    architecture_class,
    furniture_class,
    load_label_map,
    semantics_document,
)
from asset_converters.front3d_lights import DEFAULT_LIGHT_INTENSITY, RoomPieces, is_lamp, room_lights
from asset_converters.licences import FRONT3D, FUTURE3D
from core.assets.parts import Light, Material, SceneMesh
from core.errors import InputError
from core.formats.asset_meta import SourceInfo
from core.formats.semantics import write_semantics
from core.geometry import Y_UP_TO_Z_UP
from core.progress import get_logger
from core.rundir import sha256_file
from core.seeding import generator

log = get_logger("convert.front3d")

CONVERTER = "3d-front"
WHITE = (1.0, 1.0, 1.0)  # 3D-Front's colour of materials that have none of their own
WINDOW_CLASS = "window"
CLOSED_FRACTION = 0.5  # of its opening a window's faces across it cover when it has glass of its own
ACROSS = 0.9  # |cos| between a face's normal and the window's through direction for a face across the opening
Z_UP = np.block([[Y_UP_TO_Z_UP, np.zeros((3, 1))], [np.zeros((1, 3)), np.ones((1, 1))]])


Surface = tuple[Material, np.ndarray, np.ndarray, np.ndarray | None]  # material, vertices, faces, UVs


class _ClassMaterials:
    """The procedural class materials of one conversion, one per key, textures written into `folder`."""

    def __init__(self, seed: int, house_uid: str, folder: Path):
        self.seed, self.house_uid, self.folder = seed, house_uid, folder
        self._made: dict[str, Material] = {}

    def surface(self, key: str, default_class: str, vertices: np.ndarray, faces: np.ndarray,
                source: HouseMaterial | None = None) -> Surface:
        look = class_look(default_class)
        if key not in self._made:
            rng = generator(self.seed, f"convert/front3d/{self.house_uid}/material/{key}")
            tint = source.color if source is not None and source.color not in (None, WHITE) else None
            pattern = description_pattern(source.content_type) if source is not None else None
            name = f"class_{len(self._made):04d}_{default_class}"
            self._made[key] = class_material(rng, name, look, self.folder, tint, pattern)
        return self._made[key], *planar_uvs(vertices, faces, look.tile)


@dataclass
class _Sources:
    """Optional inputs next to the house: model folder (+ its index), texture folder, label mapping; the
    class materials for meshes without a texture."""

    future_models: Path | None
    textures: Path | None
    label_map: dict[str, str]
    materials: _ClassMaterials
    model_info: dict[str, ModelInfo] = field(default_factory=dict)
    models: dict[str, FurnitureModel] = field(default_factory=dict)  # jid -> loaded model, loaded once


@dataclass
class _Piece:
    mesh: SceneMesh
    raw_category: str
    room: str
    default_class: str  # before the user's label mapping


def _place(vertices: np.ndarray, faces: np.ndarray, transform: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Local Y-up vertices -> world Z-up; mirrored placements (negative scale) keep outward winding."""
    world = Z_UP @ transform
    placed = vertices @ world[:3, :3].T + world[:3, 3]
    return placed, faces[:, ::-1] if np.linalg.det(world[:3, :3]) < 0 else faces


def _arch_surface(house: House, mesh: ArchMesh, placement: Placement, default_class: str, vertices: np.ndarray,
                  faces: np.ndarray, uvs: np.ndarray | None, sources: _Sources, stats: dict[str, int]) -> Surface:
    """The texture of the mesh's material from the texture folder, else its class material."""
    material = house.materials.get(mesh.material or "")
    if material is None:
        stats["meshes_without_material"] += 1
    elif sources.textures is not None and uvs is not None:
        texture = find_texture(sources.textures, material)
        if texture is not None:
            return Material(f"{material.uid}_tex", base_color=material.color or WHITE, texture=texture), vertices, \
                faces, uvs
        # Most materials are plain colours; only a material naming a texture URL expects a file.
        stats["textures_missing"] += bool(material.texture_url)
    stats["class_materials"] += 1
    key = f"{material.uid}/{default_class}" if material is not None else placement.where
    return sources.materials.surface(key, default_class, vertices, faces, material)


def window_pane(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The pane (4 vertices, 2 faces) across a window's opening at mid-depth, or None when the window's own
    faces across the opening cover at least CLOSED_FRACTION of it. The opening spans the window's vertical
    extent and its wider horizontal principal direction (any wall angle); the narrower one goes through it."""
    xy = vertices[:, :2] - vertices[:, :2].mean(axis=0)
    _, axes = np.linalg.eigh(xy.T @ xy)
    through, along = axes[:, 0], axes[:, 1]
    a, d, z = xy @ along, xy @ through, vertices[:, 2]
    width, height = np.ptp(a), np.ptp(z)
    if width * height <= 0:
        return None
    corners = vertices[faces]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]) / 2  # area-weighted
    across = np.abs(normals[:, :2] @ through) >= ACROSS * np.linalg.norm(normals, axis=1)
    # Glass and frame front and back count once: the opening's cover is half their area.
    if np.linalg.norm(normals[across], axis=1).sum() / 2 >= CLOSED_FRACTION * width * height:
        return None
    centre = vertices[:, :2].mean(axis=0) + through * (d.min() + d.max()) / 2
    ends = [centre + along * a.min(), centre + along * a.max()]
    pane = np.array([[*ends[0], z.min()], [*ends[1], z.min()], [*ends[1], z.max()], [*ends[0], z.max()]])
    return pane, np.array([[0, 1, 2], [0, 2, 3]])


def _arch_piece(house: House, room: Room, placement: Placement, sources: _Sources,
                stats: dict[str, int]) -> _Piece | None:
    mesh = house.meshes[placement.ref]
    if len(mesh.faces) == 0:
        stats["empty_meshes_skipped"] += 1
        return None
    vertices, faces = _place(mesh.vertices, mesh.faces, placement.transform)
    uvs = mesh.uvs
    default = architecture_class(mesh.type)
    pane = window_pane(vertices, faces) if default == WINDOW_CLASS else None
    if pane is not None:
        stats["window_panes"] += 1
        faces = np.vstack([faces, pane[1] + len(vertices)])
        vertices = np.vstack([vertices, pane[0]])
        uvs = None if uvs is None else np.vstack([uvs, np.zeros((len(pane[0]), 2))])
    label = apply_label_map(mesh.type, default, sources.label_map)
    material, vertices, faces, uvs = _arch_surface(house, mesh, placement, default, vertices, faces, uvs, sources,
                                                   stats)
    scene_mesh = SceneMesh(f"{room.instance_id}_{mesh.type or 'mesh'}", vertices, faces, label, "architecture",
                           material, uvs, is_floor=default == FLOOR_CLASS)
    return _Piece(scene_mesh, mesh.type, room.instance_id, default)


def _furniture_geometry(house: House, entry: FurnitureEntry, sources: _Sources,
                        stats: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, Material | None] | None:
    """Local vertices, faces, UVs and textured material of a piece (no material: it takes its class's)."""
    folder = sources.future_models
    # Entries 3D-Front marks valid must have their model in the folder; others fall back to a box.
    if folder is not None and (entry.valid or model_files(folder, entry.jid)[0].is_file()):
        if entry.jid not in sources.models:
            sources.models[entry.jid] = load_future_model(folder, entry.jid, house.path, entry.where)
        model = sources.models[entry.jid]
        stats["furniture_models"] += 1
        if model.uvs is None:  # an OBJ without UVs cannot map its texture
            return model.vertices, model.faces, None, None
        return model.vertices, model.faces, model.uvs, Material(f"future_{entry.jid}", texture=model.texture)
    if entry.size is None:
        stats["furniture_without_size_skipped"] += 1
        return None
    stats["furniture_boxes"] += 1
    vertices, faces = bbox_box(entry.size)
    return vertices, faces, None, None


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
    if material is None:
        stats["class_materials"] += 1
        material, vertices, faces, uvs = sources.materials.surface(placement.where, default, vertices, faces)
    return _Piece(SceneMesh(f"{room.instance_id}_{default}", vertices, faces, label, "furniture", material, uvs),
                  raw, room.instance_id, default)


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
                           "textures_missing", "class_materials", "rooms_without_light", "lamp_lights",
                           "window_panes"), 0)
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


def house_lights(pieces: list[_Piece], rooms: list[Room], intensity: float, stats: dict[str, int]) -> list[Light]:
    """Ceiling and lamp lights of every room (front3d_lights), counting the rooms left without one."""
    lights = []
    for room in rooms:
        groups = RoomPieces(room.instance_id, [], [], [], [], [])
        for piece in (p for p in pieces if p.room == room.instance_id):
            mesh = piece.mesh
            if mesh.category == "furniture":
                (groups.lamps if is_lamp(piece.raw_category) else groups.furniture).append(mesh)
            elif piece.default_class == CEILING_CLASS:
                groups.ceilings.append(mesh)
            else:
                (groups.floors if mesh.is_floor else groups.others).append(mesh)
        found = room_lights(groups, intensity)
        stats["rooms_without_light"] += not found
        stats["lamp_lights"] += len(groups.lamps)
        lights += found
    return lights


def _log_fallbacks(house: House, stats: dict[str, int]) -> None:
    messages = {
        "furniture_boxes": "furniture pieces placed as bbox boxes (no 3D-FUTURE model)",
        "furniture_without_size_skipped": "furniture pieces skipped (no model and no bbox)",
        "dangling_furniture_refs_skipped": "furniture children skipped (uid not in the house's furniture list)",
        "empty_meshes_skipped": "architecture meshes skipped (no faces)",
        "meshes_without_material": "architecture meshes with an unknown material (class material used)",
        "textures_missing": "architecture meshes whose texture is not in the texture folder (class material used)",
        "rooms_without_light": "rooms without a light (no ceiling or floor outline)",
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


def _check_numbers(seed: int, light_intensity: float) -> None:
    if seed < 0:
        raise InputError(f"must be >= 0, got {seed}", field="seed")
    if not 0 <= light_intensity < float("inf"):
        raise InputError(f"must be a finite number >= 0, got {light_intensity}", field="light_intensity")


def _options(future_models: Path | None, textures: Path | None, room: str | None, seed: int,
             light_intensity: float) -> dict:
    # Model and texture folders are identified by path: hashing every model a house uses on each
    # re-run would cost more than the conversion (3D-FUTURE is a fixed release).
    return {"room": room, "future_models": str(future_models.resolve()) if future_models else None,
            "textures": str(textures.resolve()) if textures else None, "seed": seed,
            "light_intensity": light_intensity}


def _input_files(json_path: Path, future_models: Path | None, labels: str | Path | None) -> list[Path]:
    files = [json_path] + ([Path(labels)] if labels else [])
    if future_models is not None and (future_models / MODEL_INFO_FILE).is_file():
        files.append(future_models / MODEL_INFO_FILE)
    return files


def convert_house(json_path: str | Path, out: str | Path, future_models: str | Path | None = None,
                  textures: str | Path | None = None, room: str | None = None, labels: str | Path | None = None,
                  input_hash: str | None = None, seed: int = 0,
                  light_intensity: float = DEFAULT_LIGHT_INTENSITY) -> Path:
    """Convert one house (or one of its rooms) into an environment package at `out`; `seed` draws the class
    materials, `light_intensity` is the luminance of its lights (USD sphere-light intensity)."""
    json_path = Path(json_path)
    _check_numbers(seed, light_intensity)
    models_dir, textures_dir = _check_folder(future_models, "3D-FUTURE model"), _check_folder(textures, "texture")
    label_map = load_label_map(labels)
    house = load_house(json_path)
    with tempfile.TemporaryDirectory() as made:
        sources = _Sources(models_dir, textures_dir, label_map, _ClassMaterials(seed, house.uid, Path(made)))
        if models_dir is not None:
            sources.model_info = load_model_info(models_dir)
        return _write_house(house, sources, out, room, labels, input_hash, seed, light_intensity)


def _write_house(house: House, sources: _Sources, out: str | Path, room: str | None, labels: str | Path | None,
                 input_hash: str | None, seed: int, light_intensity: float) -> Path:
    json_path, models_dir, textures_dir = house.path, sources.future_models, sources.textures
    rooms = select_rooms(house, room)
    pieces, stats = house_pieces(house, rooms, sources)
    if not pieces:
        raise InputError("nothing to convert: no placed architecture or furniture", json_path, "scene.room")
    lights = house_lights(pieces, rooms, light_intensity, stats)
    _log_fallbacks(house, stats)
    if not lights:
        log.warning("%s: no light at all: the house renders with ambient light only and light randomisation "
                    "has nothing to change", house.path.name)
    options = _options(models_dir, textures_dir, room, seed, light_intensity)
    files = _input_files(json_path, models_dir, labels)
    source = SourceInfo(dataset=CONVERTER, files={f.name: sha256_file(f) for f in files},
                        options={**options, "labels": str(labels) if labels else None},
                        licences=[FRONT3D, *([FUTURE3D] if models_dir is not None else [])])

    def house_semantics(folder: Path, prim_paths: list[str]) -> None:
        write_semantics(folder, semantics_document(prim_paths, [p.mesh.semantic_label for p in pieces],
                                                   [p.raw_category for p in pieces], sources.label_map, stats))

    return write_environment_package([p.mesh for p in pieces], lights, out, source,
                                     input_hash or hash_inputs(CONVERTER, files, options), house_semantics)


def front3d_jobs(path: str | Path, out_dir: str | Path, future_models: str | Path | None = None,
                 textures: str | Path | None = None, room: str | None = None,
                 labels: str | Path | None = None, seed: int = 0,
                 light_intensity: float = DEFAULT_LIGHT_INTENSITY) -> list[Job]:
    """One job per house JSON (`path` is a file or a folder of them); packages go to out_dir/<house>."""
    path, out_dir = Path(path), Path(out_dir)
    _check_numbers(seed, light_intensity)
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
    options = _options(models_dir, textures_dir, room, seed, light_intensity)
    jobs = []
    for house in houses:
        def run(out: Path, input_hash: str, house: Path = house) -> Path:
            return convert_house(house, out, models_dir, textures_dir, room, labels, input_hash, seed, light_intensity)

        name = house.stem if room is None else f"{house.stem}_{room}"
        jobs.append(Job(house, out_dir / name, hash_inputs(CONVERTER, _input_files(house, models_dir, labels), options),
                        run))
    return jobs

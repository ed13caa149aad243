"""Generic mesh files (OBJ, PLY, STL, GLB, glTF) -> object, environment or animated packages.

Static files are read with trimesh; every geometry instance of a scene (node x geometry) stays one
SceneMesh with its own material, texture and UVs. A glTF file with a skin and animations goes to
asset_converters.gltf (animated package) unless another kind is asked for.

Axes: glTF is Y up by spec, so `.glb`/`.gltf` default to `up="y"`; OBJ, PLY and STL have no
convention and default to `up="z"`. Y-up data is rotated by Y_UP_TO_Z_UP, then multiplied by
`scale` (or scaled so the mesh is `height` metres tall).

Environment floor (kind "environment"): with `floor_label`, every geometry whose node, material
or label name equals it (case-insensitive) is the floor. Otherwise the heuristic looks at faces
whose normal is within FLOOR_MAX_TILT_DEG of +Z, bins them by height into FLOOR_BAND slices from the
lowest one up, takes the lowest slice that holds at least FLOOR_MIN_AREA_FRACTION of all upward
area (so a few stray low faces do not win), and marks as floor every upward face within FLOOR_BAND
of that slice's area-weighted median height. Each geometry is split into its floor and other faces.
A terrain (`terrain`) keeps its ground geometry whole: the one named `floor_label`, else the one with the
most upward-facing area.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import trimesh
from PIL import Image

from asset_converters import gltf
from asset_converters.batch import Job, hash_inputs
from asset_converters.environment import write_environment_package
from asset_converters.licences import user_file
from asset_converters.objects import write_object_package
from core.assets.parts import Material, SceneMesh
from core.errors import InputError
from core.formats.asset_meta import SourceInfo
from core.formats.scene_layout import prim_name
from core.geometry import Y_UP_TO_Z_UP
from core.rundir import sha256_file

MESH_SUFFIXES = (".obj", ".ply", ".stl", ".glb", ".gltf")
GLTF_SUFFIXES = (".glb", ".gltf")
KINDS = ("object", "environment", "animated")
UP_AXES = {"z": np.eye(3), "y": Y_UP_TO_Z_UP}
FLOOR_MAX_TILT_DEG = 10.0
FLOOR_BAND = 0.05  # m
FLOOR_MIN_AREA_FRACTION = 0.1
TERRAIN_MAX_TILT_DEG = 60.0  # faces steeper than this do not count as a terrain's ground area
IMAGE_MODES = ("RGB", "RGBA", "L", "LA")


@dataclass(frozen=True)
class MeshOptions:
    """Options of `grade convert mesh`; None means the per-file default."""

    kind: str | None = None  # object | environment | animated; None: animated for a skinned, animated glTF
    up: str | None = None  # z | y
    scale: float | None = None
    height: float | None = None  # m, instead of scale
    label: str | None = None
    animation: str | None = None
    fps: float = gltf.DEFAULT_FPS
    floor_label: str | None = None
    terrain: bool = False  # environment: an outdoor terrain whose ground is uneven (see mark_ground)


def default_up(path: Path) -> str:
    return "y" if path.suffix.lower() in GLTF_SUFFIXES else "z"


def label_from_name(name: str) -> str:
    """A semantic label from a file or node name: lower case words joined by underscores."""
    return "_".join(re.findall(r"[a-z0-9]+", name.lower())) or "object"


def _material(mesh: trimesh.Trimesh, name: str, texture_dir: Path) -> tuple[Material, np.ndarray | None]:
    """The geometry's material (an embedded texture is written to `texture_dir`) and its UVs."""
    visual = mesh.visual
    if isinstance(visual, trimesh.visual.TextureVisuals) and visual.material is not None:
        pbr = visual.material.to_pbr() if hasattr(visual.material, "to_pbr") else visual.material
        factor = pbr.baseColorFactor
        color = (0.7, 0.7, 0.7) if factor is None else tuple(float(c) / 255.0 for c in factor[:3])
        material = Material(name, color, None, 0.6 if pbr.roughnessFactor is None else float(pbr.roughnessFactor),
                            0.0 if pbr.metallicFactor is None else float(pbr.metallicFactor))
        uvs = visual.uv
        if uvs is None or len(uvs) != len(mesh.vertices):
            return material, None
        image = pbr.baseColorTexture
        if isinstance(image, Image.Image):
            material.texture = texture_dir / f"{prim_name(name)}.png"
            (image if image.mode in IMAGE_MODES else image.convert("RGBA")).save(material.texture)
        return material, np.asarray(uvs, dtype=np.float64)
    if isinstance(visual, trimesh.visual.ColorVisuals) and visual.defined:
        return Material(name, tuple(float(c) / 255.0 for c in visual.main_color[:3])), None
    return Material(name), None


def load_static_meshes(path: str | Path, up: str, scale: float | None, height: float | None, label: str,
                       category: str, texture_dir: Path) -> list[SceneMesh]:
    """Every triangle geometry instance of a mesh file, Z up and in metres, one SceneMesh each."""
    path = Path(path)
    if up not in UP_AXES:
        raise InputError(f"up must be one of {sorted(UP_AXES)}, got {up!r}", path, "up")
    if not path.is_file():
        raise InputError("file not found", path)
    try:
        scene = trimesh.load(str(path), force="scene", process=False)
    except Exception as exc:  # trimesh raises many exception types for malformed files
        raise InputError(f"cannot read the mesh ({type(exc).__name__}: {exc})", path) from exc
    rotation = UP_AXES[up]
    pieces = []
    for node in scene.graph.nodes_geometry:
        transform, geometry_name = scene.graph[node]
        geometry = scene.geometry.get(geometry_name)
        if not isinstance(geometry, trimesh.Trimesh) or len(geometry.faces) == 0:
            continue
        vertices = trimesh.transform_points(geometry.vertices, transform) @ rotation.T
        faces = np.asarray(geometry.faces)
        if np.linalg.det(transform[:3, :3]) < 0:
            faces = faces[:, ::-1]  # a mirroring node transform flips the winding
        # Single-geometry formats name their one node after the file: use the stem then.
        name = prim_name(path.stem if str(node) == path.name else str(node))
        material, uvs = _material(geometry, name, texture_dir)
        pieces.append(SceneMesh(name, vertices, faces, label, category, material, uvs))
    if not pieces:
        raise InputError("the file has no triangles", path, "geometry")
    all_vertices = np.concatenate([p.vertices for p in pieces])
    factor = _scale(all_vertices, scale, height, path)
    for piece in pieces:
        piece.vertices = piece.vertices * factor
    return pieces


def _scale(vertices: np.ndarray, scale: float | None, height: float | None, path: Path) -> float:
    if scale is not None and height is not None:
        raise InputError("give a scale or a height, not both", path, "scale")
    if height is not None:
        extent = float(np.ptp(vertices[:, 2]))
        if not height > 0 or extent <= 0:
            raise InputError(f"cannot scale a mesh {extent} units tall to {height} m", path, "height")
        return height / extent
    if scale is not None and not scale > 0:
        raise InputError(f"scale must be > 0, got {scale}", path, "scale")
    return 1.0 if scale is None else scale


# ---------------------------------------------------------------- environment floor


def _submesh(mesh: SceneMesh, mask: np.ndarray, name: str, is_floor: bool) -> SceneMesh:
    used, faces = np.unique(mesh.faces[mask], return_inverse=True)
    return SceneMesh(name, mesh.vertices[used], faces.reshape(-1, 3), "floor" if is_floor else mesh.semantic_label,
                     mesh.category, mesh.material, None if mesh.uvs is None else mesh.uvs[used], is_floor)


def floor_faces(meshes: list[SceneMesh]) -> list[np.ndarray]:
    """Per mesh, a boolean mask of its floor faces (heuristic in the module docstring)."""
    normals, heights, areas = [], [], []
    for mesh in meshes:
        corners = mesh.vertices[mesh.faces]
        cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        norm = np.linalg.norm(cross, axis=1)
        normals.append(np.where(norm > 0, cross[:, 2] / np.where(norm > 0, norm, 1.0), 0.0))
        heights.append(corners[:, :, 2].mean(axis=1))
        areas.append(norm / 2)
    up = [n > np.cos(np.radians(FLOOR_MAX_TILT_DEG)) for n in normals]
    z = np.concatenate([h[u] for h, u in zip(heights, up)])
    area = np.concatenate([a[u] for a, u in zip(areas, up)])
    if area.sum() <= 0:
        return [np.zeros(len(m.faces), dtype=bool) for m in meshes]
    bins = np.floor((z - z.min()) / FLOOR_BAND).astype(np.int64)
    per_bin = np.bincount(bins, weights=area)
    lowest = int(np.flatnonzero(per_bin >= FLOOR_MIN_AREA_FRACTION * area.sum())[0])
    in_bin = bins == lowest
    order = np.argsort(z[in_bin])
    cumulative = np.cumsum(area[in_bin][order])
    floor_z = z[in_bin][order][np.searchsorted(cumulative, cumulative[-1] / 2)]
    return [u & (np.abs(h - floor_z) <= FLOOR_BAND) for h, u in zip(heights, up)]


def mark_ground(meshes: list[SceneMesh], floor_label: str | None, path: Path) -> list[SceneMesh]:
    """A terrain's meshes with its ground marked (`is_floor`, label "ground"): the geometry named `floor_label`,
    else the one with the most upward-facing area (within TERRAIN_MAX_TILT_DEG of +Z), whole."""
    if floor_label is not None:
        return mark_floor(meshes, floor_label, path)
    upward = []
    for mesh in meshes:
        corners = mesh.vertices[mesh.faces]
        cross = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        area = np.linalg.norm(cross, axis=1) / 2
        tilt_ok = cross[:, 2] > np.cos(np.radians(TERRAIN_MAX_TILT_DEG)) * 2 * area
        upward.append(float(area[tilt_ok].sum()))
    if max(upward, default=0.0) <= 0:
        raise InputError("no upward-facing faces to use as the ground; name the ground geometry with a floor label",
                         path, "floor")
    ground = int(np.argmax(upward))
    return [SceneMesh(m.name, m.vertices, m.faces, "ground", m.category, m.material, m.uvs, True) if i == ground
            else m for i, m in enumerate(meshes)]


def mark_floor(meshes: list[SceneMesh], floor_label: str | None, path: Path) -> list[SceneMesh]:
    """The meshes with the floor marked (`is_floor`, label "floor"), split where needed."""
    if floor_label is not None:
        wanted = floor_label.lower()
        hits = [wanted in (m.name.lower(), m.material.name.lower(), m.semantic_label.lower()) for m in meshes]
        if not any(hits):
            names = ", ".join(sorted({m.name for m in meshes}))
            raise InputError(f"no geometry named {floor_label!r}; the file has: {names}", path, "floor_label")
        return [_submesh(m, np.ones(len(m.faces), dtype=bool), m.name, True) if hit else m
                for m, hit in zip(meshes, hits)]
    masks = floor_faces(meshes)
    if not any(mask.any() for mask in masks):
        raise InputError("no upward-facing faces to use as the floor; name the floor geometry with a floor label",
                         path, "floor")
    out = []
    for mesh, mask in zip(meshes, masks):
        if mask.any():
            out.append(_submesh(mesh, mask, f"{mesh.name}_floor", True))
        if not mask.all():
            out.append(_submesh(mesh, ~mask, mesh.name, False))
    return out


# ---------------------------------------------------------------- conversion and jobs


def input_files(path: Path) -> list[Path]:
    """The mesh file and the files it references (OBJ materials and their maps, glTF buffers/images)."""
    suffix = path.suffix.lower()
    if suffix in GLTF_SUFFIXES:
        return gltf.input_files(path)
    if suffix != ".obj" or not path.is_file():
        return [path]
    files = [path]
    text = path.read_text(errors="replace")
    for library in re.findall(r"^\s*mtllib\s+(.+?)\s*$", text, flags=re.MULTILINE):
        mtl = path.parent / library
        files.append(mtl)
        if mtl.is_file():
            maps = re.findall(r"^\s*map_\w+\s+(?:.*\s)?(\S+)\s*$", mtl.read_text(errors="replace"), flags=re.MULTILINE)
            files += [mtl.parent / m for m in maps]
    return files


def _source(path: Path, dataset: str, options: dict) -> SourceInfo:
    files = {f.name: sha256_file(f) for f in input_files(path) if f.is_file()}
    return SourceInfo(dataset=dataset, files=files, options=options, licences=[user_file(f"mesh file {path.name}")])


def convert_mesh_file(path: str | Path, out: str | Path, input_hash: str, options: MeshOptions) -> Path:
    """One mesh file -> a package of `options.kind` (see MeshOptions) at `out`."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in MESH_SUFFIXES:
        raise InputError(f"unsupported mesh format {suffix!r}; expected one of {', '.join(MESH_SUFFIXES)}", path)
    if options.kind not in (None, *KINDS):
        raise InputError(f"kind must be one of {', '.join(KINDS)}, got {options.kind!r}", path, "kind")
    is_gltf = suffix in GLTF_SUFFIXES
    if options.kind == "animated" or (options.kind is None and is_gltf and gltf.has_skinned_animation(path)):
        if not is_gltf:
            raise InputError("an animated asset needs a skinned glTF file (.glb or .gltf)", path, "kind")
        if options.up == "z":
            raise InputError("skinned glTF is Y up by specification; up 'z' is not supported for it", path, "up")
        return gltf.convert_animated_gltf(path, out, input_hash, options.animation, options.fps, options.scale,
                                          options.height, options.label or gltf.DEFAULT_LABEL)
    kind = options.kind or "object"
    label = options.label or label_from_name(path.stem)
    category = "architecture" if kind == "environment" else "object"
    with tempfile.TemporaryDirectory(prefix="grade-mesh-") as tmp:
        meshes = load_static_meshes(path, options.up or default_up(path), options.scale, options.height, label,
                                    category, Path(tmp))
        source = _source(path, "mesh", asdict(options))
        if kind == "environment":
            if options.label is None:
                for mesh in meshes:
                    mesh.semantic_label = label_from_name(mesh.name)
            mark = mark_ground if options.terrain else mark_floor
            return write_environment_package(mark(meshes, options.floor_label, path), [], out, source, input_hash,
                                             terrain=options.terrain)
        return write_object_package(meshes, label, out, source, input_hash)


def _output_names(files: list[Path]) -> list[str]:
    """Package folder names: the file stem, with the format (and a counter) added on clashes."""
    names: list[str] = []
    for file in files:
        name = file.stem
        if name in names:
            name = f"{file.stem}_{file.suffix.lower().lstrip('.')}"
        base, count = name, 1
        while name in names:
            name, count = f"{base}_{count}", count + 1
        names.append(name)
    return names


def mesh_jobs(path: str | Path, out_dir: str | Path, options: MeshOptions) -> list[Job]:
    """One job per mesh file: `path` is a file or a folder searched recursively."""
    path, out_dir = Path(path), Path(out_dir)
    if path.is_dir():
        files = sorted(f for f in path.rglob("*") if f.is_file() and f.suffix.lower() in MESH_SUFFIXES)
        if not files:
            raise InputError(f"no mesh files ({', '.join(MESH_SUFFIXES)}) in the folder", path)
    elif path.is_file():
        if path.suffix.lower() not in MESH_SUFFIXES:
            raise InputError(f"unsupported mesh format; expected one of {', '.join(MESH_SUFFIXES)}", path)
        files = [path]
    else:
        raise InputError("no such file or folder", path)

    def job(file: Path, name: str) -> Job:
        def run(out: Path, input_hash: str) -> Path:
            return convert_mesh_file(file, out, input_hash, options)

        return Job(file, out_dir / name, hash_inputs("mesh", input_files(file), asdict(options)), run)

    return [job(f, n) for f, n in zip(files, _output_names(files))]

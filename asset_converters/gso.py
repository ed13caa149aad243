"""Google Scanned Objects (GSO) models -> object packages.

A GSO model is a Gazebo model folder, or the .zip Gazebo Fuel serves for it:
`model.sdf`, `model.config`, `meshes/model.obj` (+ `model.mtl`), `materials/textures/texture.png`.

Units and axes: GSO follows the SDF/Gazebo convention, Z up and metres, and its objects were
scanned in their resting pose standing on z = 0, so vertices are used as they are (times the SDF's
optional `<mesh><scale>`). As a check, a model whose largest extent exceeds GSO_MAX_EXTENT (no
household object does) or that does not rest near z = 0 is reported as a likely unit/axis mistake.

Texture: the MTL's `map_Kd` when that file exists next to the MTL; Fuel zips name `texture.png`
there but ship it in `materials/textures/`, so that folder is searched next. No texture found is an
error: every GSO model is textured.

Semantic label: `label`, else the first word of model.config's `<name>`, then `<description>`,
found in KEYWORD_LABELS, else the model folder (or zip) name.
"""

from __future__ import annotations

import re
import stat
import tempfile
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np

from asset_converters.batch import Job, hash_inputs
from asset_converters.licences import GSO
from asset_converters.mesh import label_from_name, load_static_meshes
from asset_converters.objects import write_object_package
from core.assets.parts import SceneMesh
from core.errors import InputError
from core.formats.asset_meta import SourceInfo
from core.progress import get_logger
from core.rundir import sha256_file

log = get_logger("convert.gso")

OBJ = Path("meshes/model.obj")
TEXTURES = Path("materials/textures")
DEFAULT_TEXTURE = "texture.png"
GSO_MAX_EXTENT = 2.0  # m
REST_TOLERANCE = 0.1  # fraction of the height the lowest point may sit away from z = 0
MAX_UNZIPPED_BYTES = 4 << 30  # refuse archives that would inflate beyond this

# Words in GSO names/descriptions -> semantic class. Names are like "Threshold_Porcelain_Teapot_White".
KEYWORD_LABELS = {
    **dict.fromkeys(["mug", "cup", "teacup", "tumbler"], "cup"),
    **dict.fromkeys(["bowl", "ramekin"], "bowl"),
    **dict.fromkeys(["plate", "dish", "saucer"], "plate"),
    **dict.fromkeys(["pan", "skillet", "pot", "saucepan", "kettle", "teapot", "casserole"], "cookware"),
    **dict.fromkeys(["bottle", "jar", "can", "canister", "tin", "container"], "container"),
    **dict.fromkeys(["shoe", "shoes", "sneaker", "boot", "boots", "sandal", "slipper", "loafer", "heel"], "shoe"),
    **dict.fromkeys(["toy", "figure", "figurine", "doll", "lego", "plush", "puzzle", "dinosaur", "truck", "car"], "toy"),
    **dict.fromkeys(["box", "carton", "package", "pack", "cereal"], "box"),
    **dict.fromkeys(["bag", "backpack", "purse", "handbag", "tote"], "bag"),
    **dict.fromkeys(["hat", "cap", "helmet"], "hat"),
    **dict.fromkeys(["lamp", "light"], "lamp"),
    **dict.fromkeys(["book", "notebook"], "book"),
    **dict.fromkeys(["basket", "bin", "tray", "bucket", "vase", "planter"], "container"),
    **dict.fromkeys(["phone", "camera", "speaker", "headphones", "keyboard", "router", "charger"], "electronics"),
    **dict.fromkeys(["chair", "stool", "table", "shelf"], "furniture"),
    **dict.fromkeys(["glasses", "sunglasses"], "glasses"),
    **dict.fromkeys(["pillow", "cushion", "towel", "blanket"], "textile"),
    **dict.fromkeys(["knife", "fork", "spoon", "spatula", "whisk", "ladle", "tongs"], "utensil"),
    **dict.fromkeys(["hammer", "screwdriver", "wrench", "pliers", "drill"], "tool"),
}


def _xml(path: Path) -> ET.Element:
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise InputError(f"malformed XML ({exc})", path) from exc


def _words(text: str) -> list[str]:
    """Lower-case words of a name, splitting CamelCase, underscores and punctuation."""
    return re.findall(r"[a-z]+", re.sub(r"([a-z])([A-Z])", r"\1 \2", text).lower())


def gso_label(folder: Path, fallback_name: str, label: str | None = None) -> str:
    """The semantic label of a model (see the module docstring)."""
    if label:
        return label
    config = folder / "model.config"
    if config.is_file():
        root = _xml(config)
        for text in (root.findtext("name", ""), root.findtext("description", "")):
            for word in _words(text):
                found = KEYWORD_LABELS.get(word) or (KEYWORD_LABELS.get(word[:-1]) if word.endswith("s") else None)
                if found:
                    return found
    return label_from_name(fallback_name)


def is_model_folder(folder: Path) -> bool:
    return any((folder / name).exists() for name in ("model.sdf", "model.config", OBJ))


def extract_zip(archive: Path, dest: Path) -> Path:
    """Extract a model zip into `dest` and return the model folder inside it.

    Members that would land outside `dest` (absolute paths, `..`) or are symbolic links are refused.
    """
    dest = dest.resolve()
    try:
        with zipfile.ZipFile(archive) as zf:
            members = zf.infolist()
            for info in members:
                target = (dest / info.filename).resolve()
                if not target.is_relative_to(dest):
                    raise InputError("member would be written outside the extraction folder", archive, info.filename)
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise InputError("symbolic links are not allowed in a model zip", archive, info.filename)
            if sum(info.file_size for info in members) > MAX_UNZIPPED_BYTES:
                raise InputError(f"inflates to more than {MAX_UNZIPPED_BYTES} bytes", archive)
            zf.extractall(dest)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise InputError(f"not a readable zip ({exc})", archive) from exc
    roots = sorted({p.parent.parent for p in dest.rglob(OBJ.name) if p.parent.name == OBJ.parent.name})
    if not roots:
        raise InputError(f"the archive holds no model ({OBJ.as_posix()} not found)", archive, OBJ.as_posix())
    if len(roots) > 1:
        raise InputError(f"the archive holds {len(roots)} models; give one model per zip", archive)
    return roots[0]


def _sdf_mesh(folder: Path) -> tuple[Path, np.ndarray]:
    """The visual mesh file and its per-axis scale from model.sdf (defaults without one)."""
    sdf = folder / "model.sdf"
    obj, scale = folder / OBJ, np.ones(3)
    if not sdf.is_file():
        return obj, scale
    mesh = _xml(sdf).find(".//visual/geometry/mesh")
    if mesh is None:
        return obj, scale
    uri = (mesh.findtext("uri") or "").strip()
    if uri:
        # `model://<name>/meshes/model.obj` and plain relative paths both name a file in this folder.
        obj = folder / re.sub(r"^model://[^/]+/", "", uri)
    text = (mesh.findtext("scale") or "").split()
    if text:
        try:
            scale = np.array([float(v) for v in text])
        except ValueError:
            scale = np.zeros(0)
        if scale.shape != (3,) or not (scale > 0).all():
            raise InputError(f"expected three positive numbers, got {' '.join(text)!r}", sdf,
                             "visual/geometry/mesh/scale")
    return obj, scale


def find_texture(folder: Path, obj: Path) -> Path:
    """The model's base-colour texture (search order in the module docstring)."""
    names, mtl_dirs = [], []
    for library in re.findall(r"^\s*mtllib\s+(.+?)\s*$", obj.read_text(errors="replace"), flags=re.MULTILINE):
        mtl = obj.parent / library
        if mtl.is_file():
            mtl_dirs.append(mtl.parent)
            names += re.findall(r"^\s*map_Kd\s+(?:.*\s)?(\S+)\s*$", mtl.read_text(errors="replace"), flags=re.MULTILINE)
    candidates = [d / n for d in mtl_dirs for n in names]
    candidates += [folder / TEXTURES / Path(n).name for n in names] + [folder / TEXTURES / DEFAULT_TEXTURE]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise InputError("texture not found (looked at " + ", ".join(str(c) for c in dict.fromkeys(candidates)) + ")",
                     folder, (TEXTURES / DEFAULT_TEXTURE).as_posix())


def load_gso(folder: Path, label: str, texture_dir: Path) -> list[SceneMesh]:
    """The textured meshes of a model folder, Z up, metres."""
    obj, scale = _sdf_mesh(folder)
    if not obj.is_file():
        raise InputError("mesh file not found", folder, obj.relative_to(folder).as_posix())
    texture = find_texture(folder, obj)
    meshes = load_static_meshes(obj, "z", None, None, label, "object", texture_dir)
    for mesh in meshes:
        if mesh.uvs is None:
            raise InputError("the mesh has no texture coordinates (vt lines)", obj, mesh.name)
        mesh.vertices = mesh.vertices * scale
        mesh.material.texture = texture
    vertices = np.concatenate([m.vertices for m in meshes])
    lo, hi = vertices.min(axis=0), vertices.max(axis=0)
    if (hi - lo).max() > GSO_MAX_EXTENT or abs(lo[2]) > REST_TOLERANCE * (hi[2] - lo[2]):
        log.warning("%s: extents %s m, lowest z %.3g m: GSO models are Z up in metres resting on z = 0; check the "
                    "units and the SDF scale", folder, np.round(hi - lo, 3).tolist(), lo[2])
    return meshes


def model_files(source: Path) -> list[Path]:
    """The files a conversion reads (for content hashing)."""
    if source.is_file():
        return [source]
    files = [source / "model.sdf", source / "model.config"]
    for sub in ("meshes", "materials"):
        if (source / sub).is_dir():
            files += sorted(p for p in (source / sub).rglob("*") if p.is_file())
    return files


def convert_gso(source: str | Path, out: str | Path, input_hash: str, label: str | None = None) -> Path:
    """A GSO model folder or .zip -> object package at `out`."""
    source = Path(source)
    if not source.exists():
        raise InputError("no such file or folder", source)
    files = {f.relative_to(source).as_posix() if source.is_dir() else f.name: sha256_file(f)
             for f in model_files(source) if f.is_file()}
    with tempfile.TemporaryDirectory(prefix="grade-gso-") as tmp:
        is_zip = source.is_file()
        folder = extract_zip(source, Path(tmp) / "model") if is_zip else source
        name = source.stem if is_zip else source.name
        resolved = gso_label(folder, name, label)
        meshes = load_gso(folder, resolved, Path(tmp))
        info = SourceInfo(dataset="gso", files=files, options={"label": label}, licences=[GSO])
        return write_object_package(meshes, resolved, out, info, input_hash)


def gso_jobs(path: str | Path, out_dir: str | Path, label: str | None = None) -> list[Job]:
    """One job per model: `path` is a model folder, a .zip, or a folder of those."""
    path, out_dir = Path(path), Path(out_dir)
    if path.is_file():
        if path.suffix.lower() != ".zip":
            raise InputError("expected a GSO model folder, a model .zip or a folder of them", path)
        sources = [path]
    elif path.is_dir():
        sources = [path] if is_model_folder(path) else sorted(
            p for p in path.iterdir() if (p.is_dir() and is_model_folder(p)) or p.suffix.lower() == ".zip")
        if not sources:
            raise InputError("no GSO models here (folders with model.sdf, model.config or meshes/model.obj, or zips)",
                             path)
    else:
        raise InputError("no such file or folder", path)

    def job(source: Path, name: str) -> Job:
        def run(out: Path, input_hash: str) -> Path:
            return convert_gso(source, out, input_hash, label)

        return Job(source, out_dir / name, hash_inputs("gso", model_files(source), {"label": label}), run)

    names: list[str] = []
    for source in sources:
        name = source.stem if source.is_file() else source.name
        names.append(f"{name}_zip" if name in names else name)
    return [job(s, n) for s, n in zip(sources, names)]

"""CLOTH3D samples -> animated packages: the SMPL body plus each garment as a point-cached mesh.

A sample folder holds `info.mat` (MATLAB v5: `poses` (72, N) SMPL axis-angle, `shape` (10,) betas,
`trans` (3, N), `gender` (0 female, 1 male), `zrot` (a rotation about Z applied to the whole sample),
`outfit` (a struct whose field names are the garments)) and, per garment, `<garment>.obj` (rest
topology) and `<garment>.pc16` (its vertices per frame). CLOTH3D is Z-up (made in Blender) and, as in
its starter kit, both the body and the garment caches are relative to the body's root joint: world
points are `zrot @ (p + trans)`, with the SMPL body translated so that its root joint sits at `trans`.

`.pc16` is CLOTH3D's half-float variant of the PC2 point cache: a 32-byte little-endian header
('POINTCACHE2\\0', int32 version, int32 numPoints, float32 startFrame, float32 sampleRate, int32
numSamples) followed by numSamples x numPoints x 3 float16 values (float32 in `.pc2`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io

from asset_converters.animated import write_animated_package
from asset_converters.batch import Job, hash_inputs
from asset_converters.licences import BODY_MODELS, CLOTH3D
from asset_converters.smpl.body_model import all_model_files, find_body_model, load_body_model, shaped
from asset_converters.smpl.rig import body_animation, joint_paths
from asset_converters.smpl.sequences import (
    check_poses,
    fit_joints,
    interpolate_linear,
    interpolate_rotations,
    resample_times,
)
from asset_converters.smpl.windows import DEFAULT_WINDOW, window_count, window_options, window_range, window_suffix
from core.assets.parts import Material, PointCacheMesh
from core.assets.usd_read import triangulate
from core.config import ClipWindowConfig
from core.errors import InputError
from core.formats.asset_meta import SourceInfo
from core.geometry import yaw_rotation
from core.rundir import sha256_file

PC2_SIGNATURE = b"POINTCACHE2\0"
PC2_HEADER = struct.Struct("<12siiffi")
PC2_DTYPES = {".pc16": np.dtype("<f2"), ".pc2": np.dtype("<f4")}
CLOTH3D_FPS = 30.0  # CLOTH3D sequences are rendered at 30 frames per second
DEFAULT_GARMENT_COLOR = (0.45, 0.5, 0.6)
GARMENT_ROUGHNESS = 0.8
CONVERTER = "cloth3d"


# ---------------------------------------------------------------- point caches


@dataclass(frozen=True)
class PointCache:
    points: np.ndarray  # (samples, points, 3) float32
    start_frame: float
    sample_rate: float


def read_point_cache(path: str | Path) -> PointCache:
    """Read a `.pc2` (float32) or CLOTH3D `.pc16` (float16) point cache."""
    path = Path(path)
    dtype = PC2_DTYPES.get(path.suffix.lower())
    if dtype is None:
        raise InputError(f"unknown point cache extension; expected one of {sorted(PC2_DTYPES)}", path)
    if not path.is_file():
        raise InputError("point cache file not found", path)
    raw = path.read_bytes()
    if len(raw) < PC2_HEADER.size:
        raise InputError(f"file is {len(raw)} bytes, shorter than the {PC2_HEADER.size}-byte header", path)
    signature, _version, points, start, rate, samples = PC2_HEADER.unpack_from(raw)
    if signature != PC2_SIGNATURE:
        raise InputError(f"bad signature {signature!r}; expected {PC2_SIGNATURE!r}", path, "signature")
    if points <= 0 or samples <= 0:
        raise InputError(f"numPoints {points} and numSamples {samples} must be > 0", path, "numPoints")
    expected = PC2_HEADER.size + points * samples * 3 * dtype.itemsize
    if len(raw) != expected:
        raise InputError(f"file is {len(raw)} bytes; the header ({samples} samples of {points} points) "
                         f"needs {expected}", path, "numSamples")
    data = np.frombuffer(raw, dtype=dtype, offset=PC2_HEADER.size).astype(np.float32).reshape(samples, points, 3)
    if not np.isfinite(data).all():
        raise InputError("contains NaN or infinite values", path, "points")
    return PointCache(data, float(start), float(rate))


# ---------------------------------------------------------------- OBJ topology


def read_obj_faces(path: Path) -> tuple[int, np.ndarray]:
    """(vertex count, triangles) of an OBJ, keeping the file's vertex order (the point cache's order)."""
    if not path.is_file():
        raise InputError("garment OBJ not found", path)
    vertex_count, counts, indices = 0, [], []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if parts[0] == "v":
            vertex_count += 1
        elif parts[0] == "f":
            try:
                face = [int(p.split("/")[0]) for p in parts[1:]]
            except ValueError as exc:
                raise InputError(f"malformed face on line {number}", path, "f") from exc
            # OBJ indices are 1-based; negative ones count back from the last vertex read so far.
            face = [i - 1 if i > 0 else vertex_count + i for i in face]
            if len(face) < 3 or min(face) < 0 or max(face) >= vertex_count:
                raise InputError(f"face on line {number} refers to missing vertices", path, "f")
            counts.append(len(face))
            indices += face
    if vertex_count == 0 or not counts:
        raise InputError("no vertices or no faces", path)
    return vertex_count, triangulate(np.array(counts), np.array(indices))


# ---------------------------------------------------------------- info.mat


@dataclass(frozen=True)
class Cloth3DInfo:
    poses: np.ndarray  # (N, 24, 3)
    trans: np.ndarray  # (N, 3)
    betas: np.ndarray
    gender: str
    zrot: float
    garments: dict[str, tuple[float, float, float] | None]  # name -> plain texture colour if any


def read_info(path: Path) -> Cloth3DInfo:
    if not path.is_file():
        raise InputError("info.mat not found", path)
    try:
        info = scipy.io.loadmat(str(path), squeeze_me=True, struct_as_record=False)
    except (scipy.io.matlab.MatReadError, ValueError, TypeError, OSError, NotImplementedError) as exc:
        raise InputError(f"not a readable MATLAB file ({exc})", path) from exc
    missing = [k for k in ("poses", "shape", "trans", "gender", "zrot", "outfit") if k not in info]
    if missing:
        raise InputError(f"missing fields {missing}", path, missing[0])
    poses = np.atleast_2d(np.asarray(info["poses"], dtype=np.float64).T)  # (72, N) -> (N, 72); one frame: (72,)
    poses = check_poses(poses, path)
    trans = np.asarray(info["trans"], dtype=np.float64)
    trans = trans.reshape(1, 3) if trans.shape == (3,) else trans.T
    if trans.shape != (len(poses), 3):
        raise InputError(f"shape {np.asarray(info['trans']).shape} does not match poses: expected (3, {len(poses)})",
                         path, "trans")
    betas = np.asarray(info["shape"], dtype=np.float64).reshape(-1)
    for field, value in (("trans", trans), ("shape", betas), ("zrot", np.asarray(info["zrot"], dtype=np.float64))):
        if not np.isfinite(value).all():
            raise InputError("contains NaN or infinite values", path, field)
    outfit = info["outfit"]
    names = list(getattr(outfit, "_fieldnames", []))
    if not names:
        raise InputError("the outfit struct names no garment", path, "outfit")
    garments = {name: _plain_color(getattr(outfit, name)) for name in names}
    gender = "male" if int(np.asarray(info["gender"]).reshape(-1)[0]) else "female"
    return Cloth3DInfo(poses, trans, betas, gender, float(np.asarray(info["zrot"]).reshape(-1)[0]), garments)


def _plain_color(garment: object) -> tuple[float, float, float] | None:
    """The garment's colour when its texture is a plain colour (image textures are not carried over)."""
    texture = getattr(garment, "texture", None)
    if texture is None or str(getattr(texture, "type", "")) != "color":
        return None
    data = np.asarray(getattr(texture, "data", []), dtype=np.float64).reshape(-1)
    return tuple(float(c) for c in np.clip(data[:3], 0, 1)) if data.size >= 3 else None


# ---------------------------------------------------------------- conversion


def garment_files(folder: Path, garment: str) -> tuple[Path, Path]:
    cache = folder / f"{garment}.pc16"
    if not cache.is_file() and (folder / f"{garment}.pc2").is_file():
        cache = folder / f"{garment}.pc2"
    return folder / f"{garment}.obj", cache


def sample_files(folder: Path, garments: list[str] | None = None) -> list[Path]:
    """info.mat and every garment's OBJ and point cache (the inputs that define the package)."""
    info = folder / "info.mat"
    if garments is None:
        garments = list(read_info(info).garments) if info.is_file() else []
    return [info] + [f for garment in garments for f in garment_files(folder, garment)]


def convert_cloth3d(folder: str | Path, out: str | Path, body_model_dir: str | Path, fps: float = CLOTH3D_FPS,
                    source_fps: float = CLOTH3D_FPS, input_hash: str | None = None,
                    window: ClipWindowConfig = DEFAULT_WINDOW, window_index: int = 0, seed: int = 0) -> Path:
    """Convert window `window_index` of one CLOTH3D sample folder (body + point-cached garments) into an
    animated package (`window` and `seed` as for SMPL sequences).

    The body is written as points (the exact SMPL surface, pose correctives included) rather than a
    UsdSkel-skinned mesh: the garments were simulated on that surface, and plain skinning would let
    the body poke through them at bent joints.
    """
    folder, out = Path(folder), Path(out)
    for field, value in (("fps", fps), ("source_fps", source_fps)):
        if not np.isfinite(value) or value <= 0:
            raise InputError(f"must be > 0, got {value}", folder, field)
    info = read_info(folder / "info.mat")
    n = len(info.poses)
    garments = []
    for name, color in info.garments.items():
        obj, cache_path = garment_files(folder, name)
        vertex_count, faces = read_obj_faces(obj)
        cache = read_point_cache(cache_path)
        if cache.points.shape[1] != vertex_count:
            raise InputError(f"{cache.points.shape[1]} points per frame but {obj.name} has {vertex_count} vertices",
                             cache_path, "numPoints")
        if len(cache.points) != n:
            raise InputError(f"{len(cache.points)} frames but info.mat has {n} poses", cache_path, "numSamples")
        garments.append((name, color, faces, cache.points.astype(np.float64)))

    model_path = find_body_model(body_model_dir, ["smpl", "smplh"], info.gender)
    model = load_body_model(model_path)
    coords = resample_times(n, source_fps, fps)
    poses = fit_joints(interpolate_rotations(info.poses, coords), model.joint_count)
    trans = interpolate_linear(info.trans, coords)
    zrot = yaw_rotation(info.zrot)
    _, joints = shaped(model, info.betas)
    # CLOTH3D places the root joint (not the model origin) at `trans`.
    body_trans = trans - joints[0]
    start, stop = window_range(window, window_index, len(coords), fps,
                               lambda: joint_paths(model, info.betas, poses, body_trans, zrot), seed, out.name)
    coords, trans = coords[start:stop], trans[start:stop]
    anim = body_animation(out.name, model, info.betas, poses[start:stop], body_trans[start:stop], fps, zrot, "points")
    for name, color, faces, points in garments:
        world = (interpolate_linear(points, coords) + trans[:, None, :]) @ zrot.T
        material = Material(name, base_color=color or DEFAULT_GARMENT_COLOR, roughness=GARMENT_ROUGHNESS)
        anim.point_caches.append(PointCacheMesh(name, world, faces, material))

    inputs = sample_files(folder, list(info.garments))
    options = {"fps": float(fps), "source_fps": float(source_fps)} | window_options(window, window_index, seed)
    source = SourceInfo(dataset=CONVERTER, files={p.name: sha256_file(p) for p in [*inputs, model_path]},
                        options=options | {"body_model": model_path.name, "garments": list(info.garments),
                                           "frames": [start, stop], "clip_frames": len(poses)},
                        licences=[CLOTH3D, BODY_MODELS[model.family]])
    if input_hash is None:
        input_hash = hash_inputs(CONVERTER, inputs + all_model_files(body_model_dir), options)
    return write_animated_package(anim, out, source, input_hash, "points")


def _clip_frames(sample: Path, source_fps: float, fps: float) -> int:
    """Frames of a sample at `fps`, or 1 when its info.mat cannot be read (its job then reports why)."""
    try:
        return len(resample_times(len(read_info(sample / "info.mat").poses), source_fps, fps))
    except InputError:
        return 1


def cloth3d_jobs(path: str | Path, out_dir: str | Path, body_model_dir: str | Path, fps: float = CLOTH3D_FPS,
                 source_fps: float = CLOTH3D_FPS, window: ClipWindowConfig = DEFAULT_WINDOW, seed: int = 0) -> list[Job]:
    """One job per window of each sample folder (a folder holding info.mat) at or below `path`."""
    path, out_dir = Path(path), Path(out_dir)
    if not path.is_dir():
        raise InputError("not a folder (expected a CLOTH3D sample folder or a folder of samples)", path)
    samples = [path] if (path / "info.mat").is_file() else sorted(p.parent for p in path.rglob("info.mat"))
    if not samples:
        raise InputError("no CLOTH3D sample (a folder with info.mat) found", path)
    models = all_model_files(body_model_dir)
    if not models:
        find_body_model(body_model_dir, ["smpl", "smplh"], None)
    options = {"fps": float(fps), "source_fps": float(source_fps)}
    jobs = []
    for sample in samples:
        try:
            inputs = sample_files(sample)
        except InputError:  # a broken info.mat: hash the folder's files; the job reports the error when it runs
            inputs = sorted(p for p in sample.iterdir() if p.is_file())
        count = window_count(window, _clip_frames(sample, source_fps, fps), fps) if window.select == "split" else 1
        for index in range(count):
            def run(out: Path, input_hash: str, sample: Path = sample, index: int = index) -> Path:
                return convert_cloth3d(sample, out, body_model_dir, fps, source_fps, input_hash, window, index, seed)

            input_hash = hash_inputs(CONVERTER, inputs + models, options | window_options(window, index, seed))
            jobs.append(Job(sample, out_dir / (sample.name + window_suffix(window, index)), input_hash, run))
    return jobs

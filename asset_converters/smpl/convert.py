"""AMASS / plain SMPL sequences -> animated asset packages, one file or a whole folder."""

from __future__ import annotations

from pathlib import Path

from asset_converters.animated import write_animated_package
from asset_converters.batch import Job, hash_inputs
from asset_converters.licences import motion_licences
from asset_converters.smpl.body_model import FAMILY_OF_JOINTS, all_model_files, find_body_model, load_body_model
from asset_converters.smpl.rig import body_animation, check_representation, joint_paths
from asset_converters.smpl.sequences import (
    UP_ROTATIONS,
    fit_joints,
    read_sequence,
    resample,
    resample_times,
    resolve_up,
)
from asset_converters.smpl.windows import DEFAULT_WINDOW, window_count, window_options, window_range, window_suffix
from core.config import ClipWindowConfig
from core.errors import InputError
from core.formats.asset_meta import SourceInfo
from core.rundir import sha256_file

DEFAULT_FPS = 30.0
CONVERTER = "smpl"
# AMASS keeps each subject's betas in a `shape.npz` beside the motions: not a motion itself.
NOT_SEQUENCES = {"shape.npz"}


def family_order(joint_count: int) -> list[str]:
    """Prefer the model family the data was made with (SMPL-H for 52-joint poses)."""
    native = FAMILY_OF_JOINTS[joint_count]
    return [native] + [f for f in ("smpl", "smplh") if f != native]


def _options(fps: float, representation: str, up: str | None, gender: str | None) -> dict:
    return {"fps": float(fps), "representation": representation, "up": up, "gender": gender}


def convert_sequence(path: str | Path, out: str | Path, body_model_dir: str | Path, fps: float = DEFAULT_FPS,
                     representation: str = "skeleton", up: str | None = None, gender: str | None = None,
                     input_hash: str | None = None, window: ClipWindowConfig = DEFAULT_WINDOW, window_index: int = 0,
                     seed: int = 0) -> Path:
    """Convert window `window_index` of one AMASS or plain SMPL `.npz` into an animated package at `out`.

    `up` is the data's up axis ('z' or 'y'; default: 'z' for AMASS, 'y' for plain SMPL); `gender`
    overrides the file's gender when choosing the body model; `window` chooses the frames (see
    `asset_converters.smpl.windows`; `seed` draws a random one). Nothing is written on bad input.
    """
    path, out = Path(path), Path(out)
    check_representation(representation)
    seq = read_sequence(path)
    up_axis = resolve_up(seq, up)
    model_path = find_body_model(body_model_dir, family_order(seq.joint_count), gender or seq.gender)
    model = load_body_model(model_path)
    seq = resample(seq, fps)
    poses, world_rotation = fit_joints(seq.poses, model.joint_count), UP_ROTATIONS[up_axis]
    start, stop = window_range(window, window_index, seq.frame_count, seq.fps,
                               lambda: joint_paths(model, seq.betas, poses, seq.trans, world_rotation), seed, out.name)
    anim = body_animation(out.name, model, seq.betas, poses[start:stop], seq.trans[start:stop], seq.fps,
                          world_rotation, representation)
    options = _options(fps, representation, up, gender) | {"up_resolved": up_axis, "body_model": model_path.name,
                                                           "source_joints": seq.joint_count,
                                                           "frames": [start, stop], "clip_frames": seq.frame_count}
    files = {p.name: sha256_file(p) for p in (path, model_path)}
    source = SourceInfo(dataset=seq.format, files=files, options=options | window_options(window, window_index, seed),
                        licences=motion_licences(seq.format, model.family))
    if input_hash is None:
        input_hash = hash_inputs(CONVERTER, [path, *all_model_files(body_model_dir)],
                                 _options(fps, representation, up, gender) | window_options(window, window_index, seed))
    return write_animated_package(anim, out, source, input_hash, representation)


def resampled_frames(path: Path, fps: float) -> int:
    """Frames of a sequence file at `fps`, or 1 when it cannot be read (its job then reports why)."""
    try:
        seq = read_sequence(path)
    except InputError:
        return 1
    return len(resample_times(seq.frame_count, seq.fps, fps))


def sequence_files(path: str | Path) -> list[Path]:
    """The sequence itself, or every `.npz` under a folder (AMASS `shape.npz` files excluded)."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise InputError("no such file or folder", path)
    return sorted(p for p in path.rglob("*.npz") if p.name.lower() not in NOT_SEQUENCES)


def package_name(file: Path, root: Path) -> str:
    """A package folder name unique within the batch: the path below `root` joined by '_'."""
    relative = file.relative_to(root) if root.is_dir() else Path(file.name)
    return "_".join(relative.with_suffix("").parts)


def sequence_jobs(path: str | Path, out_dir: str | Path, body_model_dir: str | Path, fps: float = DEFAULT_FPS,
                  representation: str = "skeleton", up: str | None = None, gender: str | None = None,
                  window: ClipWindowConfig = DEFAULT_WINDOW, seed: int = 0) -> list[Job]:
    """One job per window of each sequence file (one window unless `window.select` is split);
    content-addressed by the file, the body model files and the options."""
    path, out_dir = Path(path), Path(out_dir)
    check_representation(representation)
    if up is not None and up not in UP_ROTATIONS:
        raise InputError(f"up axis must be one of {sorted(UP_ROTATIONS)}, got {up!r}", field="up")
    models = all_model_files(body_model_dir)
    if not models:  # fail once for the batch, with the message that says which files to put where
        find_body_model(body_model_dir, ["smpl", "smplh"], gender)
    options = _options(fps, representation, up, gender)
    jobs = []
    for file in sequence_files(path):
        # Only split needs the clip's length up front: the other choices make one package per file.
        count = window_count(window, resampled_frames(file, fps), fps) if window.select == "split" else 1
        for index in range(count):
            def run(out: Path, input_hash: str, file: Path = file, index: int = index) -> Path:
                return convert_sequence(file, out, body_model_dir, fps, representation, up, gender, input_hash,
                                        window, index, seed)

            input_hash = hash_inputs(CONVERTER, [file, *models], options | window_options(window, index, seed))
            name = package_name(file, path) + window_suffix(window, index)
            jobs.append(Job(file, out_dir / name, input_hash, run))
    return jobs

"""All demo assets from one seed, as content-addressed conversion jobs (an identical re-run skips).

Layout under `out`: `environment/house/`, `humans/human_NN_<motion>/`, `objects/object_NN/`.
Each asset draws from its own named generator, so asset i is the same whatever the counts.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from asset_converters.animated import write_animated_package
from asset_converters.batch import BatchResult, Job, hash_inputs, run_jobs
from asset_converters.environment import write_environment_package
from asset_converters.licences import GRADE_PROCEDURAL
from asset_converters.objects import write_object_package
from asset_converters.procedural.environment import build_environment
from asset_converters.procedural.humanoid import JOINTS, PARENTS, body_meshes, make_body
from asset_converters.procedural.motions import FPS, MOTIONS
from asset_converters.procedural.objects import build_object, object_kinds
from core.assets.parts import Animation
from core.errors import InputError
from core.formats.asset_meta import SourceInfo
from core.seeding import generator

CONVERTER = "procedural"
# Bump when the generators change what they make, so existing packages are rebuilt.
GENERATOR_VERSION = "3"
MOTION_ORDER = ("walk", "idle", "wave", "jog", "talk")  # human i plays MOTION_ORDER[i % 5]
ENVIRONMENT_ID = "house"
PERSON_LABEL = "person"


@dataclass(frozen=True)
class DemoAssets:
    """Package folders (complete or failed) and the batch summary."""

    environment: Path
    humans: list[Path]
    objects: list[Path]
    batch: BatchResult


def build_human(seed: int, index: int, motion: str, name: str, texture_dir: Path) -> Animation:
    """Human `index`: its own body and colours, playing one motion."""
    rng = generator(seed, f"procedural/human/{index}")
    body = make_body(rng)
    meshes = body_meshes(rng, body, texture_dir)
    move = MOTIONS[motion](generator(seed, f"procedural/human/{index}/{motion}"), body)
    bind = np.tile(np.eye(4), (len(JOINTS), 1, 1))
    bind[:, :3, 3] = body.joints
    frames = move.local_rotations.shape[0]
    return Animation(name, FPS, list(JOINTS), PARENTS.copy(), bind, move.local_rotations, move.local_translations,
                     skinned=meshes, semantic_label=PERSON_LABEL, motions={motion: (0, frames - 1)})


def _source(options: dict) -> SourceInfo:
    return SourceInfo(dataset=CONVERTER, options=options, licences=[GRADE_PROCEDURAL])


def _write_environment(options: dict, out: Path, input_hash: str) -> Path:
    with tempfile.TemporaryDirectory() as textures:
        meshes, lights, _ = build_environment(options["seed"], options["rooms"], options["furniture"], Path(textures))
        return write_environment_package(meshes, lights, out, _source(options), input_hash)


def _write_human(options: dict, out: Path, input_hash: str) -> Path:
    with tempfile.TemporaryDirectory() as textures:
        anim = build_human(options["seed"], options["index"], options["motion"], out.name, Path(textures))
        # One hull per body part over the whole clip: the walks are straight and the other motions stay
        # in place, so this is almost as tight as short windows (within ~15% in volume) and far faster.
        return write_animated_package(anim, out, _source(options), input_hash, trace_window=anim.frame_count)


def _write_object(options: dict, out: Path, input_hash: str) -> Path:
    with tempfile.TemporaryDirectory() as textures:
        rng = generator(options["seed"], f"procedural/object/{options['index']}")
        meshes = build_object(rng, options["kind"], out.name, Path(textures))
        return write_object_package(meshes, options["kind"], out, _source(options), input_hash)


def procedural_job(out: Path, options: dict, write) -> Job:
    """A content-addressed job writing one procedural package with `write(options, out, input_hash)`."""
    options = {**options, "generator_version": GENERATOR_VERSION}
    return Job(Path(CONVERTER) / out.name, out, hash_inputs(CONVERTER, [], options), partial(write, options))


def demo_jobs(out: str | Path, seed: int = 0, rooms: int = 3, furniture: int = 12, humans: int = 6,
              objects: int = 4, motions: tuple[str, ...] = MOTION_ORDER) -> list[Job]:
    """One job per package: the environment first, then the humans (human i plays motions[i % len]), then the
    objects."""
    out = Path(out)
    for field, value, least in (("seed", seed, 0), ("rooms", rooms, 1), ("furniture", furniture, 0),
                                ("humans", humans, 0), ("objects", objects, 0)):
        if value < least:
            raise InputError(f"must be >= {least}, got {value}", field=field)
    jobs = [procedural_job(out / "environment" / ENVIRONMENT_ID,
                 {"asset": "environment", "seed": seed, "rooms": rooms, "furniture": furniture}, _write_environment)]
    for i in range(humans):
        motion = motions[i % len(motions)]
        jobs.append(procedural_job(out / "humans" / f"human_{i:02d}_{motion}",
                         {"asset": "human", "seed": seed, "index": i, "motion": motion}, _write_human))
    kinds = object_kinds(generator(seed, "procedural/object_kinds"))
    for i in range(objects):
        jobs.append(procedural_job(out / "objects" / f"object_{i:02d}",
                         {"asset": "object", "seed": seed, "index": i, "kind": kinds[i % len(kinds)]}, _write_object))
    return jobs


def build_demo_assets(out: str | Path, seed: int = 0, rooms: int = 3, furniture: int = 12, humans: int = 6,
                      objects: int = 4) -> DemoAssets:
    """Write (or skip, when already there from the same inputs) every procedural demo asset."""
    jobs = demo_jobs(out, seed, rooms, furniture, humans, objects)
    result = run_jobs(jobs, "procedural assets")
    return DemoAssets(jobs[0].out, [j.out for j in jobs[1 : 1 + humans]], [j.out for j in jobs[1 + humans :]], result)

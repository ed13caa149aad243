"""Procedural outdoor assets as content-addressed conversion jobs: the terrain and the animals.

Each animal is written as a skinned, animated GLB file (animal.py) and converted by the glTF converter,
the route a user's glTF animal takes. Layout under `out`: `environment/terrain/`, `animals/animal_NN_<motion>/`.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict
from pathlib import Path

from asset_converters.batch import Job
from asset_converters.environment import write_environment_package
from asset_converters.gltf import DEFAULT_FPS, convert_animated_gltf
from asset_converters.licences import GRADE_PROCEDURAL
from asset_converters.procedural.animal import ANIMAL_LABEL, ANIMAL_MOTIONS, write_animal_glb
from asset_converters.procedural.demo import CONVERTER, procedural_job
from asset_converters.procedural.terrain import TerrainOptions, build_terrain
from core.errors import InputError
from core.formats.asset_meta import SourceInfo
from core.seeding import generator

TERRAIN_ID = "terrain"
# Motions of procedural humans on a terrain: a clip stands at one height, so clips that stay in place fit
# sloping ground; a walk that travels would float over a slope's lower end.
IN_PLACE_MOTIONS = ("idle", "wave", "talk")


def _write_terrain(options: dict, out: Path, input_hash: str) -> Path:
    terrain = TerrainOptions(**{key: options[key] for key in asdict(TerrainOptions())})
    with tempfile.TemporaryDirectory() as textures:
        meshes, lights = build_terrain(options["seed"], terrain, Path(textures))
        source = SourceInfo(dataset=CONVERTER, options=options, licences=[GRADE_PROCEDURAL])
        return write_environment_package(meshes, lights, out, source, input_hash, terrain=True)


def _write_animal(options: dict, out: Path, input_hash: str) -> Path:
    with tempfile.TemporaryDirectory() as folder:
        rng = generator(options["seed"], f"procedural/animal/{options['index']}")
        glb = write_animal_glb(rng, options["motion"], Path(folder) / f"{out.name}.glb")
        return convert_animated_gltf(glb, out, input_hash, fps=options["fps"], label=ANIMAL_LABEL,
                                     licences=[GRADE_PROCEDURAL])


def terrain_job(out: str | Path, seed: int, options: TerrainOptions) -> Job:
    """The procedural terrain package at `out/environment/terrain`."""
    return procedural_job(Path(out) / "environment" / TERRAIN_ID, {"asset": "terrain", "seed": seed, **asdict(options)},
                          _write_terrain)


def animal_jobs(out: str | Path, seed: int, count: int, fps: float = DEFAULT_FPS) -> list[Job]:
    """`count` procedural animals at `out/animals/`, animal i playing ANIMAL_MOTIONS[i % 2] at `fps`."""
    if count < 0:
        raise InputError(f"must be >= 0, got {count}", field="animals")
    jobs = []
    for i in range(count):
        motion = ANIMAL_MOTIONS[i % len(ANIMAL_MOTIONS)]
        jobs.append(procedural_job(Path(out) / "animals" / f"animal_{i:02d}_{motion}",
                                   {"asset": "animal", "seed": seed, "index": i, "motion": motion, "fps": fps},
                                   _write_animal))
    return jobs

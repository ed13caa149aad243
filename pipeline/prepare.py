"""The stages before simulation for one experiment: convert its assets (cached, content-addressed),
place humans / flying objects / the robot start, and compose scene.usda.

Every stage is skipped when its output is complete for the same inputs, so an interrupted run
resumes where it stopped and a re-run with the same config does no work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from asset_converters.batch import BatchResult, Job, run_jobs
from core.config import ExperimentConfig
from core.errors import GradeError
from core.formats.asset_meta import load_meta
from core.formats.manifest import MANIFEST
from core.formats.placement import PLACEMENT_FILE, load_placement
from core.formats.run_layout import ASSETS_DIR, SCENE_DIR
from core.formats.scene_layout import SCENE_FILE
from core.outputs import check_output_folder
from core.progress import get_logger
from core.rundir import content_hash
from core.seeding import generator
from core.stage import Stage

log = get_logger("prepare")

# Distinct procedural humans generated for an experiment (placement draws candidates from them with
# replacement); three at least, so walk, idle and wave all appear.
PROCEDURAL_HUMAN_VARIETY = (3, 6)
PROCEDURAL_OBJECT_VARIETY = (1, 6)
PROCEDURAL_ANIMAL_VARIETY = (2, 4)  # two at least, so both motions (walk, graze) appear


@dataclass
class PreparedInputs:
    """Where `prepare` put a run's inputs: the asset packages, and the scene folder's placement and scene.usda
    (which the simulation loads as its `Scene`)."""

    environment: Path
    humans: list[Path]
    objects: list[Path]
    placement: Path  # placement.json
    scene: Path  # scene.usda
    animals: list[Path] = field(default_factory=list)


def _packages(jobs: list[Job], description: str) -> list[Path]:
    """Run conversion jobs; any failure stops the experiment with the converter's message."""
    result: BatchResult = run_jobs(jobs, description)
    if result.failed:
        source, message = result.failed[0]
        raise GradeError(f"{description}: {len(result.failed)} input(s) failed to convert; first: {message}", source)
    return sorted(job.out for job in jobs)


def _procedural_jobs(config: ExperimentConfig, cache: Path) -> list[Job]:
    """The procedural set: a house (or, for environment kind terrain, a terrain, whose humans play in-place
    motions), humans, objects and, when animals are procedural, animals."""
    from asset_converters.procedural import demo_jobs
    from asset_converters.procedural.outdoor import IN_PLACE_MOTIONS, animal_jobs, terrain_job
    from asset_converters.procedural.terrain import TerrainOptions

    rng = generator(config.seed, "prepare/procedural")
    furniture = int(rng.integers(config.environment.furniture.min, config.environment.furniture.max + 1))
    humans = min(max(config.humans.count.max, PROCEDURAL_HUMAN_VARIETY[0]), PROCEDURAL_HUMAN_VARIETY[1])
    objects = min(max(config.flying_objects.count.max, PROCEDURAL_OBJECT_VARIETY[0]), PROCEDURAL_OBJECT_VARIETY[1])
    folder = cache / f"procedural-seed{config.seed}"
    if config.environment.kind != "terrain":
        jobs = demo_jobs(folder, config.seed, config.environment.rooms, furniture, humans, objects)
    else:
        jobs = [job for job in demo_jobs(folder, config.seed, config.environment.rooms, furniture, humans, objects,
                                         IN_PLACE_MOTIONS) if job.out.parent.name != ROLE_FOLDERS["environment"][1]]
        terrain = TerrainOptions(**config.environment.terrain.model_dump())
        jobs.insert(0, terrain_job(folder, config.seed, terrain))
    animals = config.animals
    if animals.source == "procedural" and animals.count.max > 0:
        variety = min(max(animals.count.max, PROCEDURAL_ANIMAL_VARIETY[0]), PROCEDURAL_ANIMAL_VARIETY[1])
        jobs += animal_jobs(folder, config.seed, variety, animals.fps)
    return jobs


# ---------------------------------------------------------------- converters by (role, source)

# Conversion jobs for one input path of a config section: (config, input path, output folder) -> jobs.
# Each builder imports its converter when called, so `grade` starts without loading every dataset reader.
JobBuilder = Callable[[ExperimentConfig, Path, Path], list[Job]]


def _front3d(config: ExperimentConfig, path: Path, out: Path) -> list[Job]:
    from asset_converters.front3d import front3d_jobs

    env = config.environment
    return front3d_jobs(path, out, env.future_models, env.textures, env.room, seed=config.seed,
                        light_intensity=env.light_intensity)


def _environment_mesh(config: ExperimentConfig, path: Path, out: Path) -> list[Job]:
    from asset_converters.mesh import MeshOptions, mesh_jobs

    return mesh_jobs(path, out, MeshOptions(kind="environment", terrain=config.environment.kind == "terrain"))


def _smpl_sequences(config: ExperimentConfig, path: Path, out: Path) -> list[Job]:
    from asset_converters.smpl import sequence_jobs

    humans = config.humans
    return sequence_jobs(path, out, humans.body_model, humans.fps, window=humans.window, seed=config.seed)


def _cloth3d(config: ExperimentConfig, path: Path, out: Path) -> list[Job]:
    from asset_converters.smpl import cloth3d_jobs

    humans = config.humans
    return cloth3d_jobs(path, out, humans.body_model, humans.fps, window=humans.window, seed=config.seed)


def _animated_gltf(config: ExperimentConfig, path: Path, out: Path) -> list[Job]:
    from asset_converters.mesh import MeshOptions, mesh_jobs

    # They fill the humans role, so they are people (the converter's default label for animated glTF is 'animal').
    return mesh_jobs(path, out, MeshOptions(kind="animated", fps=config.humans.fps, label="person"))


def _animal_gltf(config: ExperimentConfig, path: Path, out: Path) -> list[Job]:
    from asset_converters.mesh import MeshOptions, mesh_jobs

    return mesh_jobs(path, out, MeshOptions(kind="animated", fps=config.animals.fps))  # labelled 'animal'


def _gso(config: ExperimentConfig, path: Path, out: Path) -> list[Job]:
    from asset_converters.gso import gso_jobs

    return gso_jobs(path, out)


def _object_mesh(config: ExperimentConfig, path: Path, out: Path) -> list[Job]:
    from asset_converters.mesh import MeshOptions, mesh_jobs

    return mesh_jobs(path, out, MeshOptions(kind="object"))


# Every `source` a config section accepts, except "procedural" (one shared demo set, built by
# `_procedural_jobs`) and "package" (already converted: used as given). Add a dataset here.
CONVERTERS: dict[tuple[str, str], JobBuilder] = {
    ("environment", "front3d"): _front3d,
    ("environment", "mesh"): _environment_mesh,
    ("humans", "amass"): _smpl_sequences,
    ("humans", "smpl"): _smpl_sequences,
    ("humans", "cloth3d"): _cloth3d,
    ("humans", "gltf"): _animated_gltf,
    ("animals", "gltf"): _animal_gltf,
    ("objects", "gso"): _gso,
    ("objects", "mesh"): _object_mesh,
}
# role -> (folder under the cache for converted packages, folder of the role in the procedural demo set)
ROLE_FOLDERS = {"environment": ("environments", "environment"), "humans": ("humans", "humans"),
                "objects": ("objects", "objects"), "animals": ("animals", "animals")}


def _role_packages(config: ExperimentConfig, role: str, source: str, paths: list[Path], cache: Path,
                   procedural: list[Job]) -> list[Path]:
    """The packages of one role (environment, humans, objects), converted into `cache` when needed."""
    if source == "package":
        return list(paths)
    cache_folder, demo_folder = ROLE_FOLDERS[role]
    if source == "procedural":
        jobs = [job for job in procedural if job.out.parent.name == demo_folder]
    else:
        build = CONVERTERS[(role, source)]
        jobs = [job for path in paths for job in build(config, Path(path), cache / cache_folder)]
    return _packages(jobs, f"{source} {role}")


def convert_assets(config: ExperimentConfig, cache: Path) -> tuple[Path, list[Path], list[Path]]:
    """Environment, human and object packages for `config`, converted into `cache` when needed."""
    env, humans, objects = config.environment, config.humans, config.flying_objects
    uses_procedural = "procedural" in (env.source, humans.source, objects.source)
    procedural = _procedural_jobs(config, cache) if uses_procedural else []
    environment = _role_packages(config, "environment", env.source, [env.path], cache, procedural)[0]
    human_packages = _role_packages(config, "humans", humans.source, humans.paths, cache, procedural)
    object_packages = _role_packages(config, "objects", objects.source, objects.paths, cache, procedural)
    return environment, human_packages, object_packages


def convert_animals(config: ExperimentConfig, cache: Path) -> list[Path]:
    """The animal packages for `config` (none when `animals.count.max` is 0), converted into `cache` when needed."""
    animals = config.animals
    if animals.count.max == 0:
        return []
    procedural = _procedural_jobs(config, cache) if animals.source == "procedural" else []
    return _role_packages(config, "animals", animals.source, animals.paths, cache, procedural)


def _manifest_hash(package: Path) -> str:
    return content_hash((package / MANIFEST).read_text()) if (package / MANIFEST).is_file() else str(package)


def place_and_compose(config: ExperimentConfig, environment: Path, humans: list[Path], objects: list[Path],
                      out: Path, animals: list[Path] | None = None) -> tuple[Path, Path]:
    """placement.json, its preview PNG and scene.usda in `out/scene/`, redone only when inputs change."""
    from placement.compose import compose_scene
    from placement.place import place_scene, write_outputs

    animals = animals or []
    folder = out / SCENE_DIR
    stage = Stage(folder, "place", content_hash(
        "place/1", config.seed, config.humans.model_dump(mode="json"), config.flying_objects.model_dump(mode="json"),
        config.for_robot().robot.model_dump(mode="json"), config.simulation.duration + config.simulation.bootstrap,
        [_manifest_hash(p) for p in (environment, *humans, *objects)],
        *([[r.model_dump(mode="json") for r in config.robots]] if config.multi_robot else []),
        *([config.animals.model_dump(mode="json"), config.environment.region, [_manifest_hash(p) for p in animals]]
          if animals or config.environment.region else []),
    ))
    if not stage.done():
        fleet = [(name, robot) for name, _, robot, _ in config.robot_entries()] if config.multi_robot else []
        scene = place_scene(environment, humans, objects, config.humans, config.flying_objects,
                            config.for_robot().robot, config.seed, fleet=fleet, animal_packages=animals,
                            animals=config.animals, region=config.environment.region)
        with stage.build() as tmp:
            # The partial folder is a sibling of the final one, so the relative package paths written
            # into placement.json and scene.usda stay valid after the rename.
            write_outputs(scene, tmp / PLACEMENT_FILE, (tmp / PLACEMENT_FILE).with_suffix(".png"))
            duration = config.simulation.duration + config.simulation.bootstrap
            compose_scene(load_placement(tmp / PLACEMENT_FILE), tmp / SCENE_FILE, duration)
    else:
        log.info("placement up to date: %s", folder)
    return folder / PLACEMENT_FILE, folder / SCENE_FILE


def prepare(config: ExperimentConfig, out: Path | None = None, cache: Path | None = None) -> PreparedInputs:
    """Convert, place and compose for one experiment; returns where everything is."""
    out = Path(out or config.output_dir)
    cache = Path(cache or config.assets_dir or out / ASSETS_DIR)
    # Experiments may share a cache: each package has a lock of its own (asset_converters.run_jobs), so jobs convert
    # different packages at once and wait only for one converting the same package, then find it done.
    check_output_folder(cache, "asset cache")
    environment, humans, objects = convert_assets(config, cache)
    animals = convert_animals(config, cache)
    load_meta(environment, "environment")
    placement, scene = place_and_compose(config, environment, humans, objects, out, animals)
    return PreparedInputs(environment, humans, objects, placement, scene, animals)

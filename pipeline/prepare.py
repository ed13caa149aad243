"""The stages before simulation for one experiment: convert its assets (cached, content-addressed),
place humans / flying objects / the robot start, and compose scene.usda.

Every stage is skipped when its output is complete for the same inputs, so an interrupted run
resumes where it stopped and a re-run with the same config does no work.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from asset_converters.batch import BatchResult, Job, run_jobs
from asset_converters.package import load_meta
from core.config import ExperimentConfig
from core.errors import GradeError
from core.progress import get_logger
from core.rundir import MANIFEST, StageStatus, atomic_directory, content_hash, stage_status, write_manifest
from core.seeding import generator

log = get_logger("prepare")

# Distinct procedural humans generated for an experiment (placement draws candidates from them with
# replacement); three at least, so walk, idle and wave all appear.
PROCEDURAL_HUMAN_VARIETY = (3, 6)
PROCEDURAL_OBJECT_VARIETY = (1, 6)


@dataclass
class PreparedScene:
    environment: Path
    humans: list[Path]
    objects: list[Path]
    placement: Path  # placement.json
    scene: Path  # scene.usda


def _packages(jobs: list[Job], description: str) -> list[Path]:
    """Run conversion jobs; any failure stops the experiment with the converter's message."""
    result: BatchResult = run_jobs(jobs, description)
    if result.failed:
        source, message = result.failed[0]
        raise GradeError(f"{description}: {len(result.failed)} input(s) failed to convert; first: {message}", source)
    return sorted(job.out for job in jobs)


def _procedural_jobs(config: ExperimentConfig, cache: Path) -> list[Job]:
    from asset_converters.procedural import demo_jobs

    rng = generator(config.seed, "prepare/procedural")
    furniture = int(rng.integers(config.environment.furniture.min, config.environment.furniture.max + 1))
    humans = min(max(config.humans.count.max, PROCEDURAL_HUMAN_VARIETY[0]), PROCEDURAL_HUMAN_VARIETY[1])
    objects = min(max(config.flying_objects.count.max, PROCEDURAL_OBJECT_VARIETY[0]), PROCEDURAL_OBJECT_VARIETY[1])
    folder = cache / f"procedural-seed{config.seed}"
    return demo_jobs(folder, config.seed, config.environment.rooms, furniture, humans, objects)


def convert_assets(config: ExperimentConfig, cache: Path) -> tuple[Path, list[Path], list[Path]]:
    """Environment, human and object packages for `config`, converted into `cache` when needed."""
    env, humans, objects = config.environment, config.humans, config.flying_objects
    uses_procedural = "procedural" in (env.source, humans.source, objects.source)
    procedural = _procedural_jobs(config, cache) if uses_procedural else []

    def pick(kind: str) -> list[Job]:
        return [j for j in procedural if j.out.parent.name == kind]

    if env.source == "procedural":
        environment = _packages(pick("environment"), "procedural environment")[0]
    elif env.source == "package":
        environment = env.path
    elif env.source == "front3d":
        from asset_converters.front3d import front3d_jobs

        environment = _packages(front3d_jobs(env.path, cache / "environments", env.future_models, env.textures,
                                             env.room), "3D-Front house")[0]
    else:
        from asset_converters.mesh import MeshOptions, mesh_jobs

        environment = _packages(mesh_jobs(env.path, cache / "environments", MeshOptions(kind="environment")),
                                "environment mesh")[0]

    human_jobs: list[Job] = []
    if humans.source == "procedural":
        human_jobs = pick("humans")
    for path in humans.paths:
        if humans.source in ("amass", "smpl"):
            from asset_converters.smpl import sequence_jobs

            human_jobs += sequence_jobs(path, cache / "humans", humans.body_model, humans.fps)
        elif humans.source == "cloth3d":
            from asset_converters.smpl import cloth3d_jobs

            human_jobs += cloth3d_jobs(path, cache / "humans", humans.body_model, humans.fps)
        elif humans.source == "gltf":
            from asset_converters.mesh import MeshOptions, mesh_jobs

            human_jobs += mesh_jobs(path, cache / "humans", MeshOptions(kind="animated", fps=humans.fps))
    human_packages = list(humans.paths) if humans.source == "package" else _packages(human_jobs, "humans")

    object_jobs: list[Job] = []
    if objects.source == "procedural":
        object_jobs = pick("objects")
    for path in objects.paths:
        if objects.source == "gso":
            from asset_converters.gso import gso_jobs

            object_jobs += gso_jobs(path, cache / "objects")
        elif objects.source == "mesh":
            from asset_converters.mesh import MeshOptions, mesh_jobs

            object_jobs += mesh_jobs(path, cache / "objects", MeshOptions(kind="object"))
    object_packages = list(objects.paths) if objects.source == "package" else _packages(object_jobs, "objects")
    return environment, human_packages, object_packages


def _manifest_hash(package: Path) -> str:
    return content_hash((package / MANIFEST).read_text()) if (package / MANIFEST).is_file() else str(package)


def place_and_compose(config: ExperimentConfig, environment: Path, humans: list[Path], objects: list[Path],
                      out: Path) -> tuple[Path, Path]:
    """placement.json, its preview PNG and scene.usda in `out/scene/`, redone only when inputs change."""
    from placement import load_placement, place_scene, write_outputs
    from placement.compose import compose_scene

    folder = out / "scene"
    input_hash = content_hash(
        "place/1", config.seed, config.humans.model_dump(mode="json"), config.flying_objects.model_dump(mode="json"),
        config.robot.model_dump(mode="json"), config.simulation.duration + config.simulation.bootstrap,
        [_manifest_hash(p) for p in (environment, *humans, *objects)],
    )
    if stage_status(folder, input_hash) is not StageStatus.COMPLETE:
        scene = place_scene(environment, humans, objects, config.humans, config.flying_objects, config.robot,
                            config.seed)
        with atomic_directory(folder) as tmp:
            # The temporary folder is a sibling of the final one, so the relative package paths written
            # into placement.json and scene.usda stay valid after the rename.
            write_outputs(scene, tmp / "placement.json", tmp / "placement.png")
            duration = config.simulation.duration + config.simulation.bootstrap
            compose_scene(load_placement(tmp / "placement.json"), tmp / "scene.usda", duration)
            write_manifest(tmp, "place", input_hash)
    else:
        log.info("placement up to date: %s", folder)
    return folder / "placement.json", folder / "scene.usda"


def prepare(config: ExperimentConfig, out: Path | None = None, cache: Path | None = None) -> PreparedScene:
    """Convert, place and compose for one experiment; returns where everything is."""
    out = Path(out or config.output_dir)
    cache = Path(cache or config.assets_dir or out / "assets")
    environment, humans, objects = convert_assets(config, cache)
    if load_meta(environment).kind != "environment":
        raise GradeError("not an environment package", environment, "environment.path")
    placement, scene = place_and_compose(config, environment, humans, objects, out)
    return PreparedScene(environment, humans, objects, placement, scene)

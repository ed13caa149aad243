"""`grade generate`: one experiment end to end — prepare (convert, place, compose; cached), simulate
with the configured backend, robot and planner, and record bags, ground truth and the state log.

The recording is built in a partial folder in RUN and moved into RUN when complete (core.stage); MANIFEST.json (stage
"record", listing the recording's files) is written last. run.json says "running" meanwhile, and
"failed" / "interrupted" when a run stops early, so a killed run never looks complete: the next
`grade generate` finds no valid manifest and records again (prepared assets and scene are reused, and
the same config and seed give the same recording).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.config import SENSOR_KINDS, ExperimentConfig
from core.errors import InputError
from core.formats.class_map import read_class_map
from core.formats.manifest import MANIFEST
from core.formats.run_info import (
    COMPLETE,
    RUN_FILE,
    AssetRecord,
    RunInfo,
    asset_record,
    read_run_info,
    write_run_info,
)
from core.formats.run_layout import RECORD_OUTPUTS
from core.progress import console, get_logger, make_progress
from core.robot_catalogue import KINDS, Custom
from core.rundir import Stopwatch, content_hash, sha256_file
from core.seeding import derived_seeds
from core.stage import Stage, keep_first_error, output_folder, record_failure

if TYPE_CHECKING:
    from simulation.recording.live_target import LiveStream, LiveTarget

log = get_logger("generate")

RECORD_VERSION = "record/3"  # 2: semantic ids from the global class map; 3: exposure, sky, lights, /tf_static, UAV limits
PROGRESS_EVERY = 24  # physics steps between progress updates
# The named random streams of a run (core.seeding), listed with their seeds in run.json; the lights'
# streams are "simulation/randomization/lights/<epoch>", one per re-randomisation period.
RUN_STREAMS = ["prepare/procedural", "placement/robot", "placement/humans", "placement/flying_objects",
               "simulation/randomization/roughness", "simulation/randomization/lights/0"]


def run_streams(config: ExperimentConfig) -> list[str]:
    """RUN_STREAMS, with each robot's start stream in a multi-robot run ("placement/robot/<name>"), then the
    streams of the sensors whose kind draws random numbers (SensorKind.seeded; an event camera's:
    "sensors/event/[<robot>/]<name>"), by robot, then by kind in KINDS' order, then in config order."""
    multi = config.multi_robot
    sensors = [kind.seed_stream(sensor.name, name if multi else None)
               for name in config.robot_names for kind in SENSOR_KINDS.values() if kind.seeded
               for sensor in config.for_robot(name).robot.sensors.of(kind.type)]
    if not multi:
        return RUN_STREAMS + sensors
    return [stream for stream in RUN_STREAMS if stream != "placement/robot"] + [
        f"placement/robot/{name}" for name in config.robot_names] + sensors


@dataclass
class GenerateResult:
    run: Path
    info: RunInfo
    skipped: bool  # the recording was already complete for these inputs


def record_hash(config: ExperimentConfig, scene: Path) -> str:
    """What a recording depends on: the config (where it is written and what is applied afterwards excepted),
    the class map it labels with and the environment image it shows (the files' contents, not only their paths)
    and the composed scene."""
    settings = config.model_dump(mode="json", exclude={"output_dir", "assets_dir", "postprocess"})
    classes = read_class_map(config.recording.class_map).model_dump(mode="json")
    sky = sha256_file(config.render.environment) if config.render.environment is not None else None
    parts = [RECORD_VERSION, settings, classes, sky, (scene.parent / MANIFEST).read_text()]
    # A description robot's file and meshes (the built-in robots' models are the code's).
    descriptions = [Custom.description(robot).digest for _, _, robot, _ in config.robot_entries()
                    if robot.description is not None]
    return content_hash(*parts, *([descriptions] if descriptions else []))


def check_robots(config: ExperimentConfig) -> None:
    """Build each robot's model and check its sensors' links before anything is written: a description robot's
    file and links are known only then (a built-in's are checked with the config)."""
    described = [(key, robot) for _, key, robot, _ in config.robot_entries() if KINDS[robot.kind].links(robot) is None]
    if not described:
        return  # without importing the simulation (0.7 s): a refusal further on comes sooner
    from simulation.embedded.sensors import check_mount_links
    from simulation.robots import robot_model

    for key, robot in described:
        check_mount_links(robot_model(robot), robot.sensors, key)


def generate(config: ExperimentConfig, out: Path | None = None, cache: Path | None = None,
             force: bool = False, wait: bool = False, live: LiveTarget | None = None) -> GenerateResult:
    """Prepare and record one experiment into `out` (default: its output_dir), holding the folder's writer
    lock throughout: a second writer fails at once (or queues with `wait`). With `live`, the recording is shown
    in a Rerun viewer as it records (simulation.recording.live_view), reached before anything is written."""
    run = Path(out or config.output_dir)
    check_robots(config)
    if config.live.middleware != "none":
        from simulation.live.middleware import check_middleware

        check_middleware(config.live)  # what it needs, before anything is written
        force = True  # a live run is driven from outside: it records again, whatever an earlier one left
    from simulation.recording.live_target import live_stream

    with live_stream(live, f"{config.name}-seed{config.seed}") as stream, \
            output_folder(run, what="run folder", wait=wait):
        result = _generate_locked(config, run, cache, force, stream)
        if config.postprocess.enabled:
            from postprocess.process_run import process_run

            process_run(run, config.postprocess, force=force)
        return result


def _recorded(stage: Stage) -> RunInfo | None:
    """The run's info when its recording is done (Stage.done) and run.json agrees; None otherwise."""
    if not stage.done():
        return None
    try:
        info = read_run_info(stage.folder)
    except InputError as exc:
        log.warning("%s; recording again", exc)
        return None
    if info.status != COMPLETE or info.sim_time_end is None:
        log.warning("%s says %r although its manifest is complete; recording again", stage.folder / RUN_FILE,
                    info.status)
        return None
    return info


def _generate_locked(config: ExperimentConfig, run: Path, cache: Path | None, force: bool,
                     stream: LiveStream | None) -> GenerateResult:
    from pipeline.prepare import prepare

    total = Stopwatch()
    prepared = prepare(config, run, cache)
    prepare_seconds = total.seconds()
    stage = Stage(run, "record", record_hash(config, prepared.scene), RECORD_OUTPUTS, force=force)
    done = _recorded(stage)
    if done is not None:
        log.info("recording up to date: %s (use --force to record again)", run)
        if stream is not None:
            log.warning("nothing to show live: the recording is already complete (grade view --rerun exports it)")
        return GenerateResult(run, done, skipped=True)

    info = RunInfo(name=config.name, backend=config.simulation.backend, master_seed=config.seed,
                   derived_seeds=derived_seeds(config.seed, run_streams(config)), config=config.model_dump(mode="json"),
                   asset_hashes=_asset_hashes(prepared), assets=_asset_records(prepared.scene))
    with stage.build(on_failure=lambda exc: record_failure(run, info, exc)) as partial:
        write_run_info(run, info)
        simulate_seconds, mission, counts, end_time, live = _simulate(config, prepared, partial, stream)
        info.status, info.sim_time_end, info.frame_counts, info.mission = COMPLETE, end_time, counts, mission
        info.live = live
        info.wall_seconds = {"prepare": round(prepare_seconds, 3), "simulate_and_record": round(simulate_seconds, 3),
                             "total": round(total.seconds(), 3)}
        write_run_info(run, info)
    return GenerateResult(run, info, skipped=False)


def _asset_hashes(prepared) -> dict[str, str]:
    hashes = {}
    for package in (prepared.environment, *prepared.humans, *prepared.objects):
        manifest = package / MANIFEST
        hashes[package.name] = content_hash(manifest.read_text()) if manifest.is_file() else "unmanaged"
    return hashes


def _asset_records(scene: Path) -> list[AssetRecord]:
    """The packages the scene places, each once, in scene order."""
    from core.formats.scene_layout import read_scene_layout  # USD (70 MB): not for a run refused before it starts

    layout = read_scene_layout(scene)
    placed = [layout.environment, *layout.humans, *layout.objects, *layout.animals]
    return [asset_record(package) for package in dict.fromkeys(p.package for p in placed)]


def _simulate(config: ExperimentConfig, prepared, folder: Path,
              stream: LiveStream | None) -> tuple[float, dict, dict[str, int], float, dict | None]:
    """Run the mission with a recorder attached (the live view on `stream`; published to ROS with `config.live`);
    returns wall seconds, the mission summary, the sample counts, the final simulation time and the live report."""
    from rich.progress import TextColumn

    from simulation.backends import load_world
    from simulation.mission import run_mission
    from simulation.recording.recorder import Recorder

    watch = Stopwatch()
    world = load_world(config, prepared.scene)
    live = None
    if stream is not None:
        from simulation.recording.live_view import LiveView

        live = LiveView(stream, world, config)
    link = session = None
    if config.live.middleware != "none":
        from simulation.live.middleware import open_middleware
        from simulation.live.session import LiveSession

        link = open_middleware(config.live)
    try:
        recorder = Recorder(world, config, folder, live, [link.tap] if link else ())
    except BaseException:
        if link is not None:
            link.close()
        raise
    if link is not None:
        session = LiveSession(config, world, link.node, recorder.drain)
    steps = recorder.schedule.total_steps
    prefix = f"{config.robot_names[0]}/" if config.multi_robot else ""
    main_camera = next((f"{prefix}camera/{c.name}" for c in config.for_robot().robot.sensors.cameras), None)
    progress = make_progress(TextColumn("{task.fields[info]}"))
    with progress:
        task = progress.add_task("simulating", total=steps, info="")

        def on_step(b) -> None:
            recorder.sample(b)
            step = round(b.time / b.timestep)
            if step % PROGRESS_EVERY == 0 or step == steps:
                frames = recorder.counts.counts.get(main_camera, 0) if main_camera else 0
                rtf = b.time / max(watch.seconds(), 1e-9)
                progress.update(task, completed=step,
                                info=f"sim {b.time:6.2f} s  frames {frames}  {rtf:5.2f}x real time")

        try:
            recorder.sample(world)
            mission = run_mission(world, config, prepared.environment, on_step, session)
            if session is not None:
                session.finish(world)
            recorder.close()
            if session is not None:
                session.save(folder)
            if live is not None:
                live.finish()
        except BaseException:
            keep_first_error(recorder.abort)
            raise
        finally:
            if link is not None:
                link.close()
    seconds = watch.seconds()
    console.print(f"recorded {world.time:.2f} s of simulation in {seconds:.1f} s "
                  f"({world.time / max(seconds, 1e-9):.2f}x real time)")
    report = session.report.summary() if session is not None else None
    if report and "clock_jitter_ms" in report:
        jitter = report["clock_jitter_ms"]
        console.print(f"realtime pacing: /clock against the wall clock, |late| mean {jitter['mean']:.2f} ms, "
                      f"p99 {jitter['p99']:.2f} ms, max {jitter['max']:.2f} ms")
    return seconds, mission.summary(), dict(recorder.counts.counts), world.time, report

"""`grade replay RUN --out RUN2`: a recorded run simulated again on its own timeline into a new, complete
recording, with the deviation report beside it.

The replay folder is a run folder like any other (bags, gt/, states.npz, humans/, run.json, MANIFEST.json),
readable by every later stage; its run.json holds the replay's own config (the parent's with the overrides
applied, so a replay of a replay repeats it) and `replay_of` (the parent, mode, window and overrides), its
scene/ a copy of the parent's scene.usda that references the same asset packages, and replay.json the
deviation report (replay.deviation). The parent is only read; the replay is written into a partial folder and
installed when complete, so an interrupted replay leaves nothing half-written, and a rerun with the same
inputs finds it complete and returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.progress import TextColumn

from asset_converters.batch import run_jobs
from asset_converters.mesh import MESH_SUFFIXES, MeshOptions, mesh_jobs
from core.assets.layout import META_FILE
from core.errors import ConfigError, InputError
from core.formats.asset_meta import load_meta
from core.formats.manifest import MANIFEST
from core.formats.placement import PLACEMENT_FILE, FlyingMotion
from core.formats.replay_report import REPLAY_FILE, ReplayReport, read_replay_report, write_replay_report
from core.formats.run_info import COMPLETE, RunInfo, write_run_info
from core.formats.run_layout import ASSETS_DIR, RECORD_OUTPUTS, SCENE_DIR
from core.formats.scene_layout import SCENE_FILE, append_object, copy_scene, read_scene_layout
from core.formats.states import STATES_FILE
from core.outputs import check_apart
from core.progress import get_logger, make_progress
from core.recording import Recording
from core.rundir import Stopwatch, atomic_write_bytes, content_hash
from core.stage import Stage, keep_first_error, output_folder, record_failure
from replay.deviation import deviation_report
from replay.driver import MODES, replay_physics, replay_teleport, window_steps
from replay.overrides import AddedObject, ReplayOverrides, hidden_prims, replay_config
from simulation.backends import load_world
from simulation.recording.live_target import LiveTarget, live_stream
from simulation.recording.live_view import LiveView
from simulation.recording.recorder import Recorder

REPLAY_VERSION = "replay/1"
STAGE = "replay"
log = get_logger("replay")


@dataclass(frozen=True)
class ReplayResult:
    run: Path
    report: ReplayReport
    skipped: bool  # the replay was already complete for these inputs


def replay_run(run: str | Path, out: str | Path, overrides: ReplayOverrides | None = None,
               mode: str = "teleport", start: float | None = None, end: float | None = None,
               source: str = "--with", wait: bool = False, robot: str | None = None,
               live: LiveTarget | None = None) -> ReplayResult:
    """Replay the recording `run` into `out` (module docstring); `source` names the overrides in errors. In a
    multi-robot run every robot is replayed; the overrides' sensors are robot `robot`'s (default: the first) and
    the report is on that robot. With `live`, the replay is shown in a Rerun viewer as it records
    (simulation.recording.live_view), reached before anything is written."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}; one of {', '.join(MODES)}", field="--mode")
    overrides = overrides or ReplayOverrides()
    parent = Recording.open(run).robot(robot)
    out = Path(out)
    check_apart(out, [parent.path], "replay folder")
    config = replay_config(parent.config, overrides, source, robot)
    scene_file = parent.path / SCENE_DIR / SCENE_FILE
    scene = read_scene_layout(scene_file)
    hidden = hidden_prims(overrides, scene.humans + scene.animals, scene.objects, source)  # animals play as humans
    for obj in overrides.add_objects:
        _check_added(obj, source)
    states = parent.states()
    window = window_steps(states["time"], start, end, str(parent.path / STATES_FILE))
    times = (float(states["time"][window.first]), float(states["time"][window.last]))
    replay_of = {"run": str(parent.path.resolve()), "name": parent.info.name, "mode": mode, "window": list(times),
                 "overrides": overrides.model_dump(mode="json", exclude_defaults=True)}
    if robot is not None:
        replay_of["robot"] = robot
    input_hash = content_hash(REPLAY_VERSION, (parent.path / MANIFEST).read_text(), config.model_dump(mode="json"),
                              replay_of)
    with live_stream(live, f"{config.name}-seed{config.seed}-replay-{out.name}") as stream, \
            output_folder(out, what="replay folder", wait=wait):
        stage = Stage(out, STAGE, input_hash, (*RECORD_OUTPUTS, REPLAY_FILE))
        if stage.done():
            log.info("replay up to date: %s", out)
            if stream is not None:
                log.warning("nothing to show live: the replay is already complete (grade view --rerun exports it)")
            return ReplayResult(out, read_replay_report(out), skipped=True)
        watch = Stopwatch()
        info = RunInfo(name=config.name, backend=config.simulation.backend, master_seed=config.seed,
                       derived_seeds=parent.info.derived_seeds, config=config.model_dump(mode="json"),
                       asset_hashes=parent.info.asset_hashes, assets=parent.info.assets, replay_of=replay_of,
                       sim_time_start=times[0])
        with stage.build(on_failure=lambda exc: record_failure(out, info, exc)) as partial:
            copy_run_scene(parent.path / SCENE_DIR, out / SCENE_DIR)
            for obj, (package, asset_id) in zip(overrides.add_objects, _object_packages(overrides, out / ASSETS_DIR),
                                                strict=True):
                append_object(out / SCENE_DIR / SCENE_FILE, package, asset_id,
                              static_motion(obj.position, obj.yaw_deg))
            write_run_info(out, info)
            world = load_world(config, out / SCENE_DIR / SCENE_FILE, hidden)
            live_view = LiveView(stream, world, config) if stream is not None else None
            recorder = Recorder(world, config, partial, live_view)
            drive = replay_teleport if mode == "teleport" else replay_physics
            with make_progress(TextColumn("{task.fields[info]}")) as progress:
                task = progress.add_task(f"replaying ({mode})", total=window.last - window.first + 1, info="")
                try:
                    drive(world, recorder, states, window, overrides.lights, str(parent.path / STATES_FILE),
                          lambda step: progress.update(task, completed=step - window.first + 1,
                                                       info=f"sim {step * world.timestep:6.2f} s"))
                    recorder.close()
                    if live_view is not None:
                        live_view.finish()
                except BaseException:
                    keep_first_error(recorder.abort)
                    raise
            info.status, info.sim_time_end = COMPLETE, times[1]
            info.frame_counts = dict(recorder.counts.counts)
            info.wall_seconds = {"replay": round(watch.seconds(), 3)}
            write_run_info(out, info)
            # The report reads the replay's recording where it is built (it names the parent only).
            report = deviation_report(parent, Recording(partial, info, robot), mode, times)
            write_replay_report(partial, report)
    return ReplayResult(out, report, skipped=False)


def copy_run_scene(source: Path, target: Path) -> None:
    """The parent's scene/: scene.usda with its package references rebased, placement.json and its preview."""
    copy_scene(source / SCENE_FILE, target / SCENE_FILE)
    for path in (source / PLACEMENT_FILE, (source / PLACEMENT_FILE).with_suffix(".png")):
        if path.is_file():
            atomic_write_bytes(target / path.name, path.read_bytes())


def static_motion(position: tuple[float, float, float], yaw_deg: float) -> FlyingMotion:
    """A flying-object motion that stands still at `position` turned by `yaw_deg` about z."""
    half = np.radians(yaw_deg) / 2
    zeros = ((0.0, 0.0, 0.0),) * 3
    return FlyingMotion(center=position, amplitude=zeros, frequency_hz=zeros, phase=zeros,
                        orientation=(float(np.cos(half)), 0.0, 0.0, float(np.sin(half))),
                        angular_velocity_deg=(0.0, 0.0, 0.0), speed=0.0, radius=0.0, z_range=(position[2], position[2]))


def _check_added(obj: AddedObject, source: str) -> None:
    """ConfigError unless the path is an object package or a mesh file, before anything is written."""
    if (obj.path / META_FILE).is_file():
        load_meta(obj.path, "object")
    elif not (obj.path.is_file() and obj.path.suffix.lower() in MESH_SUFFIXES):
        raise ConfigError(f"{obj.path} is neither an object package (with {META_FILE}) nor a mesh file "
                          f"({', '.join(MESH_SUFFIXES)})", source, "add_objects")


def _object_packages(overrides: ReplayOverrides, assets: Path) -> list[tuple[Path, str]]:
    """(package, asset id) of each added object; mesh files are converted into `assets` first."""
    packages = []
    for obj in overrides.add_objects:
        if (obj.path / META_FILE).is_file():
            packages.append((obj.path, obj.path.name))
            continue
        jobs = mesh_jobs(obj.path, assets, MeshOptions(kind="object", label=obj.label, scale=obj.scale))
        failed = run_jobs(jobs, "converting added objects").failed
        if failed:
            raise InputError(f"could not convert the added object: {failed[0][1]}", obj.path)
        packages.append((jobs[0].out, jobs[0].out.name))
    return packages

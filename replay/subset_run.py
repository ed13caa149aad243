"""`grade replay RUN --out OUT --every N | --frames LIST | --sample K [--set render.KEY=VALUE]`: some camera frames
of a run rendered again (photoreal with `--set render.rgb=cycles`), with the run's own labels.

Only the chosen frames are rendered: the world is put in each frame's logged step (teleport, replay.driver)
and renders the camera there, once; its RGB image is what is new. The labels of those frames are the
parent's, copied byte for byte: depth, instance and semantic images (and float depth, normals, flow where
recorded), the frame's frames.jsonl line with its boxes, its poses.tum line and instances.json, since the
render section only changes colour. Each rendering's camera pose is checked against the parent's frame, so a
state log that does not match its ground truth stops the replay instead of mislabelling an image.

The folder is a run folder that Recording and `grade export` read: run.json (the parent's config with the
render settings applied; replay_of names the rule and each camera's frames), MANIFEST.json, gt/ with only the
chosen frames under the parent's frame numbers and times, and the parent's states.npz, humans/ (the people's
skeletons, for keypoints) and scene/. It has no bags, IMU log or LiDAR sweeps: a few frames are no sequence to
play back. Rendered images are kept in RESUME as they finish, so a rerun of an interrupted replay renders only
the frames still missing; the recording is assembled in a partial folder and installed when complete (core.stage).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np
from rich.progress import TextColumn

from core.config import ExperimentConfig
from core.errors import ConfigError, InputError
from core.formats.frames import FRAMES_FILE
from core.formats.humans import HUMANS_DIR
from core.formats.images import frame_file
from core.formats.instances import INSTANCES_FILE
from core.formats.manifest import MANIFEST
from core.formats.png import encode_png
from core.formats.replay_report import REPLAY_FILE
from core.formats.run_info import COMPLETE, RunInfo, write_run_info
from core.formats.run_layout import BAGS_DIR, RECORD_OUTPUTS, SCENE_DIR
from core.formats.scene_layout import SCENE_FILE
from core.formats.states import STATES_FILE
from core.formats.tum import TUM_FILE
from core.outputs import check_apart
from core.progress import get_logger, make_progress
from core.recording import Frame, Recording
from core.rundir import Stopwatch, atomic_write_bytes, atomic_write_text, content_hash, read_utf8
from core.stage import Stage, output_folder, record_failure
from replay.driver import Teleport
from replay.overrides import ReplayOverrides, replay_config
from replay.run import STAGE, copy_run_scene
from replay.subset import FrameRule, choose_frames
from simulation.backend import World
from simulation.backends import load_world

SUBSET_VERSION = "replay-subset/1"
MODE = "subset"  # replay_of.mode
RESUME = ".replay.frames"  # the frames rendered so far (not a `.partial`: stale partials are removed on start)
RESUME_INPUTS = "inputs"  # in RESUME: the input hash its frames were rendered for
POSE_TOLERANCE = 1e-9  # the rendering's camera pose against the recorded one (same state, same arithmetic)
TIME_TOLERANCE = 1e-9  # s: a frame's time against the state log's
log = get_logger("replay")


@dataclass(frozen=True)
class CameraSubset:
    """One camera's chosen frames, with their positions among the parent's frames (frames.jsonl lines)."""

    name: str
    folder: Path  # the parent's camera folder
    positions: list[int]
    frames: list[Frame]

    def relative(self, parent: Path) -> Path:
        """gt/<camera> (gt/<robot>/<camera> in a multi-robot run)."""
        return self.folder.relative_to(parent)


@dataclass(frozen=True)
class SubsetResult:
    run: Path
    frames: dict[str, list[int]]  # camera -> the frame numbers rendered
    rendered: int  # frames this call rendered (a resumed or complete replay had the others already)
    skipped: bool  # the replay was already complete for these inputs


@dataclass(frozen=True)
class _Plan:
    """Everything a subset replay needs, checked before its folder is touched."""

    parent: Recording
    config: ExperimentConfig
    subsets: list[CameraSubset]
    states: dict[str, np.ndarray]
    rows: dict[tuple[str, int], int]  # (camera, frame number) -> state log row
    replay_of: dict[str, Any]
    input_hash: str

    @property
    def chosen(self) -> dict[str, list[int]]:
        return {s.name: [f.index for f in s.frames] for s in self.subsets}


def replay_subset(run: str | Path, out: str | Path, rule: FrameRule, render: dict[str, Any] | None = None,
                  cameras: list[str] | None = None, robot: str | None = None, wait: bool = False) -> SubsetResult:
    """Render the frames `rule` picks of `run`'s cameras (`cameras`, default every camera recording RGB; robot
    `robot`'s in a multi-robot run) with the render settings `render` (render.* keys) into `out` (module
    docstring)."""
    out = Path(out)
    plan = _plan(run, out, rule, render or {}, cameras, robot)
    with output_folder(out, what="replay folder", wait=wait):
        stage = Stage(out, STAGE, plan.input_hash, RECORD_OUTPUTS)
        if stage.done():
            log.info("replay up to date: %s", out)
            return SubsetResult(out, plan.chosen, 0, skipped=True)
        watch = Stopwatch()
        info = RunInfo(name=plan.config.name, backend=plan.config.simulation.backend, master_seed=plan.config.seed,
                       derived_seeds=plan.parent.info.derived_seeds, config=plan.config.model_dump(mode="json"),
                       asset_hashes=plan.parent.info.asset_hashes, assets=plan.parent.info.assets,
                       replay_of=plan.replay_of,
                       sim_time_start=plan.parent.info.sim_time_start)
        with stage.build(on_failure=lambda exc: record_failure(out, info, exc)) as partial:
            copy_run_scene(plan.parent.path / SCENE_DIR, out / SCENE_DIR)
            write_run_info(out, info)
            resume = _resume_folder(out / RESUME, plan.input_hash)
            world = load_world(plan.config, out / SCENE_DIR / SCENE_FILE)
            rendered = _render(world, robot, plan, resume)
            _assemble(plan.parent, plan.subsets, resume, partial)
            for name in (BAGS_DIR, REPLAY_FILE):  # an earlier full replay's into this folder
                _remove(out / name)
            _finish(plan, info, watch)
            write_run_info(out, info)
        shutil.rmtree(out / RESUME)
    return SubsetResult(out, plan.chosen, rendered, skipped=False)


def _plan(run: str | Path, out: Path, rule: FrameRule, render: dict[str, Any], cameras: list[str] | None,
          robot: str | None) -> _Plan:
    """The replay's config, frames and state rows; ConfigError or InputError for what cannot be replayed."""
    parent = Recording.open(run).robot(robot)
    check_apart(out, [parent.path], "replay folder")
    config = replay_config(parent.config, ReplayOverrides(set=render), "--set", robot)
    subsets = _subsets(parent, rule, cameras)
    states = parent.states()
    rows = _rows(states["time"], subsets, parent.path / STATES_FILE)
    replay_of = {"run": str(parent.path.resolve()), "name": parent.info.name, "mode": MODE, "subset": rule.describe(),
                 "frames": {s.name: [f.index for f in s.frames] for s in subsets},
                 "overrides": {"set": render} if render else {}}
    if robot is not None:
        replay_of["robot"] = robot
    input_hash = content_hash(SUBSET_VERSION, (parent.path / MANIFEST).read_text(), config.model_dump(mode="json"),
                              replay_of)
    return _Plan(parent, config, subsets, states, rows, replay_of, input_hash)


def _finish(plan: _Plan, info: RunInfo, watch: Stopwatch) -> None:
    """run.json's record of the complete replay."""
    prefix = f"{plan.parent.robot_name}/" if len(plan.parent.robots) > 1 else ""
    info.status, info.sim_time_end = COMPLETE, plan.parent.info.sim_time_end
    info.frame_counts = {f"{prefix}camera/{name}": len(numbers) for name, numbers in plan.chosen.items()}
    info.wall_seconds = {"replay": round(watch.seconds(), 3)}


def _subsets(parent: Recording, rule: FrameRule, cameras: list[str] | None) -> list[CameraSubset]:
    """The chosen frames of each camera: those named (each must record RGB), else every camera recording RGB."""
    names = cameras or [name for name in parent.cameras if _has_rgb(parent, name)]
    if not names:
        raise InputError("no camera of the run records RGB images (robot.sensors.cameras[].outputs), so there is "
                         "nothing to render again", parent.path)
    subsets = []
    for name in names:
        camera = parent.camera(name)  # InputError listing the cameras there are
        if not _has_rgb(parent, name):
            raise ConfigError(f"camera {name!r} records no RGB images, so there is nothing to render again",
                              field="--camera")
        numbers = [frame.index for frame in camera]
        picked = set(choose_frames(rule, numbers, parent.info.master_seed, name))
        positions = [i for i, number in enumerate(numbers) if number in picked]
        subsets.append(CameraSubset(name, camera.folder, positions, [camera[i] for i in positions]))
    return subsets


def _has_rgb(parent: Recording, name: str) -> bool:
    camera = parent.camera(name)
    return bool(len(camera)) and camera[0].path("rgb") is not None


def _rows(time: np.ndarray, subsets: list[CameraSubset], source: Path) -> dict[tuple[str, int], int]:
    """(camera, frame number) -> the state log's row at the frame's time; InputError for a frame between rows."""
    rows = {}
    for subset in subsets:
        for frame in subset.frames:
            row = int(np.clip(np.searchsorted(time, frame.time - TIME_TOLERANCE), 0, len(time) - 1))
            if abs(time[row] - frame.time) > TIME_TOLERANCE:
                raise InputError(f"no state at the time of camera {subset.name!r} frame {frame.index} "
                                 f"({frame.time:g} s): the log does not belong to this recording", source, "time")
            rows[(subset.name, frame.index)] = row
    return rows


def _resume_folder(folder: Path, input_hash: str) -> Path:
    """RESUME, emptied unless its frames were rendered for these inputs."""
    inputs = folder / RESUME_INPUTS
    if not (inputs.is_file() and inputs.read_text(encoding="utf-8") == input_hash):
        shutil.rmtree(folder, ignore_errors=True)
        atomic_write_text(inputs, input_hash)
    return folder


def _render(world: World, robot: str | None, plan: _Plan, resume: Path) -> int:
    """Render every chosen frame not in `resume` yet, in time order, one teleport per logged step; returns how
    many it rendered."""
    parent, rows = plan.parent.path, plan.rows
    jobs = sorted((rows[(s.name, f.index)], s.name, f, resume / s.relative(parent) / frame_file("rgb", f.index))
                  for s in plan.subsets for f in s.frames)
    todo = [job for job in jobs if not job[3].is_file()]
    teleport = Teleport(world, plan.states, None, str(parent / STATES_FILE))
    view = world.robot(robot)
    with make_progress(TextColumn("{task.fields[info]}")) as progress:
        task = progress.add_task(f"rendering frames ({plan.config.render.rgb})", total=len(jobs),
                                 completed=len(jobs) - len(todo), info="")
        for row, group in groupby(todo, key=lambda job: job[0]):
            teleport.to(row)
            for _, camera, frame, target in group:
                progress.update(task, info=f"{camera} frame {frame.index} (sim {frame.time:.2f} s)")
                rendering = view.render(camera)
                _check_pose(rendering.camera.pose, frame, camera, parent)
                atomic_write_bytes(target, encode_png(np.asarray(rendering.rgb, np.uint8)))
                progress.advance(task)
    return len(todo)


def _check_pose(pose: np.ndarray, frame: Frame, camera: str, parent: Path) -> None:
    if not np.allclose(pose, frame.pose, rtol=0, atol=POSE_TOLERANCE):
        raise InputError(f"the state log puts camera {camera!r} elsewhere than its frame {frame.index} was recorded "
                         f"(largest difference {np.abs(pose - frame.pose).max():.3g}): states.npz and gt/ are not of "
                         "one run", parent / STATES_FILE)


def _assemble(parent: Recording, subsets: list[CameraSubset], resume: Path, partial: Path) -> None:
    """The replay's recording in `partial`: per camera the rendered RGB and the parent's labels of the chosen
    frames; the parent's state log and humans."""
    for subset in subsets:
        relative = subset.relative(parent.path)
        source, target = subset.folder, partial / relative
        for name, kept in ((FRAMES_FILE, subset.positions), (TUM_FILE, subset.positions)):
            lines = _lines(source / name)
            atomic_write_text(target / name, "".join(lines[i] for i in kept))
        _link(source / INSTANCES_FILE, target / INSTANCES_FILE)
        for frame in subset.frames:
            for kind, file in frame.record.files.items():
                origin = resume / relative / file if kind == "rgb" else source / file
                _link(origin, target / file)
    _link(parent.path / STATES_FILE, partial / STATES_FILE)
    for path in sorted((parent.path / HUMANS_DIR).rglob("*")):
        if path.is_file():
            _link(path, partial / path.relative_to(parent.path))


def _lines(path: Path) -> list[str]:
    """The records of a line-per-frame file (frames.jsonl, poses.tum), each with its newline."""
    return [line for line in read_utf8(path).splitlines(keepends=True)
            if line.strip() and not line.startswith("#")]


def _link(source: Path, target: Path) -> None:
    """`source` at `target`: hard-linked (recordings are never modified in place), copied across file systems."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)

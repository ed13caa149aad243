"""`grade benchmark slam CONFIG`: SLAM methods x sequences x repetitions, evaluated and tabulated.

Layout of the output folder (pipeline.benchmark_config.SlamBenchmarkConfig.output_dir):

    sequences/<sequence>/                     recordings the config makes (generated, or replayed without humans)
    exports/<sequence>-<format>/              TUM RGB-D / EuRoC exports for external methods
    vocabulary.txt                            an ORB vocabulary built from the first sequence (when none is given)
    results/<method>/<sequence>/run<k>/       the runner's trajectory and files, metrics.json, trajectories.png,
                                              errors.png (a run that failed: error.txt)
    results.csv, results.md                   the table (evaluation.table)

Every step skips what is complete (a generated sequence, a replay, an export, a run with its metrics.json),
so an interrupted benchmark resumes where it stopped. Sequences are evaluated over the experiment window
(bootstrap end to the end of the run) at the camera's frame rate (the LiDAR's for LiDAR odometry).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.config import PostprocessConfig
from core.config_io import load_experiment
from core.errors import GradeError, InputError
from core.formats.slam_metrics import SLAM_METRICS_FILE, SlamMetrics, read_slam_metrics
from core.progress import console, get_logger
from core.recording import Recording
from core.rundir import atomic_write_text
from core.stage import output_folder
from evaluation.metrics import slam_evaluation
from evaluation.plots import write_evaluation
from evaluation.runner import RunnerResult
from evaluation.table import Cell, write_tables
from evaluation.trajectory import load_trajectory
from pipeline.benchmark_config import SlamBenchmarkConfig, SlamMethod, SlamSequence
from pipeline.generate import generate

log = get_logger("benchmark")
ERROR_FILE = "error.txt"
VOCABULARY_FILE = "vocabulary.txt"


@dataclass(frozen=True)
class BenchmarkResult:
    folder: Path
    cells: list[Cell]
    tables: list[Path]


def slam_benchmark(config: SlamBenchmarkConfig) -> BenchmarkResult:
    """Run the benchmark of `config` (paths already resolved) into its output folder (module docstring)."""
    out = Path(config.output_dir)
    with output_folder(out, what="benchmark folder"):
        runs: dict[str, Path] = {}
        for sequence in _ordered(config.sequences):
            runs[sequence.name] = _sequence_run(sequence, out, runs)
        vocabulary = _vocabulary(config, out, runs) if any(m.runner == "orbslam3" for m in config.methods) else None
        cells = []
        for method in config.methods:
            for sequence in config.sequences:
                cell = Cell(method.name, sequence.name)
                for repetition in range(1, config.repetitions + 1):
                    folder = out / "results" / method.name / sequence.name / f"run{repetition}"
                    metrics = _evaluated(folder, method, sequence, runs[sequence.name], out, vocabulary, config)
                    if metrics is None:
                        cell.failed += 1
                    else:
                        cell.metrics.append(metrics)
                cells.append(cell)
        tables = write_tables(out, cells, [m.name for m in config.methods], [s.name for s in config.sequences],
                              config.name)
    return BenchmarkResult(out, cells, tables)


def _ordered(sequences: list[SlamSequence]) -> list[SlamSequence]:
    """Sequences with each replay after the sequence it replays (the config forbids cycles of length one;
    a longer chain is resolved in rounds)."""
    done: list[SlamSequence] = []
    pending = list(sequences)
    while pending:
        ready = [s for s in pending if s.source is None or s.source in {d.name for d in done}]
        if not ready:
            raise InputError(f"sequences replay each other in a cycle: {[s.name for s in pending]}",
                             field="sequences")
        done += ready
        pending = [s for s in pending if s not in ready]
    return done


def _sequence_run(sequence: SlamSequence, out: Path, made: dict[str, Path]) -> Path:
    """The recording of a sequence: the given run, one generated or replayed into out/sequences/<name>
    (skipped when complete), or another's (`made`: the sequences so far) post-processed with the grade-paper
    preset (skipped when done)."""
    from postprocess.process_run import PRESETS, process_run
    from replay.overrides import HideOverride, ReplayOverrides
    from replay.run import replay_run

    target = out / "sequences" / sequence.name
    if sequence.run is not None:
        return Recording.open(sequence.run).path
    if sequence.experiment is not None:
        return generate(load_experiment(sequence.experiment, sequence.set), target).run
    if sequence.without_humans_of is not None:
        return replay_run(made[sequence.without_humans_of], target,
                          ReplayOverrides(hide=HideOverride(humans="all"))).run
    run = made[sequence.noisy_of]
    with output_folder(run, what="run folder", wait=True):  # adds the noisy files beside the recording
        process_run(run, PostprocessConfig.model_validate(PRESETS["grade-paper"]))
    return run


def _vocabulary(config: SlamBenchmarkConfig, out: Path, runs: dict[str, Path]) -> Path:
    """The ORB vocabulary: the config's, PYORBSLAM3_VOCAB's, else one built from the first sequence's frames."""
    if config.vocabulary is not None:
        return config.vocabulary
    env = os.environ.get("PYORBSLAM3_VOCAB")
    if env and Path(env).is_file():
        return Path(env)
    target = out / VOCABULARY_FILE
    if not target.is_file():
        from evaluation.vocabulary import build_vocabulary

        first = Recording.open(runs[config.sequences[0].name])
        camera = first.camera(first.cameras[0])
        console.print(f"building an ORB vocabulary from {len(camera)} frames of {first.path} into {target} "
                      "(set `vocabulary:` or PYORBSLAM3_VOCAB to use ORB-SLAM3's own)", soft_wrap=True)
        build_vocabulary((frame.rgb() for frame in camera), target)
    return target


def _evaluated(folder: Path, method: SlamMethod, sequence: SlamSequence, run: Path, out: Path,
               vocabulary: Path | None, config: SlamBenchmarkConfig) -> SlamMetrics | None:
    """One repetition: the runner's trajectory evaluated (reused when metrics.json is there), None on failure."""
    if (folder / SLAM_METRICS_FILE).is_file():
        return read_slam_metrics(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ERROR_FILE).unlink(missing_ok=True)  # a failure of an earlier attempt, retried now
    try:
        result = _runner(method, sequence, run, out, vocabulary)(folder)
    except GradeError as exc:
        log.warning("%s on %s failed: %s", method.name, sequence.name, exc)
        atomic_write_text(folder / ERROR_FILE, f"{exc}\n")
        return None
    recording = Recording.open(run)
    lidar = method.runner == "kiss-icp"
    sensor = (method.lidar or recording.lidars[0]) if lidar else (method.camera or recording.cameras[0])
    gt = load_trajectory(run, camera=sensor)
    est = load_trajectory(result.trajectory)
    if len(est.times) < 3:
        atomic_write_text(folder / ERROR_FILE, f"{len(est.times)} poses estimated: nothing to evaluate\n")
        return None
    simulation = recording.experiment_config().simulation
    window = (simulation.bootstrap, simulation.bootstrap + simulation.duration)
    metrics, absolute = slam_evaluation(gt, est, sim3=method.sim3, delta_s=config.delta_s,
                                        max_difference=config.max_difference, window=window,
                                        fps=_rate(recording, sensor, lidar))
    write_evaluation(folder, gt, metrics, absolute, f"{method.name} on {sequence.name}")
    return metrics


def _rate(recording: Recording, sensor: str, lidar: bool) -> float:
    if lidar:
        return recording.experiment_config().robot.sensors.named(sensor).rate_hz
    return recording.camera_config(sensor).rate_hz


def _runner(method: SlamMethod, sequence: SlamSequence, run: Path, out: Path,
            vocabulary: Path | None) -> Callable[[Path], RunnerResult]:
    """The method's runner, writing into the folder it is given."""
    if method.runner == "orbslam3":
        from evaluation.orbslam import run_orbslam3

        return lambda folder: run_orbslam3(run, folder, method.mode, method.camera, vocabulary, sequence.noise,
                                           method.right_camera)
    if method.runner == "kiss-icp":
        from evaluation.lidar_odometry import run_kiss_icp

        return lambda folder: run_kiss_icp(run, folder, method.lidar)
    from evaluation.external import run_external

    exported = _exported(method, sequence, run, out)
    return lambda folder: run_external(method.command, exported, folder, method.trajectory, method.timeout_s)


def _exported(method: SlamMethod, sequence: SlamSequence, run: Path, out: Path) -> Path:
    """The sequence exported in the method's format (out/exports/<sequence>-<format>/<run>), made once."""
    folder = out / "exports" / f"{sequence.name}-{method.export}"
    cameras = [method.camera] if method.camera else None
    if method.export == "tum":
        from export.tum import TumOptions, export_tum

        export_tum([run], folder, cameras, TumOptions(processed=sequence.noise))
    else:
        from export.euroc import EurocOptions, export_euroc

        export_euroc([run], folder, cameras, EurocOptions(processed=sequence.noise))
    (sequence_folder,) = [p for p in folder.iterdir() if p.is_dir()]
    return sequence_folder

"""End-to-end time of the demo (`grade demo` = configs/demo.yaml) and of the paper's camera setup on the demo
scene: per-stage split, real-time factor, the time a 60 s sequence takes, CPU seconds and peak memory.

Setups:
- demo: configs/demo.yaml as it is (a 640x480 camera to the bags and the ground truth, ROS 2 bags);
- paper: the demo scene with configs/paper-indoor.yaml's sensors and recording (a 640x480 camera to the
  bags only, a 1920x1080 camera with RGB, depth, instance, semantic and boxes to the ground truth only,
  ROS 1 and ROS 2 bags, 32FC1 depth) and its light randomization during the run (the paper's 3D-Front,
  AMASS and GSO data are not needed).
Stages: convert (procedural assets, from an empty cache), place + compose, simulate + record. Inside
simulate + record, the time of each part is measured by wrapping its entry point (time inside a nested
wrapped call counts for the inner one only): rendering camera frames (`EmbeddedBackend._render`, which every robot's
camera goes through), physics
(`EmbeddedBackend.step`), the bags (`BagWriter`'s writes), ground-truth images handed to the writer thread
and frames.jsonl (`CameraWriter.write`), the rest of the recorder (`Recorder.sample`: TF, IMU, states), and
everything else (exploration: mapping and planning). PNG encoding runs on the writer thread beside the
rest; its CPU seconds (`ground_truth._encode_and_write`) are printed apart (they overlap the other stages' wall time).
The 60 s sequence time is convert + place + the simulate-and-record time scaled to 1 s of bootstrap +
60 s (give `--set simulation.duration=60` for a real one). Wall-clock figures depend on what else runs on
the machine, so the CPU seconds of the whole process (all threads) per simulated second and the load
average (1 min) before and after each run are printed too; peak RSS is the process's high-water mark
(the runs share one process, so a later setup's figure includes the earlier one's peak).

    .venv/bin/python benchmarks/generate.py [--setup demo|paper|both] [--out runs/bench/generate]
        [--set key=value ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import threading
import time
from pathlib import Path

from core.config_io import load_experiment, read_yaml
from pipeline.generate import generate
from pipeline.prepare import convert_assets, place_and_compose
from simulation.embedded import EmbeddedBackend
from simulation.recording import ground_truth
from simulation.recording.bags import BagWriter
from simulation.recording.ground_truth import CameraWriter
from simulation.recording.recorder import Recorder

ROOT = Path(__file__).resolve().parents[1]
SEQUENCE_SECONDS = 60.0  # a GRADE experiment, after its bootstrap
PAPER_CONFIG = ROOT / "configs" / "paper-indoor.yaml"
BAG_METHODS = ("clock", "imu", "tf", "tf_static", "joint_states", "pose", "odometry", "image", "depth", "camera_info",
               "point_cloud", "marker", "close")
KIB_PER_GIB = 1024**2


class WriterCpu:
    """CPU seconds of the ground-truth image writes (encoding + file), on whichever thread they run."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._lock = threading.Lock()

    def wrap(self, write):
        def timed(*args, **kwargs):
            start = time.thread_time()
            try:
                return write(*args, **kwargs)
            finally:
                with self._lock:
                    self.seconds += time.thread_time() - start
        return timed


class Stages:
    """Exclusive wall seconds of wrapped methods: a nested wrapped call's time counts for the inner stage."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stack: list[float] = []  # per open call, the seconds its nested calls took

    def wrap(self, name: str, method):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            self._stack.append(0.0)
            try:
                return method(*args, **kwargs)
            finally:
                total = time.perf_counter() - start
                nested = self._stack.pop()
                self.seconds[name] = self.seconds.get(name, 0.0) + total - nested
                if self._stack:
                    self._stack[-1] += total
        return timed

    def reset(self) -> None:
        self.seconds.clear()


def instrument(stages: Stages, writer: WriterCpu) -> None:
    """Wraps the entry points of each stage (module docstring), once per process."""
    ground_truth._encode_and_write = writer.wrap(ground_truth._encode_and_write)
    EmbeddedBackend._render = stages.wrap("rendering (camera frames)", EmbeddedBackend._render)
    EmbeddedBackend.step = stages.wrap("physics steps", EmbeddedBackend.step)
    for name in BAG_METHODS:
        setattr(BagWriter, name, stages.wrap("bags (serialise + write)", getattr(BagWriter, name)))
    CameraWriter.write = stages.wrap("gt files (frames.jsonl, hand-off)", CameraWriter.write)
    CameraWriter.close = stages.wrap("gt files (frames.jsonl, hand-off)", CameraWriter.close)
    Recorder.sample = stages.wrap("recorder (TF, IMU, states)", Recorder.sample)


def paper_overrides() -> list[str]:
    """The paper config's sensors, recording and randomization as --set overrides of the demo."""
    data, _ = read_yaml(PAPER_CONFIG)
    sections = {"robot.sensors": data["robot"]["sensors"], "recording": data["recording"],
                "simulation.randomization": data["simulation"]["randomization"]}
    return [f"{key}={json.dumps(value)}" for key, value in sections.items()]  # JSON is YAML


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(setup: str, overrides: list[str], out: Path, stages: Stages, writer: WriterCpu) -> None:
    config = load_experiment(ROOT / "configs" / "demo.yaml", overrides)
    shutil.rmtree(out, ignore_errors=True)
    cache = out / "assets"
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    environment, humans, objects = convert_assets(config, cache)
    convert = time.perf_counter() - start
    start = time.perf_counter()
    place_and_compose(config, environment, humans, objects, out)
    place = time.perf_counter() - start

    stages.reset()
    writer.seconds = 0.0
    cpu_start, start = cpu_seconds(), time.perf_counter()
    result = generate(config, out, cache=cache)
    record, cpu = time.perf_counter() - start, cpu_seconds() - cpu_start
    info, sim_time = result.info, result.info.sim_time_end
    total = convert + place + record
    cameras = ", ".join(f"{c.name} {c.width}x{c.height} at {c.rate_hz:g} Hz ({info.frame_counts.get(f'camera/{c.name}', 0)} "
                        f"frames; {'bag' if c.to_bag else ''}{'+' if c.to_bag and c.to_gt else ''}"
                        f"{'gt' if c.to_gt else ''})" for c in config.robot.sensors.cameras)
    print(f"== {setup}: {config.name}, {sim_time:.1f} s simulated ({config.simulation.bootstrap:g} s bootstrap); "
          f"cameras: {cameras}; bags {list(config.recording.bag_formats)}; {len(config.robot.sensors.cameras)} "
          f"camera(s); load {load_before:.2f} -> {os.getloadavg()[0]:.2f}")
    print(f"{'stage':<40}{'seconds':>9}{'share':>8}")
    inner = sum(stages.seconds.values())
    rows = [("convert (procedural assets)", convert), ("place + compose", place), ("simulate + record", record)]
    rows += [(f"  {name}", seconds) for name, seconds in sorted(stages.seconds.items(), key=lambda kv: -kv[1])]
    rows += [("  exploration (mapping, planning), rest", record - inner)]
    for name, seconds in rows:
        print(f"{name:<40}{seconds:9.2f}{seconds / total:8.1%}")
    print(f"{'total':<40}{total:9.2f}")
    sequence = convert + place + record / sim_time * (config.simulation.bootstrap + SEQUENCE_SECONDS)
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / KIB_PER_GIB
    print(f"real-time factor of simulate + record: {sim_time / record:.2f}x; end to end: {sim_time / total:.2f}x; "
          f"a {SEQUENCE_SECONDS:g} s sequence (+ bootstrap) takes {sequence:.0f} s = {sequence / 60:.1f} min")
    print(f"CPU (all threads) in simulate + record: {cpu:.1f} s = {cpu / sim_time:.2f} s per simulated second "
          f"({cpu / record:.2f} cores busy); PNG/npy encoding on the writer thread {writer.seconds:.1f} s CPU; "
          f"peak RSS {peak_gib:.2f} GiB")
    print(f"mission: {info.mission}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setup", choices=("demo", "paper", "both"), default="both")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "generate")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="config overrides for every setup, e.g. simulation.duration=60")
    args = parser.parse_args()
    stages, writer = Stages(), WriterCpu()
    instrument(stages, writer)
    print(f"{os.cpu_count()} cores; load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    if args.setup in ("demo", "both"):
        run("demo", args.overrides, args.out / "demo", stages, writer)
    if args.setup in ("paper", "both"):
        run("paper camera setup (640x480 bag + 1920x1080 ground truth)", [*paper_overrides(), *args.overrides],
            args.out / "paper", stages, writer)
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()

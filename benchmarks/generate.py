"""End-to-end time of the demo (`grade demo` = configs/demo.yaml) and of the paper's camera setup on the demo
scene: per-stage split, real-time factor, the time a 60 s sequence takes, CPU seconds and peak memory.

Setups:
- demo: configs/demo.yaml as it is (a 640x480 camera to the bags and the ground truth, ROS 2 bags);
- paper: the demo scene with configs/paper-indoor.yaml's sensors and recording (a 640x480 camera to the
  bags only, a 1920x1080 camera with RGB, depth, instance, semantic and boxes to the ground truth only,
  ROS 1 and ROS 2 bags, 32FC1 depth) and its light randomization during the run (the paper's 3D-Front,
  AMASS and GSO data are not needed).
Stages: convert (procedural assets, from an empty cache), place + compose, simulate + record. Simulate + record
runs on several threads: the main thread steps physics, runs the robot's mission (exploration: mapping, planning,
control) and hands each step's data to the recorder; the render thread poses the meshes and makes a frame's boxes
while the tile workers trace and shade its pixels; the recorder's writer thread serialises the bags and writes
frames.jsonl; the image writer encodes the ground-truth PNGs. So two tables: the main thread's wall time split by
wrapping its entry points (a nested wrapped call counts for the inner one only; the waits are where the main
thread stood still: for the depth image the explorer maps (ready before the frame's colour), for the frame before last, whose render scene buffer the
next frame takes, for the writer to catch up), and each thread's CPU seconds (read from /proc/self/task on Linux).
The 60 s sequence time is convert + place + the simulate-and-record time scaled to 1 s of bootstrap +
60 s (give `--set simulation.duration=60` for a real one). Wall-clock figures depend on what else runs on
the machine, so the CPU seconds of the whole process (all threads) per simulated second and the load
average (1 min) before and after each run are printed too; peak RSS is the process's high-water mark
(the runs share one process, so a later setup's figure includes the earlier one's peak). `--cpu-by-function` adds a
third table: each thread's CPU time (not wall time) in the functions it spends it in, in milliseconds per camera
frame; the wrappers themselves cost a little CPU, so the run's other figures are then slightly worse.

    .venv/bin/python benchmarks/generate.py [--setup demo|paper|both|robots|sensors] [--out runs/bench/generate]
        [--cache DIR] [--set key=value ...] [--cpu-by-function] [--smoke]

`--cache DIR` converts into (and reuses) that asset cache instead of a fresh one per setup. `--smoke`: every setup
at its smallest (0.25 s simulated, 1 human, 1 flying object, 96x72 and 96x54 cameras): the figures mean nothing.

`--setup robots` compares what a description robot costs against the built-in robot of the same drive: the demo
(10 s of the tour planner, the same 640x480 camera, no IMUs) recorded with the UAV and with an MJCF
quadrotor (floating), and with the lightweight TIAGo and the Clearpath Husky URDF of ../shared/realdata
(differential); it prints each run's CPU seconds (all threads) per simulated second and each pair's ratio.

`--setup sensors` prices the sensor kinds beyond the demo's own: the demo (10 s of the tour planner) as it is, and
with one more sensor at the demo camera's place: a 640x480 camera (default outputs) that is a 90 degree pinhole, the
same camera as a 180 degree equidistant fisheye (core/config/lens.py), as a stereo pair (`stereo: {baseline:
0.11}`: two such cameras), and a 346x260 event camera (ESIM's defaults, simulation/sensors/event_camera.py); it
prints each run's CPU seconds (all threads) per simulated second and what each added sensor costs.
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
from typing import ClassVar, Self

from core.config_io import load_experiment
from core.yaml_io import read_yaml
from pipeline.generate import generate
from pipeline.prepare import convert_assets, place_and_compose
from simulation.embedded import EmbeddedWorld
from simulation.embedded.robot import EmbeddedRobot
from simulation.mission import RobotMission
from simulation.recording.recorder import Recorder
from simulation.recording.writes import OrderedWrites

ROOT = Path(__file__).resolve().parents[1]
SEQUENCE_SECONDS = 60.0  # a GRADE experiment, after its bootstrap
PAPER_CONFIG = ROOT / "configs" / "paper-indoor.yaml"
KIB_PER_GIB = 1024**2
# --smoke: the demo at its smallest (the tests' tiny run's assets, so a shared --cache has them); the paper's
# ground-truth camera shrunk too
SMOKE_RUN = ["simulation.duration=0.25", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
             "flying_objects.count={min: 1, max: 1}", "robot.sensors.cameras.0.width=96",
             "robot.sensors.cameras.0.height=72"]
SMOKE_PAPER = ["robot.sensors.cameras.1.width=96", "robot.sensors.cameras.1.height=54"]


class ThreadCpu:
    """CPU seconds of each live thread, grouped by role (thread name prefix), read every PERIOD s from
    /proc/self/task/<tid>/stat (Linux) while a run goes on; a thread's last reading counts."""

    PERIOD = 0.2
    ROLES: ClassVar[dict[str, str]] = {"tiles": "tile workers (rays, shading)", "render": "render thread (posing meshes, boxes)",
                                       "MainThread": "main thread (physics, mission, recorder)",
                                       "recorder-writes": "recorder writer (bags, frames.jsonl)",
                                       "gt-writer": "image writer (PNG)"}

    def __init__(self) -> None:
        self._last: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._clock = os.sysconf("SC_CLK_TCK")
        self._monitor = threading.Thread(target=self._watch, name="benchmark-monitor", daemon=True)

    def _read(self) -> None:
        for thread in threading.enumerate():
            try:
                fields = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            role = next((r for r in self.ROLES if thread.name.startswith(r)), "other")
            if thread is not self._monitor:
                self._last[thread.native_id] = (role, (int(fields[11]) + int(fields[12])) / self._clock)

    def _watch(self) -> None:
        while not self._stop.wait(self.PERIOD):
            self._read()

    def __enter__(self) -> Self:
        self._read()
        self._start = dict(self._last)
        self._monitor.start()
        return self

    def __exit__(self, *exc) -> None:
        self._read()
        self._stop.set()
        self._monitor.join()

    def seconds(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for tid, (role, cpu) in self._last.items():
            name = self.ROLES.get(role, "other threads")
            totals[name] = totals.get(name, 0.0) + cpu - self._start.get(tid, (role, 0.0))[1]
        return totals


class Stages:
    """Exclusive seconds of wrapped functions, by `clock`: a nested wrapped call's time counts for the inner one.
    Main thread only (its wall-time split: time.perf_counter), or every thread, each with its own nesting
    (`--cpu-by-function`: time.thread_time, so waits for the GIL, a core or a future do not count)."""

    def __init__(self, clock=time.perf_counter, main_thread_only: bool = True) -> None:
        self.seconds: dict[str, float] = {}
        self._clock, self._main_thread_only = clock, main_thread_only
        self._lock = threading.Lock()
        self._local = threading.local()  # .stack: per open call, the seconds its nested calls took

    def wrap(self, name: str, function, key=None):
        """`function` counted under `name` (followed by `key(*args)` when given, e.g. an image's kind)."""
        def timed(*args, **kwargs):
            if self._main_thread_only and threading.current_thread() is not threading.main_thread():
                return function(*args, **kwargs)
            stack = self._local.__dict__.setdefault("stack", [])
            start = self._clock()
            stack.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                total = self._clock() - start
                nested = stack.pop()
                if stack:
                    stack[-1] += total
                label = name if key is None else f"{name} {key(*args)}"
                with self._lock:
                    self.seconds[label] = self.seconds.get(label, 0.0) + total - nested
        return timed

    def reset(self) -> None:
        self.seconds.clear()


def instrument(stages: Stages) -> None:
    """Wraps the main thread's entry points (module docstring), once per process."""
    EmbeddedWorld.step = stages.wrap("physics steps", EmbeddedWorld.step)
    RobotMission.tick = stages.wrap("mission (exploration, control)", RobotMission.tick)
    Recorder.sample = stages.wrap("recorder (TF, IMU, states, hand-offs)", Recorder.sample)
    EmbeddedRobot.depth = stages.wrap("waiting for the depth the explorer maps", EmbeddedRobot.depth)
    EmbeddedWorld._next_buffer = stages.wrap("waiting for the frame before last to finish", EmbeddedWorld._next_buffer)
    EmbeddedWorld.finish_rendering = stages.wrap("waiting for the frame before last to finish",
                                                 EmbeddedWorld.finish_rendering)
    OrderedWrites.flush = stages.wrap("waiting for the writer to catch up", OrderedWrites.flush)


def instrument_functions(functions: Stages) -> None:
    """`--cpu-by-function`: wraps the functions each thread spends its CPU in (module docstring's threads)."""
    from core.formats.bags import writer as bags
    from simulation.recording import ground_truth, recorder, sensor_streams
    from simulation.render import renderer, scene
    for owner, attribute, name, key in [
        (renderer, "_truth_job", "tile workers: ground truth (camera rays, normals, ids)", None),
        (renderer, "_colour_job", "tile workers: colour (shading, shadow rays)", None),
        (scene.RenderScene, "set_frame", "render thread: posing the meshes, BVH update", None),
        (renderer, "layer_view", "render thread: mesh projections", None),
        (renderer, "alone_coverage", "render thread: occlusion ratios (a lens's ray tracing: in boxes)", None),
        (renderer, "frame_boxes", "render thread: boxes", None),
        (renderer, "_encode_metered", "render thread: auto-exposure encoding", None),
        (sensor_streams.CameraRecorder, "_write", "recorder writer: camera frame (bag images, frames.jsonl)", None),
        (recorder, "save_humans_frame", "recorder writer: humans/ frame", None),
        *[(bags.BagWriter, method, f"recorder writer: bag {method}", None)
          for method in ("tf", "imu", "odometry", "pose", "joint_states", "clock")],
        (ground_truth, "_encode_and_write", "image writer:", lambda path, kind, image: kind),
        (EmbeddedWorld, "step", "main thread: physics steps", None),
        (RobotMission, "tick", "main thread: mission", None),
        (Recorder, "sample", "main thread: recorder sampling", None),
    ]:
        setattr(owner, attribute, functions.wrap(name, getattr(owner, attribute), key))


def paper_overrides() -> list[str]:
    """The paper config's sensors, recording and randomization as --set overrides of the demo."""
    data, _ = read_yaml(PAPER_CONFIG)
    sections = {"robot.sensors": data["robot"]["sensors"], "recording": data["recording"],
                "simulation.randomization": data["simulation"]["randomization"]}
    return [f"{key}={json.dumps(value)}" for key, value in sections.items()]  # JSON is YAML


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(setup: str, overrides: list[str], out: Path, stages: Stages, functions: Stages | None,
        cache: Path | None = None) -> None:
    config = load_experiment(ROOT / "configs" / "demo.yaml", overrides)
    shutil.rmtree(out, ignore_errors=True)
    cache = cache or out / "assets"
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    environment, humans, objects = convert_assets(config, cache)
    convert = time.perf_counter() - start
    start = time.perf_counter()
    place_and_compose(config, environment, humans, objects, out)
    place = time.perf_counter() - start

    stages.reset()
    if functions is not None:
        functions.reset()
    with ThreadCpu() as threads:
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
    print(f"{'stage (wall)':<48}{'seconds':>9}{'share':>8}")
    inner = sum(stages.seconds.values())
    rows = [("convert (procedural assets)", convert), ("place + compose", place), ("simulate + record", record)]
    rows += [(f"  {name}", seconds) for name, seconds in sorted(stages.seconds.items(), key=lambda kv: -kv[1])]
    rows += [("  rest (loading the scene, closing the files)", record - inner)]
    for name, seconds in rows:
        print(f"{name:<48}{seconds:9.2f}{seconds / total:8.1%}")
    print(f"{'total':<48}{total:9.2f}")
    print(f"{'CPU by thread (simulate + record)':<48}{'seconds':>9}{'share':>8}{'per sim s':>11}")
    for name, seconds in sorted(threads.seconds().items(), key=lambda kv: -kv[1]):
        print(f"  {name:<46}{seconds:9.2f}{seconds / cpu:8.1%}{seconds / sim_time:11.2f}")
    sequence = convert + place + record / sim_time * (config.simulation.bootstrap + SEQUENCE_SECONDS)
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / KIB_PER_GIB
    print(f"real-time factor of simulate + record: {sim_time / record:.2f}x; end to end: {sim_time / total:.2f}x; "
          f"a {SEQUENCE_SECONDS:g} s sequence (+ bootstrap) takes {sequence:.0f} s = {sequence / 60:.1f} min")
    print(f"CPU (all threads) in simulate + record: {cpu:.1f} s = {cpu / sim_time:.2f} s per simulated second "
          f"({cpu / record:.2f} cores busy); peak RSS {peak_gib:.2f} GiB")
    print(f"mission: {info.mission}")
    if functions is not None:
        frames = max(1, sum(info.frame_counts.get(f"camera/{c.name}", 0) for c in config.robot.sensors.cameras))
        print(f"{'CPU by function (exclusive)':<64}{'seconds':>9}{'ms/frame':>10}")
        for name, seconds in sorted(functions.seconds.items()):
            print(f"  {name:<62}{seconds:9.2f}{seconds / frames * 1e3:10.2f}")


HUSKY = ROOT.parent / "shared" / "realdata" / "robots" / "husky" / "husky.urdf"
QUADROTOR = """<mujoco model="quadrotor"><worldbody><body name="base_link"><freejoint/>
  <inertial pos="0 0 0" mass="2.0" diaginertia="0.03 0.03 0.05"/>
  <geom name="frame" type="box" size="0.22 0.22 0.05" mass="0" rgba="0.2 0.3 0.8 1"/>
  <body name="camera_mount" pos="0.1 0 -0.03"/></body></worldbody></mujoco>"""
# (pair, robot, overrides): each description robot after the built-in robot of its drive.
ROBOT_SETUPS = [
    ("floating", "uav", []),
    ("floating", "quadrotor", ["robot.kind=custom", "robot.description=QUADROTOR", "robot.drive=floating",
                               "robot.sensors.cameras.0.mount.link=camera_mount"]),
    ("ground", "tiago lightweight", ["robot.kind=tiago_omni", "robot.sensors.cameras.0.mount.link=base_link",
                                     "robot.sensors.cameras.0.mount.translation=[0.3,0,0.9]"]),
    ("ground", "husky", ["robot.kind=custom", f"robot.description={HUSKY}", "robot.drive=differential",
                         "robot.sensors.cameras.0.mount.link=base_link",
                         "robot.sensors.cameras.0.mount.translation=[0.3,0,0.9]"]),
]
ROBOT_RUN = ["simulation.duration=10", "humans.count={min: 3, max: 3}", "robot.sensors.imus=[]"]
SMOKE_ROBOT_RUN = [*SMOKE_RUN, "robot.sensors.imus=[]"]


def robots(out: Path, cache: Path | None = None, smoke: bool = False) -> None:
    """`--setup robots` (module docstring)."""
    quadrotor = out / "quadrotor.xml"
    out.mkdir(parents=True, exist_ok=True)
    quadrotor.write_text(QUADROTOR)
    cache = cache or out / "assets"
    cpu: dict[str, float] = {}
    for pair, name, overrides in ROBOT_SETUPS:
        config = load_experiment(ROOT / "configs" / "demo.yaml",
                                 [*(SMOKE_ROBOT_RUN if smoke else ROBOT_RUN),
                                  *(o.replace("QUADROTOR", str(quadrotor)) for o in overrides)])
        folder = out / name.replace(" ", "-")
        shutil.rmtree(folder, ignore_errors=True)
        generate(config, folder / "warm", cache=cache)  # converts and places: not what is compared
        cpu_start = cpu_seconds()
        result = generate(config, folder / "run", cache=cache)
        cpu[name] = (cpu_seconds() - cpu_start) / result.info.sim_time_end
        print(f"{pair:<9} {name:<18} {cpu[name]:6.2f} CPU s per simulated second", flush=True)
    print(f"quadrotor / uav: {cpu['quadrotor'] / cpu['uav']:.3f}; husky / tiago lightweight: "
          f"{cpu['husky'] / cpu['tiago lightweight']:.3f}")


MOUNT = "mount: {link: camera_link, translation: [0.1, 0.0, 0.0]}"
SECOND_CAMERA = "{type: camera, name: second, " + MOUNT + ", rate_hz: 30, SIZE"
# (name, the sensor added to the demo's): none, then one more at the demo camera's place.
SENSOR_SETUPS = [
    ("demo", None),
    ("+ pinhole 90", SECOND_CAMERA + "fov_deg: 90}"),
    ("+ fisheye 180", SECOND_CAMERA + "model: equidistant, fov_deg: 180}"),
    ("+ stereo pair", SECOND_CAMERA + "fov_deg: 90, stereo: {baseline: 0.11}}"),
    ("+ event camera", "{type: event, name: dvs, " + MOUNT + ", EVENT_SIZE}"),
]
SENSOR_RUN = ["simulation.duration=10"]


def sensors(out: Path, cache: Path | None = None, smoke: bool = False) -> None:
    """`--setup sensors` (module docstring)."""
    cache = cache or out / "assets"
    demo = load_experiment(ROOT / "configs" / "demo.yaml", SMOKE_RUN if smoke else SENSOR_RUN)
    own = [sensor.model_dump(mode="json") for sensor in demo.robot.sensors.root]
    cpu: dict[str, float] = {}
    for name, added in SENSOR_SETUPS:
        extra = [] if added is None else [
            added.replace("EVENT_SIZE", "width: 64, height: 48" if smoke else "width: 346, height: 260")
                 .replace("SIZE", "width: 96, height: 72, " if smoke else "width: 640, height: 480, ")]
        listed = ", ".join([*(json.dumps(sensor) for sensor in own), *extra])
        config = load_experiment(ROOT / "configs" / "demo.yaml",
                                 [*(SMOKE_RUN if smoke else SENSOR_RUN), f"robot.sensors=[{listed}]"])
        folder = out / name.replace(" ", "-").replace("+", "plus")
        shutil.rmtree(folder, ignore_errors=True)
        if not cpu:
            generate(config, folder / "warm", cache=cache)  # converts and places, shared by all: not compared
        cpu_start = cpu_seconds()
        result = generate(config, folder / "run", cache=cache)
        cpu[name] = (cpu_seconds() - cpu_start) / result.info.sim_time_end
        print(f"{name:<16} {cpu[name]:6.2f} CPU s per simulated second", flush=True)
    added = {name: cpu[name] - cpu["demo"] for name, _ in SENSOR_SETUPS[1:]}
    print("added CPU s per simulated second: " + ", ".join(f"{name[2:]} {value:.2f}" for name, value in added.items())
          + f" (fisheye / pinhole {added['+ fisheye 180'] / added['+ pinhole 90']:.2f}, stereo pair / pinhole "
          f"{added['+ stereo pair'] / added['+ pinhole 90']:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setup", choices=("demo", "paper", "both", "robots", "sensors"), default="both")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "generate")
    parser.add_argument("--cache", type=Path, default=None,
                        help="asset cache to convert into and reuse (default: a fresh one under each setup's folder)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="config overrides for every setup, e.g. simulation.duration=60")
    parser.add_argument("--cpu-by-function", action="store_true",
                        help="also print each thread's CPU per function (milliseconds per camera frame)")
    parser.add_argument("--smoke", action="store_true", help="every setup at its smallest (meaningless figures)")
    args = parser.parse_args()
    smoke, smoke_paper = (SMOKE_RUN, SMOKE_PAPER) if args.smoke else ([], [])
    stages = Stages()
    instrument(stages)
    functions = None
    if args.cpu_by_function:
        functions = Stages(time.thread_time, main_thread_only=False)
        instrument_functions(functions)
    print(f"{os.cpu_count()} cores; load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))
    if args.setup == "robots":
        robots(args.out / "robots", args.cache, args.smoke)
        return
    if args.setup == "sensors":
        sensors(args.out / "sensors", args.cache, args.smoke)
        return
    if args.setup in ("demo", "both"):
        run("demo", [*smoke, *args.overrides], args.out / "demo", stages, functions, args.cache)
    if args.setup in ("paper", "both"):
        run("paper camera setup (640x480 bag + 1920x1080 ground truth)",
            [*paper_overrides(), *smoke, *smoke_paper, *args.overrides], args.out / "paper", stages, functions,
            args.cache)
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()

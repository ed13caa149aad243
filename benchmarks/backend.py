"""Frames per second and physics real-time factor of the embedded backend on the demo scene.

The demo config with 10 humans is prepared (converted, placed, composed; cached under --out) once for
the UAV and once for the TIAGo++ Omni physical model. Then:
- rendering: the robot's camera at its start pose renders the full ground-truth set (RGB lit by the one
  light nearest the camera, with hard shadows; depth; instance; semantic; tight/loose 2D boxes with
  occlusion ratios and 3D boxes) at 640x480 and 1920x1080, the robot moving and the humans deforming
  between frames (one 30 Hz frame of physics, not timed);
- physics: simulated seconds per wall-clock second of `backend.step` at 240 Hz while the robot drives,
  humans' capsules and flying objects following their schedules.
Frame times vary a lot when other processes share the cores, so the median beside the mean, the CPU
seconds per frame over all threads (the renderer's tile workers run in parallel) and the load average
(1 min) before and after each measurement are printed too.

    .venv/bin/python benchmarks/backend.py [--frames 10] [--seconds 5] [--out runs/bench/backend]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from core.config_io import load_experiment
from pipeline.prepare import prepare
from simulation.embedded import EmbeddedBackend

ROOT = Path(__file__).resolve().parents[1]
HUMANS = 10
RESOLUTIONS = ((640, 480), (1920, 1080))
PHYSICS_HZ = 240
FRAME_STEPS = 8  # physics steps between 30 Hz frames
ROBOTS = {
    "uav": {
        "overrides": ["robot.kind=uav"],
        "camera_link": "camera_link",
        "command": np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.2]),  # forward 0.3 m/s, yawing 0.2 rad/s
    },
    "tiago_omni (physical)": {
        "overrides": ["robot.kind=tiago_omni", "robot.tiago.model=physical",
                      "robot.sensors.imus.0.mount.link=base_link", "robot.sensors.imus.1.mount.link=head_2_link"],
        "camera_link": "head_2_link",
        "command": np.array([0.3, 0.0, 0.2]),  # vx 0.3 m/s, yaw rate 0.2 rad/s
    },
}


def config_for(robot: str, width: int, height: int):
    overrides = [f"humans.count.min={HUMANS}", f"humans.count.max={HUMANS}", f"simulation.physics_hz={PHYSICS_HZ}",
                 f"robot.sensors.cameras.0.width={width}", f"robot.sensors.cameras.0.height={height}",
                 "robot.sensors.cameras.0.outputs=[rgb,depth,instance,semantic,boxes2d,boxes3d]",
                 *ROBOTS[robot]["overrides"],
                 f"robot.sensors.cameras.0.mount.link={ROBOTS[robot]['camera_link']}"]
    return load_experiment(ROOT / "configs" / "demo.yaml", overrides)


def keep_nearest_light(backend: EmbeddedBackend) -> None:
    eye = backend.camera_pose("camera")[:3, 3]
    lights = backend.scene.render.lights
    backend.scene.render.lights = [min(lights, key=lambda light: np.linalg.norm(np.asarray(light.position) - eye))]


def measure_render(backend: EmbeddedBackend, robot: str, frames: int) -> tuple[np.ndarray, float, object]:
    """Wall seconds of each rendered frame after one warm-up frame, the mean CPU seconds (all threads) per
    frame, and the last frame."""
    keep_nearest_light(backend)
    backend.set_robot_command(ROBOTS[robot]["command"])
    backend.render("camera")
    seconds, cpu = [], 0.0
    for _ in range(frames):
        backend.step(FRAME_STEPS)
        started, cpu_started = time.perf_counter(), time.process_time()
        frame = backend.render("camera")
        seconds.append(time.perf_counter() - started)
        cpu += time.process_time() - cpu_started
    return np.array(seconds), cpu / frames, frame


def measure_physics(backend: EmbeddedBackend, robot: str, seconds: float) -> float:
    backend.set_robot_command(ROBOTS[robot]["command"])
    steps = round(seconds * PHYSICS_HZ)
    started = time.perf_counter()
    backend.step(steps)
    return steps * backend.timestep / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=10, help="frames at 640x480 (a quarter of them at 1080p)")
    parser.add_argument("--seconds", type=float, default=5.0, help="simulated seconds per physics measurement")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "backend")
    args = parser.parse_args()
    for robot in ROBOTS:
        prepared = prepare(config_for(robot, *RESOLUTIONS[0]), args.out / robot.split()[0],
                           cache=args.out / "assets")
        print(f"== {robot}: {prepared.scene}")
        for width, height in RESOLUTIONS:
            started = time.perf_counter()
            backend = EmbeddedBackend(config_for(robot, width, height), prepared.scene)
            loaded = time.perf_counter() - started
            table = backend.scene.render
            frames = args.frames if width == RESOLUTIONS[0][0] else max(1, args.frames // 4)
            load_before = os.getloadavg()[0]
            seconds, cpu, frame = measure_render(backend, robot, frames)
            mean, median = seconds.mean(), np.median(seconds)
            persons = sum(backend.instances()[int(i)].kind == "human" for i in frame.instance_ids)
            print(f"{width}x{height}: {1 / mean:6.2f} fps ({mean * 1000:.0f} ms/frame, median {median * 1000:.0f} ms "
                  f"= {1 / median:.2f} fps, {cpu * 1000:.0f} ms CPU) over {frames} frames; load "
                  f"{load_before:.2f} -> {os.getloadavg()[0]:.2f}; {len(backend.scene.humans)} humans, "
                  f"{len(backend.scene.objects)} flying objects, {len(backend.instances())} instances, "
                  f"{len(table.lights)} shadowed light; {len(frame.instance_ids)} boxes ({persons} persons) in the "
                  f"last frame; scene loaded in {loaded:.2f} s")
        backend = EmbeddedBackend(config_for(robot, *RESOLUTIONS[0]), prepared.scene)
        print(f"physics at {PHYSICS_HZ} Hz: real-time factor {measure_physics(backend, robot, args.seconds):.1f}x "
              f"({args.seconds:g} s simulated, {backend.physics.model.ngeom} geoms)")
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()

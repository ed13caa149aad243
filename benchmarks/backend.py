"""Frames per second and physics real-time factor of the embedded backend on the demo scene.

The demo config with 10 humans is prepared (converted, placed, composed; cached under --out) once for
the UAV and once for the TIAGo++ Omni physical model. Then:
- rendering: the robot's camera at its start pose renders the full ground-truth set (RGB lit by the one
  light nearest the camera, with hard shadows; depth; instance; semantic; tight/loose 2D boxes with
  occlusion ratios and 3D boxes) at 640x480 and 1920x1080, the robot moving and the humans deforming
  between frames (one 30 Hz frame of physics, not timed);
- physics: simulated seconds per wall-clock second of `backend.step` at 240 Hz while the robot drives,
  humans' capsules and flying objects following their schedules.

    .venv/bin/python benchmarks/backend.py [--frames 10] [--seconds 5] [--out runs/bench/backend]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from pipeline.config_io import load_experiment
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


def measure_render(backend: EmbeddedBackend, robot: str, frames: int) -> tuple[float, object]:
    """Mean wall seconds per rendered frame after one warm-up frame, and the last frame."""
    keep_nearest_light(backend)
    backend.set_robot_command(ROBOTS[robot]["command"])
    backend.render("camera")
    spent = 0.0
    for _ in range(frames):
        backend.step(FRAME_STEPS)
        started = time.perf_counter()
        frame = backend.render("camera")
        spent += time.perf_counter() - started
    return spent / frames, frame


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
            seconds, frame = measure_render(backend, robot, frames)
            persons = sum(backend.instances()[int(i)].kind == "human" for i in frame.instance_ids)
            print(f"{width}x{height}: {1 / seconds:6.2f} fps ({seconds * 1000:.0f} ms/frame) over {frames} frames; "
                  f"{len(backend.scene.humans)} humans, {len(backend.scene.objects)} flying objects, "
                  f"{len(backend.instances())} instances, {len(table.lights)} shadowed light; "
                  f"{len(frame.instance_ids)} boxes ({persons} persons) in the last frame; scene loaded in "
                  f"{loaded:.2f} s")
        backend = EmbeddedBackend(config_for(robot, *RESOLUTIONS[0]), prepared.scene)
        print(f"physics at {PHYSICS_HZ} Hz: real-time factor {measure_physics(backend, robot, args.seconds):.1f}x "
              f"({args.seconds:g} s simulated, {backend.physics.model.ngeom} geoms)")
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()

"""Seconds per 640x480 frame of Cycles RGB (render.rgb: cycles) against the ray-cast renderer, same frame.

The demo scene (configs/demo.yaml: procedural flat, textured walls and floors, humans, flying objects, its
lights) is prepared once (cached under --out) and loaded into the embedded world; the robot's camera at
its start pose is rendered
- by the ray caster: the full frame a run records (RGB with shadows, depth, ids, boxes with occlusion),
  the median of --frames renders after a warm-up one;
- by Cycles at each of --samples samples per pixel with OpenImageDenoise (render.cycles' defaults otherwise),
  one frame each after a warm-up frame at 1 sample (Cycles loads its kernels on the first render), on the
  render threads (GRADE_THREADS, default 2). A `grade generate` frame with Cycles costs its Cycles time plus the ray caster's ground truth.
Both are exposed the same way (the config's render.exposure). A side-by-side PNG (ray caster left, Cycles at
the most samples right) and each Cycles frame go to --out. Times vary when other processes share the cores:
the load average (1 min) is printed before and after each measurement. benchmarks/realism.py measures what the
frames are worth (FLIP against a converged reference).

    .venv/bin/python benchmarks/cycles_vs_raycast.py [--samples 16 64 256] [--frames 5] [--out runs/bench/cycles]
                                                     [--cache DIR] [--smoke]

--smoke: a 96x72 frame with 1 human and 1 flying object, one ray-cast frame, Cycles at 1 sample (the figures
mean nothing).

(Not benchmarks/cycles.py: a script's folder comes first on sys.path, and Blender's Cycles add-on is the
module `cycles`.)
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from PIL import Image

from core.config_io import load_experiment
from pipeline.prepare import prepare
from simulation.cycles import CyclesRenderer, CyclesSettings, bpy_missing
from simulation.embedded import EmbeddedWorld
from simulation.render import render_frame
from simulation.render.raycast import RAY_THREADS

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 640, 480
CAMERA = "camera"
SMOKE_WIDTH, SMOKE_HEIGHT, SMOKE_SAMPLES = 96, 72, [1]
SMOKE_RUN = ["humans.count={min: 1, max: 1}", "flying_objects.count={min: 1, max: 1}"]


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--frames", type=int, default=5, help="ray-cast frames timed")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "cycles")
    parser.add_argument("--cache", type=Path, default=None, help="asset cache (default: --out/assets)")
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    missing = bpy_missing()
    if missing:
        raise SystemExit(missing)
    width, height, overrides = WIDTH, HEIGHT, []
    if args.smoke:
        width, height, overrides, args.samples, args.frames = SMOKE_WIDTH, SMOKE_HEIGHT, SMOKE_RUN, SMOKE_SAMPLES, 1
    config = load_experiment(ROOT / "configs" / "demo.yaml", [f"robot.sensors.cameras.0.width={width}",
                                                              f"robot.sensors.cameras.0.height={height}", *overrides])
    prepared = prepare(config, args.out / "scene", cache=args.cache or args.out / "assets")
    world = EmbeddedWorld(config, prepared.scene)
    sensor = world.robot().camera(CAMERA)
    pose, states = world.robot().camera_pose(CAMERA), world.scene.states(world.time)
    scene = world.render_scene
    print(f"scene: {prepared.scene}: {len(scene.table.faces)} triangles, {len(world.instances())} instances, "
          f"{len(scene.lights)} lights; {RAY_THREADS} render threads")

    render_frame(scene, sensor.camera, pose, states, sensor.options)
    before, seconds = load(), []
    for _ in range(args.frames):
        started = time.perf_counter()
        frame = render_frame(scene, sensor.camera, pose, states, sensor.options)
        seconds.append(time.perf_counter() - started)
    truth_only = replace(sensor.options, rgb=False)
    started = time.perf_counter()
    render_frame(scene, sensor.camera, pose, states, truth_only)
    truth_seconds = time.perf_counter() - started
    print(f"ray caster: {np.median(seconds):.3f} s/frame (median of {args.frames}; RGB + ground truth), ground "
          f"truth alone {truth_seconds:.3f} s; load {before} -> {load()}")

    started = time.perf_counter()
    renderer = CyclesRenderer(scene, CyclesSettings(samples=1, denoise=False))
    print(f"cycles: scene built in {time.perf_counter() - started:.2f} s")
    renderer.render(sensor.camera, pose, states, sensor.options.exposure)
    images = {}
    for samples in args.samples:
        renderer.configure(replace(renderer.settings, samples=samples, denoise=True))
        before, started = load(), time.perf_counter()
        images[samples] = renderer.render(sensor.camera, pose, states, sensor.options.exposure)
        print(f"cycles {samples:4d} samples + denoising: {time.perf_counter() - started:7.2f} s/frame; "
              f"load {before} -> {load()}")
    args.out.mkdir(parents=True, exist_ok=True)
    for samples, image in images.items():
        Image.fromarray(image).save(args.out / f"cycles_{samples}.png")
    picture = args.out / "raycast_vs_cycles.png"
    Image.fromarray(np.concatenate([frame.rgb, images[max(images)]], axis=1)).save(picture)
    print(f"side by side (ray caster | cycles {max(images)} samples): {picture}; each Cycles frame: "
          f"{args.out}/cycles_<samples>.png")


if __name__ == "__main__":
    main()

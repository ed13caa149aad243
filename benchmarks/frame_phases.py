"""Where a frame's CPU goes: the ray caster's phases timed one after another on one thread, for one camera of the
demo scene (configs/demo.yaml; `--setup paper` gives it the paper config's cameras, see generate.py).

Each frame is rendered in the steps `render_frame` runs, tile by tile: posing the dynamic meshes (set_frame, the BVH
update, vertex normals), the mesh projections behind the boxes and their occlusion ratios, camera rays, normals,
ground truth and id stats, shading without shadow rays, shading with them (what a frame uses), the exposure's
metering and encoding, and the boxes. The difference between the two shading rows is the shadow rays' cost. The
robot flies a fixed curve, so every run sees the same frames. The scene is prepared (converted and placed) into
--out first, which is skipped when it is up to date.

    .venv/bin/python benchmarks/frame_phases.py [--setup demo|paper] [--camera NAME] [--frames N]
        [--out runs/bench/frame_phases] [--cache DIR] [--smoke]

--smoke: one frame of a 96x72 camera (the paper's ground-truth camera 96x54) with 1 human and 1 flying object
(the figures mean nothing).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from generate import SMOKE_PAPER, SMOKE_RUN, paper_overrides

from core.config_io import load_experiment
from pipeline.prepare import convert_assets, place_and_compose
from simulation.embedded import EmbeddedWorld
from simulation.embedded.sensors import BODY_TO_OPTICAL
from simulation.render import kernels
from simulation.render.annotations import AloneCoverage, PixelStats, frame_boxes, layer_view
from simulation.render.exposure import LOG_FLOOR
from simulation.render.rgb import LightArrays, linear_colour
from simulation.render.shading import ENCODE_LUT
from simulation.render.tiles import GroundTruth, Tile, tile_ranges

ROOT = Path(__file__).resolve().parents[1]
PHYSICS_STEPS_PER_FRAME = 8  # 240 Hz physics, a frame at 30 Hz
COMMAND = np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.5])  # forward at 0.3 m/s while yawing at 0.5 rad/s


class Phases:
    """Seconds per named phase, summed over the calls timed."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    def time(self, name: str, call: Callable, *args):
        start = time.perf_counter()
        result = call(*args)
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start
        return result


def scene_file(config, out: Path, cache: Path | None = None) -> Path:
    """The composed scene of `config` in `out` (converted into `cache`, default out/assets, and placed there first;
    both skip when up to date)."""
    environment, humans, objects = convert_assets(config, cache or out / "assets")
    return place_and_compose(config, environment, humans, objects, out)[1]


def frame(world: EmbeddedWorld, name: str, phases: Phases) -> None:
    """One frame of camera `name`, rendered phase by phase on this thread."""
    robot = world.robot()
    sensor = robot.camera(name)
    camera, options, scene = sensor.camera, sensor.options, world.render_scene
    exposure = options.exposure
    pose = robot.handle.sensor_pose(name) @ BODY_TO_OPTICAL
    states = world._states(robot, world.time)
    dynamic = phases.time("posing meshes (BVH update)", scene.set_frame, states, False, 0)
    embree = scene.embree_of(0)
    geometry = phases.time("vertex normals and frame geometry", scene.frame_geometry, dynamic, False)
    views = phases.time("mesh projections", lambda: (layer_view(camera, pose, scene.static),
                                                     layer_view(camera, pose, dynamic)))
    alone = phases.time("occlusion ratios (meshes alone)", AloneCoverage, camera, *views)
    truth, lights = GroundTruth.empty(camera.height * camera.width, False), LightArrays.of(scene.lights)
    stats, log_sum, colours = [], 0.0, []
    for pixels in tile_ranges(camera):
        tile = phases.time("camera rays", Tile, scene, embree, camera, pose, pixels, 1)
        normals = phases.time("normals", tile.normals, scene, geometry)
        phases.time("ground truth", truth.fill, scene, camera, tile, normals, geometry, None)
        rows = truth.instance[tile.pixels].reshape(-1, camera.width)
        stats.append(phases.time("id stats", PixelStats.of_rows, rows, pixels[0] // camera.width))
        phases.time("shading without shadow rays", linear_colour, scene, embree, lights, tile.rays, tile.surface,
                    normals, False, 1)
        linear = phases.time("shading with shadow rays", linear_colour, scene, embree, lights, tile.rays,
                             tile.surface, normals, options.shadows, 1)
        if exposure.metered:
            log_sum += phases.time("exposure: metering and encoding", kernels.log_luminance_sum, linear, LOG_FLOOR)
        colours.append(linear)
    scale = exposure.auto_scale(log_sum, camera.width * camera.height) if exposure.metered else exposure.fixed_scale()
    for linear in colours:
        phases.time("exposure: metering and encoding", kernels.tone_encode, linear, scale, exposure.filmic, ENCODE_LUT)
    instance = truth.instance.reshape(camera.height, camera.width)
    phases.time("boxes", frame_boxes, instance, PixelStats.merge(stats), scene, *views, alone)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setup", choices=("demo", "paper"), default="demo")
    parser.add_argument("--camera", default="camera", help="camera name (paper: camera or gt_camera)")
    parser.add_argument("--frames", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "frame_phases")
    parser.add_argument("--cache", type=Path, default=None, help="asset cache (default: under --out)")
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    overrides = paper_overrides() if args.setup == "paper" else []
    if args.smoke:
        overrides += [*SMOKE_RUN, *(SMOKE_PAPER if args.setup == "paper" else [])]
        args.frames = 1
    config = load_experiment(ROOT / "configs" / "demo.yaml", overrides)
    world = EmbeddedWorld(config, scene_file(config, args.out / args.setup, args.cache))
    world.robot().set_command(COMMAND)
    frame(world, args.camera, Phases())  # loads the compiled kernels
    phases = Phases()
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")
    for _ in range(args.frames):
        world.step(PHYSICS_STEPS_PER_FRAME)
        frame(world, args.camera, phases)
    camera = world.robot().camera(args.camera).camera
    pixels = args.frames * camera.width * camera.height
    print(f"{args.setup}: camera {args.camera} {camera.width}x{camera.height}, {len(world.render_scene.lights)} "
          f"lights, {args.frames} frames, one thread")
    print(f"{'phase':40s} {'ms/frame':>9s} {'ns/pixel':>9s}")
    for name, seconds in phases.seconds.items():
        print(f"{name:40s} {seconds / args.frames * 1e3:9.1f} {seconds / pixels * 1e9:9.1f}")
    total = sum(phases.seconds.values()) - phases.seconds["shading without shadow rays"]
    print(f"{'total (shading once, with shadow rays)':40s} {total / args.frames * 1e3:9.1f} {total / pixels * 1e9:9.1f}")
    print(f"load average (1 min): {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""Frontier exploration of the demo house by the UAV and the TIAGo++ Omni: coverage over time, collisions,
wall time.

Run: .venv/bin/python benchmarks/exploration.py [--budget 180] [--every 10] [--robots uav,lightweight,physical]
     [--seed 42] [--humans MIN,MAX] [--objects MIN,MAX] [--resolution 0.1]

Prepares configs/demo.yaml (its humans and flying objects unless overridden) once per robot kind in a
temporary folder, then lets each robot explore the whole house with a 64x48, 100 deg depth camera (the
UAV's on camera_link, the TIAGo's on its head tilted 25 deg down) until no frontier is left or the
budget (simulated seconds) runs out. Every `--every` simulated seconds it prints the coverage: the
fraction of the house's free space reachable by a disc of the robot's radius from its start (ground
truth from the environment package's occupancy.npz, which the robot never reads) that the robot's own
map knows, and the same with the people standing where they were placed counted as obstacles. At the
end: final coverage, contacts of the robot with the environment / people / flying objects (MuJoCo),
ground-truth occupied cells found inside the robot's body (checked at 30 Hz), goals, wall time and the
real-time factor.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from core.assets.layout import OCCUPANCY_FILE
from core.config_io import load_experiment
from core.formats.occupancy import read_occupancy, read_voxels
from core.formats.placement import load_placement
from pipeline.prepare import prepare
from simulation.embedded import EmbeddedWorld
from simulation.exploration import TIAGO_RADIUS, UAV_RADIUS, ExplorationArea, Explorer, ExplorerParams, Grid2D
from simulation.exploration.metrics import box_overlap, coverage, reachable_free, robot_contacts
from simulation.physics.kinematic import HUMAN_RADIUS
from simulation.robots.tiago_model import CHASSIS_HALF_XY
from simulation.robots.uav_model import FRAME_HALF_SIZE

ROOT = Path(__file__).resolve().parents[1]
CHECK_EVERY = 8  # physics steps between ground-truth body checks (30 Hz at 240 Hz)
CAMERA = ["robot.sensors.imus=[]", "robot.sensors.cameras.0.width=64", "robot.sensors.cameras.0.height=48",
          "robot.sensors.cameras.0.fov_deg=100", "robot.sensors.cameras.0.outputs=[depth]"]
ROBOTS = {  # name -> (robot.kind, overrides)
    "uav": ("uav", ["robot.kind=uav"]),
    "lightweight": ("tiago_omni", ["robot.kind=tiago_omni", "robot.tiago.model=lightweight"]),
    "physical": ("tiago_omni", ["robot.kind=tiago_omni", "robot.tiago.model=physical"]),
}
TIAGO_CAMERA = ["robot.sensors.cameras.0.mount.link=head_2_link", "robot.sensors.cameras.0.mount.rpy_deg=[0,25,0]"]


def run(name: str, args: argparse.Namespace, work: Path) -> None:
    kind, overrides = ROBOTS[name]
    overrides = overrides + CAMERA + (TIAGO_CAMERA if kind == "tiago_omni" else []) + [
        f"seed={args.seed}", f"assets_dir={work / 'assets'}", f"exploration.map_resolution={args.resolution}"]
    if args.humans:
        overrides += [f"humans.count.min={args.humans[0]}", f"humans.count.max={args.humans[1]}"]
    if args.objects:
        overrides += [f"flying_objects.count.min={args.objects[0]}", f"flying_objects.count.max={args.objects[1]}"]
    config = load_experiment(ROOT / "configs" / "demo.yaml", overrides)
    prepared = prepare(config, work / kind)
    world = EmbeddedWorld(config, prepared.scene)
    occupancy = read_occupancy(prepared.environment / OCCUPANCY_FILE)
    map2d, origin, res = occupancy.grid, occupancy.origin, occupancy.resolution
    voxels, voxels_origin, voxel_size = read_voxels(prepared.environment / OCCUPANCY_FILE)
    radius = UAV_RADIUS if kind == "uav" else TIAGO_RADIUS
    start = world.robot().pose()[:2, 3]
    people = [(h.x, h.y, HUMAN_RADIUS) for h in load_placement(prepared.placement).humans]
    truth = reachable_free(map2d, origin, res, start, radius)
    truth_people = reachable_free(map2d, origin, res, start, radius, people)
    print(f"\n{name}: {len(people)} people, {len(world.scene.objects)} flying objects, reachable free space "
          f"{truth.sum() * res**2:.1f} m^2 ({truth_people.sum() * res**2:.1f} m^2 around the people)")
    print(f"{'sim s':>7} {'coverage':>9} {'w/ people':>10} {'explored':>9} {'wall s':>7}")

    contacts = {"environment": 0, "human": 0, "object": 0}
    inside = [0]
    next_print = [0.0]
    wall_start = time.perf_counter()

    def on_step(b: EmbeddedWorld) -> None:
        for key, count in robot_contacts(b.physics).items():
            contacts[key] += count
        if round(b.time / b.timestep) % CHECK_EVERY == 0:
            pose = b.robot().pose()
            if kind == "uav":
                inside[0] += box_overlap(voxels, voxels_origin, voxel_size, pose, np.array(FRAME_HALF_SIZE))
            else:
                inside[0] += box_overlap(map2d == 1, origin, res, pose, np.array(CHASSIS_HALF_XY))

    def report(t: float, grid: Grid2D, explored: float) -> None:
        print(f"{t:7.1f} {coverage(grid, truth, origin, res):9.3f} {coverage(grid, truth_people, origin, res):10.3f} "
              f"{explored:9.3f} {time.perf_counter() - wall_start:7.1f}", flush=True)

    def on_map(t: float, grid: Grid2D) -> None:
        # The UAV's map until it reaches its cruise altitude is the slab it hovers in; report it anyway.
        if t >= next_print[0]:
            next_print[0] += args.every
            report(t, grid, explorer.history[-1][1])

    area = ExplorationArea.from_package(prepared.environment)
    params = ExplorerParams.from_config(config, budget=args.budget)
    explorer = Explorer(world.robot(), config.robot, params, area)
    result = explorer.run(on_step, on_map)
    wall = time.perf_counter() - wall_start
    report(world.time, result.grid, result.explored_fraction)
    print(f"end: {result.reason} after {result.time:.1f} s; coverage {coverage(result.grid, truth, origin, res):.3f} "
          f"({coverage(result.grid, truth_people, origin, res):.3f} w/ people); contacts {contacts}; "
          f"occupied cells inside the body {inside[0]}; goals {result.goals_reached} reached, "
          f"{result.goals_abandoned} abandoned; {result.replans} plans; wall {wall:.1f} s "
          f"({result.time / wall:.1f}x real time)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=180.0, help="simulated seconds per robot")
    parser.add_argument("--every", type=float, default=10.0, help="simulated seconds between coverage lines")
    parser.add_argument("--robots", default="uav,lightweight,physical")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--humans", type=lambda s: [int(v) for v in s.split(",")], default=None)
    parser.add_argument("--objects", type=lambda s: [int(v) for v in s.split(",")], default=None)
    parser.add_argument("--resolution", type=float, default=0.1, help="map resolution, m")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for name in args.robots.split(","):
            run(name, args, Path(folder))


if __name__ == "__main__":
    main()

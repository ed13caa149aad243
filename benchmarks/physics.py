"""Physics real-time factor of the embedded backend's robot models driving in a furnished room.

Run: .venv/bin/python benchmarks/physics.py [--seconds 20] [--repeats 3] [--package ENV --start X,Y] [--smoke]

With `--package`, the robots drive in a converted environment package (e.g. a 3D-Front house from
`grade convert`) from the free floor point `--start` instead of the built-in furnished room.

Prints, per model, simulated seconds per wall-clock second (and per CPU second, which is steadier
on a shared machine) at the default 240 Hz, the best of `repeats` runs, plus MuJoCo's own timer
breakdown of one step for the TIAGo physical model. Target: >= 20x for the physical model.
--smoke: 0.05 s once per model (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import mujoco
import numpy as np
import trimesh

from asset_converters.environment import write_environment_package
from core.assets.parts import SceneMesh
from core.formats.asset_meta import SourceInfo
from simulation.physics import (
    EnvironmentCollision,
    PhysicsWorld,
    StartPose,
    build_world,
    human_body,
    load_environment_collision,
)
from simulation.robots.tiago_model import lightweight, physical
from simulation.robots.uav_model import uav

ROOM = (8.0, 6.0)
WALL_HEIGHT = 2.6
FURNITURE = [  # (centre x, y, size x, y, z)
    (1.0, 1.0, 0.8, 0.6, 0.75), (7.0, 5.0, 1.2, 0.5, 0.9), (4.0, 5.6, 2.0, 0.5, 0.45), (6.5, 1.0, 0.6, 0.6, 1.8),
]


def room_meshes() -> list[SceneMesh]:
    sx, sy, h = *ROOM, WALL_HEIGHT

    def quad(name: str, corners: list, label: str = "wall", floor: bool = False) -> SceneMesh:
        return SceneMesh(name, np.array(corners, float), [[0, 1, 2], [0, 2, 3]], label, "architecture",
                         is_floor=floor)

    meshes = [
        quad("floor", [(0, 0, 0), (sx, 0, 0), (sx, sy, 0), (0, sy, 0)], "floor", floor=True),
        quad("ceiling", [(0, 0, h), (0, sy, h), (sx, sy, h), (sx, 0, h)], "ceiling"),
        quad("wall_e", [(sx, 0, 0), (sx, 0, h), (sx, sy, h), (sx, sy, 0)]),
        quad("wall_w", [(0, 0, 0), (0, sy, 0), (0, sy, h), (0, 0, h)]),
        quad("wall_s", [(0, 0, 0), (0, 0, h), (sx, 0, h), (sx, 0, 0)]),
        quad("wall_n", [(0, sy, 0), (sx, sy, 0), (sx, sy, h), (0, sy, h)]),
    ]
    for i, (x, y, ex, ey, ez) in enumerate(FURNITURE):
        box = trimesh.creation.box(extents=(ex, ey, ez))
        box.apply_translation((x, y, ez / 2))
        meshes.append(SceneMesh(f"furniture_{i}", box.vertices, box.faces, "furniture"))
    counter = trimesh.boolean.union([trimesh.creation.box(extents=(2.0, 0.6, 0.9)).apply_translation((4.0, 0.3, 0.45)),
                                     trimesh.creation.box(extents=(0.6, 1.5, 0.9)).apply_translation((3.3, 1.35, 0.45))])
    meshes.append(SceneMesh("l_counter", counter.vertices, counter.faces, "counter"))
    return meshes


def command(t: float) -> np.ndarray:
    """A wandering base twist (vx, vy, wz) that brushes walls and furniture now and then."""
    return np.array([0.5 * np.cos(0.3 * t), 0.3 * np.sin(0.5 * t), 0.4 * np.sin(0.2 * t)])


def drive(world: PhysicsWorld, seconds: float) -> tuple[float, float]:
    """Run `seconds` of simulation; (wall seconds, CPU seconds) spent."""
    steps = round(seconds / world.model.opt.timestep)
    dt = world.model.opt.timestep
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(steps):
        twist = command(i * dt)
        if world.robot.kind == "uav":
            world.set_joint_velocities(np.array([*twist[:2], 0.1 * np.sin(i * dt), 0.0, 0.0, twist[2]]))
        else:
            world.set_base_twist(twist)
        world.set_kinematic_pose("human/walker", np.array([4.0 + np.sin(0.4 * i * dt), 3.0, 0.0]), [1, 0, 0, 0])
        world.step()
    return time.perf_counter() - wall, time.process_time() - cpu


def timer_breakdown(world: PhysicsWorld) -> str:
    data = world.data
    parts = []
    for name in ("mjTIMER_POS_KINEMATICS", "mjTIMER_POS_INERTIA", "mjTIMER_COL_BROAD", "mjTIMER_COL_NARROW",
                 "mjTIMER_POS_MAKE", "mjTIMER_CONSTRAINT", "mjTIMER_ADVANCE", "mjTIMER_STEP"):
        timer = data.timer[getattr(mujoco.mjtTimer, name).value]
        if timer.number:
            parts.append(f"{name.removeprefix('mjTIMER_').lower()} {timer.duration / timer.number * 1e6:.0f}")
    return "per step, us: " + ", ".join(parts)


def timed_collision(package: Path) -> EnvironmentCollision:
    started = time.perf_counter()
    env = load_environment_collision(package)
    print(f"environment: {len(env.pieces)} convex pieces in {time.perf_counter() - started:.2f} s")
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="simulated seconds per run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--package", type=Path, help="environment package to drive in (default: built-in room)")
    parser.add_argument("--start", default=None, help="x,y start on the package's floor (with --package)")
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    if args.smoke:
        args.seconds, args.repeats = 0.05, 1
    if args.package is not None:
        if args.start is None:
            parser.error("--package needs --start X,Y (a free point on its floor)")
        env = timed_collision(args.package)
        x, y = (float(v) for v in args.start.split(","))
        centre = StartPose(x, y, env.floor_height + 1.2, 0.0)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            env = timed_collision(write_environment_package(room_meshes(), [], Path(tmp) / "room",
                                                            SourceInfo(dataset="bench"), "b"))
        centre = StartPose(ROOM[0] / 2, ROOM[1] / 2 - 1.0, 1.2, 0.0)
    for label, robot in (("TIAGo physical", physical), ("TIAGo lightweight", lightweight), ("UAV", uav)):
        world = build_world(robot(), centre, env, kinematic=[human_body("walker")])
        best_wall = best_cpu = np.inf
        for _ in range(args.repeats):
            world.set_state(world.initial_state)
            wall, cpu = drive(world, args.seconds)
            best_wall, best_cpu = min(best_wall, wall), min(best_cpu, cpu)
        steps = args.seconds / world.model.opt.timestep
        print(f"{label:18s} nv={world.model.nv:3d} ngeom={world.model.ngeom:4d}  "
              f"real-time factor {args.seconds / best_wall:7.1f}x wall, {args.seconds / best_cpu:7.1f}x CPU  "
              f"({best_wall / steps * 1e6:.0f} us/step wall)")
        if robot is physical:
            print(f"{'':18s} {timer_breakdown(world)}")


if __name__ == "__main__":
    main()

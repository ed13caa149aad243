"""Frames per second of the ray-cast renderer on a demo-sized scene.

Scene: a room with ~30k static triangles of box furniture, 10 deforming humanoid-like meshes of ~3k
triangles each (vertices move every frame), one point light with hard shadows. Each frame renders the
full ground-truth set: RGB (one shadowed light), depth, instance, semantic, normals, 2D tight/loose
boxes with occlusion ratios and 3D boxes.

Frame times vary a lot when other processes share the cores, so the median frame time is printed
beside the mean, with the load average (1 min) before and after each measurement.

    .venv/bin/python benchmarks/render.py [--frames N] [--profile] [--smoke]

--smoke: 4 pieces of furniture, 2 humans, one frame at 64x48 and 96x54 (the figures mean nothing).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import numpy as np
import trimesh

from core.seeding import generator
from simulation.render import (
    Camera,
    Frame,
    MeshState,
    PointLight,
    RenderMaterial,
    RenderMesh,
    RenderOptions,
    RenderScene,
    look_at,
    render_frame,
)

SEED = 0
ROOM = 12.0  # metres, square room
ROOM_HEIGHT = 3.0
FURNITURE = 40
CLEARANCE = 0.8  # metres kept free around the camera path and the humans
HUMANS = 10
FPS = 30.0
RESOLUTIONS = ((640, 480), (1920, 1080))
HORIZONTAL_FOV = 90.0
SMOKE_FURNITURE, SMOKE_HUMANS, SMOKE_RESOLUTIONS = 4, 2, ((64, 48), (96, 54))


def _box(extents, center) -> trimesh.Trimesh:
    box = trimesh.creation.box(extents=extents)
    box.apply_translation(center)
    return box


def static_meshes(keep_clear: np.ndarray, furniture: int = FURNITURE) -> list[RenderMesh]:
    """Room shell plus furniture boxes, none within CLEARANCE of the `keep_clear` (N, 2) points."""
    rng = generator(SEED, "benchmarks/render/furniture")
    half, wall = ROOM / 2, 0.1
    shell = [("floor", _box((ROOM, ROOM, wall), (0, 0, -wall / 2)), 1),
             ("ceiling", _box((ROOM, ROOM, wall), (0, 0, ROOM_HEIGHT + wall / 2)), 2)]
    for i, (x, y, sx, sy) in enumerate([(half, 0, wall, ROOM), (-half, 0, wall, ROOM), (0, half, ROOM, wall),
                                        (0, -half, ROOM, wall)]):
        shell.append((f"wall{i}", _box((sx, sy, ROOM_HEIGHT), (x, y, ROOM_HEIGHT / 2)), 3))
    meshes = [RenderMesh(name, m.vertices, m.faces, i + 1, sem, RenderMaterial(tuple(rng.uniform(0.4, 0.9, 3))))
              for i, (name, m, sem) in enumerate(shell)]
    for k in range(furniture):
        extents = rng.uniform([0.3, 0.3, 0.4], [1.2, 1.2, 1.6])
        center = np.append(rng.uniform(-half + 1, half - 1, 2), extents[2] / 2)
        while np.min(np.linalg.norm(keep_clear - center[:2], axis=1)) < CLEARANCE + extents[:2].max() / 2:
            center[:2] = rng.uniform(-half + 1, half - 1, 2)
        piece = _box(extents, center).subdivide().subdivide().subdivide()  # 768 triangles
        meshes.append(RenderMesh(f"furniture{k}", piece.vertices, piece.faces, len(meshes) + 1, 10 + k % 20,
                                 RenderMaterial(tuple(rng.uniform(0.1, 0.9, 3)), roughness=float(rng.uniform(0.2, 1)))))
    return meshes


def humanoid() -> trimesh.Trimesh:
    """A rough body of capsules (torso, legs, arms) and a sphere head, ~3k triangles, feet at z = 0."""
    parts = []
    for height, radius, offset, count in ((0.55, 0.17, (0, 0, 1.15), 14), (0.75, 0.07, (-0.1, 0, 0.45), 12),
                                          (0.75, 0.07, (0.1, 0, 0.45), 12), (0.6, 0.05, (-0.25, 0, 1.15), 10),
                                          (0.6, 0.05, (0.25, 0, 1.15), 10)):  # height, radius, offset, segments
        capsule = trimesh.creation.capsule(height=height, radius=radius, count=[count, count * 2])
        capsule.apply_translation(offset)
        parts.append(capsule)
    parts.append(trimesh.creation.icosphere(subdivisions=2, radius=0.12).apply_translation((0, 0, 1.68)))
    return trimesh.util.concatenate(parts)


def human_states(rest: np.ndarray, poses: list[np.ndarray], time_s: float) -> dict[str, MeshState]:
    """Swinging limbs: vertices sway sideways with a phase that grows with height (a deformation)."""
    states = {}
    for i, pose in enumerate(poses):
        phase = 2 * np.pi * 0.8 * time_s + i
        sway = 0.15 * np.sin(phase + 2.0 * rest[:, 2]) * np.abs(rest[:, 0])
        vertices = rest.copy()
        vertices[:, 1] += sway
        states[f"human{i}"] = MeshState(vertices=vertices, pose=pose)
    return states


def build(furniture: int = FURNITURE, humans: int = HUMANS) -> tuple[RenderScene, np.ndarray, list[np.ndarray]]:
    rng = generator(SEED, "benchmarks/render/humans")
    body = humanoid()
    poses = []
    for _ in range(humans):
        pose = np.eye(4)
        yaw = rng.uniform(0, 2 * np.pi)
        pose[:2, :2] = [[np.cos(yaw), -np.sin(yaw)], [np.sin(yaw), np.cos(yaw)]]
        pose[:2, 3] = rng.uniform([-3, 0], [3, 5])
        poses.append(pose)
    camera_path = np.stack([np.zeros(8), np.linspace(-5.5, -3.0, 8)], axis=1)
    statics = static_meshes(np.concatenate([camera_path, [p[:2, 3] for p in poses]]), furniture)
    dynamic = [RenderMesh(f"human{i}", body.vertices, body.faces, 1000 + i, 100, RenderMaterial((0.8, 0.6, 0.5)),
                          pose=poses[i]) for i in range(humans)]
    light = PointLight((0.0, 1.0, ROOM_HEIGHT - 0.3), 3.0)
    scene = RenderScene(statics, dynamic, [light], ambient=(0.15, 0.15, 0.15))
    return scene, body.vertices, poses


def measure(scene: RenderScene, rest: np.ndarray, poses: list[np.ndarray], resolution: tuple[int, int],
            frames: int, options: RenderOptions) -> tuple[np.ndarray, float, Frame]:
    """Wall seconds of each frame (after one warm-up frame), mean CPU seconds per frame, and the last frame."""
    camera = Camera.from_fov(*resolution, HORIZONTAL_FOV, near=0.05, far=30.0)
    eye, target = np.array([0.0, -5.0, 1.5]), np.array([0.0, 2.0, 1.0])
    render_frame(scene, camera, look_at(eye, target), human_states(rest, poses, 0.0), options)
    seconds, cpu = [], time.process_time()
    for k in range(frames):
        started = time.perf_counter()
        pose = look_at(eye + [0.02 * k, 0, 0], target)
        frame = render_frame(scene, camera, pose, human_states(rest, poses, (k + 1) / FPS), options)
        seconds.append(time.perf_counter() - started)
    return np.array(seconds), (time.process_time() - cpu) / frames, frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--profile", action="store_true", help="cProfile the 640x480 frames")
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    furniture, humans, resolutions = FURNITURE, HUMANS, RESOLUTIONS
    if args.smoke:
        furniture, humans, resolutions, args.frames = SMOKE_FURNITURE, SMOKE_HUMANS, SMOKE_RESOLUTIONS, 1
    started = time.perf_counter()
    scene, rest, poses = build(furniture, humans)
    static_faces = len(scene.static_table.faces)
    dynamic_faces = len(scene.dynamic_table.faces)
    print(f"scene: {static_faces} static + {dynamic_faces} dynamic triangles "
          f"({humans} meshes of {dynamic_faces // humans}), 1 shadowed light; built in "
          f"{time.perf_counter() - started:.2f} s")
    options = RenderOptions()
    for width, height in resolutions:
        first = width == resolutions[0][0]  # the 640x480 frames: all of them, profiled with --profile
        frames = args.frames if first else max(1, args.frames // 4)
        if args.profile and first:
            profiler = cProfile.Profile()
            profiler.enable()
        load_before = os.getloadavg()[0]
        seconds, cpu, frame = measure(scene, rest, poses, (width, height), frames, options)
        if args.profile and first:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
        mean, median = seconds.mean(), np.median(seconds)
        print(f"{width}x{height}: {1 / mean:6.2f} fps ({mean * 1000:.0f} ms/frame wall, median {median * 1000:.0f} ms "
              f"= {1 / median:.2f} fps, {cpu * 1000:.0f} ms CPU) over {frames} frames; {len(frame.instance_ids)} "
              f"boxes, {(frame.instance > 0).mean():.0%} pixels hit; load {load_before:.2f} -> "
              f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""A contact sheet of the demo's procedural humans, rendered close up and lit, to judge how they look.

The humans are converted as `grade generate configs/demo.yaml` converts them (the config's seed, as many
distinct humans as the demo prepares, each playing its motion) into a fresh folder, then loaded as a run
loads them (simulation/embedded/actors.py: one merged mesh per person, its texture atlas) and posed a third
into their clip. Each person stands alone in front of a grey wall on a grey floor, lit by a soft key light
from the front-left and ambient light; the top row shows the whole body, the bottom row head and shoulders.
The renderer is the ray caster (--renderer cycles: Blender Cycles, a few samples, slower).

    .venv/bin/python benchmarks/humans_sheet.py [--out runs/bench/humans/humans_sheet.png] [--seed S] [--humans N]
                                                [--renderer raycast|cycles] [--smoke]

--smoke: one human in 40x60 panels, Cycles at 1 sample (the sheet means nothing).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from asset_converters.batch import run_jobs
from asset_converters.procedural import demo_jobs
from core.assets.skinning import joint_world_transforms
from core.config_io import load_experiment
from pipeline.prepare import PROCEDURAL_HUMAN_VARIETY
from simulation.embedded.actors import HumanModel
from simulation.render import (
    Camera,
    MeshState,
    PointLight,
    RenderMaterial,
    RenderMesh,
    RenderScene,
    load_texture,
    look_at,
    render_frame,
)

ROOT = Path(__file__).resolve().parents[1]
PANEL = (300, 450)  # px, portrait
FOV_DEG = 30.0  # horizontal
BODY_DISTANCE = 3.2  # m from the body's centre line: the whole body fits the panel
FACE_DISTANCE = 0.9  # m: head and shoulders
FACE_ABOVE_HEAD_JOINT = 0.06  # m: the close-up aims between the eyes and the mouth
VIEW_YAW_DEG = 25.0  # the camera stands this far round to the person's left: faces read in 3D
CAMERA_HEIGHT = 1.6  # m, eye height of the full-body view
CLIP_FRACTION = 1 / 3  # the frame shown, as a fraction of each clip
WALL_GAP = 1.2  # m behind the person
FLOOR_SIZE, WALL_HEIGHT, SLAB = 12.0, 4.0, 0.05  # m
FLOOR_GREY, WALL_GREY = (0.35, 0.33, 0.3), (0.55, 0.55, 0.53)  # linear albedo
KEY_OFFSET = np.array([2.2, 1.6, 2.4])  # m from the body's foot point, in its facing frame (x forward, y left)
KEY_IRRADIANCE = 1.6  # display units on a surface facing the key light at the person
KEY_RADIUS = 0.15  # m
AMBIENT = (0.16, 0.16, 0.17)
PERSON_ID, FLOOR_ID, WALL_ID = 1, 2, 3
LABEL_PX = 16
CYCLES_SAMPLES = 16
SMOKE_PANEL, SMOKE_HUMANS, SMOKE_CYCLES_SAMPLES = (40, 60), 1, 1


def demo_humans(folder: Path, seed: int | None, count: int | None) -> list[Path]:
    """Convert the demo config's procedural humans (its seed and count unless given) into `folder`."""
    config = load_experiment(ROOT / "configs" / "demo.yaml")
    seed = config.seed if seed is None else seed
    if count is None:
        count = min(max(config.humans.count.max, PROCEDURAL_HUMAN_VARIETY[0]), PROCEDURAL_HUMAN_VARIETY[1])
    jobs = [job for job in demo_jobs(folder, seed, config.environment.rooms, 0, count, 0)
            if job.out.parent.name == "humans"]
    result = run_jobs(jobs, "demo humans")
    if result.failed:
        raise SystemExit(f"conversion failed: {result.failed[0][1]}")
    return [job.out for job in jobs]


def box(name: str, extents: tuple[float, float, float], center: np.ndarray, instance: int,
        color: tuple[float, float, float]) -> RenderMesh:
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * np.asarray(extents) / 2
    faces = [(0, 1, 3), (0, 3, 2), (4, 6, 7), (4, 7, 5), (0, 4, 5), (0, 5, 1), (2, 3, 7), (2, 7, 6),
             (0, 2, 6), (0, 6, 4), (1, 5, 7), (1, 7, 3)]
    return RenderMesh(name, corners + center, np.array(faces), instance, material=RenderMaterial(color, roughness=0.9))


def stage_scene(model: HumanModel, vertices: np.ndarray) -> RenderScene:
    """The person (facing +x) with a floor under it, a wall behind it and a key light in front."""
    foot = np.array([*vertices[:, :2].mean(axis=0), 0.0])
    floor = box("floor", (FLOOR_SIZE, FLOOR_SIZE, SLAB), foot - (0, 0, SLAB / 2), FLOOR_ID, FLOOR_GREY)
    wall = box("wall", (SLAB, FLOOR_SIZE, WALL_HEIGHT), foot + (-WALL_GAP, 0, WALL_HEIGHT / 2), WALL_ID, WALL_GREY)
    person = RenderMesh("person", vertices, model.mesh.faces, PERSON_ID, material=model.mesh.material,
                        uvs=model.mesh.uvs, smooth=True)
    distance = float(np.linalg.norm(KEY_OFFSET - (0, 0, CAMERA_HEIGHT / 2)))
    key = PointLight(tuple(foot + KEY_OFFSET), KEY_IRRADIANCE * distance**2, radius=KEY_RADIUS)
    return RenderScene([floor, wall], [person], [key], ambient=AMBIENT)


def views(vertices: np.ndarray, head: np.ndarray) -> list[np.ndarray]:
    """Camera poses: the whole body, then head and shoulders (around the head joint `head`), both from the
    front-left."""
    foot = np.array([*vertices[:, :2].mean(axis=0), 0.0])
    top = float(np.percentile(vertices[:, 2], 99))
    yaw = np.radians(VIEW_YAW_DEG)
    direction = np.array([np.cos(yaw), np.sin(yaw), 0.0])
    body_target = foot + (0, 0, top / 2)
    face_target = head + (0, 0, FACE_ABOVE_HEAD_JOINT)
    return [look_at(body_target + direction * BODY_DISTANCE + (0, 0, CAMERA_HEIGHT - top / 2), body_target),
            look_at(face_target + direction * FACE_DISTANCE, face_target)]


def render_person(package: Path, renderer: str, panel: tuple[int, int] = PANEL,
                  samples: int = CYCLES_SAMPLES) -> list[np.ndarray]:
    model = HumanModel(package, load_texture)
    frame = int(model.animation.frame_count * CLIP_FRACTION)
    vertices = np.asarray(model.posed(frame))
    anim = model.animation
    head = joint_world_transforms(anim)[frame, anim.joint_names.index("head"), :3, 3]
    scene = stage_scene(model, vertices)
    camera = Camera.from_fov(*panel, FOV_DEG)
    states = {"person": MeshState(vertices=vertices)}
    if renderer == "cycles":
        from simulation.cycles import CyclesRenderer, CyclesSettings

        cycles = CyclesRenderer(scene, CyclesSettings(samples=samples))
        return [cycles.render(camera, pose, states) for pose in views(vertices, head)]
    return [render_frame(scene, camera, pose, states).rgb for pose in views(vertices, head)]


def sheet(columns: list[tuple[str, list[np.ndarray]]]) -> Image.Image:
    """One column per person: its name, then its panels top to bottom."""
    height, width = columns[0][1][0].shape[:2]
    rows = len(columns[0][1])
    image = Image.new("RGB", (width * len(columns), LABEL_PX + height * rows), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    for i, (name, panels) in enumerate(columns):
        draw.text((i * width + 4, 2), name, fill=(0, 0, 0))
        for row, panel in enumerate(panels):
            image.paste(Image.fromarray(panel), (i * width, LABEL_PX + row * height))
    return image


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "humans" / "humans_sheet.png")
    parser.add_argument("--seed", type=int, default=None, help="default: the demo config's")
    parser.add_argument("--humans", type=int, default=None, help="default: as many as the demo prepares")
    parser.add_argument("--renderer", choices=("raycast", "cycles"), default="raycast")
    parser.add_argument("--smoke", action="store_true", help="the smallest sheet (meaningless)")
    args = parser.parse_args()
    panel, samples = PANEL, CYCLES_SAMPLES
    if args.smoke:
        panel, samples, args.humans = SMOKE_PANEL, SMOKE_CYCLES_SAMPLES, SMOKE_HUMANS
    with tempfile.TemporaryDirectory() as folder:
        packages = demo_humans(Path(folder), args.seed, args.humans)
        columns = [(package.name, render_person(package, args.renderer, panel, samples)) for package in packages]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    sheet(columns).save(args.out)
    print(f"{len(columns)} humans: {args.out}")


if __name__ == "__main__":
    main()

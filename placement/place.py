"""The `place` stage: environment + animated and object packages -> placement.json and a preview PNG."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.assets.layout import META_FILE
from core.config import AnimalsConfig, FlyingObjectsConfig, HumansConfig, RobotConfig
from core.errors import InputError
from core.formats.asset_meta import load_meta
from core.formats.manifest import MANIFEST
from core.formats.placement import EnvironmentRef, Placement, PlacementParameters, write_placement
from core.geometry import transform_points
from core.robot_catalogue import robot_body
from placement.flying import place_flying_objects
from placement.humans import HUMAN_CONTACT_THRESHOLD, Crowd, place_animals, place_humans
from placement.preview import render_preview, write_preview
from placement.robot_start import place_robot, place_robots, robot_solid
from placement.world import PlacementWorld, load_placement_world


@dataclass
class PlacementResult:
    """A placement with what it was made in: the environment's world and the crowd's traces (for the preview)."""

    placement: Placement
    world: PlacementWorld
    crowd: Crowd

    def trace_triangles(self) -> list[np.ndarray]:
        """World triangles (F, 3, 3) of each placed human's (then animal's) trace, at its placed height."""
        out = []
        for human, placed in zip([*self.placement.humans, *self.placement.animals], self.crowd.placed):
            matrix = placed.matrix.copy()
            matrix[2, 3] = human.z
            out.append(transform_points(matrix, placed.asset.trace.vertices)[placed.asset.trace.faces])
        return out


def list_packages(folder: str | Path, kind: str) -> list[Path]:
    """The complete packages of `kind` in `folder` (sorted by name), or `folder` itself if it is one.

    Hidden folders (a converter's temporary `.name.partial`) are ignored; any other folder that is
    not a complete package of that kind is an error, so a broken conversion is not silently skipped.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{kind} package folder not found", folder)
    if (folder / META_FILE).is_file() or (folder / MANIFEST).is_file():
        candidates = [folder]
    else:
        candidates = sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    for package in candidates:
        load_meta(package, kind)
    if not candidates:
        raise InputError(f"no {kind} packages in this folder", folder)
    return candidates


def place_scene(environment: str | Path, human_packages: list[Path], object_packages: list[Path],
                humans: HumansConfig, flying: FlyingObjectsConfig, robot: RobotConfig, seed: int,
                human_contact_threshold: int = HUMAN_CONTACT_THRESHOLD,
                fleet: Sequence[tuple[str, RobotConfig]] = (), animal_packages: Sequence[Path] = (),
                animals: AnimalsConfig | None = None, region: list[tuple[float, float]] | None = None) -> PlacementResult:
    """Place the robot start (or the starts of a multi-robot run's named robots, `fleet`, instead), then humans
    clear of them, then `animals` clear of both, then flying objects, all within `region` (default the floor
    polygon); deterministic from `seed`."""
    world = load_placement_world(environment, region)
    starts = place_robots(world, fleet, seed) if fleet else [place_robot(world, robot, seed)]
    flies = [robot_body(config).flies for _, config in fleet] if fleet else [robot_body(robot).flies]
    blockers = tuple(robot_solid(start, flying) for start, flying in zip(starts, flies, strict=True))
    placed, rejected, crowd, candidates = place_humans(world, human_packages, humans, seed, human_contact_threshold,
                                                       blockers=blockers)
    animals = animals if animals is not None else AnimalsConfig()
    animals_placed, animals_rejected, animal_candidates = place_animals(crowd, list(animal_packages), animals, seed)
    flying_placed, flying_rejected, flying_candidates = place_flying_objects(world, object_packages, flying, seed)
    placement = Placement(
        seed=seed,
        environment=EnvironmentRef(id=world.meta.id, path=str(world.package)),
        parameters=PlacementParameters(
            human_count_range=(humans.count.min, humans.count.max), human_candidates=candidates,
            max_tries=humans.max_tries, contact_threshold=humans.contact_threshold,
            human_contact_threshold=human_contact_threshold,
            flying_count_range=(flying.count.min, flying.count.max), flying_candidates=flying_candidates,
            flying_collision_check=flying.collision_check,
        ),
        humans=placed, rejected_humans=rejected, flying_objects=flying_placed,
        rejected_flying_objects=flying_rejected, robot=starts[0], robots=starts if fleet else [],
        animals=animals_placed, rejected_animals=animals_rejected, animal_candidates=animal_candidates,
    )
    return PlacementResult(placement, world, crowd)


def write_outputs(scene: PlacementResult, out: str | Path, preview: str | Path | None = None) -> Path:
    """Write the preview PNG (when asked), then `placement.json` last, both atomically."""
    if preview is not None:
        write_preview(preview, render_preview(scene.world, scene.placement, scene.trace_triangles()))
    return write_placement(scene.placement, out)

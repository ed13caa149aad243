"""Placing animated humans (and animals, the same way, after them): each candidate's swept trace against
the world and the traces placed so far.

A try samples (x, y, yaw) uniformly in the floor polygon; z puts the animation's lowest point on the
floor. On a terrain, z instead rests the trace's support (its vertices within SUPPORT_BAND of its lowest
point: the feet over the whole clip) on the highest ground under it; the try is rejected where the ground
under a support point is missing ("outside"), steeper than the slope limit ("slope"), or so much lower
that the point would float above it by more than the gap limit ("uneven"). The try is accepted when the
whole trace stays over the floor polygon, makes fewer contacts with the world than the threshold (plant
leaves and thin objects may graze it), touches no other trace nor the robot's start volume, and neither
swallows nor is swallowed by a closed piece, another trace or the robot (FCL reports no contact for a mesh
wholly inside another).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import fcl
import numpy as np
import shapely
import trimesh
from scipy.spatial import ConvexHull, QhullError

from core.assets.layout import META_FILE, TRACE_FILE
from core.config import AnimalsConfig, AnimatedConfig, GroundFitConfig, HumansConfig
from core.errors import InputError
from core.formats.asset_meta import AssetMeta, load_meta
from core.formats.placement import AnimationSchedule, PlacedHuman, RejectedHuman
from core.geometry import pose_from_xyz_yaw, transform_points
from core.progress import get_logger, progress_task
from core.seeding import generator
from placement.collide import (
    TEST_LIFT,
    Obstacles,
    Probes,
    box_contains,
    bvh_model,
    fcl_transform,
    is_closed,
    probe_points,
    swallowed_components,
)
from placement.world import PlacementWorld, Solid, load_mesh

FLOOR_SHIFT = np.array([0.0, 0.0, TEST_LIFT + 0.001])  # m, see Crowd._inside
# Contacts allowed between two humans' traces: none, since people would walk through each other.
HUMAN_CONTACT_THRESHOLD = 1
TAU = 2.0 * np.pi
INTERIOR_PITCH = 0.05  # m, grid spacing of a trace's interior sample
SUPPORT_BAND = 0.02  # m above a trace's lowest point that still counts as its support (the feet)

log = get_logger("placement")


@dataclass
class HumanAsset:
    """An animated package's trace (in the asset's local frame) ready for collision tests."""

    path: Path
    meta: AssetMeta
    trace: trimesh.Trimesh
    container: trimesh.Trimesh  # closed mesh for the containment tests: the trace, or its hull if open
    model: fcl.BVHModel
    probes: Probes
    interior: np.ndarray  # (P, 3) grid points inside the trace, for how deep it sits in furniture
    hull_xy: np.ndarray  # (H, 2) corners of the footprint's convex hull (trace vertices)
    bounds: np.ndarray  # (2, 3) the trace's box
    container_bounds: np.ndarray  # (2, 3)
    ground_offset: float
    clip_end: float  # s, time of the last frame
    duration: float  # s, frame_count / fps
    support: np.ndarray  # (K, 3) trace vertices within SUPPORT_BAND of its lowest point, local frame


def interior_points(closed: trimesh.Trimesh, pitch: float = INTERIOR_PITCH) -> np.ndarray:
    """Grid points inside a closed mesh: a volume sample, so the inside fraction of a coarse trace (a
    box has only 8 vertices) still measures how much of it overlaps a piece."""
    lo, hi = closed.bounds
    axes = [np.arange(a + pitch / 2, b, pitch) for a, b in zip(lo, hi)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    inside = grid[closed.contains(grid)] if len(grid) else grid
    return inside if len(inside) else closed.vertices.copy()


def load_human(package: str | Path) -> HumanAsset:
    package = Path(package)
    if not package.is_dir():
        raise InputError("animated package folder not found", package)
    meta = load_meta(package, "animated")
    if meta.animation is None:
        raise InputError("an animated package needs its animation section", package / META_FILE, "animation")
    info = meta.animation
    if not np.isfinite(info.ground_offset):
        raise InputError("ground_offset must be finite", package / META_FILE, "animation.ground_offset")
    trace = load_mesh(package / TRACE_FILE, "trace mesh")
    container = trace
    if not is_closed(trace):
        log.warning("%s: trace.stl is not closed; its convex hull stands in for the containment tests", package)
        container = trace.convex_hull
    try:
        footprint = ConvexHull(trace.vertices[:, :2])
    except QhullError as exc:
        raise InputError(f"degenerate trace mesh: its footprint has no area ({exc})", package / TRACE_FILE) from exc
    return HumanAsset(
        path=package, meta=meta, trace=trace, container=container, model=bvh_model(trace.vertices, trace.faces),
        probes=probe_points(trace), interior=interior_points(container), hull_xy=trace.vertices[footprint.vertices, :2],
        bounds=np.array(trace.bounds), container_bounds=np.array(container.bounds),
        ground_offset=float(info.ground_offset),
        clip_end=max(info.frame_count - 1, 0) / info.fps, duration=info.frame_count / info.fps,
        support=trace.vertices[trace.vertices[:, 2] <= trace.vertices[:, 2].min() + SUPPORT_BAND],
    )


@dataclass
class Verdict:
    accepted: bool
    reason: str | None
    contacts: int
    z: float = float("nan")  # the tested height of the asset's frame (floor or ground + offset)


@dataclass
class PlacedTrace:
    asset: HumanAsset
    matrix: np.ndarray  # local -> world at the tested (lifted) height
    inverse: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


def schedule_for(asset: HumanAsset, start_fraction: float, reverse: bool) -> AnimationSchedule:
    period = 2.0 * asset.clip_end if reverse else asset.duration
    return AnimationSchedule(start=start_fraction * period, clip_end=asset.clip_end, period=period, reverse=reverse)


@dataclass
class Crowd:
    """The world plus the humans placed so far (and blockers such as the robot); tests candidate poses."""

    world: PlacementWorld
    contact_threshold: int
    human_contact_threshold: int = HUMAN_CONTACT_THRESHOLD
    max_inside_fraction: float = 0.02
    placed: list[PlacedTrace] = field(default_factory=list)
    obstacles: Obstacles = field(default_factory=Obstacles)
    blockers: list[Solid] = field(default_factory=list)
    blocker_obstacles: Obstacles = field(default_factory=Obstacles)
    ground_fit: GroundFitConfig = field(default_factory=GroundFitConfig)

    def use(self, config: AnimatedConfig) -> None:
        """Test the next candidates by the thresholds and ground fit of `config` (humans', then animals')."""
        self.contact_threshold, self.max_inside_fraction = config.contact_threshold, config.max_inside_fraction
        self.ground_fit = config.ground

    def stand_z(self, asset: HumanAsset, x: float, y: float, yaw: float) -> tuple[float, str | None]:
        """The height of the asset's frame at (x, y, yaw): its lowest point on the floor, or on a terrain its
        support resting on the ground under it; with the rejection reason where it cannot stand there."""
        if self.world.ground is None:
            return self.world.floor_height + asset.ground_offset, None
        c, s = np.cos(yaw), np.sin(yaw)
        local = asset.support
        xy = local[:, :2] @ np.array([[c, s], [-s, c]]) + (x, y)
        heights, slopes = self.world.ground.query(xy)
        if np.isnan(heights).any():
            return float("nan"), "outside"
        if slopes.max() > self.ground_fit.max_slope_deg:
            return float("nan"), "slope"
        z = float(np.max(heights - local[:, 2]))
        if float(np.max(z + local[:, 2] - heights)) > self.ground_fit.max_gap:
            return float("nan"), "uneven"
        return z, None

    def _test_matrix(self, z: float, x: float, y: float, yaw: float) -> np.ndarray:
        return pose_from_xyz_yaw(x, y, z + TEST_LIFT, yaw)

    def block(self, solid: Solid) -> None:
        """Keep every trace clear of `solid` (no contact, no containment), e.g. the robot's start volume."""
        self.blockers.append(solid)
        model = bvh_model(solid.mesh.vertices, solid.mesh.faces)
        self.blocker_obstacles.add(fcl.CollisionObject(model, fcl.Transform()), solid.lo, solid.hi)

    def test(self, asset: HumanAsset, x: float, y: float, yaw: float) -> Verdict:
        """Whether the asset's trace fits at (x, y, yaw), cheapest checks first."""
        z, unfit = self.stand_z(asset, x, y, yaw)
        if unfit is not None:
            return Verdict(False, unfit, 0)
        matrix = self._test_matrix(z, x, y, yaw)
        lo, hi = self._bounds(asset, matrix)
        if not self._over_floor(asset, matrix):
            return Verdict(False, "outside", 0)
        obj = fcl.CollisionObject(asset.model, fcl_transform(matrix))
        if self.blocker_obstacles.collides(obj, lo, hi):
            return Verdict(False, "robot", 0)
        touching = self.obstacles.contacts(obj, lo, hi, self.human_contact_threshold)
        if touching >= self.human_contact_threshold:
            return Verdict(False, "human", touching)
        contacts = self.world.tiles.contacts(obj, lo, hi, self.contact_threshold)
        if contacts >= self.contact_threshold:
            return Verdict(False, "contacts", contacts)
        if contacts and self._inside_fraction(asset, matrix, lo, hi) > self.max_inside_fraction:
            return Verdict(False, "penetrates", contacts)
        probes, inverse = transform_points(matrix, asset.probes.points), np.linalg.inv(matrix)
        if self._inside(asset, probes, inverse, lo, hi, self.world.solids):
            return Verdict(False, "inside", contacts)
        if self._inside(asset, probes, inverse, lo, hi, self.blockers):
            return Verdict(False, "robot", contacts)
        if self._inside_humans(asset, probes, inverse, lo, hi):
            return Verdict(False, "human", 0)
        return Verdict(True, None, contacts, z)

    def _inside_fraction(self, asset: HumanAsset, matrix: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
        """Fraction of the trace's volume (interior grid points) inside closed world pieces."""
        points = transform_points(matrix, asset.interior)
        inside = np.zeros(len(points), dtype=bool)
        for solid in self.world.solids:
            if solid.hull_only or np.any(solid.lo > hi) or np.any(solid.hi < lo):
                continue
            near = ~inside & np.all((points >= solid.lo) & (points <= solid.hi), axis=1)
            if near.any():
                inside[np.flatnonzero(near)[solid.mesh.contains(points[near])]] = True
        return float(inside.mean())

    @staticmethod
    def _bounds(asset: HumanAsset, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The trace's exact world box: the footprint hull holds the XY extremes, z only shifts."""
        xy = asset.hull_xy @ matrix[:2, :2].T + matrix[:2, 3]
        z_lo, z_hi = asset.bounds[:, 2] + matrix[2, 3]
        return np.array([*xy.min(axis=0), z_lo]), np.array([*xy.max(axis=0), z_hi])

    def _over_floor(self, asset: HumanAsset, matrix: np.ndarray) -> bool:
        """Whether the whole footprint lies over the floor polygon. The hull's corners are trace vertices
        (one outside: no) and a hull inside the polygon holds the whole trace (yes); only poses in
        between, near a concave corner of the polygon, test every vertex."""
        corners = asset.hull_xy @ matrix[:2, :2].T + matrix[:2, 3]
        if not self.world.inside_polygon(corners).all():
            return False
        if shapely.contains(self.world.polygon, shapely.Polygon(corners)):
            return True
        return bool(self.world.inside_polygon(transform_points(matrix, asset.trace.vertices)[:, :2]).all())

    @staticmethod
    def _inside(asset: HumanAsset, probes: np.ndarray, inverse: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                solids: list[Solid]) -> bool:
        """Whether the trace (world probes) lies in one of the closed `solids`, or swallows one."""
        local_lo, local_hi = asset.container_bounds
        for solid in solids:
            if np.any(solid.lo > hi) or np.any(solid.hi < lo):
                continue
            if swallowed_components(asset.probes, probes, solid.mesh, solid.lo, solid.hi):
                return True
            # The trace is tested lifted off the floor, so a piece standing on the floor is lifted a bit
            # more to count as swallowed when the trace covers it down to the floor.
            if box_contains(lo, hi, solid.lo + FLOOR_SHIFT, solid.hi + FLOOR_SHIFT) and swallowed_components(
                    solid.probes, transform_points(inverse, solid.probes.points + FLOOR_SHIFT), asset.container,
                    local_lo, local_hi):
                return True
        return False

    def _inside_humans(self, asset: HumanAsset, probes: np.ndarray, inverse: np.ndarray,
                       lo: np.ndarray, hi: np.ndarray) -> bool:
        local_lo, local_hi = asset.container_bounds
        for index in self.obstacles.overlapping(lo, hi):
            other = self.placed[index]
            other_lo, other_hi = other.asset.container_bounds
            if swallowed_components(asset.probes, transform_points(other.inverse, probes), other.asset.container,
                                    other_lo, other_hi):
                return True
            other_probes = transform_points(inverse @ other.matrix, other.asset.probes.points)
            if swallowed_components(other.asset.probes, other_probes, asset.container, local_lo, local_hi):
                return True
        return False

    def add(self, asset: HumanAsset, x: float, y: float, yaw: float, z: float | None = None) -> PlacedTrace:
        """Place the trace at (x, y, yaw) and height `z` (default: where `stand_z` stands it)."""
        matrix = self._test_matrix(self.stand_z(asset, x, y, yaw)[0] if z is None else z, x, y, yaw)
        lo, hi = self._bounds(asset, matrix)
        placed = PlacedTrace(asset, matrix, np.linalg.inv(matrix), lo, hi)
        self.placed.append(placed)
        self.obstacles.add(fcl.CollisionObject(asset.model, fcl_transform(matrix)), lo, hi)
        return placed


def asset_order(rng: np.random.Generator, packages: int, count: int) -> np.ndarray:
    """Which package each of `count` candidates plays: every package once, in a seeded order, before any
    is used again, so a crowd no larger than the package list has no two humans of the same asset."""
    if count == 0:
        return np.zeros(0, dtype=int)
    rounds = -(-count // packages)
    return np.concatenate([rng.permutation(packages) for _ in range(rounds)])[:count]


def place_group(crowd: Crowd, packages: list[Path], config: AnimatedConfig, rng: np.random.Generator, what: str,
                ) -> tuple[list[PlacedHuman], list[RejectedHuman], int]:
    """Draw the candidate count and assets (`asset_order`), then place each candidate in up to `max_tries` tries
    into `crowd`, by `config`'s thresholds. Returns the placed and rejected candidates and their number.
    Each candidate's tries are drawn as one batch, so its poses do not depend on how earlier ones fared."""
    count = int(rng.integers(config.count.min, config.count.max + 1))
    if count and not packages:
        raise InputError(f"{count} {what} requested but no animated packages given", field=what)
    choices = asset_order(rng, len(packages), count)
    assets: dict[int, HumanAsset] = {}
    crowd.use(config)
    placed, rejected = [], []
    with progress_task(f"placing {what}", count) as advance:
        for choice in choices:
            if int(choice) not in assets:
                assets[int(choice)] = load_human(packages[int(choice)])
            asset = assets[int(choice)]
            start = float(rng.uniform())
            xy = crowd.world.sample_xy(rng, config.max_tries)
            yaws = rng.uniform(0.0, TAU, config.max_tries)
            reasons: Counter[str] = Counter()
            for attempt, ((x, y), yaw) in enumerate(zip(xy, yaws), start=1):
                verdict = crowd.test(asset, float(x), float(y), float(yaw))
                if verdict.accepted:
                    crowd.add(asset, float(x), float(y), float(yaw), verdict.z)
                    placed.append(PlacedHuman(
                        asset_id=asset.meta.id, asset_path=str(asset.path), x=float(x), y=float(y),
                        z=verdict.z, yaw=float(yaw), animation=schedule_for(asset, start, config.reverse_playback),
                        contacts=verdict.contacts, tries=attempt,
                    ))
                    break
                reasons[verdict.reason] += 1
            else:
                rejected.append(RejectedHuman(
                    asset_id=asset.meta.id, asset_path=str(asset.path), reason=verdict.reason,
                    contact_count=verdict.contacts, tries=config.max_tries, reasons=dict(sorted(reasons.items())),
                ))
            advance()
    log.info("placed %d of %d %s", len(placed), count, what)
    return placed, rejected, count


def place_humans(world: PlacementWorld, packages: list[Path], config: HumansConfig, seed: int,
                 human_contact_threshold: int = HUMAN_CONTACT_THRESHOLD, blockers: tuple[Solid, ...] = (),
                 ) -> tuple[list[PlacedHuman], list[RejectedHuman], Crowd, int]:
    """The humans of `place_group`, clear of the `blockers` (the robot's start volume), drawn from the stream
    "placement/humans"; returns the placed and rejected humans, the crowd (for the preview and the animals)
    and the number of candidates."""
    crowd = Crowd(world, config.contact_threshold, human_contact_threshold, config.max_inside_fraction)
    for solid in blockers:
        crowd.block(solid)
    placed, rejected, count = place_group(crowd, packages, config, generator(seed, "placement/humans"), "humans")
    return placed, rejected, crowd, count


def place_animals(crowd: Crowd, packages: list[Path], config: AnimalsConfig, seed: int,
                  ) -> tuple[list[PlacedHuman], list[RejectedHuman], int]:
    """Animals into the crowd of humans (clear of them and of the robot), drawn from "placement/animals"."""
    return place_group(crowd, packages, config, generator(seed, "placement/animals"), "animals")

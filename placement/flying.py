"""Flying objects: start poses and smooth random motion confined to the floor polygon and a z band.

Each object moves as a sum of sinusoids per axis around a centre. The XY amplitudes are bounded so
that the object's bounding sphere stays in a disc that lies inside the floor polygon, and z stays
in the band; frequencies are scaled so that the root-mean-square speed equals the drawn speed. The
orientation spins at a constant, drawn angular velocity. Collision checks against the world are off
by default (the objects are kinematic and may pass through furniture); `collision_check` samples
the motion over a horizon and redraws objects that touch the collision mesh or fly inside a closed
piece.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import fcl
import numpy as np
from scipy.spatial.transform import Rotation

from core.assets.layout import COLLISION_FILE
from core.config import FlyingObjectsConfig
from core.errors import InputError
from core.formats.asset_meta import AssetMeta, load_meta
from core.formats.placement import FlyingMotion, FlyingObject, RejectedObject, flying_pose
from core.geometry import wxyz_to_xyzw
from core.progress import get_logger
from core.seeding import generator
from placement.collide import bvh_model
from placement.world import PlacementWorld, load_mesh

FLYING_Z_BAND = (0.3, 2.5)  # m above the floor
HARMONICS = 3  # sinusoids per axis
BASE_FREQUENCY_HZ = (0.05, 0.25)  # drawn before scaling to the speed; sets the shape of the path
AMPLITUDE_FILL = (0.5, 1.0)  # fraction of the allowed excursion an object uses
MIN_MOTION_RADIUS = 0.1  # m: below this the object would only jitter in place
MAX_MOTION_RADIUS = 2.0  # m
CHECK_HORIZON = 60.0  # s of motion sampled by the optional collision check
CHECK_STEP = 0.1  # s
FLYING_MAX_TRIES = 99

log = get_logger("placement")


@dataclass
class ObjectAsset:
    path: Path
    meta: AssetMeta
    model: fcl.BVHModel
    radius: float  # bounding sphere around the local origin, m


def load_object(package: str | Path) -> ObjectAsset:
    package = Path(package)
    if not package.is_dir():
        raise InputError("object package folder not found", package)
    meta = load_meta(package, "object")
    hull = load_mesh(package / COLLISION_FILE, "collision mesh")
    radius = float(np.linalg.norm(hull.vertices, axis=1).max())
    return ObjectAsset(package, meta, bvh_model(hull.vertices, hull.faces), radius)


def sample_motion(rng: np.random.Generator, world: PlacementWorld, asset: ObjectAsset, config: FlyingObjectsConfig,
                  z_band: tuple[float, float]) -> FlyingMotion | None:
    """A random motion for the object, or None when the drawn spot leaves it no room to move."""
    x, y = world.sample_xy(rng, 1)[0]
    z_fraction, fill_xy, fill_z = rng.uniform(), rng.uniform(*AMPLITUDE_FILL), rng.uniform(*AMPLITUDE_FILL)
    weights = rng.uniform(0.2, 1.0, (3, HARMONICS))
    frequency = rng.uniform(*BASE_FREQUENCY_HZ, (3, HARMONICS))
    phase = rng.uniform(0.0, 2.0 * np.pi, (3, HARMONICS))
    speed = rng.uniform(config.speed.min, config.speed.max)
    orientation = rng.normal(size=4)
    axis = rng.normal(size=3)
    angular_speed = rng.uniform(config.angular_speed_deg.min, config.angular_speed_deg.max)

    radius = min(world.clearance(float(x), float(y)) - asset.radius, MAX_MOTION_RADIUS)
    z_lo = world.floor_height + z_band[0] + asset.radius
    z_hi = min(world.floor_height + z_band[1], world.bounds[1, 2]) - asset.radius
    if radius < MIN_MOTION_RADIUS or z_hi <= z_lo:
        return None
    zc = z_lo + z_fraction * (z_hi - z_lo)
    # |offset_xy| <= sum|A_x| + sum|A_y| bound: radius / sqrt(2) per axis keeps the norm <= radius.
    limits = np.array([radius / np.sqrt(2.0) * fill_xy, radius / np.sqrt(2.0) * fill_xy,
                       min(zc - z_lo, z_hi - zc) * fill_z])
    amplitude = weights / weights.sum(axis=1, keepdims=True) * limits[:, None]
    rms = np.sqrt(np.sum((2.0 * np.pi * frequency * amplitude) ** 2) / 2.0)
    frequency = frequency * (speed / rms) if rms > 0 else np.zeros_like(frequency)
    orientation /= np.linalg.norm(orientation)
    orientation *= 1.0 if orientation[0] >= 0 else -1.0
    axis /= np.linalg.norm(axis)
    as_tuples = lambda a: tuple(tuple(float(v) for v in row) for row in a)
    return FlyingMotion(
        center=(float(x), float(y), float(zc)), amplitude=as_tuples(amplitude), frequency_hz=as_tuples(frequency),
        phase=as_tuples(phase), orientation=tuple(float(v) for v in orientation),
        angular_velocity_deg=tuple(float(v) for v in axis * angular_speed), speed=float(speed), radius=float(radius),
        z_range=(float(z_lo - asset.radius), float(z_hi + asset.radius)),
    )


def motion_collides(world: PlacementWorld, asset: ObjectAsset, motion: FlyingMotion) -> bool:
    positions, quats = flying_pose(motion, np.arange(0.0, CHECK_HORIZON, CHECK_STEP))
    rotations = Rotation.from_quat(wxyz_to_xyzw(quats)).as_matrix()
    obj = fcl.CollisionObject(asset.model, fcl.Transform())
    for position, rotation in zip(positions, rotations):
        obj.setTransform(fcl.Transform(rotation, position))
        if world.tiles.collides(obj, position - asset.radius, position + asset.radius) or world.inside_solid(position):
            return True
    return False


def place_flying_objects(world: PlacementWorld, packages: list[Path], config: FlyingObjectsConfig, seed: int,
                         z_band: tuple[float, float] = FLYING_Z_BAND, max_tries: int = FLYING_MAX_TRIES,
                         ) -> tuple[list[FlyingObject], list[RejectedObject], int]:
    """Draw the object count and assets, then a motion for each (checked when `config.collision_check`)."""
    rng = generator(seed, "placement/flying_objects")
    count = int(rng.integers(config.count.min, config.count.max + 1))
    if count and not packages:
        raise InputError(f"{count} flying objects requested but no object packages given", field="flying_objects")
    choices = rng.integers(0, len(packages), count) if count else np.zeros(0, dtype=int)
    assets: dict[int, ObjectAsset] = {}
    placed, rejected = [], []
    for choice in choices:
        if int(choice) not in assets:
            assets[int(choice)] = load_object(packages[int(choice)])
        asset = assets[int(choice)]
        reason = "outside"
        for attempt in range(1, max_tries + 1):
            motion = sample_motion(rng, world, asset, config, z_band)
            if motion is None:
                reason = "outside"
            elif config.collision_check and motion_collides(world, asset, motion):
                reason = "collision"
            else:
                placed.append(FlyingObject(asset_id=asset.meta.id, asset_path=str(asset.path), motion=motion,
                                           tries=attempt))
                break
        else:
            rejected.append(RejectedObject(asset_id=asset.meta.id, asset_path=str(asset.path), reason=reason,
                                           tries=max_tries))
    log.info("placed %d of %d flying objects", len(placed), count)
    return placed, rejected, count

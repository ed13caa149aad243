"""The robot's start pose: collision-free, over the floor, outside closed furniture, facing open space.

The robot is placed before the humans, whose traces must then keep clear of its volume (see
`robot_solid`): a missing human is recorded, a missing robot start would fail the run. Positions
are tested with the vertical cylinder that circumscribes the robot's collision volume, so the start
is collision-free at any yaw (the robot may turn in place first). The yaw then points
where rays cast around the robot travel farthest before hitting the collision mesh or leaving the
floor polygon, averaged over neighbouring angles so that a gap between two walls does not win. Of the
first `START_CANDIDATES` collision-free positions drawn, the one with the longest such view wins: the
robot starts looking down the room (or through a doorway) rather than at a wall a metre away, so its
first frames show the scene and an explorer can set off at once.

Several robots (a multi-robot run) are placed one after the other, each keeping `ROBOT_SPACING` between its
cylinder and those of the robots placed before it (horizontally, whatever their heights).
"""

from __future__ import annotations

from collections.abc import Sequence

import fcl
import numpy as np
import trimesh

from core.config import RobotConfig
from core.errors import GradeError
from core.formats.placement import RobotStart, RobotVolume
from core.robot_catalogue import RobotBody, robot_body
from core.seeding import generator
from placement.collide import TEST_LIFT, probe_points
from placement.world import PlacementWorld, Solid

# Heights (m above the floor) of the yaw rays for ground robots: the base and the head camera.
GROUND_RAY_HEIGHTS = (0.3, 1.0)
YAW_RAYS = 72
YAW_SMOOTHING_DEG = 30.0  # half-width of the circular moving average over ray distances
ROBOT_MAX_TRIES = 2000
START_CANDIDATES = 12
# m kept free between two robots' bounding cylinders at their starts, so that each can turn and set off.
ROBOT_SPACING = 0.5
CYLINDER_SECTIONS = 32


def robot_volume(body: RobotBody) -> RobotVolume:
    """A robot's collision volume (core.robot_catalogue), as placement.json records it."""
    return RobotVolume(shape=body.volume_shape, extents=body.volume_extents)


def bounding_cylinder(volume: RobotVolume) -> tuple[float, float]:
    """Radius and height of the vertical cylinder around the volume, whatever its yaw."""
    ex, ey, ez = volume.extents
    radius = float(np.hypot(ex, ey) / 2.0) if volume.shape == "box" else ex / 2.0
    return radius, float(ez)


def open_heading(world: PlacementWorld, x: float, y: float, heights: list[float]) -> tuple[float, float]:
    """(yaw, smoothed free distance) of the most open direction seen from (x, y) at the given heights."""
    angles = np.arange(YAW_RAYS) * (2.0 * np.pi / YAW_RAYS)
    directions = np.stack([np.cos(angles), np.sin(angles), np.zeros(YAW_RAYS)], axis=1)
    free = np.min([world.free_distance((x, y, z), directions) for z in heights], axis=0)
    half = round(YAW_SMOOTHING_DEG / (360.0 / YAW_RAYS))
    smoothed = np.mean([np.roll(free, shift) for shift in range(-half, half + 1)], axis=0)
    best = int(np.argmax(smoothed))
    return float(angles[best]), float(smoothed[best])


def body_center_z(start: RobotStart, flies: bool) -> float:
    """The height of the centre of a robot's volume at its start (a flying robot's start is its centre)."""
    return start.z if flies else start.z + start.volume.extents[2] / 2.0 + TEST_LIFT


def robot_solid(start: RobotStart, flies: bool) -> Solid:
    """The robot's bounding cylinder at its start, as a closed solid the humans must keep clear of."""
    radius, height = bounding_cylinder(start.volume)
    mesh = trimesh.creation.cylinder(radius=radius, height=height, sections=CYLINDER_SECTIONS)
    mesh.apply_translation((start.x, start.y, body_center_z(start, flies)))
    # The polygonal cylinder lies inside the true one; push its corners out to circumscribe it.
    mesh.vertices[:, :2] = (mesh.vertices[:, :2] - (start.x, start.y)) / np.cos(np.pi / CYLINDER_SECTIONS) + (
        start.x, start.y)
    lo, hi = mesh.bounds
    return Solid("robot", mesh, lo, hi, probe_points(mesh))


def apart(x: float, y: float, radius: float, others: Sequence[RobotStart]) -> bool:
    """Whether a robot of bounding radius `radius` at (x, y) keeps ROBOT_SPACING from every robot in `others`."""
    return all(np.hypot(x - o.x, y - o.y) >= radius + bounding_cylinder(o.volume)[0] + ROBOT_SPACING
               for o in others)


def place_robots(world: PlacementWorld, robots: Sequence[tuple[str, RobotConfig]], seed: int,
                 max_tries: int = ROBOT_MAX_TRIES) -> list[RobotStart]:
    """Start poses of a multi-robot run's robots, in order, each clear of the ones placed before it and drawn
    from its own stream ("placement/robot/<name>")."""
    starts: list[RobotStart] = []
    for name, robot in robots:
        start = place_robot(world, robot, seed, max_tries, others=starts, stream=f"placement/robot/{name}")
        starts.append(start.model_copy(update={"name": name}))
    return starts


def place_robot(world: PlacementWorld, robot: RobotConfig, seed: int, max_tries: int = ROBOT_MAX_TRIES,
                others: Sequence[RobotStart] = (), stream: str = "placement/robot") -> RobotStart:
    """A start pose for `robot`: flying robots at a height drawn from `robot.uav.z_band` (above the floor),
    ground robots on the floor; clear of the robots in `others` (module notes)."""
    rng = generator(seed, stream)
    body = robot_body(robot)
    volume = robot_volume(body)
    radius, height = bounding_cylinder(volume)
    xy = world.sample_xy(rng, max_tries)
    altitudes = rng.uniform(robot.uav.z_band.min, robot.uav.z_band.max, max_tries)
    floor = world.floor_height
    flying = body.flies
    best: RobotStart | None = None
    found = 0
    for attempt, ((x, y), altitude) in enumerate(zip(xy, altitudes), start=1):
        if world.clearance(x, y) < radius or not apart(float(x), float(y), radius, others):
            continue
        ground = float(world.ground_heights([(x, y)])[0])  # the floor, or a terrain's ground under the robot
        if np.isnan(ground) or flying and floor + altitude - height / 2.0 <= ground:
            continue
        center = np.array([x, y, floor + altitude if flying else ground + height / 2.0 + TEST_LIFT])
        half = np.array([radius, radius, height / 2.0])
        obj = fcl.CollisionObject(fcl.Cylinder(radius, height), fcl.Transform(center))
        if world.tiles.collides(obj, center - half, center + half) or world.inside_solid(center):
            continue
        heights = [center[2]] if flying else [ground + h for h in GROUND_RAY_HEIGHTS]
        yaw, clearance = open_heading(world, float(x), float(y), heights)
        if best is None or clearance > best.heading_clearance:
            best = RobotStart(kind=robot.kind, x=float(x), y=float(y), z=float(center[2]) if flying else ground,
                              yaw=yaw, volume=volume, heading_clearance=clearance, tries=attempt)
        found += 1
        if found == START_CANDIDATES:
            break
    if best is not None:
        return best
    raise GradeError(f"no collision-free start pose for the {robot.kind} robot in {max_tries} tries; "
                     f"the environment may be too cluttered", world.package, "robot")

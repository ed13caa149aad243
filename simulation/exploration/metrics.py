"""Ground-truth measures of an exploration run, for tests and benchmarks (never used for planning).

- `reachable_free`: the free cells of an environment package's 2D map (occupancy.npz `map2d`: 0 free,
  1 occupied, 2 outside) that a disc of the robot's radius can cover, starting from its start pose:
  the disc centres it can reach by a flood fill over cells with enough clearance, grown by the radius.
- `coverage`: the fraction of such cells the robot's own map knows (free or occupied).
- `FloorCoverage`: both for one robot in one environment package, over time: the measure a run reports
  (run.json `mission.reachable_floor_coverage`) and the exploration benchmark prints.
- `flight_map`: the 2D map as a UAV flying in a slab sees it: a cell is occupied where the ground-truth surface
  voxels (occupancy.npz `voxels`) have anything in the slab, so furniture below it does not block the UAV.
- `robot_contacts`: current MuJoCo contacts of the robot's chassis with the environment, people, objects
  (or only those the robot caused: it causes a contact only through the velocity it commands, `RobotMotion`;
  those a person or object caused, walking or flying into it, dragging it or pressing it against a wall, apart);
  `contact_points`: each of them, what it touches and both sides' velocities into it (who moved into whom);
  `MoverVelocities`: how fast people and objects (MuJoCo mocap bodies, which have no velocity of their own) moved
  over the last step.
- `box_overlap`: ground-truth occupied cells or voxels inside the robot's body box (shrunk by a cell,
  for the maps' discretisation).
- `rooms` / `rooms_visited`: the floor split into rooms at its doorways (the free cells left by a morphological
  opening wider than a door), and the rooms a trajectory passes through in order.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import shapely
from scipy import ndimage

from core.assets.layout import OCCUPANCY_FILE
from core.errors import ConfigError
from core.formats.occupancy import read_occupancy, read_voxels
from simulation.backend import Robot
from simulation.exploration.frontiers import FOUR_NEIGHBOURS, label_parts
from simulation.exploration.occupancy import UNKNOWN, Grid2D
from simulation.exploration.planner import clearance_map
from simulation.physics import PhysicsWorld
from simulation.robots.mjcf import CHASSIS_BIT, KINEMATIC_BIT, STATIC_BIT

FREE_CELL = 0  # occupancy.npz map2d legend: 0 free, 1 occupied, 2 outside
OCCUPIED_CELL = 1
OUTSIDE_CELL = 2


def reachable_free(map2d: np.ndarray, origin: np.ndarray, resolution: float, start_xy: np.ndarray,
                   radius: float, discs: list[tuple[float, float, float]] = ()) -> np.ndarray:
    """Bool mask over `map2d` of the free cells a disc of `radius` can cover from `start_xy`; `discs`
    (x, y, radius) are extra obstacles, e.g. people standing where they were placed."""
    free = map2d == FREE_CELL
    if len(discs):
        i, j = np.indices(map2d.shape)
        x, y = origin[0] + (i + 0.5) * resolution, origin[1] + (j + 0.5) * resolution
        for cx, cy, r in discs:
            free &= np.hypot(x - cx, y - cy) > r
    centres = clearance_map(~free, resolution) >= radius
    labels, _ = ndimage.label(centres)
    start = tuple(np.floor((np.asarray(start_xy, dtype=np.float64)[:2] - origin) / resolution).astype(int))
    if not (0 <= start[0] < map2d.shape[0] and 0 <= start[1] < map2d.shape[1]):
        raise ValueError(f"start {start_xy} lies outside the map")
    if labels[start] == 0:  # a start right at the clearance limit: take the nearest reachable centre
        _, (ii, jj) = ndimage.distance_transform_edt(labels == 0, return_indices=True)
        start = (ii[start], jj[start])
    reached = labels == labels[start]
    return free & (ndimage.distance_transform_edt(~reached) * resolution <= radius)


def flight_map(map2d: np.ndarray, origin: np.ndarray, resolution: float, voxels: np.ndarray,
               voxels_origin: np.ndarray, voxel_size: float, z_lo: float, z_hi: float) -> np.ndarray:
    """`map2d` (same legend, same cells) with its inside cells occupied where the voxel column under the cell's
    centre has a surface voxel between heights `z_lo` and `z_hi`, else free."""
    layers = slice(max(0, int(np.floor((z_lo - voxels_origin[2]) / voxel_size))),
                   max(0, int(np.ceil((z_hi - voxels_origin[2]) / voxel_size))))
    column = voxels[:, :, layers].any(axis=2)
    i, j = np.indices(map2d.shape)
    x = origin[0] + (i + 0.5) * resolution
    y = origin[1] + (j + 0.5) * resolution
    vi = np.floor((x - voxels_origin[0]) / voxel_size).astype(int)
    vj = np.floor((y - voxels_origin[1]) / voxel_size).astype(int)
    inside = (vi >= 0) & (vi < column.shape[0]) & (vj >= 0) & (vj < column.shape[1])
    blocked = np.zeros(map2d.shape, dtype=bool)
    blocked[inside] = column[vi[inside], vj[inside]]
    inside = np.where(blocked, OCCUPIED_CELL, FREE_CELL)
    return np.where(map2d == OUTSIDE_CELL, OUTSIDE_CELL, inside).astype(map2d.dtype)


def coverage(grid: Grid2D, truth: np.ndarray, truth_origin: np.ndarray, truth_resolution: float) -> float:
    """Fraction of the `truth` cells (bool mask on another grid) whose centre the robot's map knows."""
    if not truth.any():
        raise ValueError("the ground-truth region is empty")
    i, j = np.nonzero(truth)
    centres = truth_origin + (np.stack([i, j], axis=1) + 0.5) * truth_resolution
    cells = grid.cell_of(centres)
    inside = grid.contains(cells)
    known = np.zeros(len(cells), dtype=bool)
    known[inside] = grid.state[cells[inside, 0], cells[inside, 1]] != UNKNOWN
    return float(known.mean())


@dataclass
class FloorCoverage:
    """The share of the reachable floor (`truth`, a mask over the environment package's 2D map) that a robot's
    own map knows, at every map update (`update`)."""

    truth: np.ndarray  # bool (nx, ny) over the package's map2d
    origin: np.ndarray  # (2,) m
    resolution: float  # m
    history: list[tuple[float, float]] = field(default_factory=list)  # (simulation time s, fraction)

    @classmethod
    def of_package(cls, package: Path, start_xy: np.ndarray, radius: float, slab: tuple[float, float] | None = None,
                   region: shapely.Geometry | None = None) -> FloorCoverage:
        """The floor a disc of `radius` reaches from `start_xy` in environment `package` (its occupancy.npz, which
        the robot never reads); a flying robot's (`slab`: the heights it flies between) is its `flight_map`, so
        it flies over tables. Only the part inside `region` (x, y), when one is given: the rest is not explored."""
        path = Path(package) / OCCUPANCY_FILE
        occupancy = read_occupancy(path)
        map2d, origin, resolution = occupancy.grid, occupancy.origin, occupancy.resolution
        if slab is not None:
            map2d = flight_map(map2d, origin, resolution, *read_voxels(path), *slab)
        truth = reachable_free(map2d, origin, resolution, start_xy, radius)
        if region is not None:
            i, j = np.indices(map2d.shape)
            truth &= shapely.contains_xy(region, origin[0] + (i + 0.5) * resolution, origin[1] + (j + 0.5) * resolution)
            if not truth.any():
                raise ConfigError(f"the exploration region holds none of the floor the robot can reach from "
                                  f"({start_xy[0]:.2f}, {start_xy[1]:.2f}) m", field="environment.region")
        return cls(truth, origin, resolution)

    @property
    def area(self) -> float:
        """m² of reachable floor."""
        return float(np.count_nonzero(self.truth)) * self.resolution**2

    @property
    def final(self) -> float:
        """The latest fraction (0 before the first map)."""
        return self.history[-1][1] if self.history else 0.0

    def update(self, time: float, grid: Grid2D) -> None:
        """Record the share of the floor the robot's map `grid` knows at simulation `time`."""
        self.history.append((time, coverage(grid, self.truth, self.origin, self.resolution)))


CREEP = 0.01  # m/s: a robot moving towards a contact up to this (a hold settling) moves into nothing


@dataclass(frozen=True)
class RobotMotion:
    """How a robot moves at a physics step, for `robot_contacts`: where it is, how it moves (measured) and how
    its own drive would move it (the velocity it commands, which a person dragging it does not change)."""

    position: np.ndarray  # (3,) world, m
    velocity: np.ndarray  # (3,) world, m/s, measured
    commanded: np.ndarray  # (3,) world, m/s

    @classmethod
    def of(cls, robot: Robot) -> RobotMotion:
        """A robot's motion now: its pose and odometry, and its command last set (`Robot.set_command`): a flying
        base's x, y, z joint velocities (world axes), a ground base's twist (vx, vy in its own frame)."""
        pose = robot.pose()
        command = robot.command()
        commanded = command[:3].copy() if len(command) == 6 else pose[:3, :2] @ command[:2]
        return cls(pose[:3, 3].copy(), pose[:3, :3] @ robot.velocity()[0], commanded)


@dataclass(frozen=True)
class Contact:
    """One contact point of the robot's chassis / frame at a physics step (`contact_points`)."""

    what: str  # "environment" (static geometry), "human" or "object"
    body: str  # what it touches: the kinematic body's name (human/..., object/...), or the static geom's
    point: np.ndarray  # (3,) world, m
    own: float  # m/s: the velocity the robot commands, into the other body along the contact normal (0 without
    # the robot's motion)
    theirs: float  # m/s: the other body's own velocity into the robot along the normal (the environment's: none)
    origin: np.ndarray | None = None  # (3,) world, m: a person's or object's body origin (where they are, not
    # where they touch: a UAV's X frame is touched at its arm tips, ±45° off its heading, wherever they came from)

    @property
    def caused(self) -> bool:
        """The robot's (`robot_contacts`): it heads into the other body along the normal faster, by more than
        `CREEP`, than the other comes on, or than the other moves off (slower, it closes no gap: the contact is
        ending)."""
        return self.own > abs(self.theirs) + CREEP


def contact_points(world: PhysicsWorld, motion: RobotMotion | None = None,
                   movers: np.ndarray | None = None) -> list[Contact]:
    """Current contacts of the robot's chassis / frame with static geometry, people and objects (the floor plane
    excluded), with the robot's `motion` and the `movers`' velocities (`robot_contacts`) resolved at each."""
    model, data = world.model, world.data
    found = []
    for index in range(data.ncon):
        pair = data.contact.geom[index]
        types = model.geom_contype[pair]
        if not (types[0] & CHASSIS_BIT or types[1] & CHASSIS_BIT):
            continue
        other = int(pair[1] if types[0] & CHASSIS_BIT else pair[0])
        kind = model.geom_contype[other]
        body = int(model.geom_bodyid[other])
        if kind & STATIC_BIT:
            what, name, mocap = "environment", model.geom(other).name or f"geom {other}", None
        elif kind & KINEMATIC_BIT:
            name = model.body(body).name
            what, mocap = ("human" if name.startswith("human/") else "object"), int(model.body_mocapid[body])
        else:
            continue
        point = data.contact.pos[index].copy()
        own = theirs = 0.0
        if motion is not None:
            # Into the other body along the contact normal (MuJoCo's points from geom1 to geom2): someone sliding
            # along the frame's side neither comes on nor moves off, whatever their bearing from its centre.
            towards = data.contact.frame[index][:3] * (1.0 if other == int(pair[1]) else -1.0)
            own = float(np.dot(motion.commanded, towards))
            theirs = 0.0 if mocap is None or movers is None else -float(np.dot(movers[mocap], towards))
        found.append(Contact(what, name, point, own, theirs, None if mocap is None else data.xpos[body].copy()))
    return found


def robot_contacts(world: PhysicsWorld, motion: RobotMotion | None = None,
                   movers: np.ndarray | None = None) -> dict[str, int]:
    """Current contacts of the robot's chassis / frame, by what it touches: "environment" (static
    geoms; the floor plane excluded), "human" and "object" (kinematic bodies named human/..., object/...).

    With the robot's `motion`, only the contacts the robot caused count. A robot causes a contact only through
    what it commands: a contact counts while the velocity the robot commands has a component along the contact
    normal, into the other body, greater, by more than `CREEP`, than the other body's own velocity towards the
    robot there (the environment's: none; people's and objects': `movers`, each mocap body's world velocity
    (nmocap, 3), `MoverVelocities`; default: at rest), or than its velocity away from it: a robot slower than
    someone moving off closes no gap (the contact, begun by their passing or turning into it, is ending). So a
    person who walks into a hovering robot, drags one whose hold gives way or presses it against a wall, moves
    it, but it does not command that motion: those contacts are theirs, whatever the robot's measured velocity;
    a robot flying or driving into a wall, into someone standing or faster into someone coming on, or whose hold
    flies it back into whoever pushed it, caused them."""
    counts = {"environment": 0, "human": 0, "object": 0}
    for contact in contact_points(world, motion, movers):
        if motion is None or contact.caused:
            counts[contact.what] += 1
    return counts


class MoverVelocities:
    """The world velocity of every kinematic (mocap) body over the last `WINDOW` s, from its positions then and now
    (the caller poses them, MuJoCo keeps no velocity for them, and an animation moves them only on its frames, a
    few physics steps apart). `step()` after each physics step."""

    WINDOW = 0.1  # s: several frames of a human's animation (30 fps)

    def __init__(self, world: PhysicsWorld):
        self.world = world
        steps = max(round(self.WINDOW / world.model.opt.timestep), 1)
        self._positions = deque([world.data.mocap_pos.copy()], maxlen=steps + 1)

    def step(self) -> np.ndarray:
        """(nmocap, 3) m/s."""
        self._positions.append(self.world.data.mocap_pos.copy())
        span = (len(self._positions) - 1) * self.world.model.opt.timestep
        return (self._positions[-1] - self._positions[0]) / span


def box_overlap(occupied: np.ndarray, origin: np.ndarray, cell: float, pose: np.ndarray,
                half_extents: np.ndarray) -> int:
    """Occupied cells (2D map or 3D voxels) whose centre lies inside a box (world <- box `pose`, 4x4)
    shrunk by one cell on every side."""
    dims = occupied.ndim
    half = np.asarray(half_extents, dtype=np.float64)[:dims] - cell
    if np.any(half <= 0):
        return 0
    reach = float(np.linalg.norm(half))
    centre = pose[:dims, 3]
    lo = np.maximum(np.floor((centre - reach - origin) / cell).astype(int), 0)
    hi = np.minimum(np.ceil((centre + reach - origin) / cell).astype(int) + 1, occupied.shape)
    if np.any(hi <= lo):
        return 0
    window = occupied[tuple(slice(a, b) for a, b in zip(lo, hi))]
    cells = np.argwhere(window) + lo
    if not len(cells):
        return 0
    points = origin + (cells + 0.5) * cell
    local = (points - centre) @ pose[:dims, :dims]
    return int(np.count_nonzero(np.all(np.abs(local) <= half, axis=1)))


def rooms(map2d: np.ndarray, resolution: float, door: float = 1.2, min_area: float = 4.0) -> np.ndarray:
    """Room labels (int, 0: none) over `map2d`'s free cells: what is left of the free floor after an opening
    by a square `door` m wide, which closes doorways (narrower than that) and keeps rooms (wider), in
    connected parts of at least `min_area` m^2."""
    side = max(1, round(door / resolution))
    core = ndimage.binary_opening(map2d == FREE_CELL, structure=np.ones((side, side), dtype=bool))
    return label_parts(core, math.ceil(min_area / resolution**2 - 1e-6), FOUR_NEIGHBOURS)[0]


def rooms_visited(labels: np.ndarray, origin: np.ndarray, resolution: float, xy: np.ndarray) -> list[int]:
    """The rooms (labels of `rooms`) positions `xy` (N, 2) pass through, in order, each stay once; a position
    off every room (a doorway) counts for the nearest."""
    if not labels.any():
        raise ValueError("no room in the map")
    cells = np.floor((np.asarray(xy, dtype=np.float64) - origin) / resolution).astype(int)
    cells = np.clip(cells, 0, np.array(labels.shape) - 1)
    _, (ii, jj) = ndimage.distance_transform_edt(labels == 0, return_indices=True)
    found = labels[ii[cells[:, 0], cells[:, 1]], jj[cells[:, 0], cells[:, 1]]]
    return [int(room) for k, room in enumerate(found) if k == 0 or room != found[k - 1]]

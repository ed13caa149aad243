"""Frontier exploration: the occupancy map against analytic free space, frontiers, goals and paths on
hand-made grids, moving-obstacle decay, and both robots exploring the demo house without a collision."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import CONFIGS

from core.config import RobotConfig
from core.config_io import load_experiment
from core.errors import ConfigError, InputError
from core.robot_catalogue import robot_body
from pipeline.prepare import prepare
from simulation.embedded import EmbeddedWorld
from simulation.exploration import (
    FREE,
    OCCUPIED,
    UNKNOWN,
    ExplorationArea,
    Explorer,
    ExplorerParams,
    GoalParams,
    Grid2D,
    PathFollower,
    VoxelMap,
    choose_goal,
    cost_map,
    depth_rays,
    explore,
    frontier_clusters,
    frontier_mask,
    path_is_clear,
    plan_path,
    project_ground,
    search,
)
from simulation.exploration.metrics import (
    MoverVelocities,
    RobotMotion,
    box_overlap,
    coverage,
    reachable_free,
    robot_contacts,
)
from simulation.exploration.occupancy import mapping_stride
from simulation.render import Camera
from simulation.robots.tiago_model import CHASSIS_HALF_XY
from simulation.robots.uav_model import FRAME_HALF_SIZE

RES = 0.1

# ---------------------------------------------------------------- synthetic depth in a box room

ROOM = (np.array([0.0, 0.0, 0.0]), np.array([6.0, 4.0, 3.0]))
CRATE = (np.array([3.5, 2.5, 0.0]), np.array([4.5, 3.3, 0.6]))  # a low box standing on the floor


def ray_box(origin: np.ndarray, directions: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, ...]:
    """(t_enter, t_exit) of rays against an axis-aligned box (slab method); t_enter > t_exit: a miss."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (lo - origin) / directions, (hi - origin) / directions
    return np.nanmax(np.minimum(t1, t2), axis=1), np.nanmin(np.maximum(t1, t2), axis=1)


def camera_pose(eye, yaw: float, pitch_down: float) -> np.ndarray:
    """World <- optical frame (z forward, x right, y down) looking along yaw, pitched down."""
    forward = np.array([math.cos(pitch_down) * math.cos(yaw), math.cos(pitch_down) * math.sin(yaw),
                        -math.sin(pitch_down)])
    right = np.array([math.sin(yaw), -math.cos(yaw), 0.0])
    pose = np.eye(4)
    pose[:3, :3] = np.stack([right, np.cross(forward, right), forward], axis=1)
    pose[:3, 3] = eye
    return pose


def synthetic_depth(camera: Camera, pose: np.ndarray) -> np.ndarray:
    """Exact z-depth of the room (walls, floor, ceiling) and the crate seen from `pose`."""
    v, u = np.mgrid[0:camera.height, 0:camera.width]
    local = np.linalg.solve(camera.K, np.stack([u.ravel(), v.ravel(), np.ones(u.size)]))
    directions = (pose[:3, :3] @ local).T  # z = 1 in the optical frame, so t is the depth
    origin = pose[:3, 3]
    _, t = ray_box(origin, directions, *ROOM)
    enter, leave = ray_box(origin, directions, *CRATE)
    t = np.where((enter <= leave) & (enter > 0) & (enter < t), enter, t)
    return t.reshape(camera.height, camera.width)


def in_box(points: np.ndarray, lo: np.ndarray, hi: np.ndarray, margin: float = 0.0) -> np.ndarray:
    return np.all((points >= lo - margin) & (points <= hi + margin), axis=-1)


def visible(eye: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Whether the segment from `eye` to each point misses the crate."""
    enter, leave = ray_box(eye, points - eye, *CRATE)
    return ~((enter <= leave) & (leave > 0) & (enter < 1.0))


def scan(vmap: VoxelMap, camera: Camera, eye, pitches, yaws: int, hits_above: float | None = None) -> None:
    for pitch in pitches:
        for k in range(yaws):
            pose = camera_pose(eye, 2 * math.pi * k / yaws, math.radians(pitch))
            origin, ends, returned = depth_rays(synthetic_depth(camera, pose), camera.K, pose, max_range=10.0)
            hits = returned if hits_above is None else returned & (ends[:, 2] >= hits_above)
            vmap.integrate(origin, ends, hits, time=0.0)


def test_voxel_map_of_a_box_room_equals_the_analytic_free_space_within_a_cell():
    camera = Camera.from_fov(128, 96, 100.0)
    eye = np.array([2.05, 1.55, 1.25])
    vmap = VoxelMap(ROOM[0] - 0.5, ROOM[1] + 0.5, RES)
    scan(vmap, camera, eye, pitches=(-60.0, 0.0, 60.0), yaws=8)
    centres = vmap.lo + (np.indices(vmap.shape).reshape(3, -1).T + 0.5) * RES
    free, occupied = vmap.free.reshape(-1), vmap.occupied.reshape(-1)
    # Free voxels lie in the room's free space, up to one cell into a surface.
    in_crate = in_box(centres, *CRATE, margin=-RES)
    assert np.all(in_box(centres[free], *ROOM, margin=RES)) and not np.any(free & in_crate)
    # Occupied voxels lie within one cell of a surface (room walls, floor, ceiling, crate faces).
    to_room = np.minimum(np.abs(centres - ROOM[0]), np.abs(centres - ROOM[1])).min(axis=1)
    near_crate = in_box(centres, *CRATE, margin=RES) & ~in_crate
    assert np.all((to_room[occupied] <= RES) | near_crate[occupied])
    assert np.count_nonzero(occupied) > 1000
    # Every voxel more than a cell inside the free space that the camera can see is known free.
    inner = in_box(centres, *ROOM, margin=-RES) & ~in_box(centres, *CRATE, margin=RES) & visible(eye, centres)
    assert np.all(free[inner])
    # Nothing outside the room or inside the crate was observed.
    hidden = ~in_box(centres, *ROOM, margin=RES) | in_crate
    assert not np.any(vmap.observed.reshape(-1)[hidden])


def test_ground_map_of_a_box_room_equals_the_analytic_floor_within_a_cell():
    camera = Camera.from_fov(128, 96, 100.0)
    vmap = VoxelMap(np.array([-0.5, -0.5, -RES / 2]), np.array([6.5, 4.5, 1.5]), RES)
    eyes = [np.array([1.55, 1.25, 1.2]), np.array([4.55, 1.25, 1.2]), np.array([1.55, 3.05, 1.2])]
    for eye in eyes:
        scan(vmap, camera, eye, pitches=(25.0,), yaws=8, hits_above=RES / 2)
    grid = project_ground(vmap)
    x, y = grid.centers()
    cells = np.stack([x, y, np.zeros_like(x)], axis=-1).reshape(-1, 3)
    state = grid.state.reshape(-1)
    inside_room = in_box(cells[:, :2], ROOM[0][:2], ROOM[1][:2], margin=RES)
    crate_2d = in_box(cells[:, :2], CRATE[0][:2], CRATE[1][:2], margin=-RES)
    assert np.all(inside_room[state == FREE]) and not np.any(crate_2d & (state == FREE))
    # The crate is occupied; so are the cells along the walls; nothing else is.
    assert np.all(state[crate_2d] == OCCUPIED)
    to_wall = np.minimum(np.abs(cells[:, :2] - ROOM[0][:2]), np.abs(cells[:, :2] - ROOM[1][:2])).min(axis=1)
    near_crate = in_box(cells[:, :2], CRATE[0][:2], CRATE[1][:2], margin=RES)
    assert np.all((to_wall[state == OCCUPIED] <= RES) | near_crate[state == OCCUPIED])
    # Floor a cell or more from walls and the crate, seen within 3 m by some camera, is free.
    seen = np.zeros(len(cells), dtype=bool)
    for eye in eyes:
        distance = np.linalg.norm(cells[:, :2] - eye[:2], axis=1)
        # The lowest ray of a 100 x 75 deg camera pitched 25 deg down reaches the floor ~0.6 m out.
        seen |= (distance >= 0.8) & (distance <= 3.0) & visible(eye, cells)
    inner = in_box(cells[:, :2], ROOM[0][:2], ROOM[1][:2], margin=-RES) & ~near_crate & seen
    assert np.count_nonzero(inner) > 1500 and np.all(state[inner] == FREE)
    assert np.all(state[~inside_room] == UNKNOWN)


def test_a_person_who_walked_off_does_not_leave_a_wall_but_furniture_stays():
    vmap = VoxelMap(np.zeros(3), np.array([4.0, 1.0, 1.0]), RES, decay=2.0)
    origin = np.array([0.05, 0.55, 0.55])
    wall = np.array([[3.95, 0.55, 0.55]])
    for t in range(5):  # the corridor is seen free up to the far wall, five times
        vmap.integrate(origin, wall, np.array([True]), float(t))
    person = vmap.voxel_of(np.array([2.05, 0.55, 0.55]))
    assert vmap.free[tuple(person)] and vmap.occupied[tuple(vmap.voxel_of(wall[0]))]
    vmap.integrate(origin, np.array([[2.05, 0.55, 0.55]]), np.array([True]), 5.0)  # someone steps in
    assert vmap.recently_hit(5.0)[tuple(person)] and vmap.dynamic[tuple(person)]
    assert vmap.moving(5.0)[tuple(person)] and vmap.moving(5.0).sum() == 1  # the wall is no mover
    # Looked at elsewhere a moment later, the person is no longer seen moving there, though still dynamic.
    vmap.integrate(origin, np.array([[0.5, 0.55, 0.55]]), np.array([False]), 5.2)
    assert vmap.dynamic[tuple(person)] and not vmap.moving(5.2).any()
    assert vmap.recently_hit(6.9)[tuple(person)] and not vmap.recently_hit(7.1)[tuple(person)]
    # Not looked at again, the person's voxel decays back to free; the wall, seen first from unknown, stays.
    vmap.integrate(origin, np.array([[0.5, 0.55, 0.55]]), np.array([False]), 7.5)
    assert vmap.free[tuple(person)] and not vmap.dynamic[tuple(person)]
    assert vmap.occupied[tuple(vmap.voxel_of(wall[0]))]


def test_a_persons_trail_stops_blocking_once_seen_through_and_the_person_blocks_where_they_stand():
    """Someone walking down a corridor seen free: each voxel they stood in blocks until a later frame sees through
    it (they walked on), not for the decay behind them; where they stand now, and a voxel not seen since, blocks."""
    vmap = VoxelMap(np.zeros(3), np.array([4.0, 1.0, 1.0]), RES, decay=2.0)
    origin = np.array([0.05, 0.55, 0.55])
    wall = np.array([[3.95, 0.55, 0.55]])
    for t in range(5):
        vmap.integrate(origin, wall, np.array([True]), float(t))
    steps = [np.array([x, 0.55, 0.55]) for x in (2.55, 2.75, 2.95)]  # walking away from the camera, 1 m/s
    for k, person in enumerate(steps):
        vmap.integrate(origin, person[None], np.array([True]), 5.0 + 0.2 * k)
    now = 5.4
    blocked = vmap.recently_hit(now)
    assert blocked[tuple(vmap.voxel_of(steps[-1]))]  # where they stand
    # The voxels they stood in before lie on the ray to where they stand now: seen through, free again.
    for person in steps[:-1]:
        assert not blocked[tuple(vmap.voxel_of(person))] and vmap.free[tuple(vmap.voxel_of(person))]
    # Looked at elsewhere, the voxel where they were last seen keeps blocking for the decay.
    vmap.integrate(origin, np.array([[0.5, 0.55, 0.55]]), np.array([False]), 6.0)
    assert vmap.recently_hit(6.9)[tuple(vmap.voxel_of(steps[-1]))]
    assert not vmap.recently_hit(7.5)[tuple(vmap.voxel_of(steps[-1]))]


# ---------------------------------------------------------------- frontiers, goals and paths on hand-made grids


def grid_from(rows: list[str], resolution: float = RES) -> Grid2D:
    """'#' occupied, '.' free, '?' unknown; the first string is the row y = ny - 1 (drawn as seen)."""
    codes = {"#": OCCUPIED, ".": FREE, "?": UNKNOWN}
    state = np.array([[codes[c] for c in row] for row in rows], dtype=np.int8)[::-1].T
    return Grid2D(state, np.zeros(2), resolution)


def test_frontier_of_a_corridor_is_the_cells_at_its_open_end():
    rows = ["#" * 30] + ["." * 20 + "?" * 10] * 5 + ["#" * 30]
    grid = grid_from(rows)
    mask = frontier_mask(grid.state)
    assert sorted(map(tuple, np.argwhere(mask))) == [(19, j) for j in range(1, 6)]
    _, clusters = frontier_clusters(mask, min_size=3)
    assert len(clusters) == 1 and clusters[0].size == 5
    np.testing.assert_allclose(clusters[0].centroid, [19.0, 3.0])
    assert frontier_clusters(mask, min_size=6)[1] == []
    # Outside the exploration region there is nothing to explore.
    region = np.ones(grid.shape, dtype=bool)
    region[15:, :] = False
    assert not frontier_mask(grid.state, region).any()


def l_shaped_room() -> Grid2D:
    """An L: a 4 m x 1.6 m arm along x joined to a 1.6 m x 4 m arm along y, walls around."""
    state = np.full((42, 42), OCCUPIED, dtype=np.int8)
    state[1:41, 1:17] = FREE
    state[1:17, 1:41] = FREE
    return Grid2D(state, np.zeros(2), RES)


def test_path_round_an_l_keeps_the_safety_margin_and_its_cost_is_the_corner_route():
    grid = l_shaped_room()
    radius, margin = 0.2, 0.3
    costs = cost_map(grid.state == OCCUPIED, grid.state == FREE, RES, radius, margin)
    start, goal = (35, 8), (8, 35)  # the ends of the two arms, 0.55 m from the walls
    path = plan_path(costs, start, goal)
    assert path is not None and tuple(path[0]) == start and tuple(path[-1]) == goal
    assert np.abs(np.diff(path, axis=0)).max() == 1  # 8-connected steps
    # Each arm is 1.6 m wide: its middle six cells keep radius + margin from both walls, and the path
    # stays in them all the way, so it pays no penalty: its cost is its length.
    assert costs.clearance[path[:, 0], path[:, 1]].min() >= radius + margin - 1e-9
    length = np.linalg.norm(np.diff(path, axis=0), axis=1).sum() * RES
    assert search(costs, start).cost[goal] == pytest.approx(length)
    # No longer than the shortest path over the cells that keep radius + margin (which may not step
    # diagonally past a cell with less; the margin path may, as only the radius is a hard limit).
    band = plan_path(cost_map(grid.state == OCCUPIED, grid.state == FREE, RES, radius + margin, 0.0), start, goal)
    assert length <= np.linalg.norm(np.diff(band, axis=0), axis=1).sum() * RES + 1e-9
    assert length <= 54 * RES + 1e-9  # no longer than the right-angled route through the arms' middles
    # Without the margin the path hugs the inner corner and is shorter.
    hugging = plan_path(cost_map(grid.state == OCCUPIED, grid.state == FREE, RES, radius, 0.0), start, goal)
    hugging_length = np.linalg.norm(np.diff(hugging, axis=0), axis=1).sum() * RES
    assert costs.clearance[hugging[:, 0], hugging[:, 1]].min() < radius + margin
    assert hugging_length < length - 0.1


def test_no_path_through_a_gap_narrower_than_the_robot():
    rows = ["#" * 21] + ["." * 21] * 9 + ["#" * 10 + "." + "#" * 10] + ["." * 21] * 9 + ["#" * 21]
    grid = grid_from(rows)
    start, goal = (10, 5), (10, 15)
    costs = cost_map(grid.state == OCCUPIED, grid.state == FREE, RES, radius=0.15, safety_margin=0.3)
    assert not costs.traversable[10, 10]
    assert plan_path(costs, start, goal) is None
    # Widen the gap to 5 cells (0.5 m) and a 0.15 m disc passes, through the middle of the gap only.
    wide = grid.state.copy()
    wide[8:13, 10] = FREE
    costs = cost_map(wide == OCCUPIED, wide == FREE, RES, radius=0.15, safety_margin=0.3)
    path = plan_path(costs, start, goal)
    assert path is not None and any(tuple(c) == (10, 10) for c in path)
    assert not path_is_clear(cost_map(grid.state == OCCUPIED, grid.state == FREE, RES, 0.15, 0.3), path)


def test_no_diagonal_squeeze_between_two_blocked_corners():
    state = np.full((3, 3), FREE, dtype=np.int8)
    state[1, 0] = state[0, 1] = OCCUPIED
    costs = cost_map(np.zeros((3, 3), dtype=bool), state == FREE, RES, radius=0.0, safety_margin=0.0)
    assert plan_path(costs, (0, 0), (1, 1)) is None


def test_goal_is_the_best_reachable_view_of_a_frontier():
    # A known room (x < 3 m) with unknown space beyond x = 3 m, and a small unknown nook at the far left.
    state = np.full((60, 30), UNKNOWN, dtype=np.int8)
    state[:30, :] = FREE
    state[0, :] = state[:, 0] = state[:, -1] = OCCUPIED
    state[1:3, 14:16] = UNKNOWN  # the nook: 4 unknown cells
    costs = cost_map(state == OCCUPIED, state == FREE, RES, radius=0.2, safety_margin=0.0)
    tree = search(costs, (10, 15))
    params = GoalParams(view_distance=1.0, gain_radius=1.5, distance_weight=0.25)
    frontiers = frontier_mask(state)
    goal = choose_goal(frontiers, state == UNKNOWN, tree.cost, RES, params)
    assert goal is not None and goal.target[0] == 29  # the big unknown side wins over the nook
    assert np.hypot(goal.cell[0] - goal.target[0], goal.cell[1] - goal.target[1]) * RES <= 1.0
    assert costs.traversable[goal.cell] and goal.cost == pytest.approx(tree.cost[goal.cell])
    # The nearest such view: 1 m short of the frontier, straight ahead of the robot.
    assert goal.cell == (19, 15)
    # Unreachable frontiers give no goal.
    assert choose_goal(frontiers, state == UNKNOWN, np.full(state.shape, np.inf), RES, params) is None


def test_path_follower_carrot_and_progress():
    follower = PathFollower(np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 2.0]]), lookahead=0.5)
    np.testing.assert_allclose(follower.update(np.array([0.0, 0.1])), [0.5, 0.0])
    for x in np.arange(0.1, 1.95, 0.1):  # the robot drives along the first leg, a little off the line
        carrot = follower.update(np.array([x, -0.05]))
    np.testing.assert_allclose(carrot, [2.0, 0.4])  # the carrot turned the corner
    assert follower.remaining == pytest.approx(2.1)
    # Progress never goes back, even when the robot is pushed back along the path.
    follower.update(np.array([1.0, 0.0]))
    assert follower.remaining <= 2.1
    for y in np.arange(0.0, 2.0, 0.1):
        carrot = follower.update(np.array([2.0, y]))
    np.testing.assert_allclose(carrot, [2.0, 2.0])
    np.testing.assert_allclose(follower.ahead(), [[2.0, 2.0]])


def test_bad_exploration_settings_name_the_field(tmp_path):
    config = load_experiment(CONFIGS / "demo.yaml", ["robot.sensors.cameras=[]"])  # IMUs only: nothing to map with
    with pytest.raises(ConfigError) as error:
        ExplorerParams.from_config(config)
    assert error.value.field == "robot.sensors.cameras"
    config = load_experiment(CONFIGS / "demo.yaml", ["exploration.planner=none"])
    with pytest.raises(ConfigError) as error:
        ExplorerParams.from_config(config, camera="no_such_camera")
    assert "no_such_camera" in error.value.message
    for cameras, mention in (("[camera, back]", "['back'], which robot does not carry"),
                             ("[camera, camera]", "['camera'] more than once")):
        with pytest.raises(ConfigError, match="cameras") as error:
            load_experiment(CONFIGS / "demo.yaml", [f"exploration.cameras={cameras}"])
        assert mention in error.value.message
    area = ExplorationArea(np.zeros(3), np.ones(3), 0.0)
    with pytest.raises(ConfigError) as error:
        explore(None, config, area)  # refused before the world is touched
    assert error.value.field == "exploration.planner"
    with pytest.raises(InputError):
        ExplorationArea.from_package(tmp_path / "missing")


# ---------------------------------------------------------------- exploring the demo house

BUDGET = 90.0  # simulated seconds; the whole house takes ~140 s (UAV) and ~75 s (TIAGo)
MIN_COVERAGE = 0.8
CHECK_EVERY = 8  # physics steps between ground-truth body checks (30 Hz)
EXPLORE_OVERRIDES = ["humans.count.min=2", "humans.count.max=2", "flying_objects.count.min=0",
                     "flying_objects.count.max=0", "robot.sensors.imus=[]", "robot.sensors.cameras.0.width=64",
                     "robot.sensors.cameras.0.height=48", "robot.sensors.cameras.0.fov_deg=100",
                     "robot.sensors.cameras.0.outputs=[depth]"]
ROBOT_OVERRIDES = {
    "uav": ["robot.kind=uav"],
    # TIAGo's head camera, tilted 25 deg down to see the floor ahead.
    "tiago_omni": ["robot.kind=tiago_omni", "robot.sensors.cameras.0.mount.link=head_2_link",
                   "robot.sensors.cameras.0.mount.rpy_deg=[0,25,0]"],
}


@pytest.mark.parametrize("kind", ["uav", "tiago_omni"])
@pytest.mark.slow
def test_robot_explores_the_demo_house_without_touching_anything(kind, asset_cache, tmp_path):
    config = load_experiment(CONFIGS / "demo.yaml", EXPLORE_OVERRIDES + ROBOT_OVERRIDES[kind]
                             + [f"assets_dir={asset_cache}"])
    prepared = prepare(config, tmp_path)
    world = EmbeddedWorld(config, prepared.scene)
    occupancy = np.load(prepared.environment / "occupancy.npz")
    map2d, origin2d = occupancy["map2d"], occupancy["map2d_origin"]
    res2d = float(occupancy["map2d_resolution"])
    start = world.robot().pose()[:3, 3]
    truth = reachable_free(map2d, origin2d, res2d, start[:2], robot_body(RobotConfig(kind=kind)).radius)
    assert truth.sum() * res2d**2 > 30.0  # the three rooms, not just the start room

    contacts = {"environment": 0, "human": 0, "object": 0}
    inside, people = [], set()
    model = world.physics.model
    human_geoms = [g for g in range(model.ngeom) if model.body(model.geom_bodyid[g]).name.startswith("human/")]

    movers: list[MoverVelocities] = []

    def on_step(b: EmbeddedWorld) -> None:
        # A person walking into the robot is no fault of the robot's: count the contacts the robot caused, those
        # its command moved it towards faster than what it touches came on.
        if not movers:
            movers.append(MoverVelocities(b.physics))
        for key, count in robot_contacts(b.physics, RobotMotion.of(b.robot()), movers[0].step()).items():
            contacts[key] += count
        if round(b.time / b.timestep) % CHECK_EVERY == 0:
            for g in human_geoms:  # where people were, in map cells, with their capsule's radius
                x, y = b.physics.data.geom_xpos[g][:2]
                people.add((round(x / res2d), round(y / res2d), float(model.geom_size[g][0])))
            pose = b.robot().pose()
            if kind == "uav":  # the frame box against the 3D voxels (10 cm)
                inside.append(box_overlap(occupancy["voxels"], occupancy["voxels_origin"],
                                          float(occupancy["voxel_size"]), pose, np.array(FRAME_HALF_SIZE)))
            else:  # the chassis footprint against the 2D map (5 cm)
                inside.append(box_overlap(map2d == 1, origin2d, res2d, pose, np.array(CHASSIS_HALF_XY)))

    area = ExplorationArea.from_package(prepared.environment)
    params = ExplorerParams.from_config(config, budget=BUDGET)
    explorer = Explorer(world.robot(), config.robot, params, area)
    result = explorer.run(on_step)
    # People standing in a doorway close the rooms behind it: the floor to cover is the floor reachable
    # without passing where a person was during the run.
    discs = [(i * res2d, j * res2d, r) for i, j, r in people]
    reachable = reachable_free(map2d, origin2d, res2d, start[:2], robot_body(RobotConfig(kind=kind)).radius,
                               discs)
    covered = coverage(result.grid, reachable, origin2d, res2d)
    assert covered >= MIN_COVERAGE, (covered, result.reason, result.time)
    assert contacts == {"environment": 0, "human": 0, "object": 0}
    assert len(inside) > 100 and max(inside) == 0
    assert result.goals_reached > 3 and [t for t, _ in result.history] == sorted(t for t, _ in result.history)
    fractions = [f for _, f in result.history]
    assert fractions[-1] > fractions[0]


def test_mapping_stride_keeps_sampled_rays_within_half_a_voxel():
    K = np.array([[320.0, 0, 319.5], [0, 320.0, 239.5], [0, 0, 1]])
    stride = mapping_stride(K, 6.0, 0.1)
    assert stride == 2 and 6.0 * stride / 320.0 <= 0.05  # neighbours' spacing at max range
    assert mapping_stride(np.diag([27.0, 27.0, 1.0]), 6.0, 0.1) == 1
    depth = np.arange(1, 13, dtype=np.float64).reshape(3, 4)
    depth[1, 2] = 0.0
    pose = np.eye(4)
    _, ends, returned = depth_rays(depth, K, pose, 100.0)
    _, sub_ends, sub_returned = depth_rays(depth, K, pose, 100.0, stride=2)
    keep = np.zeros((3, 4), dtype=bool)
    keep[::2, ::2] = True
    assert np.allclose(sub_ends, ends[keep.ravel()]) and np.array_equal(sub_returned, returned[keep.ravel()])

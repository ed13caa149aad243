"""A ground base's driver (simulation.exploration.drivers.BaseDriver) against real MuJoCo contacts: the lightweight
TIAGo in a world of one wall, the contacts it causes counted by `robot_contacts`'s rule (its command towards the
contact)."""

from __future__ import annotations

import numpy as np

from core.config import RobotConfig
from core.robot_catalogue import TIAGO_CHASSIS_HALF_XY, robot_body
from simulation.exploration.drivers import BaseDriver
from simulation.exploration.metrics import RobotMotion, robot_contacts
from simulation.exploration.occupancy import FREE, OCCUPIED, Grid2D
from simulation.physics import StartPose, build_world
from simulation.physics.environment import ConvexPiece, EnvironmentCollision
from simulation.robots.tiago_model import lightweight

CONTROL_EVERY = 4  # physics steps per control period (the explorer's 60 Hz at 240 Hz physics)
WALL_X = 1.0  # m: the wall's face towards the base, which starts at the origin facing it


class BaseRobot:
    """The bare MuJoCo TIAGo as the driver sees a robot: its base's pose, odometry and the twist last sent."""

    def __init__(self, world):
        self.world, self._command = world, np.zeros(3)

    def pose(self) -> np.ndarray:
        return self.world.base_pose()

    def velocity(self) -> tuple[np.ndarray, np.ndarray]:
        return self.world.base_velocity()

    def set_command(self, command: np.ndarray) -> None:
        self._command = np.array(command, dtype=np.float64)
        self.world.set_base_twist(self._command)

    def command(self) -> np.ndarray:
        return self._command.copy()


def wall() -> EnvironmentCollision:
    box = np.array([[x, y, z] for x in (WALL_X, WALL_X + 0.2) for y in (-1.5, 1.5) for z in (0.0, 1.5)])
    return EnvironmentCollision(0.0, (ConvexPiece("/wall", None, "hull", box),))


def test_a_base_stopped_short_of_a_wall_and_told_to_stay_does_not_drive_on_into_it():
    """The base drives at full speed for the wall ahead and is stopped at once 0.1 m short of it (`give_way`: a
    person walked into it, say), then told to stay where it is (`go` to its own position) for 2 s. Its command then
    starts from rest, within the acceleration limit of the stop, and it never touches the wall; a command that
    went on from the twist it had before the stop (full speed, braking within the acceleration limit: 0.5 m from
    1 m/s) drove it into the wall."""
    config = RobotConfig(kind="tiago_omni")
    body = robot_body(config)
    world = build_world(lightweight(), StartPose(0.0, 0.0), wall())
    robot = BaseRobot(world)
    dt = world.model.opt.timestep
    driver = BaseDriver(robot, body, CONTROL_EVERY * dt)
    limits = driver.controller.limits
    far, stop_at = np.array([5.0, 0.0]), WALL_X - TIAGO_CHASSIS_HALF_XY[0] - 0.1
    step = 0
    while robot.pose()[0, 3] < stop_at:
        driver.go(far, 0.0) if step % CONTROL_EVERY == 0 else driver.update()
        world.step()
        step += 1
    assert np.linalg.norm(robot.velocity()[0][:2]) > 0.9 * limits.max_speed  # at full speed, too fast to stop there
    driver.give_way()
    here = robot.pose()[:2, 3].copy()
    caused = touching = 0
    speeds = []
    for k in range(round(2.0 / dt)):
        if k % CONTROL_EVERY == 0:
            driver.go(here, 0.0)
            speeds.append(float(np.linalg.norm(robot.command()[:2])))
        else:
            driver.update()
        world.step()
        caused += any(robot_contacts(world, RobotMotion.of(robot)).values())
        touching += any(robot_contacts(world).values())
    assert touching == 0 and caused == 0
    front = robot.pose()[0, 3] + TIAGO_CHASSIS_HALF_XY[0]
    assert WALL_X - front > 0.05
    # From rest, the twist towards a target a few millimetres off changes by at most the acceleration limit.
    assert speeds[0] <= limits.max_acceleration * CONTROL_EVERY * dt + 1e-9
    assert max(speeds) < 0.05


def box_map(lo: tuple[float, float], hi: tuple[float, float], resolution: float = 0.1) -> Grid2D:
    """A 2D map of the floor round the origin, free but for the cells a box from `lo` to `hi` (x, y) reaches into:
    what a robot's map holds of it, a whole cell wherever it has any of the box."""
    origin = np.array([-2.0, -2.0])
    state = np.full((60, 60), FREE, dtype=np.int8)
    first = np.floor((np.array(lo) - origin) / resolution).astype(int)
    last = np.ceil((np.array(hi) - origin) / resolution).astype(int)
    state[first[0]:last[0], first[1]:last[1]] = OCCUPIED
    return Grid2D(state, origin, resolution)


def test_a_base_that_knows_a_box_does_not_cut_its_corner():
    """The base goes straight for a point beyond a box's corner, as a carrot on a path round the box pulls it,
    the straight line taking its chassis through the corner. Told nothing of the box, it drives into it, those steps its own;
    told its map (`know`), a whole cell round the box's every part, it never touches the box: its guard vetoes every
    twist whose motion and braking would sweep the chassis into a cell the map holds occupied."""
    lo, hi = (0.6, 0.45), (1.4, 1.5)
    piece = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (0.0, 1.0)])
    target = np.array([2.5, 0.9])

    def drive(known: bool) -> tuple[int, int]:
        world = build_world(lightweight(), StartPose(0.0, 0.0),
                            EnvironmentCollision(0.0, (ConvexPiece("/box", None, "hull", piece),)))
        robot = BaseRobot(world)
        dt = world.model.opt.timestep
        driver = BaseDriver(robot, robot_body(RobotConfig(kind="tiago_omni")), CONTROL_EVERY * dt)
        if known:
            driver.know(box_map(lo, hi))
        caused = touching = 0
        for k in range(round(4.0 / dt)):
            driver.go(target, 0.0) if k % CONTROL_EVERY == 0 else driver.update()
            world.step()
            caused += any(robot_contacts(world, RobotMotion.of(robot)).values())
            touching += any(robot_contacts(world).values())
        return touching, caused

    touching, caused = drive(known=False)
    assert touching > 50 and caused > 50
    assert drive(known=True) == (0, 0)

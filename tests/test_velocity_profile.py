"""The TIAGo++ Omni's base commands go through the learned S-curve inside the world (as on the real
robot), unless `robot.tiago.velocity_profile` is `direct`; the transition under way is part of the
world's state, so a restored state continues exactly."""

from __future__ import annotations

import numpy as np
import pytest

from core.config_io import load_experiment
from pipeline.prepare import prepare
from simulation.embedded import EmbeddedWorld
from simulation.robots.s_curve import follower_for
from tests.conftest import CONFIGS

pytestmark = pytest.mark.slow  # builds and simulates the TIAGo demo scene

TINY = ["robot.tiago.velocity_profile=s_curve", "humans.count={min: 0, max: 0}", "flying_objects.count={min: 0, max: 0}",
        "robot.sensors.cameras.0.width=16", "robot.sensors.cameras.0.height=12", "robot.sensors.lidar=null"]
COMMAND = np.array([0.5, 0.0, 0.0])
STEPS = 240


@pytest.fixture(scope="module")
def scene(tmp_path_factory, asset_cache):
    config = load_experiment(CONFIGS / "demo-tiago.yaml", TINY)
    return config, prepare(config, tmp_path_factory.mktemp("tiago"), cache=asset_cache).scene


def forward_speeds(world: EmbeddedWorld, steps: int) -> np.ndarray:
    speeds = []
    for _ in range(steps):
        world.step()
        speeds.append(world.robot().velocity()[0][0])
    return np.array(speeds)


def test_base_velocity_follows_the_s_curve(scene):
    config, path = scene
    world = EmbeddedWorld(config, path)
    world.robot().set_command(COMMAND)
    speeds = forward_speeds(world, STEPS)
    follower = follower_for(config.robot.tiago)
    follower.command(COMMAND)
    expected = np.array([follower.advance(world.timestep)[0] for _ in range(STEPS)])
    assert np.allclose(speeds, expected, atol=1e-9)  # the lightweight base moves at the commanded twist
    assert speeds[0] < 0.1 * COMMAND[0] and np.all(np.diff(speeds) >= -1e-12)
    assert speeds[-1] == pytest.approx(COMMAND[0], abs=0.01)


def test_direct_profile_applies_commands_at_once(scene):
    config, path = scene
    config = config.model_copy(deep=True)
    config.robot.tiago.velocity_profile = "direct"
    world = EmbeddedWorld(config, path)
    world.robot().set_command(COMMAND)
    assert forward_speeds(world, 2) == pytest.approx([COMMAND[0]] * 2)


def test_restored_state_continues_the_transition_exactly(scene):
    config, path = scene
    world = EmbeddedWorld(config, path)
    world.robot().set_command(COMMAND)
    world.step(30)
    state = world.get_state()
    first = forward_speeds(world, 60)
    world.robot().set_command(np.zeros(3))  # something else happens before the restore
    world.step(10)
    world.set_state(state)
    assert np.array_equal(forward_speeds(world, 60), first)
    del state["velocity_profile.target"]
    with pytest.raises(Exception, match="velocity_profile.target"):
        world.set_state(state, "states.npz")

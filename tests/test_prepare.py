"""The stages before simulation, end to end from a config: assets, placement, scene.usda."""

from __future__ import annotations

from typing import get_args

import numpy as np
import pytest
from conftest import CONFIGS, run_grade
from pxr import Usd, UsdGeom

from core.assets.usd_read import read_meshes
from core.config import AnimalsConfig, EnvironmentConfig, FlyingObjectsConfig, HumansConfig
from core.config_io import load_experiment
from core.formats.asset_meta import load_meta
from core.formats.manifest import MANIFEST
from core.formats.placement import load_placement
from pipeline.prepare import CONVERTERS, ROLE_FOLDERS, prepare


@pytest.mark.slow
def test_prepare_demo_config_then_resume_skips(tmp_path):
    config = load_experiment(CONFIGS / "demo.yaml", ["humans.count={min: 3, max: 3}"])
    prepared = prepare(config, tmp_path / "run")
    assert load_meta(prepared.environment).kind == "environment"
    placement = load_placement(prepared.placement)
    assert len(placement.humans) + len(placement.rejected_humans) == 3
    assert prepared.placement.with_suffix(".png").is_file()

    stage = Usd.Stage.Open(str(prepared.scene))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    humans = stage.GetPrimAtPath("/World/humans").GetChildren()
    assert len(humans) == len(placement.humans)
    # References resolve: the composed scene has the environment's labels and posed people.
    meshes = read_meshes(prepared.scene, time=0)
    labels = {m.semantic_label for m in meshes}
    assert {"floor", "wall", "person"} <= labels
    human0 = placement.humans[0]
    prim = humans[0]
    world = np.asarray(UsdGeom.Xformable(prim).ComputeLocalToWorldTransform(Usd.TimeCode.Default())).T
    np.testing.assert_allclose(world[:3, 3], [human0.x, human0.y, human0.z], atol=1e-9)
    np.testing.assert_allclose(np.arctan2(world[1, 0], world[0, 0]) % (2 * np.pi), human0.yaw % (2 * np.pi),
                               atol=1e-6)

    manifest = (prepared.scene.parent / MANIFEST).read_bytes()
    again = prepare(config, tmp_path / "run")
    assert again.scene == prepared.scene
    assert (prepared.scene.parent / MANIFEST).read_bytes() == manifest  # nothing redone
    other = prepare(load_experiment(CONFIGS / "demo.yaml", ["humans.count={min: 3, max: 3}", "seed=5"]),
                    tmp_path / "run")
    assert load_placement(other.placement).seed == 5  # a new seed redoes placement


@pytest.mark.slow
def test_prepare_cli_and_bad_config(tmp_path):
    result = run_grade("prepare", str(CONFIGS / "demo.yaml"), "--out", str(tmp_path / "run"),
                       "--set", "humans.count={min: 2, max: 2}", "--set", "flying_objects.count={min: 1, max: 1}")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "run" / "scene" / "scene.usda").is_file()
    bad = run_grade("prepare", str(CONFIGS / "demo.yaml"), "--out", str(tmp_path / "bad"),
                    "--set", "environment.source=front3d", "--set", "environment.path=missing.json")
    assert bad.returncode == 2
    assert "environment.path" in bad.stderr
    assert not (tmp_path / "bad").exists()


def test_every_config_source_has_a_converter():
    """Each `source` a config section accepts is procedural, a ready package, or in the registry."""
    sections = {"environment": EnvironmentConfig, "humans": HumansConfig, "objects": FlyingObjectsConfig,
                "animals": AnimalsConfig}
    assert set(sections) == set(ROLE_FOLDERS)
    accepted = {(role, source) for role, model in sections.items()
                for source in get_args(model.model_fields["source"].annotation)}
    assert accepted - set(CONVERTERS) == {(role, source) for role in sections for source in ("procedural", "package")}
    assert set(CONVERTERS) <= accepted


def test_front3d_houses_take_the_experiments_seed_and_light_intensity(realdata, tmp_path):
    from asset_converters.batch import run_jobs
    from simulation.embedded.scene import read_lights

    house = next((realdata / "front3d").glob("*.json"))
    packages = {}
    for seed, intensity in ((1, 900.0), (2, 900.0)):
        config = load_experiment(CONFIGS / "demo.yaml", [f"seed={seed}", "environment.source=front3d",
                                                          f"environment.path={house}",
                                                          "environment.room=Bathroom-771",  # small: fast
                                                          f"environment.light_intensity={intensity}"])
        jobs = CONVERTERS[("environment", "front3d")](config, house, tmp_path / f"seed{seed}")
        assert not run_jobs(jobs, "house").failed
        packages[seed] = jobs[0].out
    lights = read_lights(packages[1] / "asset.usdc")
    assert lights and {light.intensity for light in lights} == {900.0}
    # The class materials are drawn from the experiment's seed: two seeds, two sets of textures.
    textures = [sorted((p / "textures").rglob("*.png")) for p in packages.values()]
    assert textures[0] and [t.name for t in textures[0]] == [t.name for t in textures[1]]
    assert any(a.read_bytes() != b.read_bytes() for a, b in zip(*textures))


def test_gltf_humans_are_converted_as_people(tmp_path):
    from test_gltf import write_critter

    from asset_converters.batch import run_jobs

    write_critter(tmp_path / "critter.glb")
    config = load_experiment(CONFIGS / "demo.yaml", ["humans.source=gltf", f"humans.paths=[{tmp_path / 'critter.glb'}]"])
    jobs = CONVERTERS[("humans", "gltf")](config, tmp_path / "critter.glb", tmp_path / "humans")
    assert not run_jobs(jobs, "characters").failed
    assert set(load_meta(jobs[0].out).semantic_labels.values()) == {"person"}

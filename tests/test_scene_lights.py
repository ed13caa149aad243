"""Light and material randomization of the embedded backend (GRADE's options): absolute intensities in USD
sphere-light units, colour modes, per-material colour factors and roughness, and the warning of an unlit
environment; checked against values computed here from the authored lights and materials."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from asset_converters.environment import write_environment_package
from core.assets.parts import Light, Material, SceneMesh
from core.config import RandomizationConfig
from core.formats.asset_meta import SourceInfo
from core.formats.placement import EnvironmentRef, Placement, PlacementParameters, RobotStart, RobotVolume
from placement.compose import compose_scene
from simulation.embedded.randomization import LUMINANCE, Randomizer, kelvin_to_rgb
from simulation.embedded.scene import load_scene
from simulation.render import light_from_part
from simulation.render.scene import DEFAULT_EXPOSURE
from simulation.render.shading import srgb_to_linear

# GRADE's draws (its randomize_and_fix_lights / randomize_roughness): intensity U(600, 4500), colour U(0, 1) per
# channel, roughness U(0.1, 0.9).
GRADE = {"light_intensity": {"min": 600.0, "max": 4500.0}, "light_intensity_scale": {"min": 1.0, "max": 1.0},
         "light_color": "random", "roughness": {"min": 0.1, "max": 0.9}}
RADII = (0.05, 0.15)  # two light sizes: an absolute intensity keeps each light's own
LIGHTS = 200  # enough draws that they spread over the range


def authored_lights(count: int = LIGHTS) -> list:
    return [light_from_part(Light(f"l{i}", (float(i), 0.0, 2.5), intensity=30000.0, color=(1.0, 0.9, 0.8),
                                 radius=RADII[i % 2])) for i in range(count)]


def randomizer(seed: int = 0, **options) -> Randomizer:
    return Randomizer(RandomizationConfig.model_validate(options), seed)


def test_absolute_intensity_and_random_colour_as_grade_draws_them():
    authored = authored_lights()
    drawn = randomizer(**GRADE).lights(authored, 0)
    radius = np.array([RADII[i % 2] for i in range(LIGHTS)])
    # Back to USD units with each light's own radius: the render intensity is L pi r^2 times the exposure.
    nits = np.array([light.intensity for light in drawn]) / (np.pi * radius**2 * DEFAULT_EXPOSURE)
    assert nits.min() >= 600.0 and nits.max() <= 4500.0
    assert nits.min() < 700.0 and nits.max() > 4400.0  # spread over the range, not clustered
    colors = np.array([light.color for light in drawn])
    assert colors.min() >= 0.0 and colors.max() <= 1.0 and colors.min() < 0.05 and colors.max() > 0.95
    assert [(light.position, light.radius) for light in drawn] == [(light.position, light.radius) for light in authored]
    assert randomizer(**GRADE).lights(authored, 0) == drawn != randomizer(1, **GRADE).lights(authored, 0)


def test_colour_modes_and_the_default_draw():
    authored = authored_lights(20)
    as_authored = randomizer(light_color="authored").lights(authored, 0)
    assert [light.color for light in as_authored] == [light.color for light in authored]
    scale = np.array([d.intensity / a.intensity for d, a in zip(as_authored, authored)])
    assert scale.min() >= 0.8 and scale.max() <= 1.2  # the default light_intensity_scale
    # Temperature mode: the authored colour times a black body within 4000-6500 K, so blue over red (per
    # unit of the authored colour) lies between the two ends' ratios.
    warm, cold = kelvin_to_rgb(4000.0), kelvin_to_rgb(6500.0)
    for light, source in zip(randomizer().lights(authored, 0), authored):
        body = np.asarray(light.color) / np.asarray(source.color)
        assert warm[2] / warm[0] <= body[2] / body[0] <= cold[2] / cold[0]
        assert LUMINANCE @ body == pytest.approx(1.0)


def flat(name: str, z: float, material: Material) -> SceneMesh:
    vertices = np.array([[0, 0, z], [4, 0, z], [4, 3, z], [0, 3, z]], dtype=float)
    return SceneMesh(name, vertices, [[0, 1, 2], [0, 2, 3]], "floor" if z == 0 else "ceiling", "architecture",
                     material, vertices[:, :2] / 2.0, is_floor=z == 0)


def scene_of(tmp_path, lights: list[Light], config: RandomizationConfig | None, seed: int = 0):
    texture = tmp_path / "tiles.png"
    Image.fromarray(np.arange(48, dtype=np.uint8).reshape(4, 4, 3) * 5).save(texture)
    plain = Material("plain", base_color=(0.5, 0.4, 0.3))
    meshes = [flat("floor_a", 0.0, plain), flat("floor_b", 0.0, plain),
              flat("ceiling", 2.5, Material("tiles", texture=texture))]
    package = write_environment_package(meshes, lights, tmp_path / "env", SourceInfo(dataset="test"), "env")
    placement = Placement(
        seed=0, environment=EnvironmentRef(id="env", path=str(package)),
        parameters=PlacementParameters(human_count_range=(0, 0), human_candidates=0, max_tries=1, contact_threshold=1,
                                       human_contact_threshold=1, flying_count_range=(0, 0), flying_candidates=0,
                                       flying_collision_check=False),
        humans=[], rejected_humans=[], flying_objects=[], rejected_flying_objects=[],
        robot=RobotStart(kind="uav", x=2, y=1.5, z=1.2, yaw=0, volume=RobotVolume(shape="box", extents=(0.6, 0.6, 0.3)),
                         heading_clearance=1.0, tries=1),
    )
    scene = compose_scene(placement, tmp_path / "scene" / "scene.usda")
    return load_scene(scene, Randomizer(config, seed) if config is not None else None), texture


def test_material_colour_and_roughness_randomization(tmp_path):
    lamp = Light("lamp", (2.0, 1.5, 2.3))
    options = {"material_color": {"min": 0.2, "max": 1.0}, "roughness": GRADE["roughness"]}
    scene, texture = scene_of(tmp_path, [lamp], RandomizationConfig.model_validate(options))
    floor_a, floor_b, ceiling = (m.material for m in scene.static_meshes)
    # One factor per material: the two floors share theirs, and it stays within the range.
    assert floor_a.base_color == floor_b.base_color
    factor = np.asarray(floor_a.base_color) / (0.5, 0.4, 0.3)
    assert factor.min() >= 0.2 and factor.max() <= 1.0 and np.ptp(factor) > 0
    # The texture's linear colour is scaled per channel by the ceiling material's own factor.
    source = srgb_to_linear(np.asarray(Image.open(texture).convert("RGB")))
    tinted = srgb_to_linear(ceiling.texture)
    bright = source > 0.05  # where 8-bit rounding is small against the value
    for c in range(3):
        ratio = tinted[..., c][bright[..., c]] / source[..., c][bright[..., c]]
        assert 0.2 - 0.03 <= ratio.min() and ratio.max() <= 1.0 + 0.03 and np.ptp(ratio) < 0.06
    roughness = [m.material.roughness for m in scene.static_meshes]
    assert all(0.1 <= r <= 0.9 for r in roughness) and len(set(roughness)) == 3


def test_unlit_environment_warns(tmp_path, capsys):
    scene, _ = scene_of(tmp_path, [], None)
    assert scene.lights == () and "has no lights" in " ".join(capsys.readouterr().err.split())

"""The global semantic class map: NYU40 ids, label resolution, the YAML override and its errors, and a
recording labelled with a user's map."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core.config_io import load_experiment
from core.errors import GradeError
from core.formats.class_map import DEFAULT_CLASS_MAP, NYU40, ClassMap, read_class_map, write_class_map
from core.recording import Recording
from pipeline.generate import generate
from tests.conftest import CONFIGS, run_grade


def test_default_ids_are_nyu40_then_grade_extras():
    classes = DEFAULT_CLASS_MAP.classes
    assert [classes[name] for name in NYU40] == list(range(1, 41))
    assert (classes["wall"], classes["person"], classes["clothes"], classes["otherprop"]) == (1, 31, 21, 40)
    assert {classes[n] for n in ("robot", "flying_object", "animal", "world")} == {41, 42, 43, 44}


@pytest.mark.parametrize(("label", "kind", "expected"), [
    ("person", "human", "person"),  # a class name
    ("human", "human", "person"),  # an alias
    ("Dining Chair", "environment", "chair"),  # keyword, case and spaces folded
    ("pendant_lamp", "environment", "lamp"),
    ("night_stand", "environment", "night_stand"),  # a run of words beats the single word "stand"
    ("footstool_sofastool_bed_end_stool_stool", "environment", "chair"),  # rule order: chair before bed
    ("sideboard_side_cabinet_console_table", "environment", "cabinet"),
    ("tv_stand", "environment", "cabinet"),
    ("zebra", "human", "animal"),  # an animated animal is not a person
    ("spaceship", "environment", "otherfurniture"),  # fallbacks by kind
    ("spaceship", "object", "flying_object"),
    (None, "human", "person"),
])
def test_labels_resolve_to_classes(label, kind, expected):
    assert DEFAULT_CLASS_MAP.resolve(label, kind) == expected


def test_user_map_replaces_classes_and_keeps_rules_that_still_apply(tmp_path):
    path = tmp_path / "classes.yaml"
    path.write_text("classes: {person: 1, chair: 2, other: 3}\naliases: {sofa: chair}\nfallback: {object: other}\n")
    mine = read_class_map(path)
    assert mine.classes == {"person": 1, "chair": 2, "other": 3}
    assert mine.id_of("sofa", "environment") == 2  # the user's alias
    assert mine.id_of("three_seat_sofa", "environment") == 0  # aliases are whole labels; the sofa class is gone
    assert mine.id_of("dining_chair", "environment") == 2
    assert mine.id_of("human", "human") == 1  # default alias to a class the map keeps
    assert mine.id_of("can", "object") == 3
    assert mine.id_of("wall", "environment") == 0  # no class, no fallback for environments: unlabelled
    write_class_map(tmp_path / "again.yaml", mine)
    assert read_class_map(tmp_path / "again.yaml") == mine


@pytest.mark.parametrize(("text", "message"), [
    ("classes: {person: 1, chair: 1}\n", "two classes share an id"),
    ("classes: {person: 0}\n", "ids are integers in 1..65535"),
    ("classes: {person: 1}\naliases: {sofa: couch}\n", "not a class"),
    ("colours: {}\n", "expected a mapping with keys"),
    ("classes: [person]\n", "expected a mapping {class name: id}"),
    ("classes: {person: 1\n", "not valid YAML"),
])
def test_bad_user_maps_name_the_file(tmp_path, text, message):
    path = tmp_path / "classes.yaml"
    path.write_text(text)
    with pytest.raises(GradeError, match=message) as error:
        read_class_map(path)
    assert str(path) in str(error.value)
    with pytest.raises(GradeError, match="not found"):
        read_class_map(tmp_path / "missing.yaml")


def test_class_map_validates_fallback_targets():
    with pytest.raises(ValueError, match="fallback"):
        ClassMap(classes={"a": 1}, aliases={}, fallback={"human": "person"})


@pytest.mark.slow
def test_a_recording_speaks_the_users_class_map(tmp_path, asset_cache):
    path = tmp_path / "classes.yaml"
    path.write_text("classes: {person: 7, structure: 3}\naliases: {wall: structure, floor: structure, "
                    "ceiling: structure}\n")
    run = tmp_path / "run"
    generate(load_experiment(CONFIGS / "demo.yaml", [
        "simulation.duration=0.25", "simulation.bootstrap=0.25", "robot.sensors.cameras.0.width=64",
        "robot.sensors.cameras.0.height=48", f"recording.class_map={path}"]), run, cache=asset_cache)
    camera = Recording.open(run).camera("camera")
    assert set(camera.instances.semantic_classes) <= {"person", "structure"}
    assert camera.instances.semantic_classes.get("structure") == 3
    for entry in camera.instances.instances.values():
        expected = {"human": 7, "environment": 3 if entry.label in ("wall", "floor", "ceiling") else 0}
        assert entry.semantic_id == expected.get(entry.kind, 0)
    ids = np.unique(np.concatenate([np.unique(frame.semantic()) for frame in camera]))
    assert set(ids.tolist()) <= {0, 3, 7}
    assert json.loads((run / "run.json").read_text())["config"]["recording"]["class_map"] == str(path)
    path.write_text("classes: {person: 5}\n")  # another map: the recording is redone, not skipped
    result = run_grade("generate", str(CONFIGS / "demo.yaml"), "--out", str(run), "-s", "simulation.duration=0.25",
                       "-s", "simulation.bootstrap=0.25", "-s", "robot.sensors.cameras.0.width=64",
                       "-s", "robot.sensors.cameras.0.height=48", "-s", f"recording.class_map={path}",
                       "-s", f"assets_dir={asset_cache}")
    assert result.returncode == 0, result.stderr
    redone = Recording.open(run).camera("camera").instances
    assert redone.semantic_classes in ({"person": 5}, {})

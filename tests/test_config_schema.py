"""`grade config schema`: the JSON Schema editors validate configs with, checked by an independent validator
(jsonschema) against the shipped configs and a bad one."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from tests.conftest import CONFIGS, run_grade

EXPERIMENTS = ["demo.yaml", "demo-tiago.yaml", "multi-robot.yaml", "outdoor.yaml", "rover.yaml",
               "paper-indoor.yaml"]


def schema(tmp_path, *args: str) -> dict:
    out = tmp_path / "schema.json"
    result = run_grade("config", "schema", "--out", str(out), *args)
    assert result.returncode == 0, result.stderr
    return json.loads(out.read_text())


def test_every_shipped_experiment_config_validates_and_a_wrong_value_does_not(tmp_path):
    experiment = schema(tmp_path)
    for name in EXPERIMENTS:
        jsonschema.validate(yaml.safe_load((CONFIGS / name).read_text()), experiment)
    bad = yaml.safe_load((CONFIGS / "demo.yaml").read_text())
    bad["robot"]["kind"] = "car"
    with pytest.raises(jsonschema.ValidationError, match="car"):
        jsonschema.validate(bad, experiment)
    bad = yaml.safe_load((CONFIGS / "demo.yaml").read_text())
    bad["simulation"]["durations"] = 5  # a typo: unknown keys are refused, as grade config validate refuses them
    with pytest.raises(jsonschema.ValidationError, match="durations"):
        jsonschema.validate(bad, experiment)


def test_the_batch_schema_validates_the_shipped_batches(tmp_path):
    batch = schema(tmp_path, "--kind", "batch")
    for name in ("batch-example.yaml", "grade-dataset.yaml"):
        jsonschema.validate(yaml.safe_load((CONFIGS / name).read_text()), batch)

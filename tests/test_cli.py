from __future__ import annotations

import pytest
import yaml
from conftest import CONFIGS, run_grade


def test_validate_demo_succeeds():
    result = run_grade("config", "validate", str(CONFIGS / "demo.yaml"))
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stderr


def test_validate_misspelled_key_exits_2_with_one_paragraph(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((CONFIGS / "demo.yaml").read_text().replace("physics_hz:", "physcs_hz:"))
    before = sorted(tmp_path.iterdir())
    result = run_grade("config", "validate", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "physcs_hz" in result.stderr and "did you mean 'physics_hz'" in result.stderr
    assert str(bad) in result.stderr.replace("\n", "")
    assert sorted(tmp_path.iterdir()) == before  # nothing written


@pytest.mark.slow
def test_show_prints_resolved_yaml_with_defaults_and_overrides():
    result = run_grade("config", "show", str(CONFIGS / "demo.yaml"), "--set", "simulation.duration=3")
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load(result.stdout)
    assert data["simulation"]["duration"] == 3.0
    assert data["simulation"]["rates"]["tf_hz"] == 120.0  # a default not in the file
    assert data["humans"]["max_tries"] == 99


@pytest.mark.slow
def test_impossible_rate_override_exits_2():
    result = run_grade("config", "validate", str(CONFIGS / "demo.yaml"), "--set", "robot.sensors.cameras.0.rate_hz=7")
    assert result.returncode == 2
    assert "must divide" in result.stderr


@pytest.mark.slow
def test_batch_validate_and_show():
    result = run_grade("config", "validate", str(CONFIGS / "batch-example.yaml"))
    assert result.returncode == 0, result.stderr
    assert "6 experiments" in result.stderr
    shown = run_grade("config", "show", str(CONFIGS / "batch-example.yaml"))
    assert len(list(yaml.safe_load_all(shown.stdout))) == 6


@pytest.mark.slow
def test_help_on_every_command():
    for args in (["--help"], ["config", "--help"], ["config", "validate", "--help"], ["config", "show", "--help"]):
        result = run_grade(*args)
        assert result.returncode == 0, (args, result.stderr)
        assert "Usage" in result.stdout


@pytest.mark.slow
def test_usage_errors_exit_2_without_traceback():
    for args in (["no-such-command"], ["convert", "procedural", "--out", "x", "--rooms", "abc"]):
        result = run_grade(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr

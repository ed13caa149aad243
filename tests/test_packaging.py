"""The package as pip installs it, not editable: configs/ (and the ROS 1 message definitions) travel as package
data and `grade demo` finds its config."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import CONFIGS, ROOT

pytestmark = pytest.mark.slow


def test_a_wheel_carries_the_configs_and_an_installed_grade_finds_its_demo_config(tmp_path):
    # Built from a copy: setuptools writes build/ and *.egg-info beside the sources it builds.
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "runs", "tests", "docs", "benchmarks", "__pycache__", "*.egg-info", "build"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "wheel"),
                    str(source)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "wheel").glob("grade-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"configs/{p.relative_to(CONFIGS)}" for p in CONFIGS.rglob("*") if p.is_file() and
               p.suffix in (".yaml", ".xml")}
    assert shipped and shipped <= names
    assert "core/formats/bags/ros1_definitions.json" in names  # the ROS 1 bag writer's canonical definitions
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    probe = "import pipeline.run_cli as m; print(m.__file__); print(m.demo_config())"
    # PYTHONPATH puts the installed copy before the editable checkout that this venv also has.
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": str(site)})
    module, config = (Path(line) for line in result.stdout.split())
    assert module.is_relative_to(site) and config.is_relative_to(site)
    assert config.read_bytes() == (CONFIGS / "demo.yaml").read_bytes()

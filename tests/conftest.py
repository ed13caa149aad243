"""Shared fixtures: paths to the repository, its configs and the optional real-data samples."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
REALDATA = Path(os.environ.get("GRADE_REALDATA", ROOT.parent / "shared" / "realdata"))


@pytest.fixture
def realdata() -> Path:
    """The shared real-data samples; tests using it skip when the folder is absent."""
    if not REALDATA.is_dir():
        pytest.skip(f"real-data samples not found at {REALDATA}")
    return REALDATA


def run_grade(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the CLI as a user would, in a subprocess."""
    env = {**os.environ, "GRADE_QUIET": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args],
        cwd=cwd or ROOT, env=env, capture_output=True, text=True, timeout=600,
    )

"""Shared fixtures: paths to the repository, its configs and the optional real-data samples.

Every test that reads the real samples goes through the `realdata` fixture; the collection hook below
marks those tests `realdata`, so `pytest -m realdata` / `-m "not realdata"` select exactly them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
REALDATA = Path(os.environ.get("GRADE_REALDATA", ROOT.parent / "shared" / "realdata"))
# CI sets this so that a missing samples folder fails the run instead of passing with the tests skipped.
REQUIRE_REALDATA = os.environ.get("GRADE_REQUIRE_REALDATA", "") == "1"


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The shared real-data samples. When the folder is absent the test skips with the reason, or fails
    under GRADE_REQUIRE_REALDATA=1."""
    if not REALDATA.is_dir():
        reason = f"real-data samples not found at {REALDATA} (set GRADE_REALDATA to their folder)"
        if REQUIRE_REALDATA:
            pytest.fail(f"{reason}; GRADE_REQUIRE_REALDATA=1 requires them", pytrace=False)
        pytest.skip(reason)
    return REALDATA


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that uses the `realdata` fixture (directly or through another fixture) `realdata`;
    a test marked by hand that does not use it would skip nothing and fail where the samples are absent."""
    unguarded = []
    for item in items:
        uses = "realdata" in getattr(item, "fixturenames", ())
        if uses:
            item.add_marker(pytest.mark.realdata)
        elif item.get_closest_marker("realdata") is not None:
            unguarded.append(item.nodeid)
    if unguarded:
        raise pytest.UsageError("marked realdata but not using the realdata fixture: " + ", ".join(unguarded))


def run_grade(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the CLI as a user would, in a subprocess."""
    env = {**os.environ, "GRADE_QUIET": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "pipeline.cli", *args],
        cwd=cwd or ROOT, env=env, capture_output=True, text=True, timeout=600,
    )

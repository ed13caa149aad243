"""The realdata gate: a test using the `realdata` fixture is marked `realdata`, skips with the reason when
the samples are missing, and fails instead under GRADE_REQUIRE_REALDATA=1 (what .ci/run sets). Each case
runs pytest in a subprocess on a generated test file, with tests/conftest.py loaded as a plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PROBE = '''
def test_reads_samples(realdata):
    assert realdata.is_dir()


def test_without_samples():
    pass
'''


def run_probe(tmp_path: Path, samples: Path, require: bool, *args: str, probe: str = PROBE) -> tuple[int, str]:
    (tmp_path / "test_probe.py").write_text(probe)
    env = {k: v for k, v in os.environ.items() if k != "GRADE_REQUIRE_REALDATA"}
    env.update(PYTHONPATH=str(ROOT / "tests"), GRADE_REALDATA=str(samples))
    if require:
        env["GRADE_REQUIRE_REALDATA"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-rsE", "-q",
         "-o", "markers=realdata: probe", "--strict-markers", "test_probe.py", *args],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    return result.returncode, result.stdout + result.stderr


def test_missing_samples_skip_with_the_reason(tmp_path):
    missing = tmp_path / "no-samples"
    code, out = run_probe(tmp_path, missing, require=False)
    assert code == 0, out
    assert "1 passed, 1 skipped" in out
    assert f"real-data samples not found at {missing}" in out


def test_missing_samples_fail_when_required(tmp_path):
    missing = tmp_path / "no-samples"
    code, out = run_probe(tmp_path, missing, require=True)
    assert code == 1, out
    assert "1 passed, 1 error" in out
    assert f"real-data samples not found at {missing}" in out and "GRADE_REQUIRE_REALDATA=1 requires them" in out


def test_present_samples_run_when_required(tmp_path):
    (tmp_path / "samples").mkdir()
    code, out = run_probe(tmp_path, tmp_path / "samples", require=True)
    assert code == 0, out
    assert "2 passed" in out


def test_fixture_users_are_marked_realdata(tmp_path):
    code, out = run_probe(tmp_path, tmp_path / "no-samples", True, "-m", "not realdata")
    assert code == 0, out
    assert "1 passed, 1 deselected" in out


def test_hand_marked_test_without_the_fixture_is_refused(tmp_path):
    probe = "import pytest\n\n\n@pytest.mark.realdata\ndef test_reads_a_path_of_its_own():\n    pass\n"
    code, out = run_probe(tmp_path, tmp_path / "no-samples", False, probe=probe)
    assert code == 4, out  # pytest's usage-error exit code
    assert "marked realdata but not using the realdata fixture: test_probe.py::test_reads_a_path_of_its_own" in out

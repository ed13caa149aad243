"""The suite's own order (tests/conftest.py): pytest-xdist hands out whole modules in collection order, so the
modules are collected heaviest first, and a test that starts daemons must be marked `heavy` (the collection is
refused otherwise), or its module would be weighed as light, handed out last and run alone at the end."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT, heaviest_first, unmarked_daemon_tests


@dataclass
class Collected:
    """What the ordering reads of a collected test: its module, markers and fixtures."""

    nodeid: str
    markers: tuple[str, ...] = ()
    fixturenames: tuple[str, ...] = ()
    path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.path = Path(self.nodeid.split("::")[0])

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return getattr(pytest.mark, name).mark if name in self.markers else None


def test_modules_go_heaviest_first_each_whole_and_in_its_own_order():
    items = [Collected("a.py::one"), Collected("a.py::two"), Collected("a.py::three"),  # 3
             Collected("b.py::one", ("slow",)),  # 10
             Collected("c.py::one", ("slow", "heavy"), ("roscore",)),  # 60
             Collected("d.py::one", ("slow",)),  # 10: after b.py, collected first
             Collected("e.py::one")]  # 1
    order = [item.nodeid for item in heaviest_first(items)]
    assert order == ["c.py::one", "b.py::one", "d.py::one", "a.py::one", "a.py::two", "a.py::three", "e.py::one"]


def test_a_test_that_starts_daemons_must_be_marked_heavy():
    items = [Collected("a.py::marked", ("slow", "heavy"), ("slurm", "tmp_path")),
             Collected("b.py::unmarked", ("slow",), ("tmp_path", "local_batch")),
             Collected("c.py::no_daemon", (), ("tmp_path",))]
    assert unmarked_daemon_tests(items) == ["b.py::unmarked"]


PROBE = '''
import pytest


@pytest.mark.slow
def test_starts_a_master(roscore):
    pass
'''


def collect(folder: Path, probe: str) -> subprocess.CompletedProcess:
    """`pytest --collect-only` of `probe` as a test file in `folder`, with tests/conftest.py loaded as a plugin."""
    (folder / "test_probe.py").write_text(probe)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p", "no:cacheprovider", "-q",
                           "--collect-only", "test_probe.py"], cwd=folder,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "tests")}, capture_output=True, text=True,
                          timeout=120, check=False)


def test_collecting_a_daemon_test_not_marked_heavy_is_refused(tmp_path):
    result = collect(tmp_path, PROBE)
    assert result.returncode == pytest.ExitCode.USAGE_ERROR, result.stdout + result.stderr
    assert "these tests start daemons but are not marked heavy: test_probe.py::test_starts_a_master" in result.stderr
    result = collect(tmp_path, PROBE.replace("@pytest.mark.slow", "@pytest.mark.slow\n@pytest.mark.heavy"))
    assert result.returncode == pytest.ExitCode.OK, result.stdout + result.stderr

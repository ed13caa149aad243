"""The import-linter contract in pyproject.toml: stages import downward only (pipeline on top, core at the
bottom). Run here so that `make test`, and so CI, fails when an import runs upward."""

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_import_contract_is_kept():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "lint-imports not installed: `make test` installs the dev extra (import-linter)"
    result = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 kept, 0 broken" in result.stdout

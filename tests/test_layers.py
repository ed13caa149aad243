"""The import-linter contracts in pyproject.toml: stages import downward only (pipeline on top, core at the
bottom), simulation and placement never import the converters, core's formats sit on its asset layer,
simulation's subpackages are layered, and no package has an import cycle. Run here so that `make test`, and
so CI, fails when an import breaks one."""

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOT


def test_import_contracts_are_kept():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "lint-imports not installed: `make test` installs the dev extra (import-linter)"
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert "acyclic_siblings" in {c["type"] for c in contracts}, "the no-cycles contract is gone"
    result = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(rf"\b{len(contracts)} kept, 0 broken", result.stdout), result.stdout

"""Project-wide rules checked on the source: no global RNG, no wall clock in outputs, no debugger
calls, no star imports, and nothing outside simulation/isaac imports Isaac Sim."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGES = ["pipeline", "asset_converters", "placement", "simulation", "postprocess", "evaluation", "replay"]

LEGACY_NP_RANDOM = {
    "seed", "rand", "randn", "randint", "random", "random_sample", "random_integers", "ranf", "sample", "choice",
    "shuffle", "permutation", "uniform", "normal", "standard_normal", "binomial", "poisson", "exponential",
    "beta", "gamma", "multivariate_normal", "get_state", "set_state", "bytes",
}
WALL_CLOCK = {("time", "time"), ("time", "time_ns"), ("datetime", "now"), ("datetime", "utcnow"),
              ("date", "today"), ("datetime", "today")}
# run.json bookkeeping is the one place allowed to read the wall clock.
WALL_CLOCK_ALLOWED = {"pipeline/rundir.py"}
ISAAC_ALLOWED_PREFIX = "simulation/isaac"


def project_files() -> list[Path]:
    files = []
    for package in PACKAGES:
        if (ROOT / package).is_dir():
            files += sorted((ROOT / package).rglob("*.py"))
    return files


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    return ""


def violations(path: Path) -> list[str]:
    rel = path.relative_to(ROOT).as_posix()
    tree = ast.parse(path.read_text(), filename=rel)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "random":
                    found.append(f"{rel}:{node.lineno}: imports the global 'random' module")
                if alias.name.split(".")[0] in ("isaacsim", "omni") and not rel.startswith(ISAAC_ALLOWED_PREFIX):
                    found.append(f"{rel}:{node.lineno}: imports Isaac Sim outside {ISAAC_ALLOWED_PREFIX}")
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if module == "random" or (module == "numpy.random" and any(a.name in LEGACY_NP_RANDOM for a in node.names)):
                found.append(f"{rel}:{node.lineno}: imports a global RNG function from {module}")
            if any(a.name == "*" for a in node.names):
                found.append(f"{rel}:{node.lineno}: star import")
            if module.split(".")[0] in ("isaacsim", "omni") and not rel.startswith(ISAAC_ALLOWED_PREFIX):
                found.append(f"{rel}:{node.lineno}: imports Isaac Sim outside {ISAAC_ALLOWED_PREFIX}")
        elif isinstance(node, ast.Call):
            name = dotted(node.func)
            parts = name.split(".")
            if len(parts) >= 3 and parts[-2] == "random" and parts[0] in ("np", "numpy") and parts[-1] in LEGACY_NP_RANDOM:
                found.append(f"{rel}:{node.lineno}: global numpy RNG call {name}()")
            if len(parts) >= 2 and (parts[-2], parts[-1]) in WALL_CLOCK and rel not in WALL_CLOCK_ALLOWED:
                found.append(f"{rel}:{node.lineno}: wall-clock read {name}()")
            if name in ("breakpoint", "pdb.set_trace", "ipdb.set_trace"):
                found.append(f"{rel}:{node.lineno}: debugger call")
    return found


def test_project_has_source_files():
    assert len(project_files()) >= 5


def test_no_global_rng_wall_clock_debugger_star_imports_or_stray_isaac():
    problems = [v for f in project_files() for v in violations(f)]
    assert problems == [], "\n".join(problems)


def test_checker_catches_each_kind(tmp_path, monkeypatch):
    bad = ROOT / "pipeline" / "_rule_probe_tmp.py"
    bad.write_text(
        "import random\nimport numpy as np\nimport time\nfrom os import *\nimport isaacsim\n"
        "np.random.seed(1)\nx = np.random.rand(3)\nt = time.time()\nbreakpoint()\n"
    )
    try:
        found = violations(bad)
    finally:
        bad.unlink()
    text = "\n".join(found)
    for expected in ("global 'random'", "np.random.seed", "np.random.rand", "wall-clock", "debugger", "star import",
                     "Isaac Sim"):
        assert expected in text, expected

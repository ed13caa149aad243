"""Project-wide rules checked on the source: no global or unseeded randomness (global RNGs, an unseeded
`default_rng()`, `uuid.uuid4`, `os.urandom`), no wall clock in outputs, no debugger calls, no star imports,
nothing outside simulation/isaac imports Isaac Sim, and no robot kind's name compared outside the catalogue."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGES = ["core", "pipeline", "asset_converters", "placement", "simulation", "postprocess", "evaluation", "replay"]

LEGACY_NP_RANDOM = {
    "seed", "rand", "randn", "randint", "random", "random_sample", "random_integers", "ranf", "sample", "choice",
    "shuffle", "permutation", "uniform", "normal", "standard_normal", "binomial", "poisson", "exponential",
    "beta", "gamma", "multivariate_normal", "get_state", "set_state", "bytes",
}
WALL_CLOCK = {("time", "time"), ("time", "time_ns"), ("datetime", "now"), ("datetime", "utcnow"),
              ("date", "today"), ("datetime", "today")}
# Bookkeeping that never reaches an output file: run.json's timestamps and the output lock's holder.
WALL_CLOCK_ALLOWED = {"core/rundir.py", "core/outputs.py"}
# Randomness that no seed controls: a fresh UUID or OS entropy differs on every run.
ENTROPY_CALLS = {"uuid.uuid4", "uuid4", "os.urandom", "urandom"}
ISAAC_ALLOWED_PREFIX = "simulation/isaac"
# Robot kinds are one seam (core/robot_catalogue.py): code asks a kind's RobotBody what it needs, never its name.
ROBOT_KINDS = {"uav", "tiago_omni", "custom"}
KIND_COMPARE_ALLOWED = {"core/robot_catalogue.py"}


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


def violations(path: Path, root: Path = ROOT) -> list[str]:
    rel = path.relative_to(root).as_posix()
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
            if parts[-1] == "default_rng" and not node.keywords and (
                    not node.args or (isinstance(node.args[0], ast.Constant) and node.args[0].value is None)):
                found.append(f"{rel}:{node.lineno}: unseeded {name}()")
            if name in ENTROPY_CALLS:
                found.append(f"{rel}:{node.lineno}: unseeded entropy {name}()")
            if name in ("breakpoint", "pdb.set_trace", "ipdb.set_trace"):
                found.append(f"{rel}:{node.lineno}: debugger call")
        elif isinstance(node, ast.Compare) and rel not in KIND_COMPARE_ALLOWED:
            constants = [c for operand in [node.left, *node.comparators]
                         for c in ([operand] if not isinstance(operand, ast.Tuple | ast.List | ast.Set) else operand.elts)
                         if isinstance(c, ast.Constant)]
            if any(c.value in ROBOT_KINDS for c in constants):
                found.append(f"{rel}:{node.lineno}: compares a robot kind's name (ask its RobotBody instead)")
    return found


def test_project_has_source_files():
    assert len(project_files()) >= 5


def test_no_global_rng_wall_clock_debugger_star_imports_or_stray_isaac():
    problems = [v for f in project_files() for v in violations(f)]
    assert problems == [], "\n".join(problems)


def test_checker_catches_each_kind(tmp_path):
    # The probe lives in a copy of the layout under tmp_path: never in the source tree, where a concurrent
    # run of the scan above (or an interrupted test) would see it.
    bad = tmp_path / "pipeline" / "rule_probe.py"
    bad.parent.mkdir()
    bad.write_text(
        "import random\nimport numpy as np\nimport time\nimport os\nimport uuid\nfrom os import *\nimport isaacsim\n"
        "np.random.seed(1)\nx = np.random.rand(3)\nt = time.time()\nbreakpoint()\n"
        "rng = np.random.default_rng()\nnone = np.random.default_rng(None)\nok = np.random.default_rng(3)\n"
        "tag = uuid.uuid4()\nsalt = os.urandom(8)\nflies = kind == 'uav'\nground = kind in ('tiago_omni', 'x')\n"
    )
    text = "\n".join(violations(bad, tmp_path))
    for expected in ("global 'random'", "np.random.seed", "np.random.rand", "wall-clock", "debugger", "star import",
                     "Isaac Sim", "pipeline/rule_probe.py:12: unseeded np.random.default_rng()",
                     "pipeline/rule_probe.py:13: unseeded np.random.default_rng()", "uuid.uuid4", "os.urandom",
                     "rule_probe.py:17: compares a robot kind", "rule_probe.py:18: compares a robot kind"):
        assert expected in text, expected
    assert ":14:" not in text  # a seeded default_rng is fine

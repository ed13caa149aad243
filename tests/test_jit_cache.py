"""Numba's on-disk cache and the modules a cached compiled function depends on (core.jit_cache).

A package of two modules in a temporary folder, each run in a fresh interpreter: `dep` holds a compiled
function, `main` a cached compiled function that calls it. After `dep` alone changes, numba's own cache keeps
returning the old value (the staleness the module guards against); with `flush_stale_caches` the new one.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"]

DEP = """from numba import njit

from core.jit_cache import flush_stale_caches


@njit(cache=True)
def value():
    return {value}


flush_stale_caches(__name__)
"""
MAIN = """from numba import njit

from core.jit_cache import flush_stale_caches
from cachedemo import dep


@njit(cache=True)
def run():
    return dep.value() * 10


{guard}
"""


def _run(folder: Path, module: str) -> int:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", f"import cachedemo.{module} as m; print(m.run())"], env=env,
                         capture_output=True, text=True, check=True)
    return int(out.stdout)


@pytest.fixture
def package(tmp_path):
    folder = tmp_path / "cachedemo"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "dep.py").write_text(DEP.format(value=1))
    (folder / "guarded.py").write_text(MAIN.format(guard="flush_stale_caches(__name__)"))
    (folder / "unguarded.py").write_text(MAIN.format(guard=""))
    return tmp_path


def test_a_cached_function_follows_a_change_of_the_module_it_calls(package):
    assert _run(package, "guarded") == 10 and _run(package, "unguarded") == 10  # both cached now
    dep = package / "cachedemo" / "dep.py"
    dep.write_text(DEP.format(value=2))
    stat = dep.stat()
    os.utime(dep, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a newer stamp whatever the clock's resolution
    assert _run(package, "unguarded") == 10  # numba alone keeps the compiled code of the old dep.py
    assert _run(package, "guarded") == 20
    assert _run(package, "guarded") == 20  # and again, now that the stamp matches the new dep.py


def _module_files() -> list[Path]:
    return [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]


def test_every_module_with_cached_compiled_functions_flushes_stale_caches_last():
    checked = 0
    for path in _module_files():
        source = path.read_text(encoding="utf-8")
        if "cache=True" not in source:
            continue
        checked += 1
        last = ast.parse(source).body[-1]
        call = last.value if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) else None
        assert call is not None and ast.unparse(call) == "flush_stale_caches(__name__)", (
            f"{path.relative_to(ROOT)} caches compiled functions: it must end with flush_stale_caches(__name__)")
    assert checked >= 5

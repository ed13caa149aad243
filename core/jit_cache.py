"""Numba's on-disk caches, kept in step with the project modules a compiled function depends on.

Numba keys a cached compiled function by its own source file only: a function that calls or inlines compiled
code of another module, or freezes that module's constants, keeps running the old code from the cache after that
module alone changes (an update of the checkout, say). `flush_stale_caches(__name__)`, called at the end of every
module whose compiled functions are cached (tests/test_jit_cache.py checks that), stores a digest of the sources
of the project modules it imports beside the cache and flushes the module's cached functions when the digest has
changed, so they compile again from the sources as they are.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from pathlib import Path
from types import ModuleType

from numba.core.dispatcher import Dispatcher

from core.rundir import atomic_write_text

STAMP_SUFFIX = ".deps"  # <cache folder>/<module>.deps: the digest the cached functions were compiled against


def cached_functions(module: ModuleType) -> list[Dispatcher]:
    """The module's own compiled functions that numba caches on disk."""
    return [value for value in vars(module).values()
            if isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__
            and value._cache.cache_path is not None]


def _package_folder(name: str) -> Path | None:
    """The folder of the (imported) top-level package of module `name`; None for a namespace package."""
    file = getattr(sys.modules[name.split(".")[0]], "__file__", None)
    return None if file is None else Path(file).resolve().parent


def project_imports(module: ModuleType) -> list[ModuleType]:
    """The modules of its own project (the packages beside its top-level package) that `module` imports, from
    its source; a name imported from a package counts as that package's submodule when it is one."""
    root = _package_folder(module.__name__).parent
    names = set()
    for node in ast.walk(ast.parse(Path(module.__file__).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                names.add(child if child in sys.modules else node.module)
    # In site-packages, where an install puts the project's packages beside its dependencies', a dependency
    # counts too: that only flushes more.
    return [sys.modules[name] for name in sorted(names)
            if name in sys.modules and _package_folder(name) == root / name.split(".")[0]]


def sources_digest(modules: list[ModuleType]) -> str:
    digest = hashlib.sha256()
    for module in modules:
        digest.update(module.__name__.encode() + b"\0" + Path(module.__file__).read_bytes() + b"\0")
    return digest.hexdigest()


def flush_stale_caches(module_name: str) -> None:
    """Flush the cached compiled functions of module `module_name` if a project module it imports changed since
    they were cached. A cache folder that cannot be written is left as it is (numba then compiles anyway)."""
    module = sys.modules[module_name]
    functions = cached_functions(module)
    if not functions:
        return
    folder = Path(functions[0]._cache.cache_path)
    stamp = folder / f"{module_name}{STAMP_SUFFIX}"
    digest = sources_digest(project_imports(module))
    try:
        if stamp.read_text() == digest:
            return
    except OSError:
        pass  # no stamp yet: whatever is cached may be stale
    for function in functions:
        try:
            function._cache.flush()
        except OSError:
            pass  # nothing cached for it yet (no folder), or a folder numba cannot write either
    try:
        atomic_write_text(stamp, digest)
    except OSError:
        pass

"""mkdocs hook: reference pages that list every module of a package, so a module added to (or moved out of)
`core.formats` or `core.config` appears on (or leaves) its page without editing the page.

`<!-- grade-modules core.formats -->` on a page becomes one mkdocstrings block (`::: core.formats.NAME`) per
public module of the package, in name order; mkdocstrings then renders each from its code and docstrings.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

MARKER = re.compile(r"<!-- grade-modules ([\w.]+) -->")


def module_blocks(package_name: str) -> str:
    package = importlib.import_module(package_name)
    names = sorted(info.name for info in pkgutil.iter_modules(package.__path__) if not info.name.startswith("_"))
    if not names:
        raise RuntimeError(f"{package_name} has no public modules to document")
    return "\n\n".join(f"::: {package_name}.{name}" for name in names)


def on_page_markdown(markdown: str, **_: object) -> str:
    return MARKER.sub(lambda match: module_blocks(match[1]), markdown)

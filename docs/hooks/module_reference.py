"""mkdocs hook: reference pages that list every module of a package, so a module added to (or moved out of)
`core.formats` or `core.config` appears on (or leaves) its page without editing the page.

`<!-- grade-modules core.formats -->` on a page becomes one mkdocstrings block (`::: core.formats.NAME`) per
public module of the package and of its subpackages, in name order; mkdocstrings then renders each from its code and docstrings.
`<!-- grade-modules core.config inspected -->` has the modules imported rather than parsed: pydantic then reports
each field's default, limits and description as it validates them (fields written as
`Annotated[int, Field(ge=1)] = Field(7, description=...)` are beyond the static reading).
"""

from __future__ import annotations

import importlib
import pkgutil
import re

MARKER = re.compile(r"<!-- grade-modules ([\w.]+)( inspected)? -->")
INSPECTED = "\n    options:\n      force_inspection: true"


def module_blocks(package_name: str, inspected: bool) -> str:
    package = importlib.import_module(package_name)
    names = sorted(info.name for info in pkgutil.walk_packages(package.__path__, prefix=f"{package_name}.")
                   if not any(part.startswith("_") for part in info.name.split(".")))
    if not names:
        raise RuntimeError(f"{package_name} has no public modules to document")
    options = INSPECTED if inspected else ""
    return "\n\n".join(f"::: {name}{options}" for name in names)


def on_page_markdown(markdown: str, **_: object) -> str:
    return MARKER.sub(lambda match: module_blocks(match[1], bool(match[2])), markdown)

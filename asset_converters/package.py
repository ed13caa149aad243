"""Writing asset packages (architecture.md §2) atomically; `meta.json` itself is core.formats.asset_meta.

A package is built in a temporary folder and moved into place with its meta.json and, last, its
`MANIFEST.json`; a folder without a valid manifest is incomplete and never used.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from core.formats.asset_meta import AssetMeta, write_meta
from core.stage import Stage

# Part of every conversion's input hash: bump it when converters change what they write.
CONVERTER_VERSION = "1"


def write_package(out: str | Path, input_hash: str, build: Callable[[Path], AssetMeta]) -> Path:
    """Build a package in a temporary folder, then move it to `out` with meta.json and manifest.

    `build(folder)` writes the package files and returns the metadata. If it raises, `out` is left
    as it was (absent or the previous complete package).
    """
    stage = Stage(Path(out), "convert", input_hash)
    with stage.build() as tmp:
        meta = build(tmp)
        write_meta(tmp, meta)
        stage.name = f"convert/{meta.kind}"
    return stage.folder

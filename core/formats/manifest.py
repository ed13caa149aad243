"""`MANIFEST.json` (schema "grade.manifest/1"): the completion mark of a stage's output folder.

A stage writes its files first and the manifest last, listing every file (size and sha256), so a
folder without a valid manifest, or whose files no longer match it, is incomplete and redone, never
half-used. `stage_status` tells a caller whether a folder is complete (skip it), incomplete or stale
(redo it) or absent (do it).
"""

from __future__ import annotations

import enum
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from core.errors import InputError
from core.formats.json_model import JsonDocument, read_json_model, write_json_model
from core.rundir import sha256_file

MANIFEST = "MANIFEST.json"
# sha256 streams at ~1.5 GB/s a core; the disk keeps up with a few. The cores this process may run on.
HASH_THREADS = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1, 4)


class FileEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    size: int
    sha256: str


class Manifest(JsonDocument):
    """Contents of MANIFEST.json; keys a later minor version adds are kept, not checked."""

    model_config = ConfigDict(extra="allow")

    KIND, MAJOR = "manifest", 1

    stage: str
    input_hash: str
    files: dict[str, FileEntry]


class StageStatus(str, enum.Enum):
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"  # started, interrupted or failed: redo
    STALE = "stale"  # complete, but for other inputs: redo
    ABSENT = "absent"


def _listed(directory: Path, include: Sequence[str] | None) -> dict[str, FileEntry]:
    listed = []
    for file in sorted(p for p in directory.rglob("*") if p.is_file() and p.name != MANIFEST):
        rel = file.relative_to(directory).as_posix()
        if rel.startswith(".") or "/." in rel:  # temporary and partial outputs
            continue
        if include is not None and rel.split("/", 1)[0] not in include:
            continue
        listed.append((rel, file))
    # A recording's bags run to gigabytes: hashing drops the GIL, so the files are hashed on every core.
    with ThreadPoolExecutor(HASH_THREADS) as pool:
        digests = list(pool.map(sha256_file, [file for _, file in listed]))
    return {rel: FileEntry(size=file.stat().st_size, sha256=digest) for (rel, file), digest in zip(listed, digests)}


def write_manifest(directory: str | Path, stage: str, input_hash: str, include: Sequence[str] | None = None) -> Path:
    """Mark `directory` complete: list every file in it (or only under the top-level names in
    `include`, when other stages share the folder) with size and sha256. Call it last."""
    directory = Path(directory)
    manifest = Manifest(stage=stage, input_hash=input_hash, files=_listed(directory, include))
    return write_json_model(directory / MANIFEST, manifest)


def read_manifest(directory: str | Path) -> Manifest:
    """DIRECTORY/MANIFEST.json; InputError naming the file (and field) when missing, newer or invalid."""
    return read_json_model(Path(directory) / MANIFEST, Manifest)


def stage_status(directory: str | Path, input_hash: str | None = None, verify_hashes: bool = False) -> StageStatus:
    """Whether a stage's output folder is complete, incomplete, stale or absent."""
    directory = Path(directory)
    if not directory.exists():
        return StageStatus.ABSENT
    if not (directory / MANIFEST).is_file():
        return StageStatus.INCOMPLETE
    try:
        manifest = read_manifest(directory)
    except InputError:
        return StageStatus.INCOMPLETE
    for rel, entry in manifest.files.items():
        file = directory / rel
        if not file.is_file() or file.stat().st_size != entry.size:
            return StageStatus.INCOMPLETE
        if verify_hashes and sha256_file(file) != entry.sha256:
            return StageStatus.INCOMPLETE
    if input_hash is not None and manifest.input_hash != input_hash:
        return StageStatus.STALE
    return StageStatus.COMPLETE


def invalidate(directory: str | Path) -> None:
    """Remove the manifest so the folder reads as incomplete (before rewriting it in place)."""
    (Path(directory) / MANIFEST).unlink(missing_ok=True)

"""The run-directory contract: atomic writes, completion manifests and run.json.

A stage writes its files atomically (temp name, then rename) and marks completion with
`MANIFEST.json`, written last. `stage_status` tells a caller whether an output folder is
complete (skip it), incomplete (redo it) or absent (do it).
"""

from __future__ import annotations

import datetime
import enum
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.errors import InputError

MANIFEST = "MANIFEST.json"
MANIFEST_SCHEMA = "grade.manifest/1"
RUN_SCHEMA = "grade.run/1"


# ---------------------------------------------------------------- atomic writes


def _process_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Read once at import (os.umask can only be read by setting it): temporary files and folders are created
# private (0600 / 0700), and are given the permissions a plain open() / mkdir() would have before they
# become visible, so datasets stay readable by the group that shares them.
_UMASK = _process_umask()
FILE_MODE = 0o666 & ~_UMASK
DIRECTORY_MODE = 0o777 & ~_UMASK


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` so that readers see either the old file or the whole new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


@contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Build a directory under a temporary name and move it into place only on success.

    An existing directory at `path` is replaced. On an exception the temporary folder is removed
    and `path` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    try:
        tmp.chmod(DIRECTORY_MODE)
        yield tmp
        if path.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, trash / "old")
            os.replace(tmp, path)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# ---------------------------------------------------------------- hashing


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def content_hash(*parts: Any) -> str:
    """A stable hash of JSON-able parts, files (Path) and bytes: the key for content addressing."""
    digest = hashlib.sha256()
    for part in parts:
        if isinstance(part, Path):
            digest.update(b"file:" + sha256_file(part).encode())
        elif isinstance(part, bytes):
            digest.update(b"bytes:" + hashlib.sha256(part).hexdigest().encode())
        else:
            digest.update(b"json:" + json.dumps(part, sort_keys=True, default=str).encode())
    return digest.hexdigest()


# ---------------------------------------------------------------- manifests


class StageStatus(str, enum.Enum):
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"  # started, interrupted or failed: redo
    STALE = "stale"  # complete, but for other inputs: redo
    ABSENT = "absent"


def write_manifest(directory: str | Path, stage: str, input_hash: str, extra: dict | None = None,
                   include: Sequence[str] | None = None) -> Path:
    """Mark `directory` complete: list every file in it (or only under the top-level names in
    `include`, when other stages share the folder) with size and sha256. Call it last."""
    directory = Path(directory)
    files = {}
    for file in sorted(p for p in directory.rglob("*") if p.is_file() and p.name != MANIFEST):
        rel = file.relative_to(directory).as_posix()
        if rel.startswith(".") or "/." in rel:
            continue
        if include is not None and rel.split("/", 1)[0] not in include:
            continue
        files[rel] = {"size": file.stat().st_size, "sha256": sha256_file(file)}
    manifest = {
        "schema": MANIFEST_SCHEMA,
        "stage": stage,
        "input_hash": input_hash,
        "files": files,
        **(extra or {}),
    }
    return atomic_write_json(directory / MANIFEST, manifest)


def read_json(path: str | Path, what: str = "file") -> Any:
    """A JSON file's content; InputError naming the file when it is missing, not UTF-8 or malformed."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} not found", path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg} at line {exc.lineno})", path) from exc
    except UnicodeDecodeError as exc:
        raise InputError("not a UTF-8 text file", path) from exc


def read_manifest(directory: str | Path) -> dict:
    path = Path(directory) / MANIFEST
    manifest = read_json(path)
    if not isinstance(manifest, dict):
        raise InputError("expected a JSON object", path)
    if manifest.get("schema") != MANIFEST_SCHEMA:
        raise InputError(f"expected schema {MANIFEST_SCHEMA!r}", path, "schema")
    return manifest


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
    for rel, info in manifest.get("files", {}).items():
        file = directory / rel
        if not file.is_file() or file.stat().st_size != info["size"]:
            return StageStatus.INCOMPLETE
        if verify_hashes and sha256_file(file) != info["sha256"]:
            return StageStatus.INCOMPLETE
    if input_hash is not None and manifest.get("input_hash") != input_hash:
        return StageStatus.STALE
    return StageStatus.COMPLETE


def invalidate(directory: str | Path) -> None:
    """Remove the manifest so the folder reads as incomplete (before rewriting it in place)."""
    (Path(directory) / MANIFEST).unlink(missing_ok=True)


# ---------------------------------------------------------------- run.json


def wall_clock_iso() -> str:
    """Wall-clock time for run.json bookkeeping only; never use it in data outputs."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Stopwatch:
    """Wall-clock seconds for run.json bookkeeping and progress displays, never for data."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self._start


def package_versions(names: tuple[str, ...] = (
    "grade", "numpy", "pydantic", "usd-core", "trimesh", "python-fcl", "rosbags", "mujoco", "embreex",
)) -> dict[str, str]:
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


class RunInfo(BaseModel):
    """Contents of `run.json` (DESIGN.md §2)."""

    model_config = ConfigDict(extra="forbid")

    schema_: Literal["grade.run/1"] = Field(RUN_SCHEMA, alias="schema")
    name: str
    status: Literal["running", "complete", "failed", "interrupted"] = "running"
    backend: str
    master_seed: int
    derived_seeds: dict[str, int] = {}
    config: dict[str, Any]
    versions: dict[str, str] = Field(default_factory=package_versions)
    asset_hashes: dict[str, str] = {}
    sim_time_start: float = 0.0
    sim_time_end: float | None = None
    frame_counts: dict[str, int] = {}
    mission: dict[str, Any] = {}
    wall_seconds: dict[str, float] = Field({}, description="bookkeeping: wall-clock seconds per stage")
    error: str | None = None
    created: str = Field(default_factory=wall_clock_iso)
    updated: str = Field(default_factory=wall_clock_iso)


def write_run_info(run_dir: str | Path, info: RunInfo) -> Path:
    info.updated = wall_clock_iso()
    return atomic_write_json(Path(run_dir) / "run.json", info.model_dump(mode="json", by_alias=True))


def read_run_info(run_dir: str | Path) -> RunInfo:
    path = Path(run_dir) / "run.json"
    if not path.is_file():
        raise InputError("run.json not found; is this a recording folder?", path)
    try:
        return RunInfo.model_validate_json(path.read_text())
    except ValueError as exc:
        raise InputError(f"invalid run.json: {exc}", path) from exc


def load_npz_checked(path: str | Path, required: list[str]) -> dict:
    """Load an .npz into a dict, with a clear error for a missing/corrupt file or missing arrays."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path)
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"not a readable .npz file ({exc})", path) from exc
    missing = [key for key in required if key not in arrays]
    if missing:
        raise InputError(f"missing arrays {missing}; found {sorted(arrays)}", path, missing[0])
    return arrays

"""Run-directory plumbing every format builds on: atomic writes, content hashing, checked JSON and
.npz reading, and the wall clock for bookkeeping.

The files themselves (run.json, MANIFEST.json, the recording's artifacts) are defined in
`core.formats`, one module each.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.errors import InputError

PARTIAL_SUFFIX = ".partial"  # a folder being built (new_partial)
# A zip archive starts with a local file header, or (when empty) with its end-of-directory record.
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")

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
    if path.is_dir():
        raise InputError("is an existing folder; give a file name to write", path)
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
    # allow_nan=False: a NaN or infinity is a bug upstream, and Python would write it as NaN / Infinity, which
    # is not JSON (other tools refuse the file); ValueError here instead.
    return atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=False, default=str, allow_nan=False) + "\n")


def new_partial(parent: str | Path, name: str) -> Path:
    """A new hidden folder `.<name>.XXXXXXXX.partial` in `parent` to build something in: the one spelling of
    GRADE's partial folders, which core.outputs removes as stale once their writer is gone."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=PARTIAL_SUFFIX, dir=parent))
    tmp.chmod(DIRECTORY_MODE)
    return tmp


@contextmanager
def partial_folder(parent: str | Path, name: str) -> Iterator[Path]:
    """A new partial folder (`new_partial`) for the `with` block, removed when it ends: what the block moved
    out of it is kept, whatever is still in it is not, on success or failure."""
    tmp = new_partial(parent, name)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def atomic_directory(path: str | Path) -> Iterator[Path]:
    """Build a directory under a temporary name and move it into place only on success.

    An existing directory at `path` is replaced. On an exception the temporary folder is removed
    and `path` is left as it was.
    """
    path = Path(path)
    with partial_folder(path.parent, path.name) as tmp:
        yield tmp
        if path.exists():
            trash = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, trash / "old")
            os.replace(tmp, path)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(tmp, path)


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


# ---------------------------------------------------------------- reading


def read_utf8(path: str | Path, what: str = "file") -> str:
    """A text input's content, decoded strictly as UTF-8, with universal newlines (as text-mode open() reads:
    \r\n and \r become \n). InputError naming the file when it is missing, and the line of the first byte that
    is not UTF-8 (a binary or Latin-1 file given where text belongs) instead of Python's UnicodeDecodeError:
    every text input of every command is read here."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} not found", path)
    return decode_utf8(path.read_bytes(), path).replace("\r\n", "\n").replace("\r", "\n")


def decode_utf8(data: bytes, path: str | Path) -> str:
    """`data`, read from `path`, decoded strictly as UTF-8; InputError naming the line and column of the first
    byte that is not (read_utf8, and the YAML reader, which reads its bytes itself to bound them)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise InputError(f"not UTF-8 text: byte 0x{data[exc.start]:02x} at column {column} cannot be decoded",
                         path, f"line {line}") from None


def _refuse_constant(name: str) -> Any:
    # Python's json reads NaN, Infinity and -Infinity, which JSON (RFC 8259) does not have: refused on reading
    # as on writing (atomic_write_json), so that no non-finite number enters the arithmetic from a file.
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # a number past float64's range (1e400), which float() reads as inf
        raise ValueError(f"{text} is beyond the range of a float")
    return value


def parse_json(text: str) -> Any:
    """json.loads as JSON is specified: ValueError (a JSONDecodeError where the syntax is wrong) for NaN and
    Infinity as for any malformed text, and for a number too large for a float."""
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def read_json(path: str | Path, what: str = "file") -> Any:
    """A JSON file's content; InputError naming the file when it is missing, not UTF-8 or malformed."""
    path = Path(path)
    text = read_utf8(path, what)
    try:
        return parse_json(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON ({exc.msg} at line {exc.lineno})", path) from exc
    except ValueError as exc:
        raise InputError(f"malformed JSON ({exc})", path) from exc


def load_npz_checked(path: str | Path, required: list[str], keys: Sequence[str] | None = None) -> dict:
    """Load an .npz into a dict (only the arrays in `keys` when given: the others are never decompressed),
    with a clear error for a missing/corrupt file or missing arrays."""
    import numpy as np

    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path)
    with open(path, "rb") as handle:
        if handle.read(4) not in ZIP_MAGICS:  # else numpy tries other formats and advises allow_pickle
            raise InputError("not an .npz file (an .npz is a zip archive of .npy arrays)", path)
    try:
        with np.load(path, allow_pickle=False) as data:
            missing = [key for key in required if key not in data.files]
            if missing:
                raise InputError(f"missing arrays {missing}; found {sorted(data.files)}", path, missing[0])
            arrays = {key: data[key] for key in data.files if keys is None or key in keys}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:  # truncated or damaged archives
        raise InputError(f"not a readable .npz file, truncated or damaged ({exc})", path) from exc
    return arrays


# ---------------------------------------------------------------- wall clock (bookkeeping)


def wall_clock_iso() -> str:
    """Wall-clock time for run.json bookkeeping only; never use it in data outputs."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class Stopwatch:
    """Wall-clock seconds for run.json bookkeeping and progress displays, never for data."""

    def __init__(self) -> None:
        self._start = time.perf_counter()

    def seconds(self) -> float:
        return time.perf_counter() - self._start

"""The Blender session in this process (`bpy`, Blender as a Python module): imported on first use, quiet.

bpy is one Blender per process: `open_session` empties it for a new scene, and every datablock made
before belongs to the session that made it. Blender prints to the process's own stdout (render stats,
"Saved: ..."), not through Python's `sys.stdout`, so what it writes while it imports and renders goes to a
scratch file instead and stdout stays parseable (`grade config show`). Its bundled audio module was built
against numpy 1.x and fails to start under numpy 2 (it says so on import); rendering does not use it.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from types import ModuleType

import numpy as np

from core.errors import InputError
from core.progress import get_logger

log = get_logger("cycles")
INSTALL_HINT = "install the cycles extra: pip install -e '.[cycles]'"
_STDOUT, _STDERR = 1, 2
_OUTPUT_TAIL = 2000  # characters of Blender's output kept in an error message


def bpy_missing() -> str | None:
    """Why Cycles cannot render here (bpy is not installed), or None; does not import bpy."""
    if importlib.util.find_spec("bpy") is None:
        return f"Blender's Python module (bpy) is not installed; {INSTALL_HINT}"
    return None


@contextmanager
def captured(streams: tuple[int, ...] = (_STDOUT,)) -> Iterator[list[str]]:
    """Sends what this process writes to the file descriptors `streams` to a scratch file; the list it
    yields holds that text once the block ends."""
    sys.stdout.flush()
    sys.stderr.flush()
    text: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as scratch:
        saved = [os.dup(fd) for fd in streams]
        try:
            for fd in streams:
                os.dup2(scratch.fileno(), fd)
            yield text
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in zip(streams, saved, strict=True):
                os.dup2(copy, fd)
                os.close(copy)
            scratch.seek(0)
            text.append(scratch.read().decode("utf-8", "replace"))


def tail(text: str) -> str:
    return text[-_OUTPUT_TAIL:].strip()


@cache
def bpy() -> ModuleType:
    """The bpy module, imported once with its start-up messages kept off the terminal."""
    output: list[str] = []
    try:
        with captured((_STDOUT, _STDERR)) as output:
            import bpy as module
    except ImportError as exc:
        raise InputError(f"cannot import Blender's Python module (bpy): {exc}; it printed: {tail(''.join(output))}; "
                         f"{INSTALL_HINT}", "render", "rgb") from exc
    log.debug("bpy %s imported; its start-up output: %s", module.app.version_string, tail(output[0]))
    atexit.register(_free)
    return module


def _free() -> None:
    """Frees every datablock at exit: Blender otherwise reports the blocks still held as leaks on stdout."""
    with captured():
        bpy().ops.wm.read_factory_settings(use_empty=True)


class Session:
    """The one Blender scene of this process; a later `open_session` makes it stale."""

    _current = 0

    def __init__(self) -> None:
        Session._current += 1
        self._number = Session._current

    def check(self) -> None:
        if self._number != Session._current:
            raise RuntimeError("this Cycles scene was replaced by a newer one in the same process (bpy holds one "
                               "Blender scene per process)")


def open_session() -> Session:
    """An empty Blender (factory settings, no objects) for a new scene."""
    with captured():
        bpy().ops.wm.read_factory_settings(use_empty=True)
    return Session()


def image_pixels(path: str) -> np.ndarray:
    """An image file Blender wrote, as float32 (H, W, channels) rows from the top (Blender's rows run from
    the bottom), in the file's own values (linear for OpenEXR)."""
    data = bpy().data
    image = data.images.load(path, check_existing=False)
    try:
        width, height = image.size
        pixels = np.empty(width * height * image.channels, np.float32)
        image.pixels.foreach_get(pixels)
        return pixels.reshape(height, width, image.channels)[::-1]
    finally:
        data.images.remove(image)

"""Where a run's live view goes (`--rerun spawn`, or `--rerun connect` with `--rerun-address`), checked and opened
before anything is written: a viewer window this process starts, or a Rerun viewer or server already listening.

A viewer that goes away during the run never stops the recording: the stream only logs, and a failed final flush
is a warning.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from core.errors import ConfigError
from core.progress import get_logger
from core.rerun_log import import_rerun, new_stream

if TYPE_CHECKING:
    from rerun import RecordingStream

MODES = ("spawn", "connect")
SCHEMES = ("rerun", "rerun+http", "rerun+https")
PROXY_PATH = "/proxy"
DEFAULT_PORT = 9876  # Rerun's own default, where `rerun` listens and `spawn` starts its viewer
PROBE_TIMEOUT_S = 2.0
FLUSH_TIMEOUT_S = 10.0
DISPLAY_VARIABLES = ("DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET")
log = get_logger("live_view")


@dataclass(frozen=True)
class LiveTarget:
    """`mode` spawn: a viewer window on the default port; connect: the viewer or server at `url`."""

    mode: str
    url: str | None = None


def live_target(mode: str | None, address: str | None = None) -> LiveTarget | None:
    """The checked target of `--rerun MODE [--rerun-address ADDRESS]` (address: a rerun URL, HOST:PORT or a port;
    default the local viewer's port); None without a mode."""
    if mode is None:
        if address is not None:
            raise ConfigError("goes with --rerun connect", field="--rerun-address")
        return None
    if mode not in MODES:
        raise ConfigError(f"expected one of {', '.join(MODES)}, got {mode!r}", field="--rerun")
    if mode == "spawn":
        if address is not None:
            raise ConfigError("goes with --rerun connect (--rerun spawn starts its own viewer)", field="--rerun-address")
        return LiveTarget(mode)
    return LiveTarget(mode, grpc_url(address if address is not None else str(DEFAULT_PORT)))


def grpc_url(address: str) -> str:
    """The Rerun gRPC proxy URL of a URL (rerun+http://HOST:PORT/proxy), HOST:PORT or PORT."""
    url = address.strip()
    if url.isdigit():
        url = f"127.0.0.1:{url}"
    if "://" not in url:
        url = f"rerun+http://{url}{PROXY_PATH}"
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in SCHEMES or not parts.hostname or port is None or parts.path != PROXY_PATH:
        raise ConfigError(f"expected rerun+http://HOST:PORT/proxy, HOST:PORT or PORT, got {address!r}",
                          field="--rerun-address")
    return url


@dataclass
class LiveStream:
    """An open Rerun stream (`rr` the rerun module, `rec` the stream) for the live view of one run."""

    rr: ModuleType
    rec: RecordingStream
    where: str

    def close(self) -> None:
        """Send what is left; a viewer that went away is a warning (the run's files are written regardless)."""
        try:
            self.rec.flush(timeout_sec=FLUSH_TIMEOUT_S)
        except RuntimeError as exc:
            log.warning("the live view could not send everything to %s: %s", self.where, exc)
        finally:
            self.rec.disconnect()


def open_live(target: LiveTarget, recording_id: str) -> LiveStream:
    """Start or reach the viewer of `target`; ConfigError (exit 2) when rerun-sdk is missing, there is no display
    for a viewer window, or nothing listens at the address."""
    rr = import_rerun()
    if target.mode == "spawn":
        return _spawn(rr, recording_id)
    _probe(target.url, f"no Rerun viewer or server is listening at {target.url}: start one (`rerun`, or "
                       f"`rerun --serve-grpc`), or use --rerun spawn", "--rerun-address")
    rec = new_stream(rr, recording_id)
    rec.connect_grpc(target.url)
    return LiveStream(rr, rec, target.url)


@contextmanager
def live_stream(target: LiveTarget | None, recording_id: str) -> Iterator[LiveStream | None]:
    """`open_live` for a with-block, closed at its end; None without a target."""
    if target is None:
        yield None
        return
    stream = open_live(target, recording_id)
    try:
        yield stream
    finally:
        stream.close()


def _spawn(rr: ModuleType, recording_id: str) -> LiveStream:
    if sys.platform.startswith("linux") and not any(os.environ.get(name) for name in DISPLAY_VARIABLES):
        raise ConfigError("no display for the viewer window (DISPLAY and WAYLAND_DISPLAY are unset): run `rerun` "
                          "where there is one and use --rerun connect --rerun-address HOST:PORT", field="--rerun spawn")
    rec = new_stream(rr, recording_id)
    # rr.spawn reuses a viewer already listening on the port, else starts the one rerun-sdk ships (which a
    # virtual environment's bin/ need not put on PATH).
    rr.spawn(port=DEFAULT_PORT, connect=True, recording=rec, executable_path=_bundled_viewer())
    url = f"rerun+http://127.0.0.1:{DEFAULT_PORT}{PROXY_PATH}"
    _probe(url, "the Rerun viewer did not start (see its messages above)", "--rerun spawn")
    return LiveStream(rr, rec, url)


def _bundled_viewer() -> str | None:
    spec = find_spec("rerun_cli")
    if spec is None or spec.origin is None:
        return None
    viewer = Path(spec.origin).parent / "rerun"
    return str(viewer) if viewer.is_file() else None


def _probe(url: str, message: str, field: str) -> None:
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        raise ConfigError(message, field=field) from exc

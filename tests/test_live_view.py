"""The live view (`--rerun`): a tiny demo run and a replay of it, streamed to a real Rerun gRPC server (the `rerun`
binary rerun-sdk ships, saving what arrives to an .rrd), arrive with the entities of the offline export and one
row per recorded frame, sweep, humans sample and physics step, on simulation time only; the run's files are
byte-identical to the same run without the live view. Bad targets are refused before anything is written."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from core.formats.manifest import MANIFEST
from core.formats.run_info import RUN_FILE
from core.outputs import LOCK_FILE
from core.recording import Recording
from tests.conftest import CONFIGS, TINY_RUN, assert_refused, requires_extra, run_grade, with_default_sigint
from tests.rrd_columns import rrd_columns

LIDAR = "lidar"
RUN = [*TINY_RUN, f"robot.sensors.lidar={{name: {LIDAR}, channels: 4, horizontal_resolution_deg: 10, rate_hz: 10}}"]
BOOKKEEPING = ("wall_seconds", "created", "updated")  # run.json's wall-clock fields
SERVER_START_S = 20.0
NS = 1e-9


@dataclass
class Server:
    address: str  # HOST:PORT
    rrd: Path
    process: subprocess.Popen

    def received(self) -> dict[str, dict[str, list]]:
        """Stop the server (Ctrl-C, which finishes its file) and read what it saved: per entity, its columns."""
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=300)  # only a hang guard: it writes out all it received first (>30 s loaded)
        return rrd_columns(self.rrd)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def serve(tmp_path) -> Iterator[Callable[[str], Server]]:
    """Starts Rerun gRPC servers on free ports, each saving every message it receives to tmp_path/<name>.rrd."""
    binary = Path(find_spec("rerun_cli").origin).parent / "rerun"
    started: list[subprocess.Popen] = []

    def start(name: str) -> Server:
        port, rrd = _free_port(), tmp_path / f"{name}.rrd"
        process = subprocess.Popen(with_default_sigint([str(binary), "--bind", "127.0.0.1", "--port", str(port),
                                                        "--save", str(rrd)]),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started.append(process)
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return Server(f"127.0.0.1:{port}", rrd, process)
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("the rerun server did not start")
                time.sleep(0.1)

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def _generate(out: Path, assets: Path, *extra: str) -> None:
    sets = [arg for value in RUN for arg in ("-s", value)]
    result = run_grade("generate", str(CONFIGS / "demo.yaml"), "--out", str(out), *sets, "-s", f"assets_dir={assets}",
                       *extra)
    assert result.returncode == 0, result.stderr


def _files(run: Path) -> dict[str, object]:
    """Every file's bytes' hash, but run.json without its wall-clock fields and MANIFEST.json without run.json's
    entry (whose hash they change); the writer lock is left out."""
    files: dict[str, object] = {}
    for path in sorted(run.rglob("*")):
        name = path.relative_to(run).as_posix()
        if not path.is_file() or name == LOCK_FILE:
            continue
        if name == RUN_FILE:
            files[name] = {k: v for k, v in json.loads(path.read_text()).items() if k not in BOOKKEEPING}
        elif name == MANIFEST:
            manifest = json.loads(path.read_text())
            manifest["files"].pop(RUN_FILE)
            files[name] = manifest
        else:
            files[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def _times(columns: dict[str, list]) -> list[float]:
    return [t * NS for t in columns["sim_time"] if t is not None]


def _assert_shows(received: dict[str, dict[str, list]], run: Path, offline: set[str]) -> None:
    """What arrived is what `run` recorded, under the offline export's entities."""
    recording = Recording.open(run)
    assert set(received) == offline
    assert "log_time" not in json.dumps(sorted(k for c in received.values() for k in c))  # simulation time only
    camera = recording.camera("camera")
    for kind in ("rgb", "depth", "instance", "semantic", "boxes"):
        assert _times(received[f"/world/camera/{kind}"]) == pytest.approx([f.time for f in camera]), kind
    assert len(camera) > 1
    lidar = recording.lidar(LIDAR)
    assert _times(received[f"/world/{LIDAR}/points"]) == pytest.approx([s.time for s in lidar])
    humans = recording.humans()
    name = humans.document.humans[0].name
    assert _times(received[f"/world/humans/{name}"]) == pytest.approx([humans[i].time for i in range(len(humans))])
    path = recording.robot_path()
    robot = received["/world/robot"]
    assert _times(robot) == pytest.approx(path.time)
    shown = [row[0] for row in robot["Transform3D:translation"] if row]
    assert np.allclose(shown, path.position, atol=1e-6)


@requires_extra("rerun")
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:RRD file has no footer")  # the server streams to its file, no index after
def test_a_run_and_its_replay_stream_what_they_record_and_write_the_same_bytes(serve, tmp_path, asset_cache):
    from rerun.chunk import RrdReader

    from postprocess.rerun_export import RobotExport, export_rerun

    live, plain = tmp_path / "live", tmp_path / "plain"
    _generate(plain, asset_cache)
    server = serve("run")
    _generate(live, asset_cache, "--rerun", "connect", "--rerun-address", server.address)
    received = server.received()
    assert _files(live) == _files(plain)
    offline, recording = tmp_path / "offline.rrd", Recording.open(plain)
    export_rerun(offline, recording.info, [RobotExport(None, [recording.camera("camera")], recording.robot_path(),
                                                       [recording.lidar(LIDAR)])], recording.humans())
    entities = {str(chunk.entity_path) for chunk in RrdReader(offline).stream().collect().stream()}
    _assert_shows(received, live, entities)

    # A replay is shown the same way; a teleport replay repeats its run byte for byte, with the live view too.
    server = serve("replay")
    replay = tmp_path / "replay"
    result = run_grade("replay", str(plain), "--out", str(replay), "--rerun", "connect", "--rerun-address",
                       server.address)
    assert result.returncode == 0, result.stderr
    recorded = ("gt", "bags", "states.npz", "humans")
    assert {k: v for k, v in _files(replay).items() if k.split("/")[0] in recorded} == {
        k: v for k, v in _files(plain).items() if k.split("/")[0] in recorded}
    _assert_shows(server.received(), replay, entities)


@pytest.mark.parametrize(("args", "mentions"), [
    (["--rerun", "connect", "--rerun-address", "http://127.0.0.1:9876/proxy"], ["--rerun-address", "HOST:PORT"]),
    (["--rerun", "connect", "--rerun-address", "localhost:notaport"], ["--rerun-address", "HOST:PORT"]),
    (["--rerun-address", "9876"], ["--rerun-address", "goes with --rerun connect"]),
    (["--rerun", "connect", "--rerun-address", str(_free_port())], ["--rerun-address", "no Rerun viewer"]),
])
def test_bad_live_view_targets_exit_2_before_writing(tmp_path, tiny_run, args, mentions):
    out = tmp_path / "run"
    assert_refused(run_grade("generate", str(CONFIGS / "demo.yaml"), "--out", str(out), *args), *mentions)
    assert not out.exists()
    assert_refused(run_grade("replay", str(tiny_run), "--out", str(out), *args), *mentions)
    assert not out.exists()


@pytest.mark.skipif(any(os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET")),
                    reason="a display is set: --rerun spawn would open a viewer window")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the display check is Linux's (X11 or Wayland)")
def test_spawn_without_a_display_is_a_clear_refusal(tmp_path):
    out = tmp_path / "run"
    assert_refused(run_grade("demo", "--out", str(out), "--rerun", "spawn"), "--rerun spawn", "no display")
    assert not out.exists()


def test_without_rerun_sdk_the_live_view_asks_for_the_viz_extra(tmp_path, monkeypatch):
    from core.config_io import load_experiment
    from core.errors import GradeError
    from pipeline.generate import generate
    from simulation.recording.live_target import live_target

    monkeypatch.setitem(sys.modules, "rerun", None)  # makes `import rerun` raise ImportError
    out = tmp_path / "run"
    with pytest.raises(GradeError, match=r'^rerun-sdk is not installed; install the viz extra: pip install "\.\[viz\]"$'):
        generate(load_experiment(CONFIGS / "demo.yaml", RUN), out, live=live_target("connect", "9876"))
    assert not out.exists()

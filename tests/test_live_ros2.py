"""Live ROS 2 (`grade generate --live ros2`, simulation.live.dds): the run published on DDS as it records, read by
a DDS reader of the test's own on a domain of its own (Cyclone on loopback). What arrives is the run's ROS 2 bag's
messages, and publishing changes nothing recorded: the run equals the same config recorded offline, byte for byte.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rosbags.highlevel import AnyReader

from core.config_io import load_experiment
from core.formats.bags import messages as m
from core.formats.run_info import read_run_info
from pipeline.generate import generate
from tests.conftest import CONFIGS, ROOT, TINY_RUN, requires_extra
from tests.test_live_dds import LOOPBACK_URI

pytestmark = [pytest.mark.slow, requires_extra("cyclonedds")]

ODOM = "/odom"


def hashes(run: Path) -> dict[str, str]:
    return {p.relative_to(run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file()
            and p.relative_to(run).parts[0] in ("gt", "bags", "states.npz", "humans")}


def test_a_ros2_live_run_publishes_its_bag_and_records_the_same_bytes(asset_cache, tmp_path, monkeypatch):
    from simulation.live.dds import DdsCommands

    domain = 1 + os.getpid() % 200
    monkeypatch.setenv("CYCLONEDDS_URI", LOOPBACK_URI)
    offline = tmp_path / "offline"
    generate(load_experiment(CONFIGS / "demo.yaml", TINY_RUN), offline, cache=asset_cache)
    live = tmp_path / "live"
    args = [sys.executable, "-m", "pipeline.cli", "generate", str(CONFIGS / "demo.yaml"), "--out", str(live),
            "--live", "ros2"]
    for override in [*TINY_RUN, "live.pacing=realtime", "live.rate_factor=0.5", f"assets_dir={asset_cache}"]:
        args += ["--set", override]
    with DdsCommands([(ODOM, m.ODOMETRY)], domain_id=domain) as reader:
        result = subprocess.run(args, cwd=ROOT, env={**os.environ, "ROS_DOMAIN_ID": str(domain)},
                                capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, result.stderr
        received = reader.take()
    assert hashes(live) == hashes(offline)
    report = read_run_info(live).live
    assert report["pacing"] == "realtime" and set(report["clock_jitter_ms"]) == {"mean", "p99", "max"}
    # Every odometry message that arrived (those after discovery) is the bag's, at its stamp.
    with AnyReader([next(p for p in (live / "bags").iterdir() if p.is_dir())]) as bag:
        connections = [c for c in bag.connections if c.topic == ODOM]
        recorded = {t: bytes(data) for _, t, data in bag.messages(connections=connections)}
    assert len(received) >= 10, len(received)
    store = m.ros2_typestore()
    for topic, _, message in received:
        stamp = message.header.stamp.sec * 1_000_000_000 + message.header.stamp.nanosec
        assert topic == ODOM and bytes(store.serialize_cdr(message, m.ODOMETRY)) == recorded[stamp]

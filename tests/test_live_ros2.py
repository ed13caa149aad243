"""Live ROS 2 (`grade generate --live ros2`, simulation.live.dds): the run published on DDS as it records, read by
a DDS reader of the test's own on a domain of its own (Cyclone on loopback). What arrives is the run's ROS 2 bag's
messages, and publishing changes nothing recorded: the run equals the same config recorded offline, byte for byte.
"""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from core.config_io import load_experiment
from core.formats.bags import messages as m
from core.formats.bags.messages import POINT_DTYPE
from core.formats.commands import read_command_log
from core.formats.humans import HUMANS_DIR, read_humans_document, read_humans_frame, sample_files
from core.formats.run_info import read_run_info
from pipeline.generate import generate
from simulation.live.commands import TWIST
from tests.conftest import CONFIGS, ROOT, TINY_RUN, requires_extra
from tests.test_live_dds import LOOPBACK_URI, domain  # noqa: F401 - a fixture
from tests.test_live_ros1 import TIAGO, WAYPOINTS, assert_reached

pytestmark = [pytest.mark.slow, pytest.mark.heavy, requires_extra("cyclonedds")]

ODOM = "/odom"
HUMANS = "/grade/humans"


def hashes(run: Path) -> dict[str, str]:
    return {p.relative_to(run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file()
            and p.relative_to(run).parts[0] in ("gt", "bags", "states.npz", "humans")}


def test_a_ros2_live_run_publishes_its_bag_and_records_the_same_bytes(asset_cache, tmp_path, monkeypatch):
    from simulation.live.dds import DdsSubscriber, pad_cdr

    domain = 1 + os.getpid() % 200  # noqa: F811 - its own, not the fixture's
    monkeypatch.setenv("CYCLONEDDS_URI", LOOPBACK_URI)
    offline = tmp_path / "offline"
    generate(load_experiment(CONFIGS / "demo.yaml", TINY_RUN), offline, cache=asset_cache)
    live = tmp_path / "live"
    args = [sys.executable, "-m", "pipeline.cli", "generate", str(CONFIGS / "demo.yaml"), "--out", str(live),
            "--live", "ros2"]
    for override in [*TINY_RUN, "live.pacing=realtime", "live.rate_factor=0.5", f"assets_dir={asset_cache}"]:
        args += ["--set", override]
    with DdsSubscriber(domain_id=domain) as reader:
        reader.subscribe(ODOM, m.ODOMETRY)
        reader.subscribe(HUMANS, m.POINT_CLOUD2)
        result = subprocess.run(args, cwd=ROOT, env={**os.environ, "ROS_DOMAIN_ID": str(domain)},
                                capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, result.stderr
        received = reader.take_received()
    assert hashes(live) == hashes(offline)
    report = read_run_info(live).live
    assert report["pacing"] == "realtime" and set(report["clock_jitter_ms"]) == {"mean", "p99", "max"}
    # Every odometry message that arrived (those after discovery) is the bag's, at its stamp.
    with AnyReader([next(p for p in (live / "bags").iterdir() if p.is_dir())]) as bag:
        connections = [c for c in bag.connections if c.topic == ODOM]
        recorded = {t: bytes(data) for _, t, data in bag.messages(connections=connections)}
    store = m.ros2_typestore()
    clouds = [store.deserialize_cdr(r.data, m.POINT_CLOUD2) for r in received if r.topic == HUMANS]
    received = [r for r in received if r.topic == ODOM]
    assert len(received) >= 10, len(received)
    # The humans, published live only: each cloud is every human's joints at its time, as the run's humans/ folder
    # records them (float32 there and in the cloud), intensity the human's index and ring the joint's.
    document = read_humans_document(live / HUMANS_DIR)
    recorded_humans = {round(frame.time * 1e9): frame for frame in
                       (read_humans_frame(path, document) for path in sample_files(live / HUMANS_DIR))}
    assert len(document.humans) == 1 and len(clouds) >= 5
    compared = 0
    for cloud in clouds:
        assert cloud.header.frame_id == "world"
        points = np.frombuffer(cloud.data.tobytes(), POINT_DTYPE)
        frame = recorded_humans.get(cloud.header.stamp.sec * 1_000_000_000 + cloud.header.stamp.nanosec)
        if frame is None:
            continue
        joints = frame.joints[document.humans[0].name]
        assert np.array_equal(np.stack([points["x"], points["y"], points["z"]], axis=1), joints)
        assert np.all(points["intensity"] == 0) and np.array_equal(points["ring"], np.arange(len(joints)))
        compared += 1
    assert compared >= 5, compared
    for message in received:
        odometry = store.deserialize_cdr(message.data, m.ODOMETRY)
        stamp = odometry.header.stamp.sec * 1_000_000_000 + odometry.header.stamp.nanosec
        assert message.topic == ODOM and message.data == pad_cdr(recorded[stamp])  # the bag's bytes, as DDS pads them


def test_a_dds_node_drives_the_tiago_in_lockstep(asset_cache, tmp_path, domain):  # noqa: F811 - the fixture
    """The shipped DDS example node (its own ROS 2 types, not GRADE's) answers the lockstep handshake with the count
    in the Header's frame_id and drives the TIAGo through three waypoints on rt/cmd_vel."""
    run = tmp_path / "live"
    args = [sys.executable, "-m", "pipeline.cli", "generate", str(CONFIGS / "demo-tiago.yaml"), "--out", str(run),
            "--live", "ros2"]
    for override in [*TIAGO, f"assets_dir={asset_cache}"]:
        args += ["--set", override]
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain)}
    grade = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    node = subprocess.Popen([sys.executable, str(ROOT / "examples" / "ros2" / "waypoints_dds.py"), *WAYPOINTS],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = grade.communicate(timeout=600)
    assert grade.returncode == 0, err
    node_out, node_err = node.communicate(timeout=60)  # it stops on rt/grade/finished
    assert node.returncode == 0, node_err
    assert [line.split()[:2] for line in node_out.splitlines()[:3]] == [["reached", "0"], ["reached", "1"],
                                                                         ["reached", "2"]], node_out
    assert_reached(run, WAYPOINTS)
    log = read_command_log(run)
    assert (log.middleware, log.pacing, log.timeouts) == ("ros2", "lockstep", [])
    twists = [c for c in log.commands if c.topic == "/cmd_vel"]
    assert {c.status for c in twists} == {"applied"} and {c.type for c in twists} == {TWIST}
    info = read_run_info(run)
    assert info.mission["planner"] == "external" and info.mission["reason"] == "time"
    assert info.mission["commands_applied"] == len(twists)
    assert info.live == {"pacing": "lockstep", "control_periods": math.floor(6.25 * 30) + 1}  # t = 0, 1/30 s, ...
    # One twist per answer but the first (before the node's topics connected), each taking effect at the period it
    # answered (the 30 Hz grid), or when control began (the bootstrap's end) for those sent before.
    times = np.array([c.time for c in twists])
    assert len(twists) == info.live["control_periods"] - 1
    later = times[times > 0.25 + 1e-9]
    assert np.allclose(later * 30, np.round(later * 30)) and times.min() == pytest.approx(0.25)
    assert len(later) == math.floor((6.25 - 0.25) * 30)

"""Live ROS 1 runs against offline ones: the real-time factor of a lock-stepped run (its node answering every
control period) against `grade generate` of the same config, the command-to-effect latency in simulated time, and
realtime pacing's jitter of /clock against the wall clock.

Run: .venv/bin/python benchmarks/live.py [--duration S] [--out DIR] [--cache DIR] [--smoke]

Starts a roscore of its own (free port, its own ROS_HOME), then records configs/demo.yaml (its 640x480 camera and
25 s, or --duration; --smoke: 96x72, 0.25 s after a 0.25 s bootstrap, no humans or flying objects) three ways, each
`grade generate` in a process of its own:
  offline    no ROS
  lockstep   --live ros1 with examples/ros1/pace_node.py answering each period once its odometry has arrived
  realtime   --live ros1, live.pacing realtime at half the offline real-time factor (so it can keep up)
and drives the TIAGo of configs/demo-tiago.yaml for 2 s (--smoke: 0.5 s) with examples/ros1/waypoints_node.py to
read, from commands.json and the recorded poses, when each command took effect and when the base first moved after
the first one.
Needs ROS 1 (Debian: apt install ros-core python3-rospy).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.formats.commands import read_command_log
from core.formats.run_info import read_run_info
from core.recording import Recording
from simulation.live.ros1 import check_master

EXAMPLES = ROOT / "examples" / "ros1"
SYSTEM_PYTHON = "/usr/bin/python3"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_master(home: Path) -> tuple[subprocess.Popen, dict[str, str]]:
    port = free_port()
    env = {**os.environ, "ROS_MASTER_URI": f"http://127.0.0.1:{port}", "ROS_HOME": str(home),
           "ROS_LOG_DIR": str(home / "log"), "ROS_HOSTNAME": "127.0.0.1", "GRADE_QUIET": "1"}
    core = subprocess.Popen(["roscore", "-p", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(600):
        try:
            check_master(env["ROS_MASTER_URI"])
            return core, env
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.1)
    raise SystemExit("roscore did not start")


def generate(env: dict[str, str], config: str, out: Path, overrides: list[str], live: bool,
             node: list[str] | None = None) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "pipeline.cli", "generate", str(ROOT / "configs" / config), "--out", str(out)]
    args += ["--live", "ros1"] if live else []
    for override in overrides:
        args += ["--set", override]
    helper = subprocess.Popen([SYSTEM_PYTHON, *node], cwd=EXAMPLES, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True) if node else None
    result = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if helper is not None:
        helper.communicate(timeout=60)
    if result.returncode != 0:
        raise SystemExit(f"grade generate failed:\n{result.stderr}")
    return result


def rtf(run: Path) -> tuple[float, float]:
    info = read_run_info(run)
    wall = info.wall_seconds["simulate_and_record"]
    return info.sim_time_end / wall, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--duration", type=float, help="simulated s after the bootstrap (default: the demo's)")
    parser.add_argument("--out", type=Path, help="keep the runs here (default: a temporary folder)")
    parser.add_argument("--cache", type=Path, help="asset cache (default: in --out)")
    parser.add_argument("--smoke", action="store_true",
                        help="0.25 s after a 0.25 s bootstrap, a 96x72 camera, no humans or flying objects, a 0.5 s TIAGo "
                        "run: the figures mean nothing")
    args = parser.parse_args()
    if shutil.which("roscore") is None:
        raise SystemExit("needs ROS 1's roscore (Debian: apt install ros-core python3-rospy)")
    out = args.out or Path(tempfile.mkdtemp(prefix="grade-live-"))
    cache = args.cache or out / "assets"
    duration = 0.25 if args.smoke else args.duration
    # Smoke: the code paths only (each run is a process of its own: its imports are most of its cost).
    small = (["robot.sensors.cameras.0.width=96", "robot.sensors.cameras.0.height=72", "simulation.bootstrap=0.25",
              "humans.count={min: 0, max: 0}", "flying_objects.count={min: 0, max: 0}"] if args.smoke else [])
    base = [f"assets_dir={cache}", *small, *([f"simulation.duration={duration}"] if duration else [])]
    core, env = start_master(out / "ros")
    try:
        generate(env, "demo.yaml", out / "offline", base, live=False)
        offline, offline_wall = rtf(out / "offline")
        generate(env, "demo.yaml", out / "lockstep", base, live=True, node=["pace_node.py"])
        lockstep, lockstep_wall = rtf(out / "lockstep")
        factor = round(offline * (4 if args.smoke else 0.5), 3)  # smoke: as fast as it goes, the code paths only
        generate(env, "demo.yaml", out / "realtime", [*base, "live.pacing=realtime", f"live.rate_factor={factor}"],
                 live=True)
        jitter = read_run_info(out / "realtime").live["clock_jitter_ms"]
        tiago = ["exploration.planner=external", "simulation.bootstrap=0.25",
                 f"simulation.duration={0.5 if args.smoke else 2}",
                 "humans.count={min: 0, max: 0}", "flying_objects.count={min: 0, max: 0}",
                 "robot.sensors.cameras.0.width=64", "robot.sensors.cameras.0.height=48", f"assets_dir={cache}"]
        generate(env, "demo-tiago.yaml", out / "tiago", tiago, live=True,
                 node=["waypoints_node.py", "--base", "ground", "0.5,0"])
    finally:
        os.killpg(core.pid, signal.SIGINT)
        core.wait(timeout=30)

    log = read_command_log(out / "tiago")
    applied = [c for c in log.commands if c.status in ("applied", "clipped")]
    period = 1.0 / log.control_hz
    times = np.array([c.time for c in applied])
    grid = times[times > times.min() + 1e-9] / period  # those sent before control began take effect when it does
    on_grid = bool(np.allclose(grid, np.round(grid)))
    first = next(c for c in applied if abs(c.values["vx"]) + abs(c.values["vy"]) > 0)
    path = Recording.open(out / "tiago").robot_path()
    at = int(np.searchsorted(path.time, first.time - 1e-9))
    moved = np.nonzero(np.linalg.norm(path.position[at:, :2] - path.position[at, :2], axis=1) > 1e-6)[0]
    motion = float(path.time[at + moved[0]] - first.time) if len(moved) else float("nan")

    simulated = read_run_info(out / "offline").sim_time_end
    print(f"demo.yaml, {simulated:g} s simulated{' (smoke)' if args.smoke else ''}, this machine:")
    print(f"  offline    real-time factor {offline:.3f} ({offline_wall:.1f} s wall)")
    print(f"  lockstep   real-time factor {lockstep:.3f} ({lockstep_wall:.1f} s wall): "
          f"{(lockstep_wall / offline_wall - 1) * 100:+.1f}% wall time against offline (target: at most +20%)")
    print(f"  realtime   at rate_factor {factor:g}: /clock late against the wall clock, mean {jitter['mean']:.2f} ms, "
          f"p99 {jitter['p99']:.2f} ms, max {jitter['max']:.2f} ms")
    print(f"command-to-effect latency (TIAGo, lockstep, {log.control_hz:g} Hz control): every command took effect "
          f"at the period it answered: {'yes' if on_grid else 'NO'} ({len(applied)} commands); the base first "
          f"moved {motion * 1000:.1f} ms (simulated) after the first non-zero twist took effect")


if __name__ == "__main__":
    main()

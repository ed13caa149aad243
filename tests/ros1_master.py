"""A roscore of a test module's own (the `roscore` fixture of tests/conftest.py): on a free port, with its own
ROS_HOME and log folder, stopped when the module is done. Where ROS 1 is not installed the module's tests skip with
the reason, or fail under GRADE_REQUIRE_ROS1=1 (CI, whose .ci/run installs it)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

REQUIRE_ROS1 = os.environ.get("GRADE_REQUIRE_ROS1", "") == "1"
SYSTEM_PYTHON = "/usr/bin/python3"


def ros1_missing() -> str | None:
    if shutil.which("roscore") is None or shutil.which("rostopic") is None:
        return "ROS 1's roscore is not installed (on Debian: apt-get install ros-core python3-rospy)"
    if subprocess.run([SYSTEM_PYTHON, "-c", "import rospy"], capture_output=True, check=False).returncode != 0:
        return f"{SYSTEM_PYTHON} has no rospy (on Debian: apt-get install python3-rospy)"
    return None


def require(missing: str | None) -> None:
    """Skip (or, under GRADE_REQUIRE_ROS1=1, fail) for what is `missing`."""
    if missing:
        if REQUIRE_ROS1:
            pytest.fail(f"{missing}; GRADE_REQUIRE_ROS1=1 requires it", pytrace=False)
        pytest.skip(missing)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_roscore(home: Path) -> Iterator[dict[str, str]]:
    """Start a roscore; yield the environment that reaches it; stop it."""
    require(ros1_missing())
    from simulation.live.ros1 import check_master

    port = free_port()
    env = {**os.environ, "ROS_MASTER_URI": f"http://127.0.0.1:{port}", "ROS_HOME": str(home),
           "ROS_LOG_DIR": str(home / "log"), "ROS_HOSTNAME": "127.0.0.1", "PYTHONDONTWRITEBYTECODE": "1"}
    core = subprocess.Popen(["roscore", "-p", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    # The master is up once it answers: a daemon's start-up, bounded; nothing is timed.
    for _ in range(600):
        try:
            os.environ["ROS_MASTER_URI"], saved = env["ROS_MASTER_URI"], os.environ.get("ROS_MASTER_URI")
            check_master(env["ROS_MASTER_URI"])
            break
        except Exception:  # noqa: BLE001 - not up yet
            assert core.poll() is None, "roscore exited"
            time.sleep(0.1)
        finally:
            if saved is None:
                os.environ.pop("ROS_MASTER_URI", None)
            else:
                os.environ["ROS_MASTER_URI"] = saved
    else:
        pytest.fail("roscore did not answer")
    yield env
    os.killpg(core.pid, signal.SIGINT)
    core.wait(timeout=30)

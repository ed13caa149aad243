"""Shared fixtures: paths to the repository, its configs and the optional real-data samples; the converted assets
and the tiny recorded run that many modules share.

Every test that reads the real samples goes through the `realdata` fixture; the collection hook below
marks those tests `realdata`, so `pytest -m realdata` / `-m "not realdata"` select exactly them. A test that needs
an optional extra's module is marked `requires_extra(module)`: it skips with the reason where the module is not
installed (an extra without wheels for this Python, which pyproject.toml's markers leave out), and fails instead in
CI (CI=true) or under GRADE_REQUIRE_EXTRAS=1, where every extra must be there.

Session fixtures are made once per test process; under pytest-xdist every worker is a process of its own, so the
shared folders live in the parent of the workers' base temporary folders, and the pipeline's own writer locks
(a run folder's, each asset package's) let the first worker build them while the others wait and find them done.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_process import run_cli
from tests.ros1_master import run_roscore

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs"
REALDATA = Path(os.environ.get("GRADE_REALDATA", ROOT.parent / "shared" / "realdata"))
# CI sets this so that a missing samples folder fails the run instead of passing with the tests skipped.
REQUIRE_REALDATA = os.environ.get("GRADE_REQUIRE_REALDATA", "") == "1"
# CI (which sets CI=true, on a Python that has every extra) makes a missing extra a failure instead of a skip.
REQUIRE_EXTRAS = os.environ.get("CI", "").lower() == "true" or os.environ.get("GRADE_REQUIRE_EXTRAS", "") == "1"
# The optional extras' modules that tests require, each with its extra and, where pyproject.toml's environment
# markers install it on some Pythons only, the newest one it has wheels for.
EXTRAS: dict[str, tuple[str, tuple[int, int] | None]] = {"bpy": ("cycles", (3, 11)), "cyclonedds": ("live", None)}
# A test's cost in fast tests (module_weight), as measured on 2 cores: fast 0.19 s on average, `slow` 1.8 s, `heavy`
# (the cluster, batch and live ROS tests) 7-16 s.
SLOW_WEIGHT, HEAVY_WEIGHT = 10, 60
# The fixtures that start daemons or several processes for the tests that use them (a roscore, the SLURM and Ray
# clusters, the local-pool batch): those tests are `heavy`.
DAEMON_FIXTURES = frozenset({"roscore", "slurm", "cluster", "local_batch"})


def requires_extra(module: str) -> pytest.MarkDecorator:
    """Mark a test (or a module, as `pytestmark`) as needing `module`, from one of pyproject.toml's extras."""
    return pytest.mark.requires_extra(module)


def extra_missing(module: str) -> str | None:
    """Why `module` cannot be imported here (not installed), or None; does not import it."""
    if importlib.util.find_spec(module) is not None:
        return None
    extra, newest = EXTRAS.get(module, ("dev", None))
    here = sys.version_info[:2]
    if newest is not None and here > newest:
        return (f"{module} (the '{extra}' extra) has no wheels for Python {here[0]}.{here[1]}: pyproject.toml "
                f"installs it up to Python {newest[0]}.{newest[1]}")
    return f"{module} (the '{extra}' extra) is not installed: pip install -c constraints.txt -e '.[{extra}]'"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a `requires_extra` test whose module is missing, or fail it under CI=true / GRADE_REQUIRE_EXTRAS=1."""
    for marker in item.iter_markers("requires_extra"):
        reason = extra_missing(marker.args[0])
        if reason:
            if REQUIRE_EXTRAS:
                pytest.fail(f"{reason}; CI=true or GRADE_REQUIRE_EXTRAS=1 requires it", pytrace=False)
            pytest.skip(reason)


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The shared real-data samples. When the folder is absent the test skips with the reason, or fails
    under GRADE_REQUIRE_REALDATA=1."""
    if not REALDATA.is_dir():
        reason = f"real-data samples not found at {REALDATA} (set GRADE_REALDATA to their folder)"
        if REQUIRE_REALDATA:
            pytest.fail(f"{reason}; GRADE_REQUIRE_REALDATA=1 requires them", pytrace=False)
        pytest.skip(reason)
    return REALDATA


# The demo shrunk to 0.5 s with one human and one flying object, a 96x72 camera, a straight flight, both bag
# formats (ROS 2 as uncompressed MCAP, depth as 16UC1): shared by every module that needs a small complete run.
TINY_RUN = ["simulation.duration=0.5", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
            "flying_objects.count={min: 1, max: 1}", "robot.sensors.cameras.0.width=96",
            "robot.sensors.cameras.0.height=72", "exploration.planner=waypoints",
            "exploration.waypoints=[[9, 9, 1.5]]", "recording.bag_formats=[ros1, ros2]",
            "recording.depth_encoding=16UC1"]


def session_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder for the whole session, shared by every pytest-xdist worker (each has a base temp folder of its
    own, side by side)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name


@pytest.fixture(scope="module")
def roscore(tmp_path_factory) -> Iterator[dict[str, str]]:
    """A roscore of the test module's own (tests/ros1_master.py): the environment that reaches it."""
    yield from run_roscore(tmp_path_factory.mktemp("ros"))


@pytest.fixture(scope="session")
def asset_cache(tmp_path_factory) -> Path:
    """One converted-asset cache for the runs the tests record with the demo's environment settings (any seed).
    Packages are content-addressed and each has a lock of its own, so runs and workers share them, each converted
    once; a run that changes the procedural house for a seed (rooms, furniture) must use a cache of its own, or
    it would rebuild a package other runs read."""
    return session_folder(tmp_path_factory, "assets")


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, asset_cache) -> Path:
    """TINY_RUN recorded once for the session. Shared: read it, or copy it (`copy_run`) to write into it."""
    from core.config_io import load_experiment
    from pipeline.generate import generate

    folder = session_folder(tmp_path_factory, "tiny-run")
    generate(load_experiment(CONFIGS / "demo.yaml", TINY_RUN), folder, cache=asset_cache, wait=True)
    return folder


@pytest.fixture(scope="session")
def local_batch(tmp_path_factory) -> Path:
    """The tiny two-sequence batch of tests/test_batch.py on the local pool, with a COCO export, recorded once for
    the session (the first worker to get here records it, the others wait on the lock): the ground truth every
    executor must give. Shared: read it only."""
    from tests.test_batch import write_batch

    folder = session_folder(tmp_path_factory, "local-batch")
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "fixture.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "recorded").exists():
            result = run_grade("batch", str(write_batch(folder, exports=("coco",))))
            assert result.returncode == 0, result.stderr
            (folder / "recorded").touch()
    return folder / "out"


def copy_run(run: Path, destination: Path) -> Path:
    """A private copy of a shared run folder, for a test that writes into it (its lock file left behind)."""
    from core.outputs import LOCK_FILE

    shutil.copytree(run, destination, ignore=shutil.ignore_patterns(LOCK_FILE))
    return destination


def module_weight(tests: list[pytest.Item]) -> int:
    """A test module's expected cost, in fast tests, from its tests' markers."""
    return sum(HEAVY_WEIGHT if test.get_closest_marker("heavy") else SLOW_WEIGHT if test.get_closest_marker("slow")
               else 1 for test in tests)


def heaviest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """`items` by module, the modules in order of `module_weight`, heaviest first (ties and each module's own tests
    in collection order)."""
    modules: dict[Path, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.path, []).append(item)
    return [item for tests in sorted(modules.values(), key=module_weight, reverse=True) for item in tests]


def unmarked_daemon_tests(items: list[pytest.Item]) -> list[str]:
    """The tests that use a fixture in DAEMON_FIXTURES without being marked `heavy`."""
    return [item.nodeid for item in items if DAEMON_FIXTURES & set(getattr(item, "fixturenames", ()))
            and item.get_closest_marker("heavy") is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put the test modules in order of `module_weight`, heaviest first: pytest-xdist hands each worker whole
    modules in this order (`--dist loadfile --no-loadscope-reorder`), so the last ones to start are short and the
    workers finish together. In the order it chose by itself, by number of tests, the two-test cluster modules come
    last: with three workers one of them ran both (a worker takes the next module while it has two tests or fewer
    left) for 40 s after the others had finished. A test that starts daemons (DAEMON_FIXTURES) must be marked
    `heavy`.

    Mark every test that uses the `realdata` fixture (directly or through another fixture) `realdata`;
    a test marked by hand that does not use it would skip nothing and fail where the samples are absent."""
    items[:] = heaviest_first(items)
    unmarked = unmarked_daemon_tests(items)
    if unmarked:  # it would be weighed as light, handed out last, and run alone at the end
        raise pytest.UsageError("these tests start daemons but are not marked heavy: " + ", ".join(unmarked))
    unguarded = []
    for item in items:
        uses = "realdata" in getattr(item, "fixturenames", ())
        if uses:
            item.add_marker(pytest.mark.realdata)
        elif item.get_closest_marker("realdata") is not None:
            unguarded.append(item.nodeid)
    if unguarded:
        raise pytest.UsageError("marked realdata but not using the realdata fixture: " + ", ".join(unguarded))


# Execs its arguments with SIGINT at its default: a shell starts background jobs (CI's too) with SIGINT ignored, a
# child keeps an ignored signal through exec, and Python and the Rerun server then ignore Ctrl-C. (A launcher, not
# Popen's preexec_fn, which is unsafe in a process with threads.)
_DEFAULT_SIGINT = "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])"


def with_default_sigint(args: list[str]) -> list[str]:
    """`args` to run as a terminal's foreground process would: stopped by Ctrl-C (SIGINT), however the suite was
    started."""
    return [sys.executable, "-S", "-c", _DEFAULT_SIGINT, *args]


def run_grade(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run the CLI as a user would, in a process of its own (tests/cli_process.py)."""
    return run_cli(list(args), cwd or ROOT, timeout)


def assert_refused(result: subprocess.CompletedProcess, *mentions: str) -> None:
    """A bad request refused as the project's standard asks: exit 2, one paragraph that names `mentions`, no
    traceback."""
    assert result.returncode == 2 and all(m in result.stderr for m in mentions), result.stderr
    assert "Traceback" not in result.stderr and "\n\n" not in result.stderr.strip()

"""Every script in benchmarks/ runs at its smallest (`--smoke`) and prints its figures, so a change that breaks a
benchmark fails here and not the next time someone measures (issue 45: benchmarks cannot rot).

Each script runs as `python benchmarks/NAME.py --smoke ...` would, in a process of its own: the script's folder
first on sys.path, the script as `__main__`, its own arguments, its working folder a temporary one, its outputs
under tmp_path (no writes into the repository, bytecode included). The process is forked from the CLI tests'
forkserver (tests/cli_process.py), which has imported every module of the project once, so each script pays for
its own work and not ~1.5 s of imports. The scripts that record or convert the demo get the session's asset cache
(`--cache`): their smoke configs use the tiny run's assets, converted once for the whole suite. A figure at this
size means nothing; the test checks that the script exits 0 and prints the line its figures end with.
"""

from __future__ import annotations

import os
import re
import resource
import runpy
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.cli_process import _CLEAN_SYS_PATH, _CONTEXT, _start_server, run_in_child
from tests.conftest import requires_extra

pytestmark = pytest.mark.slow  # each script a process of its own, doing a run or a conversion: seconds each

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
TIMEOUT_S = 300
NUMBER = re.compile(r"\d")


@dataclass(frozen=True)
class Case:
    """How a script's smoke run is called: arguments after --smoke, where {out}, {cache} and {realdata} stand for
    its output folder, the session's asset cache and the real-data samples, {run} for the smoke recording the
    scripts that only read one share (recorded by the first that runs); what its last figures print."""

    args: tuple[str, ...]
    prints: str | tuple[str, ...]
    extra: str | None = None  # an optional extra's module it needs
    realdata: bool = False
    fresh: bool = False  # a fresh interpreter: the script sets up the environment before its imports read it
    ros1: bool = False  # needs ROS 1 (roscore, rospy): skipped with the reason without, failed under GRADE_REQUIRE_ROS1


CASES = {
    # MUJOCO_GL, set before `import mujoco` reads it (the forkserver imported mujoco without it)
    "backend.py": Case(("--out", "{out}", "--cache", "{cache}"), "speed ratio against MuJoCo's renderer", fresh=True),
    "batch_scaling.py": Case(("--out", "{out}", "--cache", "{cache}"), "absolute scaling 1 -> 2 workers"),
    "blur.py": Case((), "fast: "),
    "cli_startup.py": Case(("--cache", "{cache}"), "grade generate (tiny"),
    "convert_amass.py": Case(("--sample", "{realdata}/amass/dmpl_sample.npz"), "points  :", realdata=True),
    "convert_front3d.py": Case(("{realdata}/front3d/0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json",), "package size",
                               realdata=True),
    "cycles_vs_raycast.py": Case(("--out", "{out}", "--cache", "{cache}"), "side by side", extra="bpy"),
    "events.py": Case((), "CPU s per simulated s"),
    "exploration.py": Case(("--cache", "{cache}"), "flat   uav          tour"),
    "export_speed.py": Case(("--run", "{run}", "--out", "{out}", "--cache", "{cache}"),
                            "yolo segment, nyu40 categories"),
    "frame_phases.py": Case(("--out", "{out}", "--cache", "{cache}"), "total (shading once, with shadow rays)"),
    "generate.py": Case(("--out", "{out}", "--cache", "{cache}", "--cpu-by-function"),
                        ("== paper camera setup", "CPU by function", "tile workers: colour")),
    "humans_sheet.py": Case(("--out", "{out}/sheet.png"), "1 humans: "),
    "imu_noise.py": Case((), "1000 samples"),
    "libm_f32.py": Case(("--all",), "expf: "),
    "live.py": Case(("--out", "{out}", "--cache", "{cache}"), "command-to-effect latency", ros1=True),
    "multi_robot.py": Case(("--out", "{out}", "--cache", "{cache}"), "tiago alone"),
    "physics.py": Case((), "UAV "),
    "place_amass_walk.py": Case(("--house", "{realdata}/front3d/0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json",
                                 "--sequence", "{realdata}/amass/cmu_01_01_smpl_poses.npz"), "least_sweep 2 s",
                                realdata=True),
    "place_humans.py": Case((), "total        place_scene"),
    "postprocess_demo.py": Case(("--out", "{out}", "--cache", "{cache}"), "post-processing costs"),
    "realism.py": Case(("--out", "{out}", "--cache", "{cache}", "--house",
                        "{realdata}/front3d/0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json"), "Cycles target",
                       extra="bpy", realdata=True),
    "refusals.py": Case((), "slowest: "),
    "render.py": Case(("--profile",), "96x54: "),
    "replay_speed.py": Case(("--run", "{run}", "--out", "{out}", "--cache", "{cache}"), "physics: "),
    "slam.py": Case(("--out", "{out}", "--cache", "{cache}"), "orbslam3-rgbd on dynamic", extra="pyorbslam3"),
    "tiago_mre.py": Case((), "wall time"),
}


def _params() -> list:
    return [pytest.param(name, marks=[requires_extra(case.extra)] if case.extra else [], id=name.removesuffix(".py"))
            for name, case in CASES.items()]


def test_every_benchmark_has_a_smoke_case():
    assert set(CASES) == {path.name for path in BENCHMARKS.glob("*.py")}


def _run_script(script: str, args: list[str], cwd: str, stdout: str, stderr: str, usage: str) -> None:
    """In the forked child: run `script` as `python script ARGS` would, its output to files, and write the CPU
    seconds it took (its own and its children's) to `usage`."""
    sys.path[:] = [str(Path(script).parent), *_CLEAN_SYS_PATH]
    sys.dont_write_bytecode = True
    tempfile.tempdir = cwd
    os.environ["TMPDIR"] = cwd
    os.chdir(cwd)
    sys.argv = [script, *args]
    code = 1
    try:  # an exception it lets through goes on to multiprocessing, which prints its traceback and exits 1
        code = run_in_child(lambda: runpy.run_path(script, run_name="__main__"), stdout, stderr)
    finally:
        spent = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
        Path(usage).write_text(f"{sum(u.ru_utime + u.ru_stime for u in spent):.2f}\n")
    os._exit(code)


def run_fresh(script: Path, args: list[str], folder: Path) -> tuple[subprocess.CompletedProcess, float]:
    """`python script ARGS` in `folder`, in a new interpreter; the result and its CPU seconds."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {**os.environ, "TMPDIR": str(folder), "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run([sys.executable, str(script), *args], cwd=folder, env=env, capture_output=True,
                            text=True, errors="replace", timeout=TIMEOUT_S, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def run_benchmark(script: Path, args: list[str], folder: Path) -> tuple[subprocess.CompletedProcess, float]:
    """`python script ARGS` in `folder` (forked from the forkserver); the result and its CPU seconds."""
    _start_server()
    files = {name: folder / f".{name}" for name in ("stdout", "stderr", "usage")}
    for path in files.values():
        path.touch()
    process = _CONTEXT.Process(target=_run_script, args=(str(script), args, str(folder),
                                                         *(str(path) for path in files.values())))
    process.start()
    process.join(TIMEOUT_S)
    if process.exitcode is None:
        process.kill()
        process.join()
        raise subprocess.TimeoutExpired([str(script), *args], TIMEOUT_S)
    usage = files["usage"].read_text().strip()
    return (subprocess.CompletedProcess([str(script), *args], process.exitcode,
                                        files["stdout"].read_text(errors="replace"),
                                        files["stderr"].read_text(errors="replace")),
            float(usage) if usage else float("nan"))


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("smoke") / "run"


@pytest.mark.parametrize("name", _params())
def test_benchmark_runs_at_its_smallest(name, tmp_path, asset_cache, smoke_run, request):
    case = CASES[name]
    if case.ros1 and shutil.which("roscore") is None:
        reason = "ROS 1 is not installed (on Debian: apt-get install ros-core python3-rospy)"
        if os.environ.get("GRADE_REQUIRE_ROS1", "") == "1":
            pytest.fail(f"{reason}; GRADE_REQUIRE_ROS1=1 requires it", pytrace=False)
        pytest.skip(reason)
    realdata = request.getfixturevalue("realdata") if case.realdata else None
    out = tmp_path / "out"
    work = tmp_path / "work"
    work.mkdir()
    args = ["--smoke", *(a.format(out=out, cache=asset_cache, realdata=realdata, run=smoke_run) for a in case.args)]
    result, cpu = (run_fresh if case.fresh else run_benchmark)(BENCHMARKS / name, args, work)
    print(f"{name}: {cpu:.1f} CPU s")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    figures = [line for line in result.stdout.splitlines() if line.strip() and NUMBER.search(line)]
    assert figures, result.stdout
    expected = (case.prints,) if isinstance(case.prints, str) else case.prints
    assert all(text in result.stdout for text in expected), result.stdout

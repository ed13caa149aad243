"""`grade benchmark slam` end to end on tiny recordings: a generated sequence, its replay without humans and a
noisy copy, an external method (a real subprocess on the TUM export) and a failing one; the tables agree with
the per-run metrics, known errors come out exactly, and a rerun resumes instead of redoing."""

from __future__ import annotations

import csv
import hashlib
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from core.formats.slam_metrics import read_slam_metrics
from core.recording import Recording
from tests.conftest import CONFIGS, run_grade

pytestmark = pytest.mark.slow

# The "SLAM method": the export's ground truth, shifted by a rigid transform (ATE 0 after alignment), with the
# frames in [0.4, 0.6) s dropped (a known tracking gap).
METHOD = '''
import sys
from pathlib import Path
import numpy as np
from scipy.spatial.transform import Rotation
rows = [l.split() for l in (Path(sys.argv[1]) / "groundtruth.txt").read_text().splitlines() if l and l[0] != "#"]
data = np.array(rows, float)
keep = (data[:, 0] < 0.4) | (data[:, 0] >= 0.6)
data = data[keep]
turn = Rotation.from_euler("z", 30, degrees=True)
data[:, 1:4] = turn.apply(data[:, 1:4]) + [1.0, -2.0, 0.5]
data[:, 4:8] = (turn * Rotation.from_quat(data[:, 4:8])).as_quat()
(Path(sys.argv[2]) / "estimate.txt").write_text("\\n".join(" ".join(f"{v:.9f}" for v in row) for row in data))
'''


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory, asset_cache) -> Path:
    root = tmp_path_factory.mktemp("slam")
    (root / "method.py").write_text(METHOD)
    config = {
        "name": "tiny", "output_dir": str(root / "out"), "repetitions": 2,
        "sequences": [
            {"name": "people", "experiment": str(CONFIGS / "demo.yaml"),
             "set": ["seed=1", "simulation.duration=0.75", "simulation.bootstrap=0.25", "humans.count={min: 3, max: 3}",
                     "robot.sensors.cameras.0.width=96", "robot.sensors.cameras.0.height=72",
                     "exploration.planner=waypoints", "exploration.waypoints=[[9, 9, 1.5]]",
                     f"assets_dir={asset_cache}"]},
            {"name": "empty", "without_humans_of": "people"},
            {"name": "noisy", "noisy_of": "people"},
        ],
        "methods": [
            {"name": "shifted-gt", "runner": "external", "command": f"{sys.executable} {root / 'method.py'} "
             "{sequence} {out}", "trajectory": "estimate.txt"},
            {"name": "broken", "runner": "external", "command": f"{sys.executable} -c 'raise SystemExit(3)'",
             "trajectory": "estimate.txt"},
        ],
    }
    (root / "bench.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    result = run_grade("benchmark", "slam", str(root / "bench.yaml"))
    assert result.returncode == 0, result.stderr
    return root


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".") and p.suffix != ".png"}


def test_sequences_are_made_as_configured(benchmark):
    sequences = benchmark / "out" / "sequences"
    people, empty = Recording.open(sequences / "people"), Recording.open(sequences / "empty")
    assert empty.info.replay_of["run"] == str(people.path.resolve())
    humans = {i for i, e in people.camera("camera").instances.instances.items() if e.kind == "human"}
    assert humans and not humans & set(empty.camera("camera").instances.instances)
    np.testing.assert_array_equal(people.robot_path().position, empty.robot_path().position)  # the same flight
    assert people.postprocess_record() is not None  # noisy_of post-processed the recording in place (beside it)


def test_known_errors_come_out_exactly_and_the_tables_agree(benchmark):
    results = benchmark / "out" / "results"
    for sequence in ("people", "empty", "noisy"):
        for run in ("run1", "run2"):
            metrics = read_slam_metrics(results / "shifted-gt" / sequence / run)
            assert metrics.ate.rmse < 1e-6  # a rigid transform of the ground truth
            # frames at 30 Hz: 0.4 and 0.6 are not frame times, so the gap runs from the frame before to the one after
            assert metrics.missing_time_s == pytest.approx(7 / 30, abs=1e-6)
            assert metrics.window == (0.25, 1.0)
        assert (results / "broken" / sequence / "run1" / "error.txt").read_text().startswith("the command exited")
    rows = {(r["method"], r["sequence"]): r for r in csv.DictReader((benchmark / "out" / "results.csv").open())}
    assert rows[("shifted-gt", "people")]["runs"] == "2" and rows[("shifted-gt", "people")]["failed"] == "0"
    assert float(rows[("shifted-gt", "noisy")]["missing_time_mean_s"]) == pytest.approx(7 / 30, abs=1e-5)
    assert rows[("broken", "empty")]["failed"] == "2" and rows[("broken", "empty")]["ate_rmse_mean_m"] == ""
    table = (benchmark / "out" / "results.md").read_text()
    assert "| shifted-gt | 0.00 (0.00) / 0.23 (0.00) |" in table and "| broken | failed | failed | failed |" in table


def test_a_rerun_resumes_without_redoing(benchmark):
    before = tree(benchmark / "out")
    result = run_grade("benchmark", "slam", str(benchmark / "bench.yaml"))
    assert result.returncode == 0, result.stderr
    after = tree(benchmark / "out")
    assert {k: v for k, v in after.items() if "broken" not in k} == {k: v for k, v in before.items()
                                                                      if "broken" not in k}


def test_bad_benchmark_configs_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("sequences: [{name: a, without_humans_of: b}]\nmethods: [{name: m, runner: orbslam3}]\n")
    result = run_grade("benchmark", "slam", str(bad))
    assert result.returncode == 2 and "names no other sequence" in result.stderr
    bad.write_text("sequences: [{name: a, run: missing}]\nmethods: [{name: m, runner: external}]\n")
    result = run_grade("benchmark", "slam", str(bad))
    assert result.returncode == 2 and "command" in result.stderr

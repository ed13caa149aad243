"""A corpus of bad inputs over every command, run as a user would (real `grade` processes, tests/cli_process.py).

Each case builds its input under tmp_path and states what the error must mention. Every case must
exit 2 (1 for a batch conversion where some files failed), print no traceback, and leave nothing
behind that was not there before (except what the case allows)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import yaml

from asset_converters.procedural import build_demo_assets
from core.formats.manifest import write_manifest
from tests.cli_process import run_cli
from tests.conftest import CONFIGS, assert_refused, copy_run
from tests.smpl_fixtures import build_model, save_npz
from tests.test_view import environment_package, write_run

pytestmark = pytest.mark.slow

DEMO = (CONFIGS / "demo.yaml").read_text()
# Every bad input is refused within seconds; a case that runs longer is a defect (an alias bomb once ran
# for minutes), so it fails on this limit instead of stalling the suite.
CASE_TIMEOUT_S = 60


def run_grade(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    try:
        return run_cli(list(args), cwd, CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"grade {' '.join(args)} ran longer than {CASE_TIMEOUT_S} s")


@dataclass
class Case:
    args: list[str]
    mentions: list[str]
    code: int = 2
    # Paths (relative to tmp_path) the command may create; everything else must be unchanged.
    may_create: list[str] = field(default_factory=list)


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def demo_with(tmp: Path, edit: Callable[[dict], None], name: str = "c.yaml") -> Path:
    data = yaml.safe_load(DEMO)
    edit(data)
    return write(tmp / name, yaml.safe_dump(data))


def validate(path: Path, *sets: str) -> list[str]:
    return ["config", "validate", str(path), *[a for s in sets for a in ("--set", s)]]


# ---------------------------------------------------------------- configs and --set


def _cfg_missing(t):
    return Case(validate(t / "nope.yaml"), ["nope.yaml", "not found"])


def _cfg_directory(t):
    (t / "adir.yaml").mkdir()
    return Case(validate(t / "adir.yaml"), ["adir.yaml", "folder"])


def _cfg_not_utf8(t):
    return Case(validate(write(t / "latin.yaml", "name: caf\xe9\n".encode("latin-1"))), ["latin.yaml", "UTF-8"])


def _cfg_malformed(t):
    return Case(validate(write(t / "m.yaml", "name: [unclosed\n")), ["m.yaml", "line"])


def _cfg_top_level_list(t):
    return Case(validate(write(t / "l.yaml", "- a\n- b\n")), ["l.yaml", "mapping"])


def _cfg_empty(t):
    return Case(validate(write(t / "empty.yaml", "")), ["empty.yaml", "sensor"])


def _cfg_no_cameras(t):
    return Case(validate(CONFIGS / "demo.yaml", "robot.sensors.cameras=[]", "robot.sensors.imus=[]"),
                ["robot.sensors", "sensor"])


def _cfg_typo(t):
    return Case(validate(write(t / "typo.yaml", DEMO.replace("physics_hz:", "physcs_hz:"))),
                ["typo.yaml", "physcs_hz", "physics_hz"])


def _cfg_duplicate_keys(t):
    return Case(validate(write(t / "dup.yaml", DEMO + "seed: 7\n")), ["dup.yaml", "seed", "duplicate"])


def _cfg_alias_bomb(t):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n"
    for i in range(1, 10):
        bomb += f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 9) + "]\n"
    return Case(validate(write(t / "bomb.yaml", bomb)), ["bomb.yaml", "alias"])


def _cfg_seed_bool(t):
    return Case(validate(CONFIGS / "demo.yaml", "seed=true"), ["seed"])


def _cfg_seed_huge(t):
    return Case(validate(CONFIGS / "demo.yaml", f"seed={2**31}"), ["seed", str(2**31 - 1)])


def _cfg_seed_negative(t):
    return Case(validate(CONFIGS / "demo.yaml", "seed=-1"), ["seed"])


def _cfg_duration_inf(t):
    return Case(validate(CONFIGS / "demo.yaml", "simulation.duration=.inf"), ["simulation.duration"])


def _cfg_duration_nan(t):
    return Case(validate(CONFIGS / "demo.yaml", "simulation.duration=.nan"), ["simulation.duration"])


def _cfg_duration_huge(t):
    return Case(validate(CONFIGS / "demo.yaml", "simulation.duration=1e9"), ["simulation.duration"])


def _cfg_camera_huge(t):
    return Case(validate(CONFIGS / "demo.yaml", "robot.sensors.cameras.0.width=100000",
                         "robot.sensors.cameras.0.height=100000"), ["robot.sensors.cameras.0", "pixels"])


def _cfg_rate(t):
    return Case(validate(CONFIGS / "demo.yaml", "robot.sensors.cameras.0.rate_hz=7"), ["rate_hz", "must divide"])


def _cfg_fov(t):
    return Case(validate(CONFIGS / "demo.yaml", "robot.sensors.cameras.0.fov_deg=180"), ["fov_deg"])


def _cfg_near_far(t):
    return Case(validate(CONFIGS / "demo.yaml", "robot.sensors.cameras.0.near=5",
                         "robot.sensors.cameras.0.far=1"), ["near", "far"])


def _cfg_mount_link(t):
    return Case(validate(CONFIGS / "demo.yaml", "robot.sensors.imus.0.mount.link=wing"), ["wing", "link"])


def _cfg_missing_input(t):
    return Case(validate(CONFIGS / "demo.yaml", "environment.source=front3d", "environment.path=no/house.json"),
                ["environment.path", "does not exist"])


def _cfg_markup_path(t):
    path = write(t / "a[" / "b]" / "c[red].yaml", DEMO.replace("physics_hz:", "physcs_hz:"))
    return Case(validate(path), ["c[red].yaml", "physcs_hz"])


def _cfg_markup_value(t):
    return Case(validate(CONFIGS / "demo.yaml", 'robot.kind="[/red]"'), ["robot.kind", "[/red]"])


def _set_no_equals(t):
    return Case(validate(CONFIGS / "demo.yaml", "simulation.duration"), ["--set", "key.path=value"])


def _set_empty_key(t):
    return Case(validate(CONFIGS / "demo.yaml", "simulation..duration=3"), ["empty key"])


def _set_bad_index(t):
    return Case(validate(CONFIGS / "demo.yaml", "robot.sensors.cameras.5.width=3"), ["cameras.5", "out of range"])


def _set_bad_yaml(t):
    return Case(validate(CONFIGS / "demo.yaml", "simulation.duration=[1,"), ["simulation.duration", "YAML"])


def _set_into_scalar(t):
    return Case(validate(CONFIGS / "demo.yaml", "seed.x=3"), ["seed.x"])


def _batch_missing_base(t):
    return Case(validate(write(t / "b.yaml", "base: nowhere.yaml\nseeds: [0]\n")), ["nowhere.yaml", "not found"])


def _batch_duplicate_seeds(t):
    return Case(validate(write(t / "b.yaml", f"base: {CONFIGS / 'demo.yaml'}\nseeds: [1, 1]\n")), ["b.yaml", "seeds"])


def _batch_bad_variant_key(t):
    text = f"base: {CONFIGS / 'demo.yaml'}\nvariants:\n  - name: v\n    set: {{simulation.durration: 3}}\n"
    return Case(validate(write(t / "b.yaml", text)), ["durration"])


# ---------------------------------------------------------------- converters


def _mesh_missing(t):
    return Case(["convert", "mesh", str(t / "none.obj"), "--out", str(t / "out")], ["none.obj"])


def _mesh_garbage(t):
    bad = write(t / "in" / "junk.obj", bytes(range(256)) * 8)
    return Case(["convert", "mesh", str(bad), "--out", str(t / "out")], ["junk.obj"])


TETRAHEDRON_OBJ = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


def _mesh_foreign_out(t):
    obj = write(t / "in" / "box.obj", TETRAHEDRON_OBJ)
    write(t / "out" / "box" / "precious.txt", "mine")
    return Case(["convert", "mesh", str(obj), "--out", str(t / "out"), "--kind", "object"],
                ["out", "not written by GRADE"])


def _mesh_foreign_package(t):
    # --out is a GRADE folder, but the package's own folder holds someone's file: that package is refused.
    obj = write(t / "in" / "box.obj", TETRAHEDRON_OBJ)
    write(t / "out" / ".grade.lock", "")
    write(t / "out" / "box" / "precious.txt", "mine")
    return Case(["convert", "mesh", str(obj), "--out", str(t / "out"), "--kind", "object"],
                ["box", "not written by GRADE"], may_create=["out/.grade.lock"])


def _front3d_malformed(t):
    return Case(["convert", "front3d", str(write(t / "h.json", "{ not json")), "--out", str(t / "out")],
                ["h.json", "JSON"])


def _front3d_not_object(t):
    return Case(["convert", "front3d", str(write(t / "h.json", "[1, 2]")), "--out", str(t / "out")], ["h.json"])


def _front3d_not_utf8(t):
    return Case(["convert", "front3d", str(write(t / "h.json", b'{"a": "\xff"}')), "--out", str(t / "out")],
                ["h.json", "UTF-8"])


def _smpl_args(t, seq: Path) -> list[str]:
    save_npz(build_model(), t / "body" / "SMPL_NEUTRAL.npz")
    return ["convert", "smpl", str(seq), "--body-model", str(t / "body"), "--out", str(t / "out")]


def _smpl_truncated(t):
    buffer = t / "full.npz"
    np.savez(buffer, poses=np.zeros((10, 72)), trans=np.zeros((10, 3)), mocap_framerate=30.0)
    seq = write(t / "seq.npz", buffer.read_bytes()[:200])
    buffer.unlink()
    return Case(_smpl_args(t, seq), ["seq.npz"])


def _smpl_zero_frames(t):
    seq = t / "zero.npz"
    np.savez(seq, poses=np.zeros((0, 72)), trans=np.zeros((0, 3)), mocap_framerate=30.0)
    return Case(_smpl_args(t, seq), ["zero.npz", "frame"])


def _smpl_random_bytes(t):
    seq = write(t / "rand.npz", np.random.default_rng(0).bytes(4096))
    case = Case(_smpl_args(t, seq), ["rand.npz"])
    return case


def _gso_missing(t):
    return Case(["convert", "gso", str(t / "nomodel"), "--out", str(t / "out")], ["nomodel"])


def _gso_bad_zip(t):
    return Case(["convert", "gso", str(write(t / "m.zip", b"PK not a zip")), "--out", str(t / "out")], ["m.zip"])


def _procedural_out_is_file(t):
    write(t / "afile", "x")
    return Case(["convert", "procedural", "--out", str(t / "afile"), "--rooms", "1"], ["afile"])


# ---------------------------------------------------------------- place, robot drive, view


def _place_missing_env(t):
    return Case(["place", str(t / "noenv"), "--count", "9-1", "--out", str(t / "p.json")], ["noenv"])


def _place_bad_count(t):
    environment = build_demo_assets(t / "assets", rooms=1, furniture=1, humans=0, objects=0).environment
    return Case(["place", str(environment), "--count", "lots", "--out", str(t / "p.json")], ["--count"])


def _place_not_an_environment(t):
    write(t / "env" / "meta.json", "{}")
    return Case(["place", str(t / "env"), "--out", str(t / "p.json")], ["env", "asset package"])


def _drive(t, text: str, *extra: str) -> list[str]:
    return ["robot", "drive", "tiago_omni", "--commands", str(write(t / "cmd.txt", text)), *extra]


def _drive_missing(t):
    return Case(["robot", "drive", "tiago_omni", "--commands", str(t / "none.txt")], ["none.txt"])


def _drive_malformed(t):
    return Case(_drive(t, "0.5 0 zero 1\n"), ["cmd.txt", "line 1"])


def _drive_too_long(t):
    return Case(_drive(t, "0.5 0 0 1e9\n"), ["cmd.txt", "seconds"])


def _drive_negative(t):
    return Case(_drive(t, "0.5 0 0 -1\n"), ["cmd.txt", "line 1"])


def _drive_out_is_dir(t):
    (t / "outdir").mkdir()
    return Case(_drive(t, "0.1 0 0 0.1\n", "--out", str(t / "outdir")), ["outdir"])


def _drive_unknown_robot(t):
    return Case(["robot", "drive", "spaceship", "--commands", str(write(t / "c.txt", "0 0 0 1\n"))], ["spaceship"])


def _view_missing(t):
    return Case(["view", str(t / "norun")], ["norun"])


def _view_not_a_run(t):
    (t / "plain").mkdir()
    return Case(["view", str(t / "plain")], ["run.json"])


def _view_bad_run_json(t):
    write(t / "r" / "run.json", '{"schema": "grade.run/1", "status": 5}')
    return Case(["view", str(t / "r")], ["run.json"])


def _view_newer_run_json(t):
    write(t / "r" / "run.json", '{"schema": "grade.run/9"}')
    return Case(["view", str(t / "r")], ["run.json", "grade.run/9"])


def _synthetic_run(t, status: str = "complete") -> Path:
    return write_run(t / "run", environment_package(t / "assets" / "room"), status=status)


def _view_truncated_states(t):
    run = _synthetic_run(t)
    states = run / "states.npz"
    states.write_bytes(states.read_bytes()[:300])
    return Case(["view", str(run), "--out", str(t / "v")], ["states.npz"])


def _view_out_is_file(t):
    run = _synthetic_run(t)
    write(t / "v", "not a folder")
    return Case(["view", str(run), "--out", str(t / "v")], ["v"])


def _view_killed_run_without_frames(t):
    run = _synthetic_run(t, status="running")
    for camera in (run / "gt").iterdir():
        if camera.is_dir():
            for file in sorted(camera.rglob("*"), reverse=True):
                file.rmdir() if file.is_dir() else file.unlink()
            camera.rmdir()
    return Case(["view", str(run), "--out", str(t / "v")], ["no frames", "running"])


# ---------------------------------------------------------------- generate


def _generate_foreign_folder(t):
    write(t / "x" / "bags" / "mine.bag", "k")
    return Case(["generate", str(CONFIGS / "demo.yaml"), "--out", str(t / "x")], ["not written by GRADE"])


def _generate_out_is_file(t):
    write(t / "f", "x")
    return Case(["generate", str(CONFIGS / "demo.yaml"), "--out", str(t / "f")], ["existing file"])


def _generate_bad_override(t):
    return Case(["generate", str(CONFIGS / "demo.yaml"), "--out", str(t / "r"), "--set", "robot.kind=boat"],
                ["robot.kind"])


# ---------------------------------------------------------------- text, empty trajectories, numbers at the edges
# Options are refused before the run named is opened, so those cases name a run that does not exist.

# Three seconds of poses at 10 Hz on a zigzag (not a line, so an alignment is determined).
POSES_TUM = "".join(f"{i / 10:.6f} {i * 0.1:.3f} {0.2 * (i % 3):.3f} 0 0 0 0 1\n" for i in range(30))
LATIN1_LINE = "# caf\xe9\n".encode("latin-1")


def _evaluate(t, est: str | bytes, *options: str, gt: str | bytes = POSES_TUM) -> list[str]:
    """`grade evaluate slam` of est.tum against gt.tum, into eval/ (which a refusal must not create)."""
    return ["evaluate", "slam", "--gt", str(write(t / "gt.tum", gt)), "--est", str(write(t / "est.tum", est)),
            "--out", str(t / "eval"), *options]


def _bad_frames_log(t, line: bytes) -> Path:
    """The synthetic run with its camera's first frames.jsonl line replaced by `line`, its manifest made again (a
    damaged file the manifest does not know of is refused as an incomplete run before it is read)."""
    run = _synthetic_run(t)
    log = run / "gt" / "front" / "frames.jsonl"
    log.write_bytes(line + log.read_bytes().partition(b"\n")[2])
    write_manifest(run, "record", "synthetic", include=("gt", "states.npz", "run.json"))
    return run


def _text_tum_latin1_comment(t):
    return Case(_evaluate(t, LATIN1_LINE + POSES_TUM.encode()), ["est.tum", "line 1", "not UTF-8", "0xe9"])


def _text_tum_binary(t):
    return Case(_evaluate(t, POSES_TUM, gt=POSES_TUM.encode() + bytes(range(128, 256))),
                ["gt.tum", "line 31", "not UTF-8"])


def _text_frames_jsonl_view(t):
    run = _bad_frames_log(t, b'{"frame": 0, "time": \xff}')
    return Case(["view", str(run), "--out", str(t / "v")], ["frames.jsonl", "line 1", "not UTF-8", "0xff"])


def _text_frames_jsonl_export(t):
    run = _bad_frames_log(t, b'{"frame": 0, "time": \xff}')
    return Case(["export", "coco", str(run), "--out", str(t / "coco")], ["frames.jsonl", "line 1", "not UTF-8"])


def _sequence(t) -> Path:
    """The folder an external method is given (its commands here ignore it)."""
    (t / "sequence").mkdir()
    return t / "sequence"


def _text_external_trajectory(t):
    source = write(t / "latin1.tum", LATIN1_LINE + POSES_TUM.encode())
    return Case(["benchmark", "run", "external", str(_sequence(t)), "--out", str(t / "slam"), "--command",
                 f"cp {source} {{out}}/trajectory.tum"], ["trajectory.tum", "line 1", "not UTF-8"],
                may_create=["slam"])  # the command's own output folder, written by the command


def _empty_est_file(t):
    return Case(_evaluate(t, ""), ["est.tum", "no poses"])


def _empty_gt_comments_only(t):
    return Case(_evaluate(t, POSES_TUM, gt="# timestamp tx ty tz qx qy qz qw\n\n   \n# the end\n"),
                ["gt.tum", "no poses"])


def _empty_recording_poses(t):
    run = _synthetic_run(t)
    write(run / "gt" / "front" / "poses.tum", "")
    return Case(["evaluate", "slam", "--gt", str(run), "--est", str(write(t / "est.tum", POSES_TUM))],
                ["camera front", "no poses"])


def _empty_external_trajectory(t):
    return Case(["benchmark", "run", "external", str(_sequence(t)), "--out", str(t / "slam"), "--command",
                 "touch {out}/trajectory.tum"], ["trajectory.tum", "no poses"], may_create=["slam"])


def _number_shard_size_overflow(t):
    return Case(["export", "webdataset", str(t / "run"), "--out", str(t / "wds"), "--shard-size", "1e400"],
                ["--shard-size", "1e400"])


def _number_shard_size_huge(t):
    return Case(["export", "webdataset", str(t / "run"), "--out", str(t / "wds"), "--shard-size", "1e30TB"],
                ["--shard-size", "1e30TB"])


def _number_frames_superscript(t):
    return Case(["replay", str(t / "run"), "--out", str(t / "r"), "--frames", "1,²"], ["--frames", "'²'"])


def _number_frames_other_script(t):
    return Case(["replay", str(t / "run"), "--out", str(t / "r"), "--frames", "0,\u0663"], ["--frames"])


def _number_frames_thousands_of_digits(t):
    return Case(["replay", str(t / "run"), "--out", str(t / "r"), "--frames", "9" * 5000], ["--frames"])


def _number_delta_nan(t):
    return Case(_evaluate(t, POSES_TUM, "--delta", "nan"), ["--delta"])


def _number_delta_inf(t):
    return Case(_evaluate(t, POSES_TUM, "--delta", "inf"), ["--delta", "finite"])


def _number_max_diff_overflow(t):
    return Case(_evaluate(t, POSES_TUM, "--max-diff", "1e400"), ["--max-diff", "finite"])


def _number_window_inf(t):
    return Case(_evaluate(t, POSES_TUM, "--window", "0", "inf"), ["--window", "finite"])


def _number_window_beyond_any_time(t):
    return Case(_evaluate(t, POSES_TUM, "--window", "-1e308", "1e308"), ["window", "1e+10"])


def _number_timeout_overflow(t):
    return Case(["benchmark", "run", "external", str(_sequence(t)), "--out", str(t / "slam"), "--command", "true",
                 "--timeout", "1e300"], ["--timeout"])


def _number_fps_nan(t):
    return Case(_evaluate(t, POSES_TUM, "--fps", "nan"), ["--fps"])


def _number_tum_huge_position(t):
    return Case(_evaluate(t, POSES_TUM + "3.1 1e308 0 0 0 0 0 1\n"), ["est.tum", "line 31", "position"])


def _number_tum_nan(t):
    return Case(_evaluate(t, POSES_TUM + "3.1 0 nan 0 0 0 0 1\n"), ["est.tum", "line 31", "finite"])


def _number_tum_nanosecond_times(t):
    return Case(_evaluate(t, POSES_TUM, gt="1305031098665900000 0 0 0 0 0 0 1\n"),
                ["gt.tum", "line 1", "TUM times are seconds"])


def _number_tum_huge_quaternion(t):
    return Case(_evaluate(t, "0 0 0 0 1e308 1e308 1e308 1e308\n" + POSES_TUM), ["est.tum", "line 1", "quaternion"])


def _number_export_depth_max_inf(t):
    return Case(["export", "tum", str(t / "run"), "--out", str(t / "tum"), "--depth-max", "inf"],
                ["--depth-max", "finite"])


def _number_replay_from_nan(t):
    return Case(["replay", str(t / "run"), "--out", str(t / "r"), "--from", "nan"], ["--from", "finite"])


def _number_frames_jsonl_nan(t):
    run = _bad_frames_log(t, b'{"frame": 0, "time": NaN}')
    return Case(["view", str(run), "--out", str(t / "v")], ["frames.jsonl", "line 1", "NaN is not a JSON number"])


CASES = {name.removeprefix("_"): fn for name, fn in sorted(globals().items())
         if name.startswith(("_cfg_", "_set_", "_batch_", "_mesh_", "_front3d_", "_smpl_", "_gso_", "_procedural_",
                             "_place_", "_drive_", "_view_", "_generate_", "_text_", "_empty_", "_number_"))
         and callable(fn) and name not in ("_smpl_args",)}


def test_corpus_is_large_enough():
    assert len(CASES) >= 60, len(CASES)


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_input(name, tmp_path):
    case = CASES[name](tmp_path)
    before = _snapshot(tmp_path)
    result = run_grade(*case.args, cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == case.code, output
    assert "Traceback" not in output, output
    flat = " ".join(output.split())
    for word in case.mentions:
        assert word in flat, (word, output)
    after = _snapshot(tmp_path)
    changed = {p for p in set(before) | set(after) if before.get(p, b"?") != after.get(p, b"?")}
    allowed = {p for p in changed if any(p == a or p.startswith(a + "/") for a in case.may_create)}
    assert changed == allowed, sorted(changed - allowed)


def test_postprocess_refuses_frames_that_are_not_utf8(tiny_run, tmp_path):
    """One \\xff byte in a recorded run's frames.jsonl given to `grade postprocess`: refused naming the file and the
    line, and the run is left as it was (no lock file, no outputs)."""
    run = copy_run(tiny_run, tmp_path / "run")
    log = run / "gt" / "camera" / "frames.jsonl"
    log.write_bytes(log.read_bytes().replace(b'"time"', b'"t\xffme"', 1))
    before = _snapshot(run)
    assert_refused(run_grade("postprocess", str(run), "--blur", cwd=tmp_path), "frames.jsonl", "line 1", "not UTF-8")
    assert _snapshot(run) == before


def test_mesh_with_a_latin1_comment_converts(tmp_path):
    """A valid OBJ whose comment is not UTF-8 is good input (trimesh decodes it with charset-normalizer)."""
    obj = write(tmp_path / "in" / "tetra.obj", "# mod\xe8le export\xe9\n".encode("latin-1") + TETRAHEDRON_OBJ.encode())
    result = run_grade("convert", "mesh", str(obj), "--out", str(tmp_path / "out"), "--kind", "object", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "tetra" / "meta.json").is_file()


def test_stale_partial_folders_of_a_killed_conversion_are_removed(tmp_path):
    obj = write(tmp_path / "in" / "tetra.obj", TETRAHEDRON_OBJ)
    stale = tmp_path / "out" / ".tetra.k1lled.partial"
    (stale / "textures").mkdir(parents=True)
    os.utime(stale, (0, 0))  # older than any running process
    result = run_grade("convert", "mesh", str(obj), "--out", str(tmp_path / "out"), "--kind", "object", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not stale.exists()

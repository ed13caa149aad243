"""Messages a user reads for bad inputs (issue 45 class 9), and the external SLAM runner's process handling (class 8),
run as a user would (real `grade` processes, tests/cli_process.py).

Every refusal exits 2 with one paragraph naming the file and field, no traceback, and leaves nothing behind:
incomplete runs given to the commands that read a run; FIFOs, devices and folders given where a config belongs
(a FIFO must not block the command); batches that make no experiments; and `grade benchmark run external`'s
timeouts, leftover processes, large output and empty trajectories. No assertion depends on timing: the method
scripts write their processes' ids, and the test checks those processes are gone once the command returned."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from core.formats.run_info import read_run_info, write_run_info
from tests.cli_process import run_cli
from tests.conftest import CONFIGS, assert_refused, copy_run

# Every case is refused (or done) within seconds; a command that runs longer is a defect (a FIFO opened for
# reading blocks until a writer comes), so it fails on this limit instead of stalling the suite.
CASE_TIMEOUT_S = 60
DEMO = CONFIGS / "demo.yaml"


def grade(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    try:
        return run_cli(list(args), cwd, CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"grade {' '.join(args)} ran longer than {CASE_TIMEOUT_S} s")


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None)
            for p in root.rglob("*") if not p.is_fifo()}


def refused_leaving_nothing(args: list[str], cwd: Path, *mentions: str) -> str:
    """`grade ARGS` refused (assert_refused) with `cwd` as it was; the message."""
    before = snapshot(cwd)
    result = grade(*args, cwd=cwd)
    assert_refused(result, *mentions)
    assert snapshot(cwd) == before, sorted(set(snapshot(cwd)) ^ set(before))
    return result.stderr


# ---------------------------------------------------------------- incomplete runs


def _no_manifest(run: Path) -> None:
    (run / "MANIFEST.json").unlink()


def _missing_file(run: Path) -> None:
    (run / "gt" / "camera" / "frames.jsonl").unlink()


def _status(status: str, error: str | None = None, replay: bool = False):
    def damage(run: Path) -> None:
        info = read_run_info(run)
        info.status, info.error = status, error
        if replay:
            info.replay_of = {"run": "runs/demo", "mode": "teleport"}
        write_run_info(run, info)
    return damage


TUM = "0.0 0 0 0 0 0 0 1\n0.1 0.1 0 0 0 0 0 1\n0.2 0.1 0.1 0 0 0 0 1\n"
COMMANDS = {
    "export-coco": lambda run, t: ["export", "coco", str(run), "--out", str(t / "coco")],
    "export-tum": lambda run, t: ["export", "tum", str(run), "--out", str(t / "tum")],
    "postprocess": lambda run, t: ["postprocess", str(run), "--blur"],
    "evaluate": lambda run, t: ["evaluate", "slam", "--gt", str(run), "--est", str(t / "est.tum"),
                                "--out", str(t / "eval")],
    "replay": lambda run, t: ["replay", str(run), "--out", str(t / "again")],
}
# (damage, command, what the message names)
INCOMPLETE = {
    "no-manifest": (_no_manifest, "export-coco", ["MANIFEST.json", "no MANIFEST.json", "grade generate"]),
    "missing-file": (_missing_file, "postprocess", ["MANIFEST.json", "gt/camera/frames.jsonl", "is missing"]),
    "interrupted": (_status("interrupted"), "evaluate", ["run.json", "status", "interrupted", "grade generate"]),
    "failed": (_status("failed", "RuntimeError: out of\nmemory"), "replay",
               ["run.json", "status", "failed (RuntimeError: out of memory)", "Fix the cause"]),
    "replay-running": (_status("running", replay=True), "export-tum", ["run.json", "'running'", "grade replay"]),
    **{f"{name}-no-manifest": (_no_manifest, name, ["MANIFEST.json", "grade generate"])
       for name in ("export-tum", "postprocess", "evaluate", "replay")},
}


@pytest.mark.parametrize("case", sorted(INCOMPLETE))
def test_an_incomplete_run_says_what_is_missing_and_how_to_finish_it(case, tiny_run, tmp_path):
    damage, command, mentions = INCOMPLETE[case]
    run = copy_run(tiny_run, tmp_path / "run")
    damage(run)
    (tmp_path / "est.tum").write_text(TUM)
    message = refused_leaving_nothing(COMMANDS[command](run, tmp_path), tmp_path, str(run), "is not complete",
                                      "run 'demo'", "again", *mentions)
    assert "allow_incomplete" not in message


# ---------------------------------------------------------------- FIFOs, devices and folders as configs


def _special(kind: str, t: Path) -> Path:
    if kind == "fifo":
        os.mkfifo(t / "config.yaml")  # nobody writes it: opened plainly, it would block for ever
        return t / "config.yaml"
    if kind == "folder":
        (t / "configs.yaml").mkdir()
        return t / "configs.yaml"
    return Path(f"/dev/{kind}")


CONFIG_COMMANDS = {
    "generate": lambda f, t: ["generate", str(f), "--out", str(t / "run")],
    "prepare": lambda f, t: ["prepare", str(f), "--out", str(t / "run")],
    "validate": lambda f, t: ["config", "validate", str(f)],
    "show": lambda f, t: ["config", "show", str(f)],
    "batch": lambda f, t: ["batch", "run", str(f), "--out", str(t / "batch")],
    "benchmark": lambda f, t: ["benchmark", "slam", str(f)],
    "replay-with": lambda f, t: ["replay", str(t / "run"), "--out", str(t / "again"), "--with", str(f)],
}
SPECIAL = [("fifo", name) for name in CONFIG_COMMANDS] + [
    (kind, name) for kind in ("zero", "null", "folder") for name in ("generate", "batch")]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize(("kind", "command"), SPECIAL)
def test_a_config_that_is_not_a_regular_file_is_named_for_what_it_is(kind, command, tmp_path):
    config = _special(kind, tmp_path)
    words = ["is a folder"] if kind == "folder" else ["not a regular file", "FIFO"]
    message = refused_leaving_nothing(CONFIG_COMMANDS[command](config, tmp_path), tmp_path, str(config), *words)
    assert "not found" not in message


@pytest.mark.parametrize("batch", [False, True])
def test_an_input_path_of_a_config_that_is_a_fifo_is_refused_by_its_key(batch, tmp_path):
    os.mkfifo(tmp_path / "sky.hdr")
    if batch:
        (tmp_path / "b.yaml").write_text(f"base: {DEMO}\nvariants: [{{name: sky, set: "
                                         f"{{render.environment: {tmp_path / 'sky.hdr'}}}}}]\n")
        args = ["batch", "run", str(tmp_path / "b.yaml"), "--out", str(tmp_path / "batch")]
        mentions = ["variant 'sky' of", "b.yaml"]
    else:
        args = ["generate", str(DEMO), "--out", str(tmp_path / "run"), "--set", f"render.environment={tmp_path}/sky.hdr"]
        mentions = [str(DEMO)]
    refused_leaving_nothing(args, tmp_path, "render.environment", "sky.hdr", "not a regular file", *mentions)


# ---------------------------------------------------------------- batches that make no experiments

EMPTY_BATCHES = {
    "no-seeds": (f"base: {DEMO}\nseeds: []\n", ["seeds (line 2)", "an empty list of seeds", "leave `seeds` out"]),
    "no-variants": (f"base: {DEMO}\nvariants: []\n", ["variants (line 2)", "an empty list of variants"]),
    "no-variants-exported": (f"base: {DEMO}\nvariants: []\nexports: [coco]\n", ["variants (line 2)"]),
    "empty-file": ("# a batch, some day\n", ["base", "the batch file is empty"]),
}


@pytest.mark.parametrize(("case", "command"), [(case, command) for case in sorted(EMPTY_BATCHES)
                                                for command in ("run", "validate")
                                                if (case, command) != ("empty-file", "validate")])
def test_a_batch_without_experiments_names_the_file_and_field(case, command, tmp_path):
    """(`config validate` reads a file without `base` as an experiment, so an empty one is not a batch there.)"""
    text, mentions = EMPTY_BATCHES[case]
    (tmp_path / "b.yaml").write_text(text)
    args = (["batch", "run", str(tmp_path / "b.yaml"), "--out", str(tmp_path / "batch")] if command == "run"
            else ["config", "validate", str(tmp_path / "b.yaml")])
    message = refused_leaving_nothing(args, tmp_path, "b.yaml", *mentions)
    assert "RUN" not in message and "recording" not in message


# ---------------------------------------------------------------- grade benchmark run external

# Three poses, as a method writes them.
TRAJECTORY = "# timestamp tx ty tz qx qy qz qw\n" + TUM


def _gone(pid: int) -> bool:
    """The process ended: no longer listed, or a zombie no one reaped (PID 1 in a container may never)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def _external(t: Path, script: str, *options: str) -> list[str]:
    """`grade benchmark run external` of `sh t/method.sh SEQUENCE OUT PIDS` into t/slam: the script writes the ids of
    its processes into PIDS, t/pids, made here (outside t/work, where the test runs and looks for leftovers)."""
    for folder in (t / "work" / "sequence", t / "pids"):
        folder.mkdir(parents=True, exist_ok=True)
    (t / "work" / "method.sh").write_text(script)
    return ["benchmark", "run", "external", str(t / "work" / "sequence"), "--out", str(t / "work" / "slam"),
            "--command", f"sh {t / 'work' / 'method.sh'} {{sequence}} {{out}} {t / 'pids'}", *options]


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="needs /proc")


@needs_proc
def test_external_timeout_stops_the_methods_children_too(tmp_path):
    """At the timeout the method's whole process group is stopped: its child that ignores SIGTERM is killed after
    the grace, so nothing of the method outlives the command."""
    script = ("sh -c 'trap \"\" TERM; echo $$ > \"$0/child.pid.tmp\"; mv \"$0/child.pid.tmp\" \"$0/child.pid\"; "
              "while :; do sleep 1; done' \"$3\" &\n"
              "while [ ! -s \"$3/child.pid\" ]; do sleep 0.01; done\n"
              "echo $$ > \"$3/method.pid\"\necho 'loading map'\nexec sleep 600\n")
    message = refused_leaving_nothing(_external(tmp_path, script, "--timeout", "1"), tmp_path / "work",
                                      "did not finish within 1 s and was stopped", "method.sh")
    pids = [int((tmp_path / "pids" / name).read_text()) for name in ("child.pid", "method.pid")]
    assert all(_gone(pid) for pid in pids), pids
    assert "loading map" in message


@needs_proc
def test_external_method_that_exits_is_finished_though_its_child_holds_the_output(tmp_path):
    """A method that exits 0 leaving a child with its output open is done (not timed out), its leftover child is
    stopped, and its whole output, 300 kB of it, is in OUT/method.log."""
    script = ("sleep 600 &\necho $! > \"$3/child.pid\"\n"
              "head -c 300000 /dev/zero | tr '\\0' x\necho\necho 'the last line'\n"
              f"printf '{TRAJECTORY}' > \"$2/trajectory.tum\"\n")
    result = grade(*_external(tmp_path, script, "--timeout", "600"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "tracked     3" in result.stdout
    assert _gone(int((tmp_path / "pids" / "child.pid").read_text()))
    log = (tmp_path / "work" / "slam" / "method.log").read_bytes()
    assert len(log) > 300_000 and log.rstrip().endswith(b"the last line")
    assert sorted(p.name for p in (tmp_path / "work" / "slam").iterdir()) == [
        ".grade.lock", "method.log", "runner.json", "trajectory.tum"]


def test_external_output_beyond_the_cap_keeps_its_head_and_tail_in_the_log(tmp_path):
    """A method that prints more than LOG_HEAD_BYTES leaves a log of its first LOG_HEAD_BYTES, a line saying how
    many bytes were left out, and its last TAIL_BYTES: the disk holds a bounded log, whose last line is still the
    method's."""
    from evaluation.external import LOG_HEAD_BYTES, TAIL_BYTES
    extra = 3 * TAIL_BYTES
    script = (f"echo 'the first line'\nhead -c {LOG_HEAD_BYTES + extra} /dev/zero | tr '\\0' x\n"
              f"echo\necho 'the last line'\nprintf '{TRAJECTORY}' > \"$2/trajectory.tum\"\n")
    result = grade(*_external(tmp_path, script, "--timeout", "600"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    log = (tmp_path / "work" / "slam" / "method.log").read_bytes()
    printed = len("the first line\n") + LOG_HEAD_BYTES + extra + len("\nthe last line\n")
    head, note, tail = log[:LOG_HEAD_BYTES], log[LOG_HEAD_BYTES:-TAIL_BYTES], log[-TAIL_BYTES:]
    assert head.startswith(b"the first line\nxxx") and tail.endswith(b"xxx\nthe last line\n")
    assert note == f"\n[grade: {printed - LOG_HEAD_BYTES - TAIL_BYTES} bytes of the command's output left out here; the "\
        f"log keeps its first {LOG_HEAD_BYTES} and last {TAIL_BYTES} bytes]\n".encode()


def test_external_failure_quotes_a_short_tail_of_a_large_output(tmp_path):
    script = ("echo 'the first line'\nhead -c 3000000 /dev/zero | tr '\\0' '\\n' | sed 's/^$/noise/'\n"
              "printf '\\033[31mthe last line\\033[0m\\n\\n\\n'\nexit 3\n")
    message = refused_leaving_nothing(_external(tmp_path, script), tmp_path / "work", "exited with status 3",
                                      "the last line")
    assert "the first line" not in message and "\x1b" not in message and len(message) < 4000


@pytest.mark.parametrize(("content", "words"), [
    ("", ["trajectory.tum", "no poses"]),
    ("# timestamp tx ty tz qx qy qz qw\n\n# nothing tracked\n", ["trajectory.tum", "no poses", "only comments"]),
    (None, ["trajectory.tum", "not a regular file"]),  # a FIFO, which must not block the read
])
def test_external_trajectory_without_poses_is_refused_naming_it(content, words, tmp_path):
    make = "mkfifo \"$2/trajectory.tum\"\n" if content is None else f"printf '{content}' > \"$2/trajectory.tum\"\n"
    refused_leaving_nothing(_external(tmp_path, make), tmp_path / "work", *words)


def test_external_method_that_cannot_start_is_refused(tmp_path):
    (tmp_path / "sequence").mkdir()
    args = ["benchmark", "run", "external", str(tmp_path / "sequence"), "--out", str(tmp_path / "slam"),
            "--command", f"{tmp_path / 'no-such-slam'} {{sequence}}"]
    refused_leaving_nothing(args, tmp_path, "cannot start the command", "no-such-slam")

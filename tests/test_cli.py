from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import CONFIGS, assert_refused, run_grade
from typer.testing import CliRunner


def test_validate_demo_succeeds():
    result = run_grade("config", "validate", str(CONFIGS / "demo.yaml"))
    assert result.returncode == 0, result.stderr
    assert "ok" in result.stderr


def test_validate_misspelled_key_exits_2_with_one_paragraph(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((CONFIGS / "demo.yaml").read_text().replace("physics_hz:", "physcs_hz:"))
    before = sorted(tmp_path.iterdir())
    result = run_grade("config", "validate", str(bad), cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "physcs_hz" in result.stderr and "did you mean 'physics_hz'" in result.stderr
    assert str(bad) in result.stderr.replace("\n", "")
    assert sorted(tmp_path.iterdir()) == before  # nothing written


@pytest.mark.slow
def test_show_prints_resolved_yaml_with_defaults_and_overrides():
    result = run_grade("config", "show", str(CONFIGS / "demo.yaml"), "--set", "simulation.duration=3")
    assert result.returncode == 0, result.stderr
    data = yaml.safe_load(result.stdout)
    assert data["simulation"]["duration"] == 3.0
    assert data["simulation"]["rates"]["tf_hz"] == 120.0  # a default not in the file
    assert data["humans"]["max_tries"] == 99


@pytest.mark.slow
def test_impossible_rate_override_exits_2():
    result = run_grade("config", "validate", str(CONFIGS / "demo.yaml"), "--set", "robot.sensors.cameras.0.rate_hz=7")
    assert result.returncode == 2
    assert "must divide" in result.stderr


@pytest.mark.slow
def test_batch_validate_and_show():
    result = run_grade("config", "validate", str(CONFIGS / "batch-example.yaml"))
    assert result.returncode == 0, result.stderr
    assert "6 experiments" in result.stderr
    shown = run_grade("config", "show", str(CONFIGS / "batch-example.yaml"))
    assert len(list(yaml.safe_load_all(shown.stdout))) == 6


def _commands(group, path=()):
    """(command path, click command) of every leaf command under `group`."""
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name), command


def _help(*args: str) -> str:
    from pipeline.cli import app

    result = CliRunner().invoke(app, [*args, "--help"], terminal_width=200)
    assert result.exit_code == 0, (args, result.output)
    return result.output


def test_every_command_has_an_example_and_flags_show_as_flags():
    import typer

    from pipeline.cli import app

    root = typer.main.get_command(app)
    leaves = list(_commands(root))
    assert len(leaves) > 20
    for path, command in leaves:
        text = _help(*path)
        assert "Example" in text and f"grade {' '.join(path)}" in text, path
        assert "<bool>" not in text, path  # a flag takes no value
        flags = [p for p in command.params if getattr(p, "is_flag", False)]
        for flag in flags:  # the flag's line names it and no value placeholder
            line = next(line for line in text.splitlines() if line.strip().startswith(flag.opts[0]))
            assert "<" not in line.split(flag.opts[0], 1)[1].split("  ")[0], (path, line)


def test_top_level_help_lists_commands_in_workflow_order_and_prints_the_version():
    import re
    from importlib.metadata import version

    from pipeline.cli import app

    text = _help()
    commands = text.split("Commands:")[1].split("Exit status:")[0]
    listed = [m.group(1) for m in re.finditer(r"^  (\S+)  ", commands, re.MULTILINE)]
    assert listed == ["demo", "convert", "place", "prepare", "generate", "batch", "view", "replay", "postprocess",
                      "export", "evaluate", "benchmark", "config", "robot"]
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"grade {version('grade')}"


def test_root_help_imports_no_command_and_lists_each_commands_own_summary():
    """`grade --help` is fast because it imports no command's module (nor numpy); the summary it lists for a
    command is that command's own first help line."""
    import subprocess
    import sys

    from pipeline.cli import COMMANDS, load_command

    probe = ("import sys\nfrom pipeline.cli import main\nsys.argv = ['grade', '--help']\ntry:\n    main()\n"
             "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.split('.')[0] in "
             f"{sorted({c.module.split('.')[0] for c in COMMANDS.values()} | {'numpy', 'scipy', 'pydantic'})!r} "
             "and m not in ('pipeline', 'pipeline.cli', 'pipeline.cli_help')))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout
    for name, spec in COMMANDS.items():
        assert load_command(name).get_short_help_str(limit=500) == spec.summary, name


def test_help_names_values_as_people_write_them_and_every_option_has_help():
    """No Python types in help (`<path>`, `<list[str]>`, `{CONFIG}`, `[[DIR]]`): arguments by name (RUN...),
    option values by their choices, FILE/DIR/PATH, INT, NUMBER or TEXT; and a help line for every option."""
    import re

    import typer

    from pipeline.cli import app

    root = typer.main.get_command(app)
    leaves = list(_commands(root))
    for path, command in leaves:
        text = _help(*path)
        usage = text.splitlines()[0]
        assert "{" not in usage and "[[" not in usage, (path, usage)
        assert not re.search(r"<(path|str|int|float|list\[[^>]*|int range|float range|file|dir)>", text), (path, text)
        for param in command.params:
            if param.param_type_name == "option" and param.name != "help":
                assert (param.help or "").strip(), (path, param.name)
    assert "RUN..." in _help("export", "coco") and "Usage: grade export coco [OPTIONS] RUN..." in _help(
        "export", "coco")
    assert "--set KEY=VALUE" in _help("generate") and "--min-box INT" in _help("export", "coco")
    refused = CliRunner().invoke(app, ["batch", "run", "x.yaml", "--executor", "cloud"])
    assert refused.exit_code == 2 and "local" in refused.output and "slurm" in refused.output


def test_choice_options_list_the_choices_the_code_accepts():
    from typing import get_args

    from core.config import DepthNoiseConfig
    from evaluation.cli import SLAM_METHODS
    from evaluation.orbslam import MODES as ORBSLAM_MODES
    from pipeline.batch_config import ExecutorConfig
    from postprocess.process_run import PRESETS
    from replay.driver import MODES as REPLAY_MODES

    expected = {("replay",): ("--mode", REPLAY_MODES),
                ("benchmark", "run"): ("--mode", tuple(ORBSLAM_MODES)),
                ("postprocess",): ("--depth", get_args(DepthNoiseConfig.model_fields["model"].annotation)),
                ("batch", "run"): ("--executor", get_args(ExecutorConfig.model_fields["kind"].annotation))}
    for path, (option, choices) in expected.items():
        line = next(line for line in _help(*path).splitlines() if line.strip().startswith(option))
        assert line.split()[1] == "|".join(choices), (path, line)
    assert "orbslam3|kiss-icp|external" == "|".join(SLAM_METHODS) and "orbslam3|kiss-icp|external" in _help(
        "benchmark", "run")
    assert set(PRESETS) == {"grade-paper"} and "--preset grade-paper" in " ".join(_help("postprocess").split())
    # An install hint in a help text keeps its brackets (no markup parsing).
    assert "pip install -e '.[viz]'" in " ".join(_help("view").split())


@pytest.mark.slow
def test_usage_errors_exit_2_without_traceback():
    for args in (["no-such-command"], ["convert", "procedural", "--out", "x", "--rooms", "abc"]):
        result = run_grade(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_help_documents_every_exit_code_and_failures_of_some_inputs_or_jobs_have_their_own():
    from core.errors import EXIT_CODE_MEANINGS, ExitCode

    assert set(EXIT_CODE_MEANINGS) == set(ExitCode)
    assert len({ExitCode.CRASH, ExitCode.BAD_INPUT, ExitCode.CONVERT_FAILURES, ExitCode.BATCH_FAILURES}) == 4
    text = " ".join(_help().split())
    for code, meaning in EXIT_CODE_MEANINGS.items():
        assert f"{int(code)} {meaning}" in text
    for args, codes in ((("convert",), (ExitCode.BAD_INPUT, ExitCode.CONVERT_FAILURES)),
                        (("batch",), (ExitCode.BAD_INPUT, ExitCode.BATCH_FAILURES))):
        text = " ".join(_help(*args).split())
        assert all(f"{int(code)} {EXIT_CODE_MEANINGS[code]}" in text for code in codes), args


def test_short_help_completion_and_verbosity_options(tmp_path, asset_cache):
    """-h on every level, the shell completion script, -q/-v refused together, and --log-file receiving the
    messages of a command that logs (grade prepare's placement lines)."""
    from pipeline.cli import app

    for args in (["-h"], ["config", "-h"], ["robot", "inspect", "-h"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0 and result.output.startswith("Usage: grade"), (args, result.output)
    # From a bash, as a user asks for it: the option takes no shell name, it finds the shell among its ancestors
    # (the suite's own may have none: run detached, pytest's parent is init). The second command keeps bash from
    # exec'ing grade in its place.
    grade = Path(sys.executable).with_name("grade")
    completion = subprocess.run(["bash", "-c", f"{shlex.quote(str(grade))} --show-completion; exit $?"], capture_output=True,
                                text=True, timeout=60, check=False)
    assert completion.returncode == 0 and "_grade_completion" in completion.stdout, completion.stdout + completion.stderr
    assert_refused(run_grade("-v", "-q", "config", "validate", str(CONFIGS / "demo.yaml")), "-v/-q")
    log = tmp_path / "grade.log"
    result = run_grade("--log-file", str(log), "prepare", str(CONFIGS / "demo.yaml"), "--out", str(tmp_path / "run"),
                       "--set", "humans.count={min: 1, max: 1}", "--set", "flying_objects.count={min: 0, max: 0}",
                       "--set", f"assets_dir={asset_cache}")
    assert result.returncode == 0, result.stderr
    assert "INFO grade.placement: placed 1 of 1 humans" in log.read_text().splitlines()
    quiet = run_grade("-q", "prepare", str(CONFIGS / "demo.yaml"), "--out", str(tmp_path / "quiet"),
                      "--set", "humans.count={min: 1, max: 1}", "--set", "flying_objects.count={min: 0, max: 0}",
                      "--set", f"assets_dir={asset_cache}")
    assert quiet.returncode == 0 and "placed" not in quiet.stderr


# Each command reads its config (or options file) before importing what does the work, so that a bad one is refused
# in a fraction of a second and a few tens of MB; these modules cost ~1.5 s and 150 MB to import.
HEAVY = {"pipeline.generate", "pipeline.prepare", "pipeline.batch", "pipeline.benchmark", "replay.run",
         "simulation.embedded"}
PROBE = """import json, sys
from pipeline.cli import main
sys.argv = ["grade", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    print(json.dumps([exc.code, sorted(m for m in sys.modules if m in {heavy})]))
"""


@pytest.mark.parametrize("command", [["generate"], ["prepare"], ["batch"], ["benchmark", "slam"],
                                     ["replay", "{run}", "--out", "{tmp}/replay", "--with"]])
def test_a_bad_config_is_refused_before_the_heavy_imports(command, tmp_path, tiny_run):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    args = [arg.format(run=tiny_run, tmp=tmp_path) for arg in command]
    result = subprocess.run([sys.executable, "-c", PROBE.format(heavy=sorted(HEAVY)), *args, str(bad)],
                            cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120,
                            env={**os.environ, "GRADE_QUIET": "1"})
    code, imported = json.loads(result.stdout.splitlines()[-1])
    assert code == 2 and "not valid YAML" in result.stderr and str(bad) in result.stderr.replace("\n", ""), result.stderr
    assert imported == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]

"""The `grade` command line. Stage commands live with their stage and are registered here."""

from __future__ import annotations

import enum
import logging
import os
import sys
import typing
from importlib.metadata import version
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from typer.core import TyperGroup

from asset_converters.cli import convert_app
from core.config import ExperimentConfig
from core.config_io import dump_yaml, load_experiment, validate_model
from core.errors import EXIT_CODES_HELP, ExitCode, GradeError, exit_code_help
from core.progress import configure_logging, console
from core.stage import output_folder
from core.yaml_io import read_yaml
from evaluation.cli import benchmark_app, evaluate_app
from export.cli import export_app
from pipeline.batch_config import BatchConfig, ExecutorConfig, expand_batch, load_batch
from pipeline.benchmark_config import SlamBenchmarkConfig, load_slam_benchmark
from placement.cli import place_command
from postprocess.cli import postprocess_command, view_command
from replay.cli import replay_command
from simulation.tiago.cli import robot_app

# `grade --help` lists the commands in the order a dataset is made and used, not alphabetically.
WORKFLOW = ("demo", "convert", "place", "prepare", "generate", "batch", "view", "replay", "postprocess", "export",
            "evaluate", "benchmark", "config", "robot")


class WorkflowGroup(TyperGroup):
    def list_commands(self, ctx: typer.Context) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda name: WORKFLOW.index(name) if name in WORKFLOW else len(WORKFLOW))


app = typer.Typer(
    name="grade",
    cls=WorkflowGroup,
    help="""GRADE: generate realistic animated dynamic environments for robotics research.

    \b
    A first run (procedural assets, no download):
      grade demo && grade view runs/demo
    """,
    epilog=EXIT_CODES_HELP,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    # -h as well as --help, for every command (click's contexts inherit it).
    context_settings={"max_content_width": 100, "help_option_names": ["-h", "--help"]},
    # Plain click help: flags shown as flags, choices listed, and '[viz]' in a help text is not taken
    # for rich markup.
    rich_markup_mode=None,
)
config_app = typer.Typer(help="Validate and inspect experiment and batch configs.", no_args_is_help=True)
app.add_typer(config_app, name="config")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"grade {version('grade')}")
        raise typer.Exit()


@app.callback()
def _options(
    _version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                           help="Print the version and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Debug messages too.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Warnings and errors only, no progress bars.")]
    = False,
    log_file: Annotated[Path | None, typer.Option("--log-file", metavar="FILE", dir_okay=False,
                                                  help="Also append the messages to FILE.")] = None,
) -> None:
    """Options that apply before any command (grade -v|-q|--log-file FILE COMMAND ...)."""
    if verbose and quiet:
        raise GradeError("give -v (more messages) or -q (fewer), not both", field="-v/-q")
    configure_logging(1 if verbose else -1 if quiet else 0, log_file)
app.add_typer(convert_app, name="convert")
app.add_typer(robot_app, name="robot")
app.add_typer(export_app, name="export")
app.add_typer(evaluate_app, name="evaluate")
app.add_typer(benchmark_app, name="benchmark")


@app.command("batch", epilog=exit_code_help(ExitCode.BAD_INPUT, ExitCode.BATCH_FAILURES))
def batch_command(
    target: Annotated[str, typer.Argument(metavar="BATCH.yaml|status", help="A batch config to run, or `status`.")],
    folder: Annotated[Path | None, typer.Argument(metavar="[DIR]", help="status: the batch folder.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="Batch folder (default: the config's output_dir).")]
    = None,
    executor: Annotated[ExecutorKind | None, typer.Option(
        "--executor", metavar="|".join(kind.value for kind in ExecutorKind),
        help="Where the jobs run (default: the config's executor.kind).")] = None,
    workers: Annotated[int | None, typer.Option("--workers", min=1, help="Jobs at a time.")] = None,
    address: Annotated[str | None, typer.Option("--address", help="ray: 'auto' or host:port.")] = None,
    pin_cores: Annotated[bool | None, typer.Option("--pin-cores/--no-pin-cores", help="local: run each worker's "
                                                   "jobs on cores of their own (Linux).")] = None,
    follow: Annotated[bool, typer.Option("--follow", help="status: show a live progress bar until the batch's "
                                                          "driver stops.")] = False,
) -> None:
    """Run a batch of experiments, or report its status.

    Jobs are resumable and retried; a summary lists failures with their logs.

    \b
    Examples:
      grade batch configs/grade-dataset.yaml --out datasets/grade --workers 2
      grade batch configs/grade-dataset.yaml --workers 8 --pin-cores
      grade batch configs/grade-dataset.yaml --executor slurm
      grade batch status datasets/grade --follow
    """
    from pipeline.batch import report_status, run_batch

    if target == "status":
        if folder is None:
            raise GradeError("name the batch folder: grade batch status DIR", field="DIR")
        report_status(folder, follow)
        return
    path = Path(target)
    batch = load_batch(path)
    changes = {"kind": executor.value if executor else None, "workers": workers, "ray_address": address,
               "pin_cores": pin_cores}
    data = batch.executor.model_dump() | {k: v for k, v in changes.items() if v is not None}
    settings = validate_model(ExecutorConfig, data, "--executor/--workers/--address/--pin-cores")
    state = run_batch(batch, path, out, settings)
    console.print(f"batch complete: {len(state.jobs)} jobs in {Path(out or batch.output_dir)}", soft_wrap=True)


@benchmark_app.command("slam")
def benchmark_slam(config: Annotated[Path, typer.Argument(metavar="CONFIG", help="SLAM benchmark YAML "
                                                          "(docs/guides/evaluate.md).")]) -> None:
    """Methods x sequences x repetitions: ATE and missing-time tables (CSV, Markdown), plots.

    \b
    Example:
      grade benchmark slam configs/slam-benchmark.yaml
    """
    from pipeline.benchmark import slam_benchmark

    result = slam_benchmark(load_slam_benchmark(config))
    for table in result.tables:
        console.print(str(table), soft_wrap=True)
    sys.stdout.write(result.tables[-1].read_text(encoding="utf-8"))
app.command("place")(place_command)
app.command("view")(view_command)
app.command("postprocess")(postprocess_command)
app.command("replay")(replay_command)

# `grade batch --executor`: the executor kinds of the batch document, as click choices.
ExecutorKind = enum.Enum("ExecutorKind", {kind: kind for kind in typing.get_args(
    ExecutorConfig.model_fields["kind"].annotation)}, type=str)
# `grade config schema --kind`: the documents a YAML file can be.
SchemaKind = enum.Enum("SchemaKind", {"experiment": "experiment", "batch": "batch", "slam_benchmark": "slam-benchmark"},
                       type=str)
SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", help="Override a key: --set simulation.duration=5 (repeatable)."),
]


def _is_batch(path: Path) -> bool:
    data, _ = read_yaml(path)
    return "base" in data and "base" in BatchConfig.model_fields


def _is_slam_benchmark(path: Path) -> bool:
    data, _ = read_yaml(path)
    return "methods" in data and "methods" in SlamBenchmarkConfig.model_fields


@config_app.command("validate")
def config_validate(
    file: Annotated[Path, typer.Argument(help="Experiment or batch YAML file.")],
    set_: SetOption = None,
) -> None:
    """Check a config: keys, types, physical invariants and input paths (exit 2 if bad).

    \b
    Example:
      grade config validate configs/paper-indoor.yaml --set simulation.duration=30
    """
    if _is_batch(file):
        experiments = expand_batch(load_batch(file), file)
        console.print(f"ok {file}: batch of {len(experiments)} experiments")
    elif _is_slam_benchmark(file):
        benchmark = load_slam_benchmark(file)
        console.print(f"ok {file}: SLAM benchmark of {len(benchmark.methods)} methods on {len(benchmark.sequences)} "
                      f"sequences, {benchmark.repetitions} runs each")
    else:
        from pipeline.generate import check_robots

        config = load_experiment(file, set_ or [])
        check_robots(config)  # a description robot's file, links and drive
        console.print(f"ok {file}: experiment {config.name!r}, seed {config.seed}")


@config_app.command("show")
def config_show(
    file: Annotated[Path, typer.Argument(help="Experiment or batch YAML file.")],
    set_: SetOption = None,
) -> None:
    """Print the resolved config with every default filled in (YAML on stdout).

    \b
    Example:
      grade config show configs/demo.yaml > my-experiment.yaml
    """
    if _is_batch(file):
        for config in expand_batch(load_batch(file), file):
            sys.stdout.write(f"--- # {config.name}\n{dump_yaml(config)}")
    elif _is_slam_benchmark(file):
        sys.stdout.write(dump_yaml(load_slam_benchmark(file)))
    else:
        sys.stdout.write(dump_yaml(load_experiment(file, set_ or [])))


@config_app.command("schema")
def config_schema(
    out: Annotated[Path | None, typer.Option("--out", metavar="FILE", help="JSON file to write (default: stdout).")]
    = None,
    kind: Annotated[SchemaKind, typer.Option("--kind", help="Which document's schema.")] = SchemaKind.experiment,
) -> None:
    """Write the JSON Schema of experiment configs (or batch or SLAM-benchmark documents), for editors.

    An editor with a YAML language server validates and completes a config whose first line names the schema:
    `# yaml-language-server: $schema=grade-experiment.schema.json`.

    \b
    Example:
      grade config schema --out grade-experiment.schema.json
    """
    import json

    from core.rundir import atomic_write_text

    model = {"experiment": ExperimentConfig, "batch": BatchConfig, "slam-benchmark": SlamBenchmarkConfig}[kind.value]
    text = json.dumps(model.model_json_schema(), indent=2) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(out, text)
        console.print(f"wrote {out}")


DEMO_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "demo.yaml"


def _prepare_and_report(config_file: Path, out: Path | None, overrides: list[str]) -> None:
    from pipeline.prepare import prepare

    config = load_experiment(config_file, overrides)
    with output_folder(out or config.output_dir, what="run folder") as folder:
        prepared = prepare(config, folder)
    console.print(f"environment  {prepared.environment}\nhumans       {len(prepared.humans)} packages\n"
                  f"objects      {len(prepared.objects)} packages\nplacement    {prepared.placement} "
                  f"(preview {prepared.placement.with_suffix('.png').name})\nscene        {prepared.scene}")


@app.command("prepare")
def prepare_command(
    config_file: Annotated[Path, typer.Argument(metavar="CONFIG", help="Experiment YAML file.")],
    out: Annotated[Path | None, typer.Option("--out", help="Run folder (default: the config's output_dir).")] = None,
    set_: SetOption = None,
) -> None:
    """Convert assets, place them and compose scene.usda.

    Assets are converted once into the cache; humans, objects and the robot start are placed.

    \b
    Example:
      grade prepare configs/paper-indoor.yaml --out runs/indoor-0
    """
    _prepare_and_report(config_file, out, set_ or [])


def _generate_and_report(config_file: Path, out: Path | None, overrides: list[str], force: bool, wait: bool) -> None:
    from pipeline.generate import generate

    config = load_experiment(config_file, overrides)
    result = generate(config, out, force=force, wait=wait)
    info = result.info
    state = "up to date" if result.skipped else info.status
    counts = ", ".join(f"{k} {v}" for k, v in sorted(info.frame_counts.items()) if k.startswith(("camera/", "lidar/")))
    console.print(f"run          {result.run} ({state})\nsimulated    {info.sim_time_end:.2f} s; {counts}\n"
                  f"mission      {info.mission}\nview it with grade view {result.run}")


ForceOption = Annotated[bool, typer.Option("--force", help="Record again even if the run is complete.")]
WaitOption = Annotated[bool, typer.Option("--wait", help="If another process is writing the run folder, wait "
                                                         "for it instead of failing.")]


@app.command("generate")
def generate_command(
    config_file: Annotated[Path, typer.Argument(metavar="CONFIG", help="Experiment YAML file.")],
    out: Annotated[Path | None, typer.Option("--out", help="Run folder (default: the config's output_dir).")] = None,
    set_: SetOption = None,
    force: ForceOption = False,
    wait: WaitOption = False,
) -> None:
    """Run one experiment end to end.

    Assets (cached), placement, scene, simulation, ROS bags and ground truth.

    \b
    Examples:
      grade generate configs/demo.yaml --out runs/demo-long --set simulation.duration=60
      grade generate configs/demo-tiago.yaml --set seed=7
    """
    _generate_and_report(config_file, out, set_ or [], force, wait)


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option("--out", help="Run folder.")] = Path("runs/demo"),
    set_: SetOption = None,
    force: ForceOption = False,
    wait: WaitOption = False,
) -> None:
    """The CPU demo: configs/demo.yaml into runs/demo.

    Procedural assets only: nothing is downloaded.

    \b
    Example:
      grade demo && grade view runs/demo
    """
    _generate_and_report(DEMO_CONFIG, out, set_ or [], force, wait)


def _os_error_message(exc: OSError) -> str:
    """One line naming the path(s) and the OS reason: 'PATH: No space left on device'."""
    paths = " -> ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None)
    reason = exc.strerror or str(exc)
    return f"{paths}: {reason}" if paths else reason


def _exit_interrupted() -> NoReturn:
    """Say how to resume and leave at once. The command has cleaned up its outputs by now; Python's own exit would
    first wait for every worker thread still busy with the abandoned work (a frame rendering, say). Once, in a
    full test run, that wait never ended (not reproduced in 52 tries since, cause unknown)."""
    console.print("interrupted; rerun the same command to resume")
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(ExitCode.INTERRUPTED)


def main() -> None:
    """Console-script entry point, the one error boundary (exit codes: core.errors.ExitCode): bad input and OS
    errors (read-only, permission denied, disk full, ...) become one plain-text paragraph and BAD_INPUT, Ctrl-C
    exits INTERRUPTED with how to resume; any other exception is a bug and keeps its traceback (CRASH)."""
    try:
        # Without standalone mode, click returns a command's typer.Exit code instead of raising it.
        code = app(standalone_mode=False)
        if code == ExitCode.INTERRUPTED:  # typer turns Ctrl-C into a returned 130 in this mode
            _exit_interrupted()
        if isinstance(code, int) and code:
            sys.exit(code)
    except GradeError as exc:
        console.print(f"error: {exc}", soft_wrap=True)
        sys.exit(exc.exit_code)
    except OSError as exc:
        console.print(f"error: {_os_error_message(exc)}", soft_wrap=True)
        sys.exit(ExitCode.BAD_INPUT)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        console.print("aborted")
        sys.exit(ExitCode.INTERRUPTED)
    except KeyboardInterrupt:
        _exit_interrupted()
    except typer.TyperException as exc:  # usage errors (bad option values) carry their own exit code
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            console.print(f"error: {exc.format_message()}")
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()

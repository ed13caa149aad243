"""`grade config validate|show|schema`: check a config, print it resolved, or write its JSON Schema."""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from core.config import ExperimentConfig
from core.config_io import dump_yaml, load_experiment
from core.progress import console
from core.rundir import atomic_write_text
from core.yaml_io import read_yaml
from pipeline.batch_config import BatchConfig, expand_batch, load_batch
from pipeline.benchmark_config import SlamBenchmarkConfig, load_slam_benchmark
from pipeline.run_cli import SetOption

config_app = typer.Typer(help="Validate and inspect experiment and batch configs.", no_args_is_help=True)
# `grade config schema --kind`: the documents a YAML file can be.
SchemaKind = enum.Enum("SchemaKind", {"experiment": "experiment", "batch": "batch", "slam_benchmark": "slam-benchmark"},
                       type=str)
FileArgument = Annotated[Path, typer.Argument(metavar="FILE", help="Experiment, batch or SLAM-benchmark YAML file.")]


def _is_batch(path: Path) -> bool:
    data, _ = read_yaml(path)
    return "base" in data and "base" in BatchConfig.model_fields


def _is_slam_benchmark(path: Path) -> bool:
    data, _ = read_yaml(path)
    return "methods" in data and "methods" in SlamBenchmarkConfig.model_fields


@config_app.command("validate")
def config_validate(file: FileArgument, set_: SetOption = None) -> None:
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
def config_show(file: FileArgument, set_: SetOption = None) -> None:
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
    model = {"experiment": ExperimentConfig, "batch": BatchConfig, "slam-benchmark": SlamBenchmarkConfig}[kind.value]
    text = json.dumps(model.model_json_schema(), indent=2) + "\n"
    if out is None:
        sys.stdout.write(text)
    else:
        atomic_write_text(out, text)
        console.print(f"wrote {out}")

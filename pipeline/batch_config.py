"""The batch document (`grade batch BATCH.yaml`): a base experiment crossed with seeds and variants, run as jobs
by an executor; loading it and expanding it into its experiments."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from core.config import (
    MAX_SEED,
    ExperimentConfig,
    InputPath,
    IntRange,
    PositiveInt,
    Seed,
    Strict,
    resolve_input_paths,
)
from core.config_io import check_input_paths, set_path, validate_model
from core.errors import ConfigError
from core.seeding import generator
from core.yaml_io import read_yaml

# Most experiments a batch may make, all variants together: ~30 times GRADE's dataset (342 sequences). Expanding
# that many takes ~20 s and ~300 MB; a batch asking for more (a `count` with a few zeros too many) is refused
# before any is expanded.
MAX_BATCH_EXPERIMENTS = 10_000


class FileDraw(Strict):
    """A file drawn per sequence from a folder (relative to the batch file), matching `glob`."""

    folder: InputPath
    glob: str = "*"


class Variant(Strict):
    """A named set of `key.path: value` overrides applied on top of the base experiment, optionally with its own
    number of sequences (`count`: seeds first, first + 1, ..., first being the batch's first seed) and values
    drawn per sequence (`draw`: from a list, an integer range, or the files of a folder; seeded by the
    sequence's seed and the variant's name, so the same batch draws the same values)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    set: dict[str, object] = Field(default_factory=dict)
    count: Annotated[PositiveInt, Field(le=MAX_BATCH_EXPERIMENTS)] | None = Field(
        None, description=f"sequences of this variant (default: one per batch seed), at most {MAX_BATCH_EXPERIMENTS:,}")
    draw: dict[str, list[object] | IntRange | FileDraw] = Field(default_factory=dict)  # IntRange: drawn uniformly

    @field_validator("draw")
    @classmethod
    def _non_empty(cls, draw: dict) -> dict:
        for key, values in draw.items():
            if isinstance(values, list) and not values:
                raise ValueError(f"draw.{key}: an empty list to draw from")
        return draw


MAX_WORKERS = 10_000  # jobs at a time
MAX_NODE_CPUS = 1024  # cores of one machine
MAX_NODE_GPUS = 64
MAX_NODE_MEMORY_GB = 65_536
MINUTES_PER_YEAR = 525_600


class ExecutorConfig(Strict):
    """Where `grade batch` runs its jobs: a local process pool, Ray, or SLURM through submitit."""

    kind: Literal["local", "ray", "slurm", "submitit-local"] = Field(
        "local", description="local: a pool of `workers` processes here; ray: tasks on a Ray cluster (`ray_address`, "
                             "or a local instance); slurm: submitit jobs on a SLURM cluster; submitit-local: "
                             "submitit's local executor (the SLURM path without a cluster)")
    workers: Annotated[int, Field(ge=1, le=MAX_WORKERS)] = Field(
        1, description="jobs at a time (local, ray, submitit-local); on slurm, the jobs kept in the queue at once")
    retries: Annotated[int, Field(ge=0, le=10)] = Field(1, description="attempts after a failed one, per job")
    ray_address: str | None = Field(None, description="ray: 'auto' or host:port; default: start a local instance")
    # Per job, at most what one machine has: a job asking for more never starts (Ray waits for the resources
    # for ever).
    cpus_per_job: Annotated[int, Field(ge=1, le=MAX_NODE_CPUS)] = Field(2, description="ray task num_cpus / slurm "
                                                                                      "cpus_per_task")
    threads_per_job: Annotated[int, Field(ge=1, le=MAX_NODE_CPUS)] | None = Field(None, description="render threads of each job (GRADE_THREADS; "
                                                                  "default: local: the cores / workers, ray and "
                                                                  "slurm: cpus_per_job)")
    pin_cores: bool = Field(False, description="local: run each worker's jobs on cores of their own (Linux CPU "
                                               "affinity, threads_per_job cores each), so that no job's threads "
                                               "compete with another's")
    gpus_per_job: Annotated[float, Field(ge=0, le=MAX_NODE_GPUS)] = Field(
        0.0, description="ray task num_gpus / slurm gpus_per_node, for GPU backends")
    slurm_partition: str | None = None
    slurm_time_min: Annotated[int, Field(ge=1, le=MINUTES_PER_YEAR)] = Field(120, description="slurm: time limit "
                                                                                              "per job, minutes")
    slurm_mem_gb: Annotated[float, Field(gt=0, le=MAX_NODE_MEMORY_GB)] = Field(8.0, description="slurm: memory per "
                                                                                               "job, GB")

    @model_validator(mode="after")
    def _pinned_locally(self) -> ExecutorConfig:
        if self.pin_cores and self.kind != "local":
            raise ValueError("pin_cores applies to the local pool only (Ray and SLURM place jobs on cores "
                             "themselves)")
        return self


class BatchConfig(Strict):
    """Many experiments: a base config crossed with seeds and variants, run as jobs by an executor."""

    base: InputPath = Field(description="experiment YAML, relative to the batch file")
    seeds: list[Seed] = Field(default_factory=lambda: [0], description="at least one; the first is where a variant's "
                                                                         "`count` of seeds starts")
    variants: list[Variant] = Field(default_factory=lambda: [Variant(name="default")])
    output_dir: Path = Path("runs/batch")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    exports: list[Literal["coco", "yolo", "tum", "euroc", "webdataset", "kitti"]] = Field(
        default_factory=list, description="exports of every run, made when all jobs are done (<dir>/exports/<format>, "
                                          "the `grade export` defaults)")

    @field_validator("seeds")
    @classmethod
    def _some_seeds(cls, seeds: list[int]) -> list[int]:
        if not seeds:
            raise ValueError("an empty list of seeds makes no experiments: name at least one seed (`seeds: [0]`), or "
                             "leave `seeds` out for seed 0")
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"seeds must be unique: {seeds}")
        return seeds

    @field_validator("variants")
    @classmethod
    def _some_variants(cls, variants: list[Variant]) -> list[Variant]:
        if not variants:
            raise ValueError("an empty list of variants makes no experiments: name at least one variant "
                             "(`- name: default`), or leave `variants` out to run the base experiment as it is")
        return variants

    @model_validator(mode="after")
    def _bounded(self) -> BatchConfig:
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError(f"variant names must be unique: {names}")
        for i, variant in enumerate(self.variants):
            if variant.count is not None and self.seeds[0] + variant.count - 1 > MAX_SEED:
                raise ValueError(f"variants.{i}.count: {variant.count:,} seeds from {self.seeds[0]} run past the "
                                 f"largest seed, {MAX_SEED}")
        # Counted here, from the numbers alone, so that a batch too large is refused before it is expanded.
        total = sum(len(variant_seeds(self, variant)) for variant in self.variants)
        if total > MAX_BATCH_EXPERIMENTS:
            raise ValueError(f"variants: the batch makes {total:,} experiments (seeds x variants, or the variants' "
                             f"counts), more than the {MAX_BATCH_EXPERIMENTS:,} a batch may make; split it into "
                             "several batches")
        return self


def variant_seeds(batch: BatchConfig, variant: Variant) -> list[int] | range:
    """The seeds of `variant`'s sequences: the batch's, or `count` of them from the batch's first."""
    return batch.seeds if variant.count is None else range(batch.seeds[0], batch.seeds[0] + variant.count)


def _drawn(variant: Variant, seed: int) -> dict[str, Any]:
    """The values `variant.draw` gives the sequence of `seed`: one seeded generator per (variant, seed), keys
    drawn in sorted order, so a batch always draws the same values."""
    rng = generator(seed, f"batch.draw.{variant.name}")
    values: dict[str, Any] = {}
    for key in sorted(variant.draw):
        spec = variant.draw[key]
        if isinstance(spec, IntRange):
            values[key] = int(rng.integers(spec.min, spec.max + 1))
            continue
        if isinstance(spec, FileDraw):
            choices: list[Any] = [str(p) for p in sorted(spec.folder.glob(spec.glob)) if p.is_file()]
            if not choices:
                raise ConfigError(f"no files match {spec.glob!r} in {spec.folder}", field=f"variants.{variant.name}."
                                  f"draw.{key}")
        else:
            choices = list(spec)
        values[key] = choices[int(rng.integers(len(choices)))]
    return values


def load_batch(path: str | Path) -> BatchConfig:
    """A batch config, with its base experiment and drawn folders made absolute against the batch file's folder."""
    path = Path(path)
    data, lines = read_yaml(path)
    if not data:
        raise ConfigError("the batch file is empty: a batch names its base experiment (`base: experiment.yaml`), "
                          "and its `seeds` and `variants` if not the defaults", path, "base")
    return resolve_input_paths(validate_model(BatchConfig, data, path, lines), path.parent.resolve())


def expand_batch(batch: BatchConfig, batch_file: str | Path = "batch") -> list[ExperimentConfig]:
    """Every (variant, seed) experiment of a batch, each with its own name and output folder."""
    base_data, lines = read_yaml(batch.base)
    experiments = []
    for variant in batch.variants:
        for seed in variant_seeds(batch, variant):
            data = copy.deepcopy(base_data)
            for key, value in variant.set.items():
                set_path(data, key.split("."), value, label=str(batch_file))
            for key, value in _drawn(variant, seed).items():
                set_path(data, key.split("."), value, label=str(batch_file))
            name = f"{variant.name}-seed{seed}"
            data.update(seed=seed, name=name, output_dir=str(batch.output_dir / name))
            where = f"{batch.base} (variant {variant.name!r} of {batch_file})"
            config = validate_model(ExperimentConfig, data, where, lines)
            config = resolve_input_paths(config, batch.base.parent)
            check_input_paths(config, where)
            experiments.append(config)
    return experiments

"""Configuration, run-directory contract, seeding, progress and the `grade` CLI."""

from pipeline.config import BatchConfig, ExperimentConfig
from pipeline.config_io import expand_batch, load_batch, load_experiment
from pipeline.errors import ConfigError, GradeError, InputError
from pipeline.rundir import (
    RunInfo,
    StageStatus,
    atomic_directory,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_text,
    content_hash,
    stage_status,
    write_manifest,
)
from pipeline.seeding import derived_seed, generator

__all__ = [
    "BatchConfig", "ConfigError", "ExperimentConfig", "GradeError", "InputError", "RunInfo", "StageStatus",
    "atomic_directory", "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "content_hash",
    "derived_seed", "expand_batch", "generator", "load_batch", "load_experiment", "stage_status", "write_manifest",
]

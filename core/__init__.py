"""The foundation every stage imports: errors, the config schema and YAML loading, atomic IO and the
run-directory contract, seeding, progress, geometry helpers, and the artifact formats (`core.formats`,
one module per file format: its model, writer and reader)."""

from core.config import ExperimentConfig
from core.config_io import load_experiment
from core.errors import ConfigError, GradeError, InputError
from core.seeding import derived_seed, generator

__all__ = [
    "ConfigError", "ExperimentConfig", "GradeError", "InputError", "derived_seed", "generator", "load_experiment",
]

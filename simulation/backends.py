"""The backends this installation has, by the name `simulation.backend` takes in a config: `load_world` builds
the chosen one's World (simulation.backend's protocol) for a run, above every implementation."""

from __future__ import annotations

from pathlib import Path

from core.config import ExperimentConfig
from core.errors import ConfigError
from simulation.backend import World


def load_world(config: ExperimentConfig, scene: str | Path, hidden: frozenset[str] = frozenset()) -> World:
    """The world of the backend named by `config.simulation.backend`, with `scene` (scene.usda) loaded, without
    the humans and flying objects whose prim paths are `hidden`."""
    kind = config.simulation.backend
    if kind == "embedded":
        from simulation.embedded import EmbeddedWorld

        return EmbeddedWorld(config, scene, hidden)
    raise ConfigError(f"backend {kind!r} is not available in this installation (use 'embedded')",
                      field="simulation.backend")

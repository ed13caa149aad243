"""What `grade view` draws a robot's path over: the environment's 2D occupancy map and where the placed
humans started, read through the run's placement (the figures in plots.py and the Rerun export use it)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.assets.layout import OCCUPANCY_FILE
from core.formats.occupancy import OccupancyMap, read_occupancy
from core.formats.placement import PLACEMENT_FILE, load_placement
from core.formats.run_layout import SCENE_DIR


@dataclass
class MapBackdrop:
    """What a robot's path is drawn over: the environment's occupancy map and where the placed humans started."""

    occupancy: OccupancyMap
    humans: np.ndarray  # (H, 3) start positions of the placed humans, world m
    human_ids: list[str]


def read_map_backdrop(run: Path) -> MapBackdrop:
    """The occupancy map and the humans' start positions, through RUN/scene/placement.json."""
    placement = load_placement(Path(run) / SCENE_DIR / PLACEMENT_FILE)  # paths come back absolute
    occupancy = read_occupancy(Path(placement.environment.path) / OCCUPANCY_FILE)
    humans = np.array([(h.x, h.y, h.z) for h in placement.humans], dtype=np.float64).reshape(-1, 3)
    return MapBackdrop(occupancy, humans, [h.asset_id for h in placement.humans])

"""How ids and boxes are shown, the same in every picture and viewer (the contact sheets and both Rerun views):
a fixed colour per instance or semantic id, drawn once from a named generator so the same id has the same colour in
every run, and a 2D box's caption."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from core.formats.frames import Box2D
from core.formats.instances import Instances
from core.seeding import generator

PALETTE_SEED = 0  # fixed: colours must not change between runs
ID_COLOURS = 1 << 16  # uint16 ids
MIN_CHANNEL = 64  # keeps id colours away from the black background and no-return
PERCENT = 100.0


@lru_cache(maxsize=4)
def id_palette(name: str) -> np.ndarray:
    """(65536, 3) uint8 RGB colours for ids, id 0 (background / unlabelled) black."""
    palette = generator(PALETTE_SEED, f"postprocess/view/{name}").integers(
        MIN_CHANNEL, 256, size=(ID_COLOURS, 3), dtype=np.uint8)
    palette[0] = 0
    return palette


def box_caption(box: Box2D, instances: Instances) -> str:
    caption = instances.label(box.instance_id, box.semanticId)
    if box.occlusionRatio >= 0:  # a negative ratio means "unknown" in some annotator versions
        caption += f" occ {box.occlusionRatio * PERCENT:.0f}%"
    return caption

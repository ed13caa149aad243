"""The layout of a run folder (architecture.md §2): the prepared inputs (`assets/`, the asset cache by default;
`scene/` with placement.json and scene.usda) and the recording (`gt/`, `bags/`, states.npz, `humans/`,
run.json, MANIFEST.json). Each file's own format module names the file; this module names the folders.
"""

from __future__ import annotations

from core.formats.commands import COMMANDS_FILE
from core.formats.humans import HUMANS_DIR
from core.formats.run_info import RUN_FILE
from core.formats.states import STATES_FILE

ASSETS_DIR = "assets"
SCENE_DIR = "scene"
GT_DIR = "gt"
BAGS_DIR = "bags"
# What recording a run writes (generate, replay): installed together from a partial folder, listed in MANIFEST.json.
RECORD_OUTPUTS = (STATES_FILE, BAGS_DIR, GT_DIR, HUMANS_DIR, COMMANDS_FILE, RUN_FILE)

"""`humans/`: the placed humans' skeletons over time.

`humans.json` (schema "grade.humans/1"): `rate_hz` and per human its prim path in scene.usda, `name`
(the prim's leaf, the key prefix below), asset id and joint names. `NNNNNN.npz`, one per sample at
`rate_hz` (simulation.rates.humans_hz):

    time               ()      float64  simulation s
    <name>.joints      (J, 3)  float32  world positions, joint_names order
    <name>.vertices    (V, 3)  float32  posed mesh vertices, world (only with recording.human_vertices)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from core.errors import InputError
from core.formats.images import frame_name
from core.formats.json_model import JsonDocument, read_json_model, write_json_model
from core.rundir import load_npz_checked

HUMANS_DIR = "humans"
HUMANS_FILE = "humans.json"


class HumanEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prim_path: str
    name: str
    asset_id: str
    joint_names: list[str]


class HumansDocument(JsonDocument):
    KIND, MAJOR = "humans", 1

    rate_hz: float
    humans: list[HumanEntry]


@dataclass
class HumansFrame:
    time: float
    joints: dict[str, np.ndarray]  # name -> (J, 3) world m
    vertices: dict[str, np.ndarray]  # name -> (V, 3); empty unless recorded


def write_humans_document(folder: Path, document: HumansDocument) -> Path:
    return write_json_model(folder / HUMANS_FILE, document)


def read_humans_document(folder: Path) -> HumansDocument:
    return read_json_model(Path(folder) / HUMANS_FILE, HumansDocument)


def save_humans_frame(folder: Path, index: int, frame: HumansFrame) -> Path:
    """Write sample `index` as NNNNNN.npz: time, every human's joints, then every human's vertices."""
    arrays: dict[str, np.ndarray] = {"time": np.array(frame.time)}
    arrays |= {f"{name}.joints": joints.astype(np.float32) for name, joints in frame.joints.items()}
    arrays |= {f"{name}.vertices": vertices.astype(np.float32) for name, vertices in frame.vertices.items()}
    path = folder / frame_name(index, ".npz")
    np.savez(path, **arrays)
    return path


def sample_files(folder: Path) -> list[Path]:
    """The sample files in order (NNNNNN.npz)."""
    return sorted(Path(folder).glob("[0-9]" * 6 + ".npz"))


def read_humans_frame(path: Path, document: HumansDocument) -> HumansFrame:
    """One sample; InputError naming the file and array when a listed human's joints are missing or misshaped."""
    path = Path(path)
    arrays = load_npz_checked(path, ["time"] + [f"{h.name}.joints" for h in document.humans])
    joints, vertices = {}, {}
    for human in document.humans:
        key = f"{human.name}.joints"
        if arrays[key].shape != (len(human.joint_names), 3):
            raise InputError(f"expected shape ({len(human.joint_names)}, 3), got {arrays[key].shape}", path, key)
        joints[human.name] = arrays[key]
        if f"{human.name}.vertices" in arrays:
            vertices[human.name] = arrays[f"{human.name}.vertices"]
    return HumansFrame(float(arrays["time"]), joints, vertices)

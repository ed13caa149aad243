"""What `grade postprocess` adds to a recording, beside the untouched originals.

- `gt/imu_noisy.npz`: the IMU readings with noise, in the layout of `gt/imu.npz` (core.formats.imu).
- `gt/<camera>/depth_noisy/NNNNNN.png` (uint16 mm, 0 = invalid), `rgb_blur/`, `instance_blur/`,
  `semantic_blur/` (core.formats.images kinds).
- `gt/<camera>/blur.jsonl`: one line per blurred frame: `frame`, `time`, `exposure` and `readout` (s), the
  `sub_poses` (S, 4, 4) the exposure was averaged over, each frame <- sub-pose camera (ROS optical), and
  `boxes_2d_tight` recomputed from the warped instance mask (annotator fields, inclusive bounds).
- `gt/postprocess.json` (schema grade.postprocess/1), written last: the settings applied, the master seed
  and each named random stream's seed, per camera the exposure and readout drawn for the sequence, and
  the outputs written. Without it the post-processing is incomplete and is done again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from core.errors import InputError
from core.formats.frames import Box2D
from core.formats.json_model import JsonDocument, read_json_model, write_json_model
from core.formats.versions import validate
from core.rundir import parse_json, read_utf8

POSTPROCESS_FILE = "postprocess.json"  # in gt/
IMU_NOISY_FILE = "imu_noisy.npz"  # in gt/
BLUR_FILE = "blur.jsonl"  # in gt/<camera>/


class CameraPostprocess(BaseModel):
    model_config = ConfigDict(extra="forbid")

    exposure: float | None = None  # s, when blurred
    readout: float | None = None  # s, with a rolling shutter
    outputs: list[str] = []  # image kinds written (rgb_blur, depth_noisy, ...)


class PostprocessRecord(JsonDocument):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    KIND, MAJOR = "postprocess", 1

    settings: dict[str, Any]  # the PostprocessConfig applied, as JSON
    master_seed: int
    streams: dict[str, int]  # named random stream -> its derived seed
    imu_file: str | None = None  # relative to gt/
    cameras: dict[str, CameraPostprocess] = {}


def write_postprocess_record(gt_dir: Path, record: PostprocessRecord) -> Path:
    return write_json_model(gt_dir / POSTPROCESS_FILE, record)


def read_postprocess_record(gt_dir: Path) -> PostprocessRecord:
    return read_json_model(gt_dir / POSTPROCESS_FILE, PostprocessRecord, "post-processing record")


class BlurFrame(BaseModel):
    """One line of blur.jsonl."""

    model_config = ConfigDict(extra="forbid")

    frame: int
    time: float
    exposure: float
    readout: float
    sub_poses: list[list[list[float]]]  # (S, 4, 4) frame camera <- sub-pose camera
    boxes_2d_tight: list[Box2D] = []


class BlurLogWriter:
    """Appends blur.jsonl lines in frame order."""

    def __init__(self, path: Path):
        self._file = open(path, "w", encoding="utf-8")

    def write(self, frame: BlurFrame) -> None:
        self._file.write(json.dumps(frame.model_dump(mode="json"), allow_nan=False) + "\n")  # JSON has no NaN

    def close(self) -> None:
        self._file.close()


def read_blur_log(path: Path) -> list[BlurFrame]:
    """Every line of a blur.jsonl; InputError naming the file and line for a missing file or a bad line."""
    frames = []
    for number, line in enumerate(read_utf8(path).splitlines(), start=1):
        try:
            data = parse_json(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON ({exc.msg})", path, f"line {number}") from exc
        except ValueError as exc:  # NaN or Infinity
            raise InputError(f"malformed JSON ({exc})", path, f"line {number}") from exc
        frames.append(validate(BlurFrame, data, f"{path}: line {number}"))
    return frames

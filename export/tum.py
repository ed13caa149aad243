"""TUM RGB-D sequences (`grade export tum`): one folder per recording and camera, laid out as the TUM RGB-D
benchmark's, so RGB-D SLAM systems and evaluation tools (ORB-SLAM's TUM loaders, evo) read it unchanged.

    <sequence>/rgb/<t>.png          the recorded (or, with `processed`, motion-blurred) colour image
    <sequence>/depth/<t>.png        uint16 metres x 5000 (the benchmark's factor), 0 = invalid
    <sequence>/rgb.txt, depth.txt   `timestamp filename`, one line per frame
    <sequence>/associations.txt     `t_rgb rgb/<t>.png t_depth depth/<t>.png` (both rendered at the same time)
    <sequence>/groundtruth.txt      `timestamp tx ty tz qx qy qz qw`: world <- the camera's optical frame
    <sequence>/camera.yaml          pinhole intrinsics, resolution, depth factor, rate

Timestamps are simulation seconds with 6 decimals, as in the benchmark and in the recording's poses.tum.
The helpers for choosing a sequence folder and a frame's image files are shared with the EuRoC export.
"""

from __future__ import annotations

from collections.abc import Sequence as Seq
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.errors import ConfigError
from core.formats.png import encode_png
from core.formats.tum import tum_line
from core.formats.tum_rgbd import (
    ASSOCIATIONS,
    CAMERA_FILE,
    DEPTH_FACTOR,
    DEPTH_LIST,
    GROUNDTRUTH,
    RGB_LIST,
    associations_text,
    camera_text,
    list_text,
    stamp,
)
from core.progress import track
from core.recording import Recording
from export.common import (
    PROCESSED,
    ExportFolder,
    Sequence,
    check_images,
    export_folder,
    exported_image,
    open_sequences,
)

MAX_DEPTH_VALUE = np.iinfo(np.uint16).max


def sequence_folder(sequence: Sequence, camera: str) -> str:
    """The sequence's folder in the export: its name, with `_<camera>` when it exports several cameras (each
    camera is a sequence of its own: one image stream and one ground-truth trajectory per folder)."""
    return f"{sequence.name}_{camera}" if len(sequence.cameras) > 1 else sequence.name


def tum_depth(depth: np.ndarray, depth_min: float, depth_max: float | None) -> np.ndarray:
    """Metres (0 or non-finite = no return) -> TUM's uint16 (x 5000, rounded), 0 = invalid: also depths outside
    [depth_min, depth_max] and those beyond 13.107 m, which the uint16 cannot hold (0 rather than a wrong,
    saturated depth)."""
    finite = np.where(np.isfinite(depth), depth, 0.0)
    value = np.rint(finite * DEPTH_FACTOR)
    keep = (finite > 0) & (finite >= depth_min) & (value <= MAX_DEPTH_VALUE)
    if depth_max is not None:
        keep &= finite <= depth_max
    return np.where(keep, value, 0).astype(np.uint16)


@dataclass(frozen=True)
class TumOptions:
    processed: bool = False  # rgb_blur and depth_noisy instead of the recorded images
    depth_min: float = 0.0  # m; nearer depth becomes 0 (invalid)
    depth_max: float | None = None  # m; farther depth becomes 0

    def check(self) -> None:
        if self.depth_min < 0:
            raise ConfigError(f"must be >= 0, got {self.depth_min}", field="--depth-min")
        if self.depth_max is not None and self.depth_max <= self.depth_min:
            raise ConfigError(f"must be greater than --depth-min ({self.depth_min}), got {self.depth_max}",
                              field="--depth-max")


def _export_camera(folder: ExportFolder, sequence: Sequence, name: str, options: TumOptions) -> int:
    """One camera of one recording as a TUM sequence; images first (each atomic, kept on a rerun), then the
    lists, which name only images already in place."""
    camera, root = sequence.recording.camera(name), sequence_folder(sequence, name)
    stamps = [stamp(frame.time) for frame in camera]
    for frame, t in zip(track(camera.frames, f"TUM {root}"), stamps, strict=True):
        folder.copy_image(exported_image(frame, "rgb", options.processed), f"{root}/rgb/{t}.png")
        if not folder.path(f"{root}/depth/{t}.png").is_file():
            metres = frame.processed(PROCESSED["depth"]) if options.processed else frame.depth()
            folder.write_bytes(f"{root}/depth/{t}.png", encode_png(tum_depth(metres, options.depth_min, options.depth_max)))
    title = f"# sequence {sequence.name}, camera {name}, simulation time\n"
    lists = {
        RGB_LIST: list_text("rgb", stamps, "# color images\n" + title),
        DEPTH_LIST: list_text("depth", stamps, "# depth maps (uint16, metres x 5000, 0 = invalid)\n" + title),
        ASSOCIATIONS: associations_text(stamps),
        GROUNDTRUTH: "# ground truth trajectory: world <- camera optical frame (z forward, x right, y down)\n"
                     + title + "# timestamp tx ty tz qx qy qz qw\n"
                     + "".join(tum_line(frame.time, frame.pose) for frame in camera),
    }
    first = camera[0]
    lists[CAMERA_FILE] = camera_text(name, first.K, first.width, first.height,
                                     sequence.recording.camera_config(name).rate_hz)
    for file, text in lists.items():
        folder.write_bytes(f"{root}/{file}", text.encode())
    return len(camera)


def check_pinhole(recording: Recording, name: str) -> None:
    """ConfigError for a camera with a lens other than a pinhole: the TUM RGB-D format has no distortion field
    (its camera.yaml is a pinhole's, its depth z); EuRoC's sensor.yaml describes radtan and equidistant lenses."""
    lens = recording.camera_config(name).lens
    if not lens.pinhole:
        raise ConfigError(f"camera {name!r} has lens model {lens.model}, which the TUM RGB-D format cannot "
                          "describe (its camera.yaml is a pinhole's, its depth z); export it with "
                          "`grade export euroc`, or record a pinhole camera", field="--camera")


def export_tum(runs: Seq[Path], out: Path, cameras: Seq[str] | None = None,
               options: TumOptions = TumOptions(), robot: str | None = None) -> dict[str, int]:
    """Export each run's cameras as TUM RGB-D sequences into `out`; rerunning the same call after an
    interruption finishes the job. Returns what was written (sequences, frames)."""
    options.check()
    sequences = open_sequences(runs, cameras, robot)
    for sequence in sequences:
        for name in sequence.cameras:
            check_images(sequence.recording, sequence.recording.camera(name), ("rgb", "depth"), options.processed)
            check_pinhole(sequence.recording, name)
    recorded = {"cameras": list(cameras or []), "processed": options.processed, "depth_min": options.depth_min,
                "depth_max": options.depth_max}
    with export_folder(out, "tum", recorded, sequences) as folder:
        frames = sum(_export_camera(folder, s, name, options) for s in sequences for name in s.cameras)
        counts = {"sequences": sum(len(s.cameras) for s in sequences), "frames": frames}
        folder.finish(counts, [])
    return counts

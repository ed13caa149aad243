"""A TUM RGB-D benchmark sequence folder (`grade export tum` writes it; SLAM runners read it back):

    rgb/<t>.png, depth/<t>.png      colour images; depth uint16 metres x DEPTH_FACTOR, 0 = invalid
    rgb.txt, depth.txt              `timestamp filename` per image, `#` comment lines
    associations.txt                `t_rgb rgb/<t>.png t_depth depth/<t>.png` per frame
    groundtruth.txt                 `timestamp tx ty tz qx qy qz qw` (core.formats.tum)
    camera.yaml                     GRADE's addition: camera, model, width, height, fx, fy, cx, cy,
                                    depth_factor, rate_hz

Timestamps are seconds with 6 decimals, as in the benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import yaml

from core.errors import InputError
from core.rundir import read_utf8

DEPTH_FACTOR = 5000.0  # uint16 value = metres x 5000
RGB_LIST, DEPTH_LIST, ASSOCIATIONS = "rgb.txt", "depth.txt", "associations.txt"
GROUNDTRUTH, CAMERA_FILE = "groundtruth.txt", "camera.yaml"
CAMERA_KEYS = ("width", "height", "fx", "fy", "cx", "cy", "depth_factor", "rate_hz")


def stamp(time: float) -> str:
    """A time as the benchmark writes it: seconds with 6 decimals."""
    return f"{time:.6f}"


def list_text(kind: str, stamps: Sequence[str], header: str) -> str:
    """rgb.txt or depth.txt (`kind` rgb or depth): `header` comment lines, then `t <kind>/<t>.png` per stamp."""
    return header + "# timestamp filename\n" + "".join(f"{t} {kind}/{t}.png\n" for t in stamps)


def associations_text(stamps: Sequence[str]) -> str:
    """associations.txt for colour and depth rendered at the same instants."""
    return "".join(f"{t} rgb/{t}.png {t} depth/{t}.png\n" for t in stamps)


def camera_text(camera: str, K: np.ndarray, width: int, height: int, rate_hz: float) -> str:
    return yaml.safe_dump({"camera": camera, "model": "pinhole", "width": width, "height": height,
                           "fx": float(K[0, 0]), "fy": float(K[1, 1]), "cx": float(K[0, 2]), "cy": float(K[1, 2]),
                           "depth_factor": DEPTH_FACTOR, "rate_hz": rate_hz}, sort_keys=False)


@dataclass(frozen=True)
class TumRgbdFrame:
    time: float  # the colour image's
    rgb: Path
    depth: Path


@dataclass(frozen=True)
class TumRgbdSequence:
    folder: Path
    K: np.ndarray  # (3, 3)
    width: int
    height: int
    rate_hz: float
    depth_factor: float
    frames: list[TumRgbdFrame]

    def images(self, frame: TumRgbdFrame) -> tuple[np.ndarray, np.ndarray]:
        """(RGB uint8, depth float32 metres with 0 = invalid) of a frame; InputError naming an unreadable file."""
        bgr = cv2.imread(str(frame.rgb), cv2.IMREAD_COLOR)
        depth = cv2.imread(str(frame.depth), cv2.IMREAD_UNCHANGED)
        if bgr is None or depth is None or depth.dtype != np.uint16:
            raise InputError("not a readable colour PNG and uint16 depth PNG pair", frame.rgb)
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), depth.astype(np.float32) / np.float32(self.depth_factor)


def is_tum_rgbd(folder: Path) -> bool:
    return (Path(folder) / ASSOCIATIONS).is_file() and (Path(folder) / CAMERA_FILE).is_file()


def read_tum_rgbd(folder: str | Path) -> TumRgbdSequence:
    """The sequence in `folder` (associations.txt and camera.yaml); InputError naming the file and line."""
    folder = Path(folder)
    camera_path, associations = folder / CAMERA_FILE, folder / ASSOCIATIONS
    for path in (camera_path, associations):
        if not path.is_file():
            raise InputError("not found: a TUM RGB-D sequence from `grade export tum` holds associations.txt and "
                             "camera.yaml", path)
    try:
        camera = yaml.safe_load(read_utf8(camera_path))
        values = {key: float(camera[key]) for key in CAMERA_KEYS}
    except (yaml.YAMLError, TypeError, KeyError, ValueError) as exc:
        raise InputError(f"expected a mapping with {', '.join(CAMERA_KEYS)} ({exc})", camera_path) from None
    frames = []
    for number, line in enumerate(read_utf8(associations).splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split()
        try:
            frames.append(TumRgbdFrame(float(fields[0]), folder / fields[1], folder / fields[3]))
        except (IndexError, ValueError):
            raise InputError(f"line {number}: expected 't_rgb rgb_file t_depth depth_file'", associations) from None
    if not frames:
        raise InputError("no frames listed", associations)
    K = np.array([[values["fx"], 0, values["cx"]], [0, values["fy"], values["cy"]], [0, 0, 1]])
    return TumRgbdSequence(folder, K, int(values["width"]), int(values["height"]), values["rate_hz"],
                           values["depth_factor"], frames)

"""The per-frame image files of `gt/<camera>/`: naming, encoding for disk and decoding back.

| kind        | file                      | on disk                                          | decoded                       |
|-------------|---------------------------|--------------------------------------------------|-------------------------------|
| `rgb`       | rgb/NNNNNN.png            | 8-bit RGB                                        | (H, W, 3) uint8 RGB           |
| `depth`     | depth/NNNNNN.png          | uint16 millimetres to the image plane, 0 = none  | (H, W) float32 m, 0 = none    |
| `instance`  | instance/NNNNNN.png       | uint16 instance ids (instances.json)             | (H, W) uint16                 |
| `semantic`  | semantic/NNNNNN.png       | uint16 semantic ids                              | (H, W) uint16                 |
| `depth_npy` | depth_npy/NNNNNN.npy      | float32 m, 0 = no return                         | (H, W) float32 m              |
| `normals`   | normals/NNNNNN.npy        | float16 unit normals, world frame                | (H, W, 3) float32             |
| `flow`      | flow/NNNNNN.npy           | float32 pixels (dx, dy) since the last frame, NaN undefined | (H, W, 2) float32  |

`grade postprocess` adds `rgb_blur`, `instance_blur`, `semantic_blur` and `depth_noisy` (NaN = invalid, stored
as 0), each stored and decoded like the kind it derives from (core.formats.postprocess).

Depth beyond 65.535 m saturates in the PNG; `depth_npy` keeps it. PNGs are written by png.py (ISA-L's deflate)
and read with OpenCV.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from core.errors import InputError
from core.formats.png import write_png

FRAME_DIGITS = 6
MM_PER_M = 1000.0
MAX_DEPTH_MM = np.iinfo(np.uint16).max
# Post-processed kinds (`grade postprocess`) and the recorded kind each is stored like.
RGB_BLUR, INSTANCE_BLUR, SEMANTIC_BLUR, DEPTH_NOISY = "rgb_blur", "instance_blur", "semantic_blur", "depth_noisy"
DERIVED = {RGB_BLUR: "rgb", INSTANCE_BLUR: "instance", SEMANTIC_BLUR: "semantic", DEPTH_NOISY: "depth"}
SUFFIX = {"rgb": ".png", "depth": ".png", "instance": ".png", "semantic": ".png",
          "depth_npy": ".npy", "normals": ".npy", "flow": ".npy"}
CHANNELS = {"rgb": 3, "depth": 1, "instance": 1, "semantic": 1, "depth_npy": 1, "normals": 3, "flow": 2}
SUFFIX |= {kind: SUFFIX[base] for kind, base in DERIVED.items()}
CHANNELS |= {kind: CHANNELS[base] for kind, base in DERIVED.items()}


def frame_name(index: int, suffix: str) -> str:
    """NNNNNN<suffix>: the file name of frame `index` (also LiDAR scans and humans frames)."""
    return f"{index:0{FRAME_DIGITS}d}{suffix}"


def frame_file(kind: str, index: int) -> str:
    """`<kind>/NNNNNN.<ext>`: where frame `index` of `kind` lies, relative to the camera folder."""
    return f"{kind}/{frame_name(index, SUFFIX[kind])}"


def depth_millimetres(depth: np.ndarray) -> np.ndarray:
    """float metres (0, NaN or inf = no return) -> uint16 millimetres, 0 = no return; beyond 65.535 m
    saturates. The depth PNGs' and the 16UC1 bag images' one conversion.

    Rounded to the nearest millimetre (ties to even) from the exact product: in float64, where a float32 depth
    times 1000 is exact. (A float32 product is rounded twice and misses the nearest millimetre on ~0.04% of
    pixels, e.g. float32 3.4465 = 3.44650006 m gives 3446 instead of 3447.)"""
    millimetres = np.multiply(depth, MM_PER_M, dtype=np.float64)
    np.rint(millimetres, out=millimetres)
    millimetres[~np.isfinite(millimetres)] = 0.0
    return np.clip(millimetres, 0, MAX_DEPTH_MM, out=millimetres).astype(np.uint16)


def depth_metres(millimetres: np.ndarray) -> np.ndarray:
    """uint16 millimetres -> float32 metres (0 stays 0: no return)."""
    return millimetres.astype(np.float32) / np.float32(MM_PER_M)


def encode(kind: str, image: np.ndarray) -> np.ndarray:
    """A renderer's array (RGB uint8, depth float metres, ids, normals, flow) as stored for `kind`."""
    kind = DERIVED.get(kind, kind)
    if kind == "rgb":
        return np.asarray(image, np.uint8)
    if kind == "depth":
        return depth_millimetres(image)
    if kind in ("depth_npy", "flow"):
        return image.astype(np.float32)
    if kind == "normals":
        return image.astype(np.float16)
    return image  # instance, semantic: already uint16 ids


def write_image(path: Path, stored: np.ndarray) -> None:
    """Write an `encode`d array: .npy as is, .png through png.py (safe on a worker thread: the compression drops
    the GIL)."""
    if path.suffix == ".npy":
        np.save(path, stored)
        return
    write_png(path, stored)


def _load(path: Path, kind: str) -> np.ndarray:
    if not path.is_file():
        raise InputError("file not found", path, kind)
    if path.suffix == ".npy":
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InputError(f"not a readable .npy file ({exc})", path, kind) from exc
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise InputError("not a readable image", path, kind)
    return image


def _check_shape(image: np.ndarray, kind: str, width: int, height: int, path: Path) -> None:
    channels = CHANNELS[kind]
    if channels == 1 and image.ndim != 2:
        raise InputError(f"expected a single-channel image, got shape {image.shape}", path, kind)
    if channels > 1 and (image.ndim != 3 or image.shape[2] != channels):
        raise InputError(f"expected {channels} channels, got shape {image.shape}", path, kind)
    if image.shape[:2] != (height, width):
        raise InputError(f"image is {image.shape[1]}x{image.shape[0]}, frames.jsonl says {width}x{height}", path, kind)


def read_image(path: Path, kind: str, width: int, height: int) -> np.ndarray:
    """Decode one file of `kind` (see the table above); InputError naming the file and kind when it is
    missing, unreadable or not the size frames.jsonl gives."""
    image = _load(path, kind)
    _check_shape(image, kind, width, height, path)
    kind = DERIVED.get(kind, kind)
    if kind == "rgb":
        return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    if kind == "depth":
        return depth_metres(image)
    if kind in ("depth_npy", "normals", "flow"):
        return image.astype(np.float32)
    return image

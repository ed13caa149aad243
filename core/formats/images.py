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

Depth beyond 65.535 m saturates in the PNG; `depth_npy` keeps it. PNGs are written by png.py (libdeflate)
and read with OpenCV. `check_image` checks a file that is copied rather than decoded (the exports): a PNG's
structure, size and every chunk's CRC-32 (with Pillow's verify: for a 640x480 colour frame about a twentieth of the
time OpenCV takes to decode it), a `.npy` file whole.
"""

from __future__ import annotations

import io
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, UnidentifiedImageError

from core.errors import InputError
from core.formats.png import SIGNATURE, write_png

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
        return _load_npy(path, path, kind)
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise InputError("not a readable image", path, kind)
    return image


def _load_npy(source: Path | io.BytesIO, path: Path, kind: str) -> np.ndarray:
    try:
        return np.load(source, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(f"not a readable .npy file ({exc})", path, kind) from exc


def _check_shape(shape: tuple[int, ...], kind: str, width: int, height: int, path: Path) -> None:
    channels = CHANNELS[kind]
    if channels == 1 and len(shape) != 2:
        raise InputError(f"expected a single-channel image, got shape {shape}", path, kind)
    if channels > 1 and (len(shape) != 3 or shape[2] != channels):
        raise InputError(f"expected {channels} channels, got shape {shape}", path, kind)
    if shape[:2] != (height, width):
        raise InputError(f"image is {shape[1]}x{shape[0]}, frames.jsonl says {width}x{height}", path, kind)


def _png_shape(data: bytes, path: Path, kind: str) -> tuple[int, ...]:
    """The (H, W[, C]) a PNG decodes to (OpenCV's channels), after Pillow's verify: the chunks whole, each one's
    CRC-32 right, up to IEND."""
    try:
        with Image.open(io.BytesIO(data), formats=["PNG"]) as image:
            (width, height), mode = image.size, image.mode
            image.verify()
    except UnidentifiedImageError as exc:
        raise InputError("not a readable PNG image (its header chunk is damaged)", path, kind) from exc
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        raise InputError(f"not a readable PNG image ({exc}): the file is damaged or cut short", path, kind) from exc
    channels = 3 if mode == "P" else Image.getmodebands(mode)  # OpenCV expands a palette to BGR
    return (height, width) if channels == 1 else (height, width, channels)


def check_image(path: Path, kind: str, width: int, height: int, data: bytes | None = None) -> None:
    """Check that a file of `kind` (`data`: its bytes, when already read) is whole and what frames.jsonl says, as
    `read_image` would, without decoding its pixels where it need not: a PNG's signature, chunks and their CRCs
    and its header's size and channels; a .npy file read whole; another image format decoded. InputError naming
    the file and kind: missing, not an image, damaged (any byte changed in a PNG fails its chunk's CRC),
    truncated, or another size."""
    path = Path(path)
    if data is None:
        if not path.is_file():
            raise InputError("file not found", path, kind)
        data = path.read_bytes()
    if path.suffix == ".npy":
        shape = _load_npy(io.BytesIO(data), path, kind).shape
    elif data.startswith(SIGNATURE):
        shape = _png_shape(data, path, kind)
    elif path.suffix == ".png":
        raise InputError("not a PNG image (the file does not start with PNG's signature)", path, kind)
    else:
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
        if image is None:
            raise InputError("not a readable image", path, kind)
        shape = image.shape
    _check_shape(shape, kind, width, height, path)


def read_image(path: Path, kind: str, width: int, height: int) -> np.ndarray:
    """Decode one file of `kind` (see the table above); InputError naming the file and kind when it is
    missing, unreadable or not the size frames.jsonl gives."""
    image = _load(path, kind)
    _check_shape(image.shape, kind, width, height, path)
    kind = DERIVED.get(kind, kind)
    if kind == "rgb":
        return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    if kind == "depth":
        return depth_metres(image)
    if kind in ("depth_npy", "normals", "flow"):
        return image.astype(np.float32)
    return image

"""PNG files of the recordings' images, compressed with libdeflate (the `deflate` package).

libpng's deflate (zlib) was the costliest part of writing a frame's images: at zlib level 1 a 640x480 frame's
four PNGs take ~12 ms, three quarters of it in zlib. libdeflate's level 1 writes the same zlib stream format in
~8 ms, for files 8% smaller, and it is one portable C compressor: the same pixels give the same bytes whatever
the CPU. Intel ISA-L took ~3 ms, but it has a compressor per instruction set, and once wrote a different (valid)
stream in a long-running test process for a frame that a replay in a fresh process wrote otherwise: a
recording's bytes must not depend on the machine or the process.

The PNG around the stream is a signature and three chunks (IHDR, one IDAT, IEND; PNG spec, ISO/IEC 15948),
written here; every PNG reader decodes them (the tests check OpenCV and Pillow). One row filter per image instead
of libpng's per-row search: colour images predict each byte from the pixel to the left (Sub), greyscale ones
(depth, ids) from the row above (Up), where runs of equal ids and smooth depth repeat down the image.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import deflate
import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
DEFLATE_LEVEL = 1  # libdeflate's 1-12: 1, its fastest, already writes smaller files than zlib's 1
_COLOUR_RGB, _COLOUR_GREY = 2, 0  # IHDR colour types
_FILTER_SUB, _FILTER_UP = 1, 2  # per-row filter types


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def _filtered(rows: np.ndarray, colour: bool) -> np.ndarray:
    """The rows of bytes (H, W * bytes per pixel) with a filter-type byte in front and the filter applied."""
    height, width = rows.shape
    out = np.empty((height, width + 1), np.uint8)
    if colour:  # Sub: each byte minus the byte one pixel (3 bytes) to its left, modulo 256
        out[:, 0] = _FILTER_SUB
        out[:, 1:4] = rows[:, :3]
        np.subtract(rows[:, 3:], rows[:, :-3], out=out[:, 4:])
    else:  # Up: each byte minus the byte above it
        out[:, 0] = _FILTER_UP
        out[0, 1:] = rows[0]
        np.subtract(rows[1:], rows[:-1], out=out[1:, 1:])
    return out


def encode_png(image: np.ndarray) -> bytes:
    """A PNG file of an (H, W, 3) uint8 RGB image or an (H, W) uint16 greyscale one."""
    if image.ndim == 3 and image.shape[2] == 3 and image.dtype == np.uint8:
        colour, bits, rows = True, 8, image.reshape(image.shape[0], -1)
    elif image.ndim == 2 and image.dtype == np.uint16:
        colour, bits, rows = False, 16, image.astype(">u2").view(np.uint8)  # PNG samples are big-endian
    else:
        raise ValueError(f"PNG images are (H, W, 3) uint8 or (H, W) uint16, got {image.dtype} {image.shape}")
    height, width = image.shape[:2]
    if height < 1 or width < 1:
        raise ValueError(f"a PNG image has at least one pixel, got {width}x{height}")
    header = struct.pack(">IIBBBBB", width, height, bits, _COLOUR_RGB if colour else _COLOUR_GREY, 0, 0, 0)
    data = deflate.zlib_compress(_filtered(np.ascontiguousarray(rows), colour), DEFLATE_LEVEL)
    return SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", data) + _chunk(b"IEND", b"")


def write_png(path: Path, image: np.ndarray) -> None:
    """`encode_png` into a file."""
    Path(path).write_bytes(encode_png(image))

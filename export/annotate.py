"""Per-frame object labels for the training-set exporters (COCO, YOLO): which instances of a camera frame are
exported, their box, pixel area and mask, and whether the whole frame is dropped.

Images. Clean exports read the recorded rgb and instance images; `processed` exports read the post-processed
rgb_blur with its blur-aware instance_blur labels (postprocess: masks moved to where the blurred object's
smear is centred) and depth_noisy, each required to exist. The RGB file the exporters copy is read first, whole
(export.common.exported_image): a damaged or resized frame is refused, naming it, rather than copied.

Masks are COCO run-length encodings made in one column-major pass over the instance image (every instance's
runs at once, instead of one full-image mask per instance); pycocotools compresses them to COCO's string form.
Boxes are the inclusive pixel bounds of the mask, (x_min, y_min, x_max, y_max).

Filters (GRADE's, defaults in `Filters`): an instance is kept when it has a category, its box is at least
`min_box` pixels wide and high, its aspect ratio (long side / short side) is at most `max_aspect` and its
visible fraction (1 - the recorded occlusionRatio: visible pixels / pixels it would cover alone) is at least
`min_visible`. A frame is dropped (listed in export.json with the reason) when more than `dark_fraction` of its
pixels are dark (every channel <= `dark_level`) and more than `near_fraction` are closer than `near_depth`, or
when more than `near_only_fraction` are closer than `near_depth` (a camera pressed against a wall or an object).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from pycocotools import mask as mask_utils

from core.errors import InputError
from core.formats.instances import Instances
from core.recording import Frame
from export.categories import Categories, Category
from export.common import PROCESSED, Sequence, check_images, exported_image
from simulation.render.annotations import PixelStats


@dataclass(frozen=True)
class Filters:
    min_box: int = 3  # px, box width and height
    max_aspect: float = 100.0  # long side / short side of the box
    min_visible: float = 0.0  # 1 - occlusionRatio
    bad_frames: bool = True  # GRADE's dark-and-near frame filter
    dark_level: int = 15  # a pixel is dark when every channel is at most this
    dark_fraction: float = 0.10
    near_depth: float = 0.3  # m
    near_fraction: float = 0.10
    near_only_fraction: float = 0.40


DEFAULT_FILTERS = Filters()


@dataclass(frozen=True)
class ObjectLabel:
    instance_id: int
    category: Category
    box: tuple[int, int, int, int]  # inclusive (x_min, y_min, x_max, y_max)
    area: int  # mask pixels
    counts: list[int]  # uncompressed COCO RLE (column-major, starting with a run of zeros)


@dataclass(frozen=True)
class FrameLabels:
    image: Path  # the RGB file exported
    width: int
    height: int
    objects: list[ObjectLabel]
    dropped: str | None  # the reason the frame is left out, None when kept
    instance: np.ndarray  # the instance image the labels come from
    clean_depth: np.ndarray | None  # the recorded depth, when it was read (for keypoint visibility)


def check_frames(sequences: list[Sequence], processed: bool) -> None:
    """InputError for the first camera without the RGB and instance images to export, before anything is
    written."""
    for sequence in sequences:
        for name in sequence.cameras:
            check_images(sequence.recording, sequence.recording.camera(name), ("rgb", "instance"), processed)


def _instance_image(frame: Frame, processed: bool) -> np.ndarray:
    image = frame.processed(PROCESSED["instance"]) if processed else frame.instance()
    if image is None:  # check_frames saw it; deleted since
        raise InputError(f"frame {frame.index}'s instance image is gone", frame.folder)
    return image


def bad_frame_reason(rgb: Callable[[], np.ndarray], depth: np.ndarray | None, filters: Filters) -> str | None:
    """GRADE's bad-frame rule (module docstring) for one frame; None when the frame is fine. `rgb` loads the
    image, only needed (and called) when the frame is near enough for darkness to matter."""
    if depth is None:
        return None
    near = float(np.count_nonzero((depth > 0) & (depth < filters.near_depth))) / depth.size  # NaN compares False
    if near > filters.near_only_fraction:
        return f"{near:.0%} of the pixels are closer than {filters.near_depth} m"
    if near <= filters.near_fraction:
        return None
    level = filters.dark_level
    dark = cv2.countNonZero(cv2.inRange(rgb(), (0, 0, 0), (level, level, level))) / depth.size
    if dark > filters.dark_fraction:
        return f"{dark:.0%} of the pixels are dark and {near:.0%} closer than {filters.near_depth} m"
    return None


def run_length_counts(instance: np.ndarray, ids: list[int]) -> dict[int, list[int]]:
    """Uncompressed COCO RLE counts of each id's mask in `instance` (H, W): column-major runs, alternating
    background and mask, starting with background (possibly 0 long)."""
    flat = np.ascontiguousarray(instance.T).reshape(-1)
    starts = np.concatenate([[0], np.flatnonzero(flat[1:] != flat[:-1]) + 1])
    ends = np.append(starts[1:], flat.size)
    values = flat[starts]
    out = {}
    for i in ids:
        mine = values == i
        s, e = starts[mine], ends[mine]
        gaps = s - np.concatenate([[0], e[:-1]])
        counts = np.empty(2 * len(s), np.int64)
        counts[0::2], counts[1::2] = gaps, e - s
        tail = flat.size - (int(e[-1]) if len(e) else 0)
        out[i] = counts.tolist() + ([tail] if tail else [])
    return out


def compress(counts: list[list[int]], height: int, width: int) -> list[dict]:
    """COCO's compressed RLE ({"size": [h, w], "counts": str}) of uncompressed counts, by pycocotools."""
    if not counts:
        return []  # pycocotools fails on an empty list
    encoded = mask_utils.frPyObjects([{"size": [height, width], "counts": c} for c in counts], height, width)
    return [{"size": [height, width], "counts": e["counts"].decode("ascii")} for e in encoded]


def label_frame(frame: Frame, instances: Instances, categories: Categories, filters: Filters,
                processed: bool) -> FrameLabels:
    """The objects of `frame` that pass `filters`, or the reason the frame is dropped."""
    image = exported_image(frame, "rgb", processed)  # the file copied: read whole, its size checked
    instance = _instance_image(frame, processed)
    clean_depth = None
    if filters.bad_frames:
        depth = frame.processed(PROCESSED["depth"]) if processed else frame.depth()
        clean_depth = None if processed else depth
        rgb = functools.partial(frame.processed, PROCESSED["rgb"]) if processed else frame.rgb
        reason = bad_frame_reason(rgb, depth, filters)
        if reason is not None:
            return FrameLabels(image, frame.width, frame.height, [], reason, instance, clean_depth)
    occlusion = {box.instance_id: box.occlusionRatio for box in frame.boxes_2d_tight if not box.empty}
    stats = PixelStats.of_rows(instance, 0)
    kept: list[tuple[int, Category, tuple[int, int, int, int], int]] = []
    for i in (np.flatnonzero(stats.counts[1:]) + 1).tolist():
        entry = instances.instances.get(i)
        category = categories.of(entry) if entry is not None else None
        if category is None:
            continue
        x0, y0 = (int(v) for v in stats.low[i])
        x1, y1 = (int(v) for v in stats.high[i])
        w, h = x1 - x0 + 1, y1 - y0 + 1
        if min(w, h) < filters.min_box or max(w, h) / min(w, h) > filters.max_aspect:
            continue
        if 1.0 - occlusion.get(i, 0.0) < filters.min_visible:
            continue
        kept.append((i, category, (x0, y0, x1, y1), int(stats.counts[i])))
    counts = run_length_counts(instance, [k[0] for k in kept])
    objects = [ObjectLabel(i, category, box, area, counts[i]) for i, category, box, area in kept]
    return FrameLabels(image, frame.width, frame.height, objects, None, instance, clean_depth)

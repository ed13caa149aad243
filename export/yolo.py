"""YOLO (Ultralytics layout) detection or segmentation training sets from one or many recordings.

    data.yaml                                     the splits' image folders, names {index: category}
    images/<split>/<sequence>_<camera>_NNNNNN.png
    labels/<split>/<sequence>_<camera>_NNNNNN.txt one line per object (none for a frame without objects)
    export.json                                   the job, counts and the frames the bad-frame filter dropped

detect lines are `class cx cy w h`, segment lines `class x1 y1 x2 y2 ...`, all normalised by the image size.
Class indices number the export's categories (export.categories) in category-id order from 0. Boxes are the
mask's pixel bounds in continuous coordinates (pixel col spans [col, col + 1)). A segment is the outer
contour of each connected part of the mask, its vertices the boundary pixels' indices (col, row), so that
filling it with OpenCV, as Ultralytics and supervision do, gives the mask back (whole for simply connected
parts; holes are filled); several parts are joined into one polygon by zero-width bridges (out to each part
and back), as YOLO allows one polygon per line.
Sequences are split whole (export.common.assign_splits, seeded), so no sequence is on two sides.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from pathlib import Path

import cv2
import numpy as np
import yaml

from core.errors import ConfigError
from core.progress import get_logger
from export.annotate import DEFAULT_FILTERS, Filters, FrameLabels, ObjectLabel, check_frames, label_frame
from export.coco import FrameJob, frame_jobs, labelled_frames
from export.common import DEFAULT_SPLIT, Sequence, assign_splits, export_folder, load_categories

TASKS = ("detect", "segment")
DATA_FILE = "data.yaml"
log = get_logger("export.yolo")


def box_line(index: int, obj: ObjectLabel, width: int, height: int) -> str:
    x0, y0, x1, y1 = obj.box
    cx, cy = (x0 + x1 + 1) / 2 / width, (y0 + y1 + 1) / 2 / height
    return f"{index} {cx:.6f} {cy:.6f} {(x1 - x0 + 1) / width:.6f} {(y1 - y0 + 1) / height:.6f}"


def polygon(mask: np.ndarray) -> np.ndarray:
    """(N, 2) polygon (pixel indices x, y) of a binary mask's outer contours, parts joined by zero-width
    bridges (module docstring)."""
    contours, _ = cv2.findContours(mask.astype(np.uint8), cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    parts = [c.reshape(-1, 2) for c in sorted(contours, key=len, reverse=True)]
    joined = np.concatenate([np.vstack([p, p[:1]]) if len(parts) > 1 else p for p in parts])
    return joined.astype(np.float64)


def segment_line(index: int, obj: ObjectLabel, instance: np.ndarray) -> str:
    """The object's polygon line, traced inside its box (the rest of the image holds none of its pixels)."""
    x0, y0, x1, y1 = obj.box
    points = (polygon(instance[y0:y1 + 1, x0:x1 + 1] == obj.instance_id) + (x0, y0)) / instance.shape[::-1]
    return f"{index} " + " ".join(f"{v:.6f}" for v in points.reshape(-1))


def export_yolo(sequences: list[Sequence], out: Path, task: str = "detect", categories: str = "coco",
                filters: Filters = DEFAULT_FILTERS, processed: bool = False, split: dict[str, float] | None = None,
                seed: int = 0) -> dict[str, int]:
    """Write a YOLO export of `sequences` into `out` (module docstring); returns the counts it reports."""
    if task not in TASKS:
        raise ConfigError(f"unknown task {task!r}; one of {', '.join(TASKS)}", field="--task")
    chosen = load_categories(categories, sequences)
    index = {c.id: i for i, c in enumerate(sorted(chosen.categories, key=lambda c: c.id))}
    split = split or DEFAULT_SPLIT
    sequences = assign_splits(sequences, split, seed)
    if len(sequences) == 1 and len(split) > 1:
        log.warning("one sequence: all of it is in %s; export more runs to get the other splits (a sequence is "
                     "never split)", sequences[0].split)
    options = {"task": task, "categories": categories, "filters": asdict(filters), "processed": processed,
               "split": split, "seed": seed}

    def label(job: FrameJob) -> tuple[FrameLabels, list[str]]:
        """The frame's labels and its label-file lines, made on a worker thread."""
        labels = label_frame(job.frame, job.camera.instances, chosen, filters, processed)
        if task == "detect":
            return labels, [box_line(index[o.category.id], o, labels.width, labels.height) for o in labels.objects]
        return labels, [segment_line(index[o.category.id], o, labels.instance) for o in labels.objects]

    jobs = frame_jobs(sequences)
    check_frames(sequences, processed)
    with export_folder(out, "yolo", options, sequences, chosen) as folder:
        counts = {"images": 0, "labels": 0, "dropped frames": 0}
        dropped = []
        per_category: Counter[int] = Counter()
        for job, (labels, lines) in labelled_frames(jobs, label, "YOLO export"):
            if labels.dropped is not None:
                dropped.append(f"{job.sequence.name}/{job.camera.name}/{job.frame.index:06d}: {labels.dropped}")
                continue
            stem = f"{job.sequence.split}/{job.sequence.name}_{job.camera.name}_{job.frame.index:06d}"
            folder.copy_image(labels.image, f"images/{stem}.png")
            folder.write_bytes(f"labels/{stem}.txt", "".join(f"{line}\n" for line in lines).encode())
            counts["images"] += 1
            counts["labels"] += len(lines)
            per_category.update(o.category.id for o in labels.objects)
        counts["dropped frames"] = len(dropped)
        for name in split:  # every split data.yaml names exists, even when no sequence fell in it
            for kind in ("images", "labels"):
                folder.path(f"{kind}/{name}").mkdir(parents=True, exist_ok=True)
        # No `path`: Ultralytics then resolves the splits against data.yaml's folder, so the export can move.
        data = {**{name: f"images/{name}" for name in split if split[name] > 0},
                "names": {index[c.id]: c.name for c in chosen.categories}}
        folder.write_bytes(DATA_FILE, yaml.safe_dump(data, sort_keys=False).encode())
        folder.finish(counts, dropped)
    chosen.warn_unannotated(per_category)
    return counts

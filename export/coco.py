"""COCO instance (and person keypoint) annotations from one or many recordings.

Layout of the export folder:

    images/<sequence>/<camera>/NNNNNN.png      the frames (hard links to the recording where possible)
    annotations/instances_all.json             or instances_<split>.json per split (--split)
    export.json                                the job, counts and the frames the bad-frame filter dropped

Every image entry carries COCO's id, file_name, width and height plus `sequence`, `camera`, `frame` and
`time` (simulation s). Every annotation: unique id, image_id, category_id, `bbox` [x, y, w, h] with
w = x_max - x_min + 1 for our inclusive pixel bounds, `segmentation` as a compressed RLE (pycocotools),
float `area` (mask pixels), `iscrowd` 0, `instance_id` (the recording's id: stable over a sequence, so it
doubles as a track id), and for people COCO's 17 `keypoints` with `num_keypoints`.
Clothes are part of their person: a human's body and garments are one instance when recorded.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from core.config.lens import Lens
from core.progress import track
from core.recording import Camera, Frame
from export.annotate import DEFAULT_FILTERS, Filters, FrameLabels, check_frames, compress, label_frame
from export.categories import COCO_KEYPOINTS, Categories
from export.common import ExportFolder, Sequence, assign_splits, export_folder, load_categories
from export.keypoints import SkeletonTrack, project_keypoints

T = TypeVar("T")
ANNOTATIONS_DIR = "annotations"
UNLABELLED = {"keypoints": [0] * 3 * len(COCO_KEYPOINTS), "num_keypoints": 0}  # a person without a skeleton
IMAGES_DIR = "images"


@dataclass(frozen=True)
class FrameJob:
    """One frame to label, with where it goes."""

    sequence: Sequence
    camera: Camera
    frame: Frame

    @property
    def file_name(self) -> str:
        return f"{IMAGES_DIR}/{self.sequence.name}/{self.camera.name}/{self.frame.index:06d}.png"


def frame_jobs(sequences: list[Sequence]) -> list[FrameJob]:
    return [FrameJob(s, s.recording.camera(c), f) for s in sequences for c in s.cameras
            for f in s.recording.camera(c)]


def labelled_frames(jobs: list[FrameJob], label: Callable[[FrameJob], T],
                    description: str) -> Iterator[tuple[FrameJob, T]]:
    """Each job with its labels, in order, decoded on a thread per core (PNG decoding releases the GIL)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        yield from track(zip(jobs, pool.map(label, jobs), strict=True), description, total=len(jobs))


def skeleton_tracks(sequences: list[Sequence], keypoints: bool) -> dict[str, SkeletonTrack]:
    """Each sequence's recorded human skeletons by sequence name (none without `keypoints`)."""
    return {s.name: SkeletonTrack(h) for s in sequences if keypoints and (h := s.recording.humans()) is not None}


def annotate_frame(job: FrameJob, categories: Categories, filters: Filters, processed: bool, keypoints: bool,
                   skeletons: dict[str, SkeletonTrack]) -> tuple[FrameLabels, list[dict[str, Any]]]:
    """A frame's labels and its COCO annotation entries (no id, no image_id yet): run on a worker thread."""
    labels = label_frame(job.frame, job.camera.instances, categories, filters, processed)
    rles = compress([o.counts for o in labels.objects], labels.height, labels.width)
    entries = []
    truth = None
    for obj, rle in zip(labels.objects, rles, strict=True):
        x0, y0, x1, y1 = obj.box
        entry = {"category_id": obj.category.id, "bbox": [x0, y0, x1 - x0 + 1, y1 - y0 + 1],
                 "area": float(obj.area), "segmentation": rle, "iscrowd": 0, "instance_id": obj.instance_id}
        if obj.category.is_person and keypoints:
            truth = truth or _KeypointTruth(job.frame, labels, processed)
            prim = job.camera.instances.instances[obj.instance_id].prim_path
            entry |= truth.keypoints(skeletons.get(job.sequence.name), prim, obj.instance_id)
        entries.append(entry)
    return labels, entries


def coco_annotations(folder: ExportFolder, sequences: list[Sequence], categories: Categories, filters: Filters,
                     processed: bool, keypoints: bool) -> tuple[dict[str | None, dict[str, Any]], list[str]]:
    """Copy the frames into `folder` and build one COCO document per split (key None without splits), with
    the frames the bad-frame filter dropped. Frames are labelled, encoded and given keypoints on the worker
    threads; this thread numbers them."""
    skeletons = skeleton_tracks(sequences, keypoints)

    def annotate(job: FrameJob) -> tuple[FrameLabels, list[dict[str, Any]]]:
        return annotate_frame(job, categories, filters, processed, keypoints, skeletons)

    documents: dict[str | None, dict[str, Any]] = {}
    dropped: list[str] = []
    annotation_id = 0
    jobs = frame_jobs(sequences)
    for image_id, (job, (labels, entries)) in enumerate(labelled_frames(jobs, annotate, "COCO export"), start=1):
        if labels.dropped is not None:
            dropped.append(f"{job.sequence.name}/{job.camera.name}/{job.frame.index:06d}: {labels.dropped}")
            continue
        folder.copy_image(labels.image, job.file_name)
        document = documents.setdefault(job.sequence.split, _empty(categories))
        document["images"].append({"id": image_id, "file_name": job.file_name, "width": labels.width,
                                   "height": labels.height, "sequence": job.sequence.name,
                                   "camera": job.camera.name, "frame": job.frame.index, "time": job.frame.time})
        for entry in entries:
            annotation_id += 1
            document["annotations"].append({"id": annotation_id, "image_id": image_id, **entry})
    return documents, dropped


class _KeypointTruth:
    """The clean depth and instance images of a frame (those the labels read when they are clean), read once
    for all its people."""

    def __init__(self, frame: Frame, labels: FrameLabels, processed: bool):
        self.frame = frame
        self.instance = frame.instance() if processed else labels.instance
        self.depth = labels.clean_depth if labels.clean_depth is not None else frame.depth()

    def keypoints(self, skeleton: SkeletonTrack | None, prim_path: str, instance_id: int) -> dict[str, Any]:
        found = skeleton.keypoints_world(prim_path, self.frame.time) if skeleton is not None else None
        if found is None:
            return UNLABELLED
        record = self.frame.record
        flat = project_keypoints(*found, self.frame.pose, self.frame.K, self.depth, self.instance, instance_id,
                                 Lens.from_ros(record.distortion_model, record.D))
        return {"keypoints": flat, "num_keypoints": sum(1 for v in flat[2::3] if v > 0)}


def _empty(categories: Categories) -> dict[str, Any]:
    return {"info": {"description": "GRADE synthetic data", "version": "1"}, "licenses": [], "images": [],
            "annotations": [], "categories": categories.coco()}


def export_coco(sequences: list[Sequence], out: Path, categories: str = "coco", filters: Filters = DEFAULT_FILTERS,
                processed: bool = False, split: dict[str, float] | None = None, seed: int = 0,
                keypoints: bool = True) -> dict[str, int]:
    """Write a COCO export of `sequences` into `out` (module docstring); returns the counts it reports."""
    chosen = load_categories(categories, sequences)
    if split is not None:
        sequences = assign_splits(sequences, split, seed)
    options = {"categories": categories, "filters": asdict(filters), "processed": processed, "split": split,
               "seed": seed, "keypoints": keypoints}
    check_frames(sequences, processed)
    with export_folder(out, "coco", options, sequences, chosen) as folder:
        documents, dropped = coco_annotations(folder, sequences, chosen, filters, processed, keypoints)
        if not documents:
            documents[None if split is None else "train"] = _empty(chosen)
        for name, document in sorted(documents.items(), key=lambda kv: kv[0] or ""):  # allow_nan: JSON has none
            folder.write_bytes(f"{ANNOTATIONS_DIR}/instances_{name or 'all'}.json",
                               json.dumps(document, separators=(",", ":"), allow_nan=False).encode())
        counts = {"images": sum(len(d["images"]) for d in documents.values()),
                  "annotations": sum(len(d["annotations"]) for d in documents.values()),
                  "dropped frames": len(dropped)}
        folder.finish(counts, dropped)
    chosen.warn_unannotated(Counter(a["category_id"] for d in documents.values() for a in d["annotations"]))
    return counts

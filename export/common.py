"""What every exporter shares: the recordings as named sequences, the split by sequence, and the export
folder's life cycle (lock, export.json, resume, atomic image copies, the dataset card written last with
export.json).

A sequence is one recording (run folder); its cameras are exported as separate image streams but always
land on the same side of a split, so no scene is seen in training and validation both.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from collections.abc import Sequence as Seq
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError, GradeError, InputError
from core.formats.class_map import read_class_map
from core.formats.dataset_card import DatasetCard, write_dataset_card
from core.formats.export import (
    EXPORT_FILE,
    ExportDocument,
    ExportedSequence,
    read_export_document,
    write_export_document,
)
from core.formats.images import DEPTH_NOISY, INSTANCE_BLUR, RGB_BLUR, check_image
from core.recording import Camera, Frame, Recording
from core.rundir import DIRECTORY_MODE, atomic_write_bytes
from core.seeding import generator
from core.stage import output_folder
from export.card import CardRun, dataset_card, relative_path
from export.categories import Categories

SPLITS = ("train", "val", "test")
# The `grade postprocess` output each image kind is replaced by with `processed`, and the flag that makes it.
PROCESSED = {"rgb": RGB_BLUR, "depth": DEPTH_NOISY, "instance": INSTANCE_BLUR}
POSTPROCESS_FLAG = {"rgb": "--blur", "depth": "--depth MODEL", "instance": "--blur"}
DEFAULT_SPLIT = {"train": 0.8, "val": 0.2}  # GRADE's 80/20


@dataclass(frozen=True)
class Sequence(CardRun):
    """One recording to export, with the name it has inside the export (its cameras and split, as on the card)."""

    def entry(self, root: Path) -> ExportedSequence:
        return ExportedSequence(name=self.name, run=relative_path(self.recording.path, root), cameras=self.cameras,
                                split=self.split)


def check_distinct(runs: Seq[Path]) -> None:
    """ConfigError for a run named twice (the same folder by another spelling or through a symlink): its frames
    would be exported twice, and in a split on both sides."""
    seen: dict[Path, Path] = {}
    for run in runs:
        resolved = Path(run).resolve()
        if resolved in seen:
            same = "" if str(seen[resolved]) == str(run) else f" (as {seen[resolved]} and {run})"
            raise ConfigError(f"the recording {resolved} is given twice{same}: its frames would be exported twice "
                              "(and in a split, on both sides); name each run once", field="RUN")
        seen[resolved] = Path(run)


def open_sequences(runs: Seq[Path], cameras: Seq[str] | None = None, robot: str | None = None) -> list[Sequence]:
    """Each run opened with `Recording.open` (complete runs only), named after its folder (`_2`, `_3`, ... on
    a clash), with the cameras to export: `cameras` (each must exist in every run), else all of the run's. In a
    multi-robot run the cameras are robot `robot`'s (default: the first robot's). A run named twice is refused
    (`check_distinct`)."""
    if not runs:
        raise ConfigError("name at least one recording (a run folder written by `grade generate`)", field="RUN")
    check_distinct(runs)
    sequences, used = [], set()
    for run in runs:
        recording = Recording.open(run).robot(robot)
        chosen = list(cameras) if cameras else recording.cameras
        for camera in chosen:
            recording.camera(camera)  # InputError listing the cameras it has
        if not chosen:
            raise InputError("the recording has no camera ground truth (gt/<camera>/frames.jsonl)", run)
        name, suffix = Path(run).resolve().name, 2
        while name in used:
            name, suffix = f"{Path(run).resolve().name}_{suffix}", suffix + 1
        used.add(name)
        sequences.append(Sequence(name, recording, chosen))
    return sequences


def defined_classes(sequences: Seq[Sequence]) -> set[str]:
    """The semantic classes the recordings define: each one's class map (run.json's recording.class_map, read
    again while the file is there, else the default map) and the classes its cameras' instances.json name."""
    known: set[str] = set()
    for sequence in sequences:
        recording = sequence.recording
        path = (recording.config.get("recording") or {}).get("class_map")
        if path is None or Path(path).is_file():
            known |= set(read_class_map(path).classes)
        for name in sequence.cameras:
            known |= set(recording.camera(name).instances.semantic_classes)
    return known


def load_categories(choice: str, sequences: Seq[Sequence]) -> Categories:
    """`--categories` (export.categories), a FILE's classes checked against those the recordings define: a class
    none of them defines is refused before anything is written."""
    categories = Categories.load(choice)
    if categories.from_file:
        categories.check_classes(defined_classes(sequences))
    return categories


def parse_split(text: str) -> dict[str, float]:
    """'train=0.8,val=0.2' -> fractions by split name (train, val, test), summing to 1."""
    fractions: dict[str, float] = {}
    for item in text.split(","):
        name, sep, value = item.strip().partition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = -1.0
        if not sep or name not in SPLITS or name in fractions or not 0 <= fraction <= 1:
            raise ConfigError(f"expected NAME=FRACTION items with NAME one of {', '.join(SPLITS)} and FRACTION "
                              f"in [0, 1], got {item!r}", field="--split")
        fractions[name] = fraction
    if abs(sum(fractions.values()) - 1) > 1e-6:
        raise ConfigError(f"the fractions must sum to 1, got {sum(fractions.values()):g}", field="--split")
    return fractions


def assign_splits(sequences: list[Sequence], fractions: dict[str, float], seed: int) -> list[Sequence]:
    """Each sequence on one side: a seeded shuffle of the sequences, cut by `fractions` (largest-remainder
    rounding, then each split with a positive fraction gets at least one sequence while there are enough;
    a single sequence goes to the largest split)."""
    order = generator(seed, "export.split").permutation(len(sequences))
    names = [name for name in SPLITS if fractions.get(name, 0) > 0]
    exact = np.array([fractions[n] for n in names]) * len(sequences)
    counts = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - counts), kind="stable")[:len(sequences) - counts.sum()]:  # largest remainders
        counts[i] += 1
    for i in range(len(names)):  # give empty splits one sequence, taken from the largest, while possible
        if counts[i] == 0 and counts.max() > 1:
            counts[int(np.argmax(counts))] -= 1
            counts[i] = 1
    labels = np.repeat(names, counts)
    out = list(sequences)
    for position, index in enumerate(order):
        s = sequences[index]
        out[index] = Sequence(s.name, s.recording, s.cameras, str(labels[position]))
    return out


class ExportFolder:
    """An export folder held for writing: export.json first (complete: false), files, then the dataset card
    (DATASET.md) and export.json with the same card, last."""

    def __init__(self, root: Path, document: ExportDocument, card: DatasetCard):
        self.root, self.document, self.card = root, document, card

    def path(self, relative: str | Path) -> Path:
        return self.root / relative

    def copy_image(self, source: Path, relative: str | Path) -> Path:
        """`source` placed at `relative`, atomically; kept when already there with the same size (a resumed
        export). Hard-linked when on the same file system (recordings are never modified in place), else
        copied."""
        target = self.root / relative
        if target.is_file() and target.stat().st_size == source.stat().st_size:
            return target
        target.parent.mkdir(parents=True, exist_ok=True, mode=DIRECTORY_MODE)
        temporary = target.with_name(f".{target.name}.tmp")
        temporary.unlink(missing_ok=True)
        try:
            os.link(source, temporary)
        except OSError:
            shutil.copyfile(source, temporary)
        os.replace(temporary, target)
        return target

    def write_bytes(self, relative: str | Path, data: bytes) -> Path:
        return atomic_write_bytes(self.root / relative, data)

    def finish(self, counts: dict[str, int], dropped: list[str]) -> None:
        card = self.card.model_copy(update={"counts": counts})
        write_dataset_card(self.root, card)
        self.document = self.document.model_copy(update={"complete": True, "counts": counts,
                                                          "dropped_frames": dropped, "card": card})
        write_export_document(self.root, self.document)


@contextmanager
def export_folder(out: Path, fmt: str, options: dict[str, Any], sequences: list[Sequence],
                  categories: Categories | None = None) -> Iterator[ExportFolder]:
    """Lock `out` (one writer; apart from the recordings it reads), refuse a folder holding another export, record
    the job, yield the folder. The caller writes its files and calls `finish`; an interrupted export (killed,
    Ctrl-C) is resumed by the same command. An export that fails in a folder it started leaves no folder: the
    error (a corrupt frame, a full disk) is not fixed by rerunning, so a half export would only be left to
    mistake for data. The dataset card is gathered first, so a recording it cannot read fails before the folder is
    touched; `categories` are the export's label classes (None: an export without labels)."""
    card = dataset_card(Path(out), f"GRADE {fmt} export", fmt, options, list(sequences),
                        categories)
    document = ExportDocument(format=fmt, options=options, sequences=[s.entry(Path(out)) for s in sequences])
    with output_folder(out, what="export folder", inputs=[s.recording.path for s in sequences],
                       discard_failed=True) as root:
        if (root / EXPORT_FILE).is_file():
            previous = read_export_document(root)
            if not previous.same_job(document):
                raise GradeError(f"the folder holds another export ({previous.format} of "
                                 f"{', '.join(s.name for s in previous.sequences)}, other options); choose a new "
                                 "--out, or rerun that export's exact command to resume it", root / EXPORT_FILE)
        write_export_document(root, document)
        yield ExportFolder(root, document, card)


def image_file(frame: Frame, kind: str, processed: bool) -> Path | None:
    """The file of `frame`'s `kind` ("rgb", "depth" or "instance") to export: the recorded one, or with
    `processed` its `grade postprocess` version; None when there is none."""
    if not processed:
        return frame.path(kind) or (frame.path("depth_npy") if kind == "depth" else None)
    path = frame.processed_path(PROCESSED[kind])
    return path if path.is_file() else None


def stored_kind(frame: Frame, kind: str, processed: bool) -> str:
    """The core.formats.images kind of `image_file(frame, kind, processed)` (depth_npy where a run stores depth
    only as .npy)."""
    if processed:
        return PROCESSED[kind]
    return "depth_npy" if kind == "depth" and "depth" not in frame.record.files else kind


def exported_image(frame: Frame, kind: str, processed: bool) -> Path:
    """`image_file`, read before an export copies it: a file that is missing, not an image, damaged or not the
    frame's size (frames.jsonl's width and height) raises InputError naming it (core.formats.images.check_image,
    which reads a PNG's chunks and CRCs without decoding its pixels)."""
    path = image_file(frame, kind, processed)
    if path is None:  # check_images saw it; deleted since
        raise InputError(f"frame {frame.index}'s {PROCESSED[kind] if processed else kind} image is gone",
                         frame.folder)
    check_image(path, stored_kind(frame, kind, processed), frame.width, frame.height)
    return path


def check_images(recording: Recording, camera: Camera, kinds: Seq[str], processed: bool) -> None:
    """Every frame has each image `kind` to export: checked before the export folder is touched, so a run
    without them fails with what to do and leaves nothing behind."""
    if not len(camera):
        raise InputError(f"camera {camera.name!r} recorded no frames", camera.folder)
    for frame in camera:
        for kind in kinds:
            if image_file(frame, kind, processed) is not None:
                continue
            if processed:
                raise InputError(f"camera {camera.name!r} frame {frame.index} has no {PROCESSED[kind]}: --processed "
                                 f"needs the run post-processed with `grade postprocess RUN {POSTPROCESS_FLAG[kind]}`",
                                 recording.path)
            raise InputError(f"camera {camera.name!r} recorded no {kind} images (robot.sensors.cameras[].outputs)",
                             camera.folder)

"""WebDataset tar shards (`grade export webdataset`): one sample per camera frame, written with WebDataset's
ShardWriter so trainers stream them (`webdataset.WebDataset("out/shard-{000000..000003}.tar")`).

    shard-000000.tar, shard-000001.tar, ...   the samples, in run, camera, frame order
    dataset.json                              the shards with their sample counts, the categories, the semantic classes
    export.json                               the job, counts and the frames the bad-frame filter dropped

A sample's key is `<sequence>/<camera>/<NNNNNN>` (the run folder's name, `_2`... on a clash as in every export)
and its members are:

    <key>.rgb.png        the recorded colour image (with `processed`: `grade postprocess`'s rgb_blur), as stored
    <key>.depth.png      the recorded depth PNG, uint16 millimetres, 0 = no return (processed: depth_noisy);
                         <key>.depth.npy (float32 metres) instead when the run stores depth only as depth_npy
    <key>.instance.png   uint16 instance ids (processed: instance_blur)
    <key>.semantic.png   uint16 semantic ids, dataset.json's semantic_classes (processed: semantic_blur)
    <key>.json           ids (sequence, camera, frame), time (simulation s), width, height, K (3x3), pose (4x4
                         world <- the camera's optical frame: z forward, x right, y down), the member files with
                         their encodings, and `objects`: the COCO export's annotations of the frame (bbox [x, y, w,
                         h], area, category_id, category, instance_id, person keypoints), without the RLE masks
                         (the instance PNG holds them)

Depth and semantic members are present when the camera records them. Images are the recording's own PNG bytes,
never re-encoded, and each is checked whole and of the frame's size before it is written (a damaged or resized
file is refused, naming it). Objects and the bad-frame filter are the COCO exporter's (export.coco.annotate_frame),
with the same options.

Shard size: a shard is closed before the sample that would make its file larger than `shard_size` bytes (tar
headers and padding counted), or once it holds `max_samples`; a single sample larger than `shard_size` gets a
shard of its own. Shards are deterministic: members in a fixed order (WebDataset sorts a sample's extensions),
mtime 0, owner and group `grade`, mode 0444; each shard is written to a hidden temporary file and renamed when
complete. A resumed export writes the shards again (same bytes).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from core.errors import ConfigError, InputError
from core.formats.images import SEMANTIC_BLUR, check_image
from core.progress import track
from export.annotate import DEFAULT_FILTERS, Filters, FrameLabels, check_frames
from export.categories import Categories
from export.coco import FrameJob, annotate_frame, frame_jobs, skeleton_tracks
from export.common import (
    PROCESSED,
    ExportFolder,
    Sequence,
    check_images,
    export_folder,
    image_file,
    load_categories,
    stored_kind,
)

SHARD_PATTERN = "shard-%06d.tar"
DATASET_FILE = "dataset.json"
DEFAULT_SHARD_SIZE = 10**9  # bytes
MAX_SHARD_SIZE = 10**15  # bytes: a petabyte, past any disk; also keeps '1e400' (= inf) from int()
TAR_BLOCK, TAR_RECORD = 512, 20 * 512  # tarfile's block and (stream mode) record size
TAR_END = 2 * TAR_BLOCK  # the two zero blocks that close an archive
OWNER, MTIME, MODE = "grade", 0, 0o444
CHUNK = 64  # frames read ahead by the worker threads
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
DEPTH_ENCODING = {"depth.png": "uint16 millimetres to the image plane, 0 = no return",
                  "depth.npy": "float32 metres to the image plane, 0 = no return"}


def parse_size(text: str) -> int:
    """'1GB', '500MB', '64KiB', '2e9' -> bytes (decimal units; KiB, MiB, GiB binary)."""
    found = re.fullmatch(r"\s*([0-9.eE+]+)\s*([a-zA-Z]*)\s*", text)
    try:
        value = float(found.group(1)) * _UNITS[found.group(2).lower()] if found else -1.0
    except (KeyError, ValueError):
        value = -1.0
    if not 1 <= value <= MAX_SHARD_SIZE:  # NaN cannot be spelled here; inf fails the upper bound
        raise ConfigError(f"expected a size from 1 B to 1000TB, such as 1GB, 500MB or 64KiB, got {text!r}",
                          field="--shard-size")
    return int(value)


def member_size(data: bytes) -> int:
    """Bytes a member takes in a ustar archive: its header block and its data padded to whole blocks."""
    return TAR_BLOCK + -(-len(data) // TAR_BLOCK) * TAR_BLOCK


def shard_file_size(members: int) -> int:
    """The size of a stream-mode tar file holding `members` bytes of members: closed and padded to a record."""
    return -(-(members + TAR_END) // TAR_RECORD) * TAR_RECORD


@dataclass(frozen=True)
class ShardOptions:
    shard_size: int = DEFAULT_SHARD_SIZE  # bytes a shard file may reach (one larger sample gets a shard alone)
    max_samples: int | None = None  # samples per shard, None = no limit
    categories: str = "coco"
    filters: Filters = DEFAULT_FILTERS
    processed: bool = False
    keypoints: bool = True

    def check(self) -> None:
        if self.shard_size < 1:
            raise ConfigError(f"must be positive, got {self.shard_size}", field="--shard-size")
        if self.max_samples is not None and self.max_samples < 1:
            raise ConfigError(f"must be at least 1, got {self.max_samples}", field="--max-samples")


def _kinds(sequence: Sequence, camera: str) -> list[str]:
    """The image kinds exported for a camera: rgb and instance always, depth and semantic when recorded."""
    files = sequence.recording.camera(camera)[0].record.files
    optional = ["depth"] if "depth" in files or "depth_npy" in files else []
    return ["rgb", *optional, "instance"] + (["semantic"] if "semantic" in files else [])


def check_sequences(sequences: list[Sequence], processed: bool) -> None:
    """Every frame has the images it is exported with, checked before the export folder is touched."""
    check_frames(sequences, processed)
    for sequence in sequences:
        for name in sequence.cameras:
            camera = sequence.recording.camera(name)
            kinds = _kinds(sequence, name)
            check_images(sequence.recording, camera, [k for k in kinds if k != "semantic"], processed)
            if "semantic" not in kinds:
                continue
            for frame in camera:
                path = frame.processed_path(SEMANTIC_BLUR) if processed else frame.path("semantic")
                if path is None or not path.is_file():
                    raise InputError(f"camera {name!r} frame {frame.index} has no "
                                     f"{SEMANTIC_BLUR if processed else 'semantic'} image"
                                     + (": --processed needs the run post-processed with `grade postprocess RUN "
                                        "--blur`" if processed else ""), sequence.recording.path)


def _image_member(job: FrameJob, kind: str, processed: bool) -> tuple[str, bytes]:
    """(member extension, the file's bytes) of one image kind of a frame, checked whole and of the frame's size
    (core.formats.images.check_image) before they go into a shard."""
    frame = job.frame
    if kind == "semantic":
        stored = SEMANTIC_BLUR if processed else "semantic"
        path = frame.processed_path(SEMANTIC_BLUR) if processed else frame.path("semantic")
    else:
        stored, path = stored_kind(frame, kind, processed), image_file(frame, kind, processed)
    if path is None or not path.is_file():  # checked before the export; deleted since
        raise InputError(f"frame {frame.index}'s {stored} image is gone", frame.folder)
    data = path.read_bytes()
    check_image(path, stored, frame.width, frame.height, data)
    return ("semantic.png" if kind == "semantic" else f"{kind}{path.suffix}"), data


def sample_key(job: FrameJob) -> str:
    return f"{job.sequence.name}/{job.camera.name}/{job.frame.index:06d}"


def make_sample(job: FrameJob, kinds: list[str], labels: FrameLabels, entries: list[dict[str, Any]],
                categories: Categories, processed: bool) -> dict[str, Any]:
    """The WebDataset sample of a labelled frame: its image files' bytes and its JSON."""
    frame = job.frame
    names = {c.id: c.name for c in categories.categories}
    members: dict[str, bytes] = {}
    files: dict[str, Any] = {}
    for kind in kinds:
        extension, members[extension] = _image_member(job, kind, processed)
        source = (SEMANTIC_BLUR if kind == "semantic" else PROCESSED[kind]) if processed else kind
        files[kind] = {"member": extension, "source": source}
        if kind == "depth":
            files[kind]["encoding"] = DEPTH_ENCODING[extension]
    objects = [{**{k: v for k, v in entry.items() if k not in ("segmentation", "iscrowd")},
                "category": names[entry["category_id"]]} for entry in entries]
    document = {"sequence": job.sequence.name, "camera": job.camera.name, "frame": frame.index, "time": frame.time,
                "width": labels.width, "height": labels.height, "K": frame.K.tolist(), "pose": frame.pose.tolist(),
                "pose_frame": "world <- camera optical frame (z forward, x right, y down)", "files": files,
                "objects": objects}
    # allow_nan=False here and in dataset.json: a NaN would be written as NaN, which is not JSON.
    members["json"] = json.dumps(document, separators=(",", ":"), allow_nan=False).encode()
    return {"__key__": sample_key(job), **members}


class _Shards:
    """webdataset.ShardWriter with the size rule of the module docstring, deterministic headers and atomic
    shard files."""

    def __init__(self, root: Path, options: ShardOptions):
        import webdataset

        for stale in [*root.glob("shard-*.tar"), *root.glob(".shard-*.tar.tmp")]:
            stale.unlink()  # a resumed export writes every shard again
        self.options, self.open_files, self.counts = options, {}, []
        self.members, self.failed = 0, False
        self.writer = webdataset.ShardWriter(
            str(root / SHARD_PATTERN), maxcount=options.max_samples or 2**62, maxsize=float(options.shard_size),
            post=self._done, verbose=0, opener=self._open, encoder=False, user=OWNER, group=OWNER, mode=MODE,
            mtime=MTIME)

    @staticmethod
    def _temporary(name: str) -> Path:
        path = Path(name)
        return path.with_name(f".{path.name}.tmp")

    def _open(self, name: str) -> IO[bytes]:
        self.open_files[name] = handle = open(self._temporary(name), "wb")  # noqa: SIM115 (closed in _done)
        self.counts.append(0)
        self.members = 0
        return handle

    def _done(self, name: str) -> None:
        handle = self.open_files.pop(name)
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        if self.failed:  # an interrupted shard is never renamed into place
            self._temporary(name).unlink(missing_ok=True)
        else:
            os.replace(self._temporary(name), name)

    def write(self, sample: dict[str, Any]) -> None:
        size = sum(member_size(v) for k, v in sample.items() if k != "__key__")
        if self.counts[-1] and shard_file_size(self.members + size) > self.options.shard_size:
            self.writer.next_stream()
        self.writer.write(sample)
        self.members += size
        self.counts[-1] += 1

    def close(self) -> None:
        self.writer.close()


def _labelled(jobs: list[FrameJob], label: Callable[[FrameJob], Any]) -> Iterator[tuple[FrameJob, Any]]:
    """Each job with its result, in order, made on a thread per core a chunk at a time (a chunk of samples in
    memory, not the whole export)."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        chunks = (jobs[i:i + CHUNK] for i in range(0, len(jobs), CHUNK))
        results = (item for chunk in chunks for item in zip(chunk, pool.map(label, chunk), strict=True))
        yield from track(results, "WebDataset export", total=len(jobs))


def export_webdataset(sequences: list[Sequence], out: Path, options: ShardOptions = ShardOptions()) -> dict[str, int]:
    """Write the frames of `sequences` into `out` as WebDataset shards (module docstring); returns the counts."""
    options.check()
    chosen = load_categories(options.categories, sequences)
    check_sequences(sequences, options.processed)
    recorded = {**asdict(options), "filters": asdict(options.filters)}
    skeletons = skeleton_tracks(sequences, options.keypoints)
    kinds = {(s.name, c): _kinds(s, c) for s in sequences for c in s.cameras}

    def label(job: FrameJob) -> tuple[FrameLabels, dict[str, Any] | None]:
        labels, entries = annotate_frame(job, chosen, options.filters, options.processed, options.keypoints,
                                         skeletons)
        if labels.dropped is not None:
            return labels, None
        return labels, make_sample(job, kinds[job.sequence.name, job.camera.name], labels, entries, chosen,
                                   options.processed)

    with export_folder(out, "webdataset", recorded, sequences, chosen) as folder:
        counts, dropped, per_category = _write_shards(folder, frame_jobs(sequences), label, options)
        semantic: dict[str, int] = {}
        for sequence in sequences:
            for name in sequence.cameras:
                semantic |= sequence.recording.camera(name).instances.semantic_classes
        dataset = {"shards": [{"file": SHARD_PATTERN % i, "samples": n} for i, n in enumerate(counts)],
                   "samples": sum(counts), "categories": chosen.coco(),
                   "semantic_classes": dict(sorted(semantic.items(), key=lambda kv: kv[1]))}
        folder.write_bytes(DATASET_FILE, json.dumps(dataset, indent=1, allow_nan=False).encode())
        totals = {"samples": sum(counts), "shards": len(counts), "dropped frames": len(dropped)}
        folder.finish(totals, dropped)
    chosen.warn_unannotated(per_category)
    return totals


def _write_shards(folder: ExportFolder, jobs: list[FrameJob], label: Callable, options: ShardOptions
                  ) -> tuple[list[int], list[str], Counter[int]]:
    """The samples written into shards: each shard's sample count, the frames dropped, and the objects by
    category id."""
    dropped: list[str] = []
    per_category: Counter[int] = Counter()
    shards = _Shards(folder.root, options)
    try:
        for job, (labels, sample) in _labelled(jobs, label):
            if sample is None:
                dropped.append(f"{sample_key(job)}: {labels.dropped}")
                continue
            shards.write(sample)
            per_category.update(o.category.id for o in labels.objects)
    except BaseException:
        shards.failed = True
        raise
    finally:
        shards.close()
    return shards.counts, dropped, per_category

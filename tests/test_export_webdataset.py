"""`grade export webdataset` on the session's tiny recorded run, read back with the `webdataset` package and
checked sample by sample against the run's own files and the COCO exporter's annotations: images byte for byte,
ids, time, K and pose, boxes and keypoints; shards within the size and count limits, deterministic tar headers,
identical bytes from two exports; bad requests exit 2 and write nothing."""

from __future__ import annotations

import json
import math
import tarfile
from pathlib import Path

import pytest
import webdataset

from core.recording import Recording
from export.annotate import Filters
from export.coco import export_coco
from export.common import open_sequences
from export.shards import DATASET_FILE, MTIME, OWNER, ShardOptions, export_webdataset, parse_size
from tests.conftest import assert_refused, copy_run, run_grade

pytestmark = pytest.mark.slow  # the session's tiny run is recorded for them

SHARD_SIZE = 64 * 1024  # the tiny run's samples are ~10 KB: several shards


def shard_files(out: Path) -> list[Path]:
    return sorted(out.glob("shard-*.tar"))


def read_samples(out: Path) -> list[dict]:
    """Every sample of the export, in order, through WebDataset's own reader."""
    return list(webdataset.WebDataset([str(p) for p in shard_files(out)], shardshuffle=False))


@pytest.fixture(scope="module")
def exported(tiny_run, tmp_path_factory) -> Path:
    """The run exported through the CLI with a small shard size."""
    out = tmp_path_factory.mktemp("wds") / "out"
    result = run_grade("export", "webdataset", str(tiny_run), "--out", str(out), "--shard-size", "64KiB")
    assert result.returncode == 0, result.stderr
    assert "samples" in result.stderr and "shards" in result.stderr  # the report line (console: stderr)
    return out


def test_every_sample_matches_the_run_and_the_coco_export(tiny_run, exported, tmp_path):
    camera = Recording.open(tiny_run).camera("camera")
    samples = read_samples(exported)
    document = json.loads((exported / "export.json").read_text())
    assert document["complete"] and document["format"] == "webdataset"
    kept = [frame for frame in camera
            if not any(d.startswith(f"{tiny_run.name}/camera/{frame.index:06d}:") for d in document["dropped_frames"])]
    assert [s["__key__"] for s in samples] == [f"{tiny_run.name}/camera/{f.index:06d}" for f in kept]
    assert kept, "the tiny run has frames to export"

    export_coco(open_sequences([tiny_run]), tmp_path / "coco")
    coco = json.loads((tmp_path / "coco/annotations/instances_all.json").read_text())
    by_frame = {image["frame"]: [a for a in coco["annotations"] if a["image_id"] == image["id"]]
                for image in coco["images"]}
    assert sorted(by_frame) == [f.index for f in kept]  # the same bad-frame filter

    people = 0
    for sample, frame in zip(samples, kept, strict=True):
        assert sample["rgb.png"] == frame.path("rgb").read_bytes()
        assert sample["depth.png"] == frame.path("depth").read_bytes()
        assert sample["instance.png"] == frame.path("instance").read_bytes()
        assert sample["semantic.png"] == frame.path("semantic").read_bytes()
        meta = json.loads(sample["json"])
        assert (meta["sequence"], meta["camera"], meta["frame"]) == (tiny_run.name, "camera", frame.index)
        assert meta["time"] == frame.time and (meta["width"], meta["height"]) == (frame.width, frame.height)
        assert meta["K"] == frame.K.tolist() and meta["pose"] == frame.pose.tolist()
        assert meta["files"]["depth"] == {"member": "depth.png", "source": "depth",
                                          "encoding": "uint16 millimetres to the image plane, 0 = no return"}
        truth = by_frame[frame.index]
        assert [o["bbox"] for o in meta["objects"]] == [a["bbox"] for a in truth]
        assert [(o["instance_id"], o["category_id"], o["area"]) for o in meta["objects"]] == [
            (a["instance_id"], a["category_id"], a["area"]) for a in truth]
        assert [o.get("keypoints") for o in meta["objects"]] == [a.get("keypoints") for a in truth]
        people += sum(o["category"] == "person" and o.get("num_keypoints", 0) > 0 for o in meta["objects"])
    assert people, "the tiny run's human is seen with keypoints"

    dataset = json.loads((exported / DATASET_FILE).read_text())
    assert dataset["samples"] == len(samples) == document["counts"]["samples"]
    assert [s["file"] for s in dataset["shards"]] == [p.name for p in shard_files(exported)]
    assert dataset["categories"] == coco["categories"]
    assert dataset["semantic_classes"] == Recording.open(tiny_run).camera("camera").instances.semantic_classes


def test_shards_respect_the_size_limit_and_have_fixed_headers(exported):
    shards = shard_files(exported)
    assert len(shards) > 1
    assert [p.name for p in shards] == [f"shard-{i:06d}.tar" for i in range(len(shards))]
    counts = [s["samples"] for s in json.loads((exported / DATASET_FILE).read_text())["shards"]]
    sizes = []
    for path, count in zip(shards, counts, strict=True):
        with tarfile.open(path) as tar:
            members = tar.getmembers()
        assert len({m.name.split(".", 1)[0] for m in members}) == count
        assert all(m.mtime == MTIME and m.uname == m.gname == OWNER and m.uid == m.gid == 0 and m.mode == 0o444
                   for m in members)
        assert path.stat().st_size <= SHARD_SIZE or count == 1
        sizes.append(path.stat().st_size)
    # Filled: each shard but the last could not take the next shard's first sample.
    assert all(size > SHARD_SIZE / 2 for size in sizes[:-1])
    assert not list(exported.glob(".shard-*"))


def test_two_exports_are_identical_and_max_samples_cuts_shards(tiny_run, exported, tmp_path):
    again = tmp_path / "again"
    export_webdataset(open_sequences([tiny_run]), again, ShardOptions(shard_size=SHARD_SIZE))
    assert [p.read_bytes() for p in shard_files(again)] == [p.read_bytes() for p in shard_files(exported)]
    assert (again / DATASET_FILE).read_bytes() == (exported / DATASET_FILE).read_bytes()

    counted = tmp_path / "counted"
    counts = export_webdataset(open_sequences([tiny_run]), counted, ShardOptions(max_samples=4))
    per_shard = [s["samples"] for s in json.loads((counted / DATASET_FILE).read_text())["shards"]]
    assert counts["shards"] == math.ceil(counts["samples"] / 4) == len(per_shard)
    assert all(n == 4 for n in per_shard[:-1]) and 1 <= per_shard[-1] <= 4
    assert [s["__key__"] for s in read_samples(counted)] == [s["__key__"] for s in read_samples(exported)]


def test_an_interrupted_export_leaves_only_whole_shards_and_resumes(tiny_run, exported, tmp_path, monkeypatch):
    from export import shards

    made, real = [], shards.make_sample

    def failing(*args, **kwargs):
        if len(made) == 5:
            raise KeyboardInterrupt
        made.append(1)
        return real(*args, **kwargs)

    out = tmp_path / "cut"
    monkeypatch.setattr(shards, "make_sample", failing)
    with pytest.raises(KeyboardInterrupt):
        export_webdataset(open_sequences([tiny_run]), out, ShardOptions(shard_size=SHARD_SIZE))
    monkeypatch.undo()
    assert not json.loads((out / "export.json").read_text())["complete"]
    assert not list(out.glob(".shard-*")) and not (out / DATASET_FILE).exists()
    whole = shard_files(out)  # the shards closed before the interruption, each whole
    assert [p.read_bytes() for p in whole] == [p.read_bytes() for p in shard_files(exported)[:len(whole)]]

    export_webdataset(open_sequences([tiny_run]), out, ShardOptions(shard_size=SHARD_SIZE))  # the same job resumes
    assert json.loads((out / "export.json").read_text())["complete"]
    assert [p.read_bytes() for p in shard_files(out)] == [p.read_bytes() for p in shard_files(exported)]


def test_processed_samples_hold_the_postprocess_outputs(tiny_run, tmp_path):
    run = copy_run(tiny_run, tmp_path / "run")
    result = run_grade("postprocess", str(run), "--blur", "--depth", "realsense")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    counts = export_webdataset(open_sequences([run]), out, ShardOptions(processed=True, filters=Filters(bad_frames=False)))
    camera = Recording.open(run).camera("camera")
    samples = read_samples(out)
    assert counts["samples"] == len(samples) == len(camera)
    for sample, frame in zip(samples, camera, strict=True):
        for member, kind in (("rgb.png", "rgb_blur"), ("depth.png", "depth_noisy"), ("instance.png", "instance_blur"),
                             ("semantic.png", "semantic_blur")):
            assert sample[member] == frame.processed_path(kind).read_bytes()
        assert json.loads(sample["json"])["files"]["rgb"] == {"member": "rgb.png", "source": "rgb_blur"}


def test_parse_size():
    assert parse_size("1GB") == 10**9 and parse_size("64KiB") == 65536 and parse_size("2e6") == 2 * 10**6
    for bad in ("lots", "0", "5 parsecs", ""):
        with pytest.raises(Exception, match="expected a size"):
            parse_size(bad)


@pytest.mark.parametrize(("args", "message"), [
    (("{missing}",), "run.json"),
    (("{run}", "--shard-size", "lots"), "--shard-size"),
    (("{run}", "--processed"), "grade postprocess RUN"),
])
def test_bad_requests_exit_2_and_write_nothing(tiny_run, tmp_path, args, message):
    out = tmp_path / "out"
    filled = [a.format(run=tiny_run, missing=tmp_path / "no-such-run") for a in args]
    assert_refused(run_grade("export", "webdataset", *filled, "--out", str(out)), message)
    assert not out.exists()

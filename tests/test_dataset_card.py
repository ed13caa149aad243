"""The dataset card (DATASET.md and export.json's `card`) of exports and batches, checked against independent
truth: the asset packages' meta.json files, run.json, MANIFEST.json, frames.jsonl and the exported annotations;
licences that start in the converters (GSO, AMASS + SMPL, 3D-Front) reach the card; older runs and packages read
as unknown with the reason; a batch writes one card for the whole dataset."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from smpl_fixtures import build_model, save_npz

from asset_converters.front3d import front3d_jobs
from asset_converters.gso import convert_gso
from asset_converters.smpl.convert import convert_sequence
from core.formats.asset_meta import read_meta
from core.formats.dataset_card import CARD_FILE, read_dataset_card
from core.formats.export import EXPORT_FILE, read_export_document
from core.formats.manifest import read_manifest, write_manifest
from core.formats.run_info import asset_record, read_run_info, write_run_info
from core.formats.run_layout import RECORD_OUTPUTS
from core.formats.scene_layout import read_scene_layout
from export.coco import export_coco
from export.common import open_sequences
from export.kitti import export_kitti
from pipeline.batch import export_runs, write_batch_card
from tests.conftest import copy_run
from tests.test_gso_mesh import write_gso_model


def raw(path: Path) -> dict:
    return json.loads(path.read_text())


def rerecord(run: Path, change) -> Path:
    """Change a copied run's run.json with `change(info)` and mark the folder complete again (as a run that
    recorded it so)."""
    info = read_run_info(run)
    change(info)
    write_run_info(run, info)
    write_manifest(run, read_manifest(run).stage, read_manifest(run).input_hash, include=RECORD_OUTPUTS)
    return run


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> dict[str, Path]:
    """A GSO object and an AMASS animation converted by the real converters."""
    root = tmp_path_factory.mktemp("sources")
    gso = convert_gso(write_gso_model(root / "Mug"), root / "packages" / "mug", "h-gso")
    models = root / "body_models"
    save_npz(build_model(), models / "SMPL_NEUTRAL.npz")
    frames = 8
    motion = root / "walk_poses.npz"
    rng = np.random.default_rng(0)
    np.savez(motion, poses=rng.normal(0, 0.05, (frames, 72)), trans=np.zeros((frames, 3)), betas=np.zeros(10),
             gender="neutral", mocap_framerate=30.0)
    amass = convert_sequence(motion, root / "packages" / "walk", models, fps=30)
    return {"gso": gso, "amass": amass}


def test_an_export_card_states_its_sources_against_independent_truth(tiny_run, tmp_path):
    out = tmp_path / "coco"
    counts = export_coco(open_sequences([tiny_run]), out, split={"train": 1.0})
    card = read_dataset_card(out)
    assert card == read_export_document(out).card  # export.json carries the same facts
    info, run = raw(tiny_run / "run.json"), card.runs[0]

    # what made it: run.json and the recording's manifest, read as plain JSON
    assert (run.master_seed, run.derived_seeds) == (info["master_seed"], info["derived_seeds"])
    assert run.record_hash == raw(tiny_run / "MANIFEST.json")["input_hash"]
    assert run.grade_version == info["versions"]["grade"] and run.frames == info["frame_counts"]
    # paths relative to the export, none absolute
    assert not os.path.isabs(run.path) and (out / run.path).resolve() == tiny_run.resolve()
    assert raw(out / EXPORT_FILE)["sequences"][0]["run"] == run.path
    for file in (CARD_FILE, EXPORT_FILE):
        assert str(tiny_run.resolve()) not in (out / file).read_text()

    # the assets: the packages scene.usda references, their meta.json licences, run.json's hashes
    placed = read_scene_layout(tiny_run / "scene" / "scene.usda")
    packages = list(dict.fromkeys(p.package for p in (placed.environment, *placed.humans, *placed.objects)))
    assert [a.package for a in run.assets] == [p.name for p in packages]
    metas = [raw(p / "meta.json") for p in packages]
    assert [a.id for a in run.assets] == [m["id"] for m in metas]
    assert all(a.hash == info["asset_hashes"][a.package] for a in run.assets)
    sources = {licence["source"]: licence for m in metas for licence in m["source"]["licences"]}
    assert {licence.source: licence.model_dump() for licence in card.licences} == sources
    assert sources.keys() == {"GRADE procedural assets"} and card.unknown == []

    # sensors: intrinsics and size as frames.jsonl has them
    first = json.loads((tiny_run / "gt" / "camera" / "frames.jsonl").read_text().splitlines()[0])
    camera = run.cameras[0]
    assert (camera.width, camera.height) == (first["width"], first["height"])
    K = first["K"]
    assert camera.intrinsics == (K[0][0], K[1][1], K[0][2], K[1][2])
    assert {s.name for s in run.sensors} == {imu["name"] for imu in info["config"]["robot"]["sensors"]["imus"]}

    # class map, counts and splits: as the annotations file says
    coco = raw(out / "annotations" / "instances_train.json")
    assert card.classes == {c["id"]: c["name"] for c in coco["categories"]}
    assert card.counts == counts and counts["images"] == len(coco["images"])
    assert card.splits == {"train": [run.name]}

    text = (out / CARD_FILE).read_text()
    assert "GRADE procedural assets" in text and "https://opensource.org/license/bsd-3-clause" in text
    # same inputs, same bytes (a sibling folder: the same relative run path)
    export_coco(open_sequences([tiny_run]), tmp_path / "again", split={"train": 1.0})
    assert (tmp_path / "again" / CARD_FILE).read_bytes() == text.encode()


def test_licences_written_by_the_converters_reach_the_card(tiny_run, packages, tmp_path):
    gso, amass = (read_meta(packages[k] / "meta.json").source.licences for k in ("gso", "amass"))
    assert [(lic.source, lic.name) for lic in gso] == [("Google Scanned Objects", "CC-BY-4.0")]
    assert [lic.source for lic in amass] == ["AMASS", "SMPL body model"]
    run = rerecord(copy_run(tiny_run, tmp_path / "run"),
                   lambda info: info.assets.extend(asset_record(p) for p in packages.values()))
    export_kitti([run], tmp_path / "kitti")
    card = read_dataset_card(tmp_path / "kitti")
    by_source = {licence.source: licence for licence in card.licences}
    assert by_source["Google Scanned Objects"] == gso[0] and by_source["AMASS"] == amass[0]
    assert by_source["SMPL body model"] == amass[1]
    uses = {a.package: a.licences for a in card.runs[0].assets}
    assert uses["mug"] == ["Google Scanned Objects"] and uses["walk"] == ["AMASS", "SMPL body model"]
    text = (tmp_path / "kitti" / CARD_FILE).read_text()
    for needle in ("CC-BY-4.0", "https://creativecommons.org/licenses/by/4.0/", "https://amass.is.tue.mpg.de/license.html",
                   "https://smpl.is.tue.mpg.de/modellicense.html", "non-commercial"):
        assert needle in text
    # a sky image is the user's file: its terms are unknown
    (tmp_path / "sky.png").write_bytes((run / "gt" / "camera" / "rgb" / "000000.png").read_bytes())
    run = rerecord(copy_run(tiny_run, tmp_path / "sky"),
                   lambda info: info.config["render"].update(environment=str(tmp_path / "sky.png")))
    export_kitti([run], tmp_path / "kitti-sky")
    sky = read_dataset_card(tmp_path / "kitti-sky").licences[0]
    assert (sky.source, sky.name) == ("sky image sky.png", "unknown") and "set by the user" in sky.obligations[0]
    # sequence exports carry no labels: the classes are the recording's semantic ones
    instances = raw(run / "gt" / "camera" / "instances.json")
    assert card.classes == {i: name for name, i in instances["semantic_classes"].items()}


def test_a_3d_front_house_carries_the_3d_front_terms(realdata, tmp_path):
    job, = front3d_jobs(realdata / "front3d" / "0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json", tmp_path)
    licences = raw(job.run(job.out, job.input_hash) / "meta.json")["source"]["licences"]
    assert [(lic["source"], lic["name"], lic["url"]) for lic in licences] == [
        ("3D-FRONT", "3D-FRONT Terms of Use", "https://tianchi.aliyun.com/specials/promotion/alibaba-3d-scene-dataset")]
    assert "non-commercial scientific research use only" in licences[0]["obligations"]


def test_older_runs_and_packages_read_as_unknown_with_the_reason(tiny_run, packages, tmp_path):
    # a package converted before licences were recorded still reads: its licences are None
    meta = raw(packages["gso"] / "meta.json")
    del meta["source"]["licences"]
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    assert read_meta(tmp_path / "meta.json").source.licences is None

    def old_package(info) -> None:
        info.assets.append(asset_record(packages["gso"]).model_copy(update={"licences": None}))

    run = rerecord(copy_run(tiny_run, tmp_path / "old-package"), old_package)
    export_kitti([run], tmp_path / "a")
    card = read_dataset_card(tmp_path / "a")
    assert card.runs[0].assets[-1].licences is None
    assert len(card.unknown) == 1 and "package mug (gso)" in card.unknown[0] and "convert it again" in card.unknown[0]

    run = rerecord(copy_run(tiny_run, tmp_path / "old-run"), lambda info: setattr(info, "assets", None))
    export_kitti([run], tmp_path / "b")
    card = read_dataset_card(tmp_path / "b")
    assert card.runs[0].assets is None and card.licences == []
    assert len(card.unknown) == 1 and "no `assets`" in card.unknown[0]
    assert "- unknown: run old-run" in (tmp_path / "b" / CARD_FILE).read_text()


def test_a_batch_writes_one_card_for_the_dataset(tiny_run, tmp_path):
    """What `grade batch` does once every job is done: the exports, then one card at the batch folder's root."""
    out = tmp_path / "batch"
    runs = [copy_run(tiny_run, out / f"default-seed{seed}") for seed in (1, 2)]
    export_runs(["coco"], runs, out / "exports")
    write_batch_card(out, runs, {"coco": out / "exports" / "coco"})
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob(CARD_FILE)) == [
        CARD_FILE, f"exports/coco/{CARD_FILE}"]
    card = read_dataset_card(out)
    assert card.format is None and card.options == {"exports": {"coco": "exports/coco"}}
    assert [(r.name, r.path) for r in card.runs] == [("default-seed1", "default-seed1"),
                                                     ("default-seed2", "default-seed2")]
    frames = raw(tiny_run / "run.json")["frame_counts"]
    assert card.counts["recordings"] == 2 and card.counts["camera/camera samples"] == 2 * frames["camera/camera"]
    assert [licence.source for licence in card.licences] == ["GRADE procedural assets"]
    assert [r.path for r in read_dataset_card(out / "exports" / "coco").runs] == [
        "../../default-seed1", "../../default-seed2"]

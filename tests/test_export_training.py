"""`grade export coco|yolo` on real short recordings, checked with independent readers: pycocotools (loading,
mask decoding, COCOeval of the ground truth against itself) and supervision (YOLO without torch); the global
class map shared by runs in two environments."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import supervision as sv
import yaml
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
from scipy import ndimage

from core.config_io import load_experiment
from core.formats.class_map import DEFAULT_CLASS_MAP
from core.recording import Recording
from export.annotate import Filters, bad_frame_reason
from export.categories import Categories
from pipeline.generate import generate
from tests.conftest import CONFIGS, run_grade

pytestmark = pytest.mark.slow

SMALL = ["simulation.duration=0.5", "simulation.bootstrap=0.25", "robot.sensors.cameras.0.width=160",
         "robot.sensors.cameras.0.height=120", "flying_objects.count={min: 1, max: 1}"]
# Seed 1 puts people in front of the hovering UAV's camera (planner none: the camera stays put).
PEOPLE = [*SMALL, "seed=1", "exploration.planner=none", "humans.count={min: 5, max: 5}"]
HOUSE = "front3d/0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, realdata, asset_cache) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("export")
    made = {"people": root / "people", "house": root / "house"}
    generate(load_experiment(CONFIGS / "demo.yaml", PEOPLE), made["people"], cache=asset_cache)
    generate(load_experiment(CONFIGS / "demo.yaml", [*SMALL, "environment.source=front3d",
                                                     f"environment.path={realdata / HOUSE}",
                                                     "exploration.planner=none"]), made["house"], cache=asset_cache)
    made["blurred"] = root / "blurred"  # a flying camera, so blur moves the labels
    generate(load_experiment(CONFIGS / "demo.yaml", [*SMALL, "exploration.planner=waypoints",
                                                     "exploration.waypoints=[[9, 9, 1.5]]"]), made["blurred"],
             cache=asset_cache)
    result = run_grade("postprocess", str(made["blurred"]), "--blur", "--set", "blur.exposure=0.03")
    assert result.returncode == 0, result.stderr
    return made


def export(*args: str) -> Path:
    result = run_grade("export", *args)
    assert result.returncode == 0, result.stderr
    return Path(args[args.index("--out") + 1])


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.name.startswith(".")}


def instance_image(run: Path, image: dict, kind: str = "instance") -> np.ndarray:
    frame = Recording.open(run).camera(image["camera"])[image["frame"]]
    return frame.instance() if kind == "instance" else frame.processed(kind)


def test_coco_loads_and_matches_the_recording(runs, tmp_path):
    out = export("coco", str(runs["people"]), "--out", str(tmp_path / "coco"))
    coco = COCO(str(out / "annotations" / "instances_all.json"))
    rec = Recording.open(runs["people"])
    camera = rec.camera("camera")
    assert len(coco.getImgIds()) == len(camera)
    assert len({a["id"] for a in coco.dataset["annotations"]}) == len(coco.dataset["annotations"])
    tight = {(f.index, b.instance_id): b for f in camera for b in f.boxes_2d_tight if not b.empty}
    for image in coco.dataset["images"]:
        assert (image["width"], image["height"]) == (160, 120)
        assert (out / image["file_name"]).read_bytes() == camera[image["frame"]].path("rgb").read_bytes()
        instance = camera[image["frame"]].instance()
        for ann in coco.loadAnns(coco.getAnnIds(imgIds=image["id"])):
            mask = coco.annToMask(ann).astype(bool)
            np.testing.assert_array_equal(mask, instance == ann["instance_id"])
            assert ann["area"] == float(mask.sum()) and ann["iscrowd"] == 0
            box = tight[(image["frame"], ann["instance_id"])]  # the recorder's own inclusive bounds
            assert ann["bbox"] == [box.x_min, box.y_min, box.x_max - box.x_min + 1, box.y_max - box.y_min + 1]
    people = coco.loadAnns(coco.getAnnIds(catIds=[1]))
    assert people and coco.loadCats(1)[0]["name"] == "person"
    assert camera.instances.instances[people[0]["instance_id"]].kind == "human"


def test_coco_ground_truth_against_itself_scores_ap_one(runs, tmp_path):
    out = export("coco", str(runs["people"]), "--out", str(tmp_path / "coco"))
    truth = COCO(str(out / "annotations" / "instances_all.json"))
    detections = truth.loadRes([{**a, "score": 1.0} for a in truth.dataset["annotations"]])
    for kind in ("bbox", "segm", "keypoints"):
        evaluation = COCOeval(truth, detections, kind)
        if kind == "keypoints":
            evaluation.params.catIds = [1]  # keypoints are person annotations only, as in COCO's keypoint files
        evaluation.evaluate()
        evaluation.accumulate()
        evaluation.summarize()
        assert evaluation.stats[0] == pytest.approx(1.0), kind


def test_keypoints_of_people_land_inside_their_masks(runs, tmp_path):
    out = export("coco", str(runs["people"]), "--out", str(tmp_path / "coco"))
    coco = COCO(str(out / "annotations" / "instances_all.json"))
    inside = total = 0
    for ann in coco.loadAnns(coco.getAnnIds(catIds=[1])):
        mask = cv2.dilate(coco.annToMask(ann), np.ones((3, 3), np.uint8)).astype(bool)  # a joint may sit on the edge
        points = np.array(ann["keypoints"]).reshape(17, 3)
        assert ann["num_keypoints"] == int((points[:, 2] > 0).sum())
        assert (points[:5, 2] == 0).all()  # the procedural skeleton has no face joints
        for x, y, visibility in points[points[:, 2] == 2]:
            total += 1
            inside += bool(mask[int(y), int(x)])
    assert total >= 50
    assert inside == total


def test_runs_in_two_environments_share_class_ids(runs, tmp_path):
    for name in ("people", "house"):
        instances = Recording.open(runs[name]).camera("camera").instances
        assert instances.semantic_classes == {c: DEFAULT_CLASS_MAP.classes[c] for c in instances.semantic_classes}
        for entry in instances.instances.values():
            assert entry.semantic_id == DEFAULT_CLASS_MAP.id_of(entry.label, entry.kind)
    house = Recording.open(runs["house"]).camera("camera")
    semantic = np.unique(np.concatenate([np.unique(f.semantic()) for f in house]))
    assert set(semantic.tolist()) <= {0, *DEFAULT_CLASS_MAP.classes.values()}
    out = export("coco", str(runs["people"]), str(runs["house"]), "--categories", "nyu40", "--out",
                 str(tmp_path / "both"))
    document = json.loads((out / "annotations" / "instances_all.json").read_text())
    assert {c["name"]: c["id"] for c in document["categories"]} == DEFAULT_CLASS_MAP.classes
    sequences = {i["sequence"] for i in document["images"]}
    assert sequences == {"people", "house"}
    walls = [a for a in document["annotations"] if a["category_id"] == DEFAULT_CLASS_MAP.classes["wall"]]
    assert {document["images"][a["image_id"] - 1]["sequence"] for a in walls} == sequences


def test_yolo_export_reads_back_with_supervision(runs, tmp_path):
    cameras = {name: Recording.open(run).camera("camera") for name, run in runs.items()}  # opened once, read often
    for task in ("detect", "segment"):
        out = export("yolo", str(runs["people"]), str(runs["house"]), "--task", task, "--out", str(tmp_path / task))
        data = yaml.safe_load((out / "data.yaml").read_text())
        splits = {split: sorted(p.name for p in (out / "images" / split).iterdir()) for split in ("train", "val")}
        # two sequences at 80/20: one each side, never one sequence on both
        assert {name.split("_camera_")[0] for name in splits["train"]}.isdisjoint(
            {name.split("_camera_")[0] for name in splits["val"]})
        assert splits["train"] and splits["val"]
        for split in ("train", "val"):
            dataset = sv.DetectionDataset.from_yolo(str(out / "images" / split), str(out / "labels" / split),
                                                    str(out / "data.yaml"), force_masks=task == "segment")
            assert dataset.classes == [data["names"][i] for i in range(len(data["names"]))]
            for path, _, detections in dataset:
                sequence, frame = Path(path).stem.split("_camera_")
                camera = cameras[sequence]
                instance = camera[int(frame)].instance()
                expected = boxes_of(instance, camera.instances.instances)
                assert len(detections) == len(expected)
                for box, mask in zip(detections.xyxy, detections.mask if task == "segment" else [None] * len(detections),
                                     strict=True):
                    match = min(expected, key=lambda e: np.abs(e[0] - box).max())
                    # segment: supervision boxes the polygon, whose vertices are the boundary pixels' indices
                    np.testing.assert_allclose(box, match[0] - (0, 0, task == "segment", task == "segment"),
                                               atol=0.01)
                    if mask is not None:
                        filled = ndimage.binary_fill_holes(match[1])
                        assert (mask & filled).sum() / (mask | filled).sum() > 0.9


def boxes_of(instance: np.ndarray, table: dict) -> list:
    """(xyxy in continuous pixels, mask) of each instance of the image `instance` (its run's instance `table`) the
    COCO categories export (the default choice)."""
    categories = Categories.load("coco")
    out = []
    for i in np.unique(instance[instance > 0]).tolist():
        category = categories.of(table[i]) if i in table else None
        mask = instance == i
        ys, xs = np.nonzero(mask)
        if category is None or min(np.ptp(xs) + 1, np.ptp(ys) + 1) < Filters().min_box:
            continue
        out.append((np.array([xs.min(), ys.min(), xs.max() + 1, ys.max() + 1], float), mask))
    return out


def test_processed_export_uses_the_blur_aware_labels(runs, tmp_path):
    out = export("coco", str(runs["blurred"]), "--processed", "--out", str(tmp_path / "blurred"))
    coco = COCO(str(out / "annotations" / "instances_all.json"))
    camera = Recording.open(runs["blurred"]).camera("camera")
    moved = 0
    for image in coco.dataset["images"]:
        frame = camera[image["frame"]]
        assert (out / image["file_name"]).read_bytes() == frame.processed_path("rgb_blur").read_bytes()
        blurred = frame.processed("instance_blur")
        for ann in coco.loadAnns(coco.getAnnIds(imgIds=image["id"])):
            np.testing.assert_array_equal(coco.annToMask(ann).astype(bool), blurred == ann["instance_id"])
        moved += int((blurred != frame.instance()).sum())
    assert moved > 0  # the camera's motion moved some labels: the blurred ones were used
    result = run_grade("export", "coco", str(runs["people"]), "--processed", "--out", str(tmp_path / "none"))
    assert result.returncode == 2 and "rgb_blur" in result.stderr and "grade postprocess" in result.stderr
    assert not (tmp_path / "none").exists()


def test_export_is_deterministic_resumable_and_one_job_per_folder(runs, tmp_path):
    args = ["yolo", str(runs["people"]), str(runs["house"]), "--task", "segment", "--seed", "3"]
    first = tree(export(*args, "--out", str(tmp_path / "a")))
    assert tree(export(*args, "--out", str(tmp_path / "b"))) == first  # same inputs and seed, same bytes
    # an interrupted export: labels and images missing, export.json still says incomplete
    victim = tmp_path / "a"
    for path in list((victim / "labels").rglob("*.txt"))[:3] + list((victim / "images").rglob("*.png"))[:2]:
        path.unlink()
    document = json.loads((victim / "export.json").read_text())
    (victim / "export.json").write_text(json.dumps({**document, "complete": False}))
    assert tree(export(*args, "--out", str(victim))) == first
    other = run_grade("export", "yolo", str(runs["people"]), "--out", str(victim))
    assert other.returncode == 2 and "another export" in other.stderr
    assert tree(victim) == first


def test_category_file_and_filters(runs, tmp_path):
    categories = tmp_path / "categories.yaml"
    categories.write_text("categories:\n  - {id: 7, name: human, classes: [person]}\n"
                          "  - {id: 9, name: structure, classes: [wall, floor]}\n")
    out = export("coco", str(runs["people"]), "--categories", str(categories), "--out", str(tmp_path / "file"))
    document = json.loads((out / "annotations" / "instances_all.json").read_text())
    assert [(c["id"], c["name"]) for c in document["categories"]] == [(7, "human"), (9, "structure")]
    assert "keypoints" in document["categories"][0] and "keypoints" not in document["categories"][1]
    assert {a["category_id"] for a in document["annotations"]} == {7, 9}
    big = export("coco", str(runs["people"]), "--categories", str(categories), "--min-box", "20", "--out",
                 str(tmp_path / "big"))
    boxes = [a["bbox"] for a in json.loads((big / "annotations" / "instances_all.json").read_text())["annotations"]]
    assert boxes and all(min(w, h) >= 20 for _, _, w, h in boxes) and len(boxes) < len(document["annotations"])
    categories.write_text("categories:\n  - {id: 1, name: a, classes: [person]}\n  - {id: 1, name: b, classes: []}\n")
    result = run_grade("export", "coco", str(runs["people"]), "--categories", str(categories), "--out",
                       str(tmp_path / "bad"))
    assert result.returncode == 2 and "categories.yaml" in result.stderr and "unique ids" in result.stderr


def test_bad_frame_filter_is_grades_rule():
    filters = Filters()
    rgb, depth = np.full((10, 10, 3), 100, np.uint8), np.full((10, 10), 2.0, np.float32)
    assert bad_frame_reason(lambda: rgb, depth, filters) is None
    depth[:5] = 0.2  # 50% near: dropped on nearness alone
    assert "closer than 0.3 m" in bad_frame_reason(lambda: rgb, depth, filters)
    depth[:] = 2.0
    depth[:2] = 0.2  # 20% near ...
    assert bad_frame_reason(lambda: rgb, depth, filters) is None
    rgb[5:7] = (15, 10, 0)  # ... and 20% dark: dropped
    assert "dark" in bad_frame_reason(lambda: rgb, depth, filters)
    rgb[5:7] = (16, 10, 0)  # one channel above the dark level: not dark
    assert bad_frame_reason(lambda: rgb, depth, filters) is None
    depth[:] = 2.0
    depth[:1] = 0.2  # 10% near is not more than 10%: the image is not even read
    assert bad_frame_reason(lambda: pytest.fail("read the image"), depth, filters) is None
    depth[:] = np.nan  # no return anywhere is not near
    assert bad_frame_reason(lambda: rgb, depth, filters) is None

"""`grade replay RUN --every N | --frames LIST | --sample K`: some frames of a real short run rendered again (Cycles
through real bpy, or the ray caster), with the run's labels byte for byte; COCO exports of the replay and of the run
agree (pycocotools); an interrupted replay resumes; bad options exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from pycocotools import mask as mask_utils
from pycocotools.coco import COCO

from core.config_io import load_experiment
from core.errors import ConfigError, InputError
from core.formats.run_info import read_run_info
from core.recording import Recording
from core.seeding import generator
from pipeline.generate import generate
from replay.overrides import render_settings
from replay.subset import SAMPLE_STREAM, FrameRule, choose_frames, frame_rule
from tests.conftest import CONFIGS, requires_extra, run_grade

pytestmark = pytest.mark.slow

# A flying UAV (each frame seen from elsewhere) with people in view, a 10 Hz camera: frames 0 to 5, tiny images.
RUN = ["seed=1", "simulation.duration=0.5", "simulation.bootstrap=0", "robot.sensors.cameras.0.width=64",
       "robot.sensors.cameras.0.height=48", "robot.sensors.cameras.0.rate_hz=10", "humans.count={min: 3, max: 3}",
       "flying_objects.count={min: 1, max: 1}", "exploration.planner=waypoints", "exploration.waypoints=[[9, 9, 1.5]]",
       "recording.bag_formats=[]"]
CYCLES = ["--set", "render.rgb=cycles", "--set", "render.cycles.samples=2", "--set", "render.cycles.denoise=false"]
LABELS = ("depth", "instance", "semantic")


@pytest.fixture(scope="module")
def run(tmp_path_factory, asset_cache) -> Path:
    folder = tmp_path_factory.mktemp("subset") / "run"
    generate(load_experiment(CONFIGS / "demo.yaml", RUN), folder, cache=asset_cache)
    return folder


def grade(*args: str) -> Path:
    result = run_grade(*args)
    assert result.returncode == 0, result.stderr
    return Path(args[args.index("--out") + 1])


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def moved(line: str) -> str:
    """A frames.jsonl line with one digit of its camera's x position changed (the same length)."""
    text = json.dumps(json.loads(line)["pose"][0][3])
    digit = next(i for i, c in enumerate(text) if c.isdigit())
    return line.replace(text, text[:digit] + str((int(text[digit]) + 1) % 10) + text[digit + 1:], 1)


def test_the_rules_pick_frames_by_number():
    numbers = list(range(0, 30, 3))  # a subset's own numbers: 0, 3, ..., 27
    assert choose_frames(FrameRule("every", every=6), numbers, 0, "camera") == [0, 6, 12, 18, 24]
    assert choose_frames(FrameRule("frames", frames=(3, 27)), numbers, 0, "camera") == [3, 27]
    drawn = generator(7, SAMPLE_STREAM).choice(len(numbers), size=4, replace=False)
    assert choose_frames(FrameRule("sample", sample=4), numbers, 7, "left") == sorted(numbers[i] for i in drawn)
    assert choose_frames(FrameRule("sample", sample=4), numbers, 7, "right") == sorted(numbers[i] for i in drawn)
    assert frame_rule(None, " 20,0,10,10", None) == FrameRule("frames", frames=(0, 10, 20))
    assert frame_rule(None, None, None) is None
    with pytest.raises(ConfigError, match="choose the frames one way: --every or --sample, not both"):
        frame_rule(2, None, 3)
    with pytest.raises(ConfigError, match="no frame 4 in the run: camera 'camera' has 10 frames"):
        choose_frames(FrameRule("frames", frames=(3, 4)), numbers, 0, "camera")
    with pytest.raises(ConfigError, match="--every picks no frame"):
        choose_frames(FrameRule("every", every=100), numbers[1:], 0, "camera")


def test_set_takes_render_keys_only(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert render_settings(["render.rgb=cycles", "render.cycles.samples=4", "render.environment=sky.hdr"]) == {
        "render.rgb": "cycles", "render.cycles.samples": 4, "render.environment": str(tmp_path / "sky.hdr")}
    for text in ("robot.sensors.cameras.0.width=10", "seed=3", "rendering.rgb=cycles"):
        with pytest.raises(ConfigError, match="--set changes only the rendering"):
            render_settings([text])


@requires_extra("bpy")
def test_cycles_frames_keep_the_runs_labels_and_export_the_same_coco(run, tmp_path):
    photoreal = grade("replay", str(run), "--out", str(tmp_path / "photoreal"), "--every", "2", *CYCLES)
    parent, replay = Recording.open(run).camera("camera"), Recording.open(photoreal).camera("camera")
    assert [f.index for f in replay] == [0, 2, 4] and len(parent) == 6
    assert [f.time for f in replay] == [parent[i].time for i in (0, 2, 4)]
    for frame in replay:
        original = parent[frame.index]
        for kind in LABELS:
            assert frame.path(kind).read_bytes() == original.path(kind).read_bytes()
        assert frame.rgb().shape == (48, 64, 3) and frame.rgb().std() > 5  # a lit image, not a blank one
        assert not np.array_equal(frame.rgb(), original.rgb())
    # frames.jsonl (boxes included) and poses.tum: the run's lines of those frames, byte for byte
    for name in ("frames.jsonl", "poses.tum"):
        kept = [lines(run / "gt/camera" / name)[i] for i in (0, 2, 4)]
        assert lines(photoreal / "gt/camera" / name) == kept
    info = read_run_info(photoreal)
    assert info.replay_of["subset"] == {"rule": "every", "every": 2}
    assert info.replay_of["frames"] == {"camera": [0, 2, 4]} and info.config["render"]["rgb"] == "cycles"
    assert not (photoreal / "bags").exists() and not (photoreal / ".replay.frames").exists()

    exports = {name: grade("export", "coco", str(folder), "--out", str(tmp_path / f"coco-{name}"))
               for name, folder in (("run", run), ("photoreal", photoreal))}
    cocos = {name: COCO(str(out / "annotations/instances_all.json")) for name, out in exports.items()}

    def annotations(coco: COCO) -> dict[int, list[dict]]:
        return {image["frame"]: sorted(coco.loadAnns(coco.getAnnIds(imgIds=image["id"])),
                                       key=lambda a: a["instance_id"]) for image in coco.dataset["images"]}

    ours, theirs = annotations(cocos["photoreal"]), annotations(cocos["run"])
    assert sorted(ours) == [0, 2, 4]
    assert any(a["category_id"] == 1 and a["num_keypoints"] for a in ours[0] + ours[2] + ours[4])  # people
    for frame, anns in ours.items():
        assert len(anns) == len(theirs[frame])
        for a, b in zip(anns, theirs[frame], strict=True):
            fields = ("category_id", "bbox", "area", "instance_id", "iscrowd", "keypoints")
            assert {k: a.get(k) for k in fields} == {k: b.get(k) for k in fields}
            assert np.array_equal(mask_utils.decode(a["segmentation"]), mask_utils.decode(b["segmentation"]))
    images = {image["frame"]: image for image in cocos["photoreal"].dataset["images"]}
    for frame in replay:
        assert (exports["photoreal"] / images[frame.index]["file_name"]).read_bytes() == frame.path("rgb").read_bytes()


def test_ray_cast_frames_repeat_the_run_and_a_sample_is_seeded(run, tmp_path):
    # Without --set the chosen frames are rendered as the run rendered them: every file byte for byte.
    out = grade("replay", str(run), "--out", str(tmp_path / "sample"), "--sample", "2")
    numbers = list(range(6))
    seed = read_run_info(run).master_seed
    expected = sorted(generator(seed, SAMPLE_STREAM).choice(numbers, size=2, replace=False).tolist())
    replay, parent = Recording.open(out).camera("camera"), Recording.open(run).camera("camera")
    assert [f.index for f in replay] == expected
    for frame in replay:
        for kind in ("rgb", *LABELS):
            assert frame.path(kind).read_bytes() == parent[frame.index].path(kind).read_bytes()
    again = run_grade("replay", str(run), "--out", str(out), "--sample", "2")
    assert again.returncode == 0 and "up to date" in again.stdout + again.stderr


def test_an_interrupted_replay_resumes_with_the_frames_it_rendered(run, tmp_path):
    # A copy of the run whose frame 3 is recorded somewhere else than its state log says (same file size, so the
    # run still reads as complete): the replay renders frame 1, then stops at frame 3 with exit 2.
    broken = tmp_path / "run"
    shutil.copytree(run, broken)
    frames = broken / "gt/camera/frames.jsonl"
    good = frames.read_text()
    records = good.splitlines(keepends=True)
    records[3] = moved(records[3])
    frames.write_text("".join(records))
    assert frames.stat().st_size == len(good.encode())
    out = tmp_path / "replay"
    failed = run_grade("replay", str(broken), "--out", str(out), "--frames", "1,3")
    assert failed.returncode == 2 and "camera 'camera' elsewhere than its frame 3" in failed.stdout + failed.stderr
    assert "Traceback" not in failed.stderr and read_run_info(out).status == "failed"
    with pytest.raises(InputError, match="not complete"):
        Recording.open(out)
    assert (out / ".replay.frames/gt/camera/rgb/000001.png").is_file()

    frames.write_text(good)
    resumed = run_grade("replay", str(broken), "--out", str(out), "--frames", "1,3")
    assert resumed.returncode == 0, resumed.stderr
    assert "rendered 1 of 2 frames" in resumed.stdout + resumed.stderr
    replay, parent = Recording.open(out).camera("camera"), Recording.open(run).camera("camera")
    assert [f.index for f in replay] == [1, 3]
    for frame in replay:
        assert frame.path("rgb").read_bytes() == parent[frame.index].path("rgb").read_bytes()


@pytest.mark.parametrize(("args", "message"), [
    (["--every", "0"], "--every takes a frame step of 1 or more"),
    (["--frames", "0,99"], "no frame 99 in the run: camera 'camera' has 6 frames (0 to 5)"),
    (["--every", "2", "--set", "simulation.duration=3"], "--set changes only the rendering"),
])
def test_bad_subset_options_exit_2_and_write_nothing(run, tmp_path, args, message):
    result = run_grade("replay", str(run), "--out", str(tmp_path / "bad"), *args)
    assert result.returncode == 2 and message in " ".join((result.stdout + result.stderr).split())
    assert "Traceback" not in result.stderr and not (tmp_path / "bad").exists()

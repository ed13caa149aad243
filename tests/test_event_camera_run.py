"""An event camera as a sensor of a run (`robot.sensors: [..., {type: event, ...}]`): the flying demo UAV at 64x48
for 0.5 s records gt/<name>/events.h5 in DSEC's layout and dvs_msgs/EventArray packets in the bags, the same events
in both; events come only where the rendered scene-linear light changed by a threshold; the same seed gives the
same files; Recording reads them, `grade view` draws them, and `grade replay --with` adds an event camera that
sees what the recorded one saw. Bad event-camera settings exit 2 naming the field."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import ClassVar

import h5py
import numpy as np
import pytest
import yaml
from rosbags.highlevel import AnyReader

from core.config_io import load_experiment
from core.formats.events import microseconds
from core.recording import Recording
from pipeline.generate import generate
from simulation.recording.sensor_streams import event as event_recorder
from simulation.sensors.event_camera import EventSimulator, log_intensity
from tests.conftest import CONFIGS, assert_refused, run_grade

pytestmark = pytest.mark.slow

MOUNT = {"link": "camera_link", "translation": [0.1, 0.0, 0.0]}
# Ideal: no mismatch and no noise, so every event is a threshold crossing of the rendered light.
DVS = {"type": "event", "name": "dvs", "mount": MOUNT, "width": 64, "height": 48, "threshold_sigma": 0.0}
NOISY = {**DVS, "name": "noisy", "threshold_sigma": 0.03, "noise_rate_hz": 2.0, "refractory_s": 1e-3}
SENSORS = [{"type": "camera", "name": "camera", "mount": MOUNT, "width": 64, "height": 48},
           {"type": "imu", "name": "imu_body", "mount": {"link": "base_link"}}, DVS, NOISY]
# 0.5 s after the bootstrap: events by the hundred thousand, a packet every 30 Hz period once things move.
DURATION_S, BOOTSTRAP_S = 0.5, 0.25
SEEN_S = BOOTSTRAP_S + DURATION_S  # the event cameras see the bootstrap too
RUN = ["seed=1", f"simulation.duration={DURATION_S}", f"simulation.bootstrap={BOOTSTRAP_S}", "humans.count={min: 2, max: 2}",
       "flying_objects.count={min: 2, max: 2}", "exploration.planner=waypoints", "exploration.waypoints=[[9, 9, 1.5]]",
       "recording.bag_formats=[ros1, ros2]", f"robot.sensors={json.dumps(SENSORS)}"]


class _KeptRenders(EventSimulator):
    """An EventSimulator that keeps each render it is given (the test compares the events with them)."""

    renders: ClassVar[dict[int, list[np.ndarray]]] = {}

    def add_sample(self, t: float, image: np.ndarray) -> np.ndarray:
        self.renders.setdefault(id(self), []).append(image.copy())
        return super().add_sample(t, image)


@pytest.fixture(scope="module")
def run(tmp_path_factory, asset_cache) -> tuple[Path, dict[str, list[np.ndarray]]]:
    """The run, and each event camera's renders (scene-linear RGB) as its simulator got them."""
    folder = tmp_path_factory.mktemp("event-run") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(event_recorder, "EventSimulator", _KeptRenders)
        _KeptRenders.renders = {}
        generate(load_experiment(CONFIGS / "demo.yaml", RUN), folder, cache=asset_cache)
        renders = list(_KeptRenders.renders.values())
    return folder, {"dvs": renders[0], "noisy": renders[1]}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_events_h5_has_dsecs_layout(run):
    folder, _ = run
    with h5py.File(folder / "gt" / "dvs" / "events.h5", "r") as file:
        assert {name: file["events"][name].dtype.str for name in ("x", "y", "t", "p")} == {
            "x": "<u2", "y": "<u2", "t": "<i8", "p": "|u1"}
        t, x, y, p = (file["events"][name][()] for name in ("t", "x", "y", "p"))
        ms_to_idx, t_offset = file["ms_to_idx"][()], file["t_offset"][()]
        assert (file.attrs["width"], file.attrs["height"]) == (64, 48)
    assert len(t) > 1000 and t_offset == 0 and np.all(np.diff(t) >= 0)
    assert x.max() < 64 and y.max() < 48 and set(np.unique(p)) == {0, 1}
    # DSEC: ms_to_idx[m] is the first event at or after m ms, up to the end of the time the camera saw.
    assert len(ms_to_idx) == round(SEEN_S * 1000) + 1
    assert np.array_equal(ms_to_idx, np.searchsorted(t, np.arange(len(ms_to_idx)) * 1000, side="left"))


def test_events_come_only_where_the_rendered_light_changed(run):
    """With no mismatch and no noise, a pixel whose log intensity never strayed a threshold from where it started
    gives no event. The renders are the renderer's scene-linear RGB (Frame.linear): floats, not tone-mapped into
    [0, 1]."""
    folder, renders = run
    frames = renders["dvs"]
    assert all(f.dtype == np.float32 and f.shape == (48, 64, 3) and np.all(f >= 0) for f in frames)
    assert max(float(f.max()) for f in frames) > 1
    log = np.stack([log_intensity(f, 64, 48) for f in frames])
    strayed = np.abs(log - log[0]).max(axis=0) >= 0.2
    events = Recording.open(folder).events("dvs").events
    counts = np.bincount(events["y"].astype(int) * 64 + events["x"], minlength=64 * 48)
    assert counts.any() and not counts[~strayed].any()
    # Each event moves the pixel's reference a threshold, which its light must have travelled: no pixel fires more
    # often than its log intensity's travel over the run (between renders, straight lines) allows.
    travel = np.abs(np.diff(log, axis=0)).sum(axis=0)
    assert np.all(counts <= travel / 0.2 + 1e-6)


def test_the_bags_event_arrays_hold_the_h5_files_events(run):
    folder, _ = run
    expected = Recording.open(folder).events("dvs").events
    for bag in (folder / "bags" / "demo.bag", folder / "bags" / "demo"):
        with AnyReader([bag]) as reader:
            connections = [c for c in reader.connections if c.topic == "/dvs/events"]
            assert [c.msgtype for c in connections] == ["dvs_msgs/msg/EventArray"]
            messages = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages(connections=connections)]
        assert {m.header.frame_id for m in messages} == {"dvs_optical_frame"}
        assert {(m.width, m.height) for m in messages} == {(64, 48)}
        got = [(e.x, e.y, e.ts.sec * 10**9 + e.ts.nanosec, e.polarity) for m in messages for e in m.events]
        # A packet each 30 Hz period with events: all but the first few, before anything moved.
        assert len(messages) >= 0.8 * event_recorder.EventRecorder.PACKET_HZ * SEEN_S and len(got) == len(expected)
        x, y, t_ns, p = (np.array(column) for column in zip(*got, strict=True))
        assert np.array_equal(x, expected["x"]) and np.array_equal(y, expected["y"])
        assert np.array_equal(p.astype(np.uint8), expected["p"])
        assert np.array_equal(microseconds(t_ns) * 1000, expected["t"])


def test_the_run_lists_the_cameras_seed_stream_and_renders(run):
    folder, renders = run
    info = json.loads((folder / "run.json").read_text())
    assert {"sensors/event/dvs", "sensors/event/noisy"} <= set(info["derived_seeds"])
    assert info["frame_counts"]["event/dvs"] == len(renders["dvs"])
    recording = Recording.open(folder)
    assert recording.event_cameras == ["dvs", "noisy"] and recording.cameras == ["camera"]
    assert recording.events("noisy").width == 64


def test_the_same_seed_gives_the_same_events(run, tmp_path, asset_cache):
    folder, _ = run
    again = tmp_path / "again"
    generate(load_experiment(CONFIGS / "demo.yaml", RUN), again, cache=asset_cache)
    for name in ("dvs", "noisy"):
        assert sha256(again / "gt" / name / "events.h5") == sha256(folder / "gt" / name / "events.h5"), name
    assert sha256(again / "bags" / "demo.bag") == sha256(folder / "bags" / "demo.bag")


def test_grade_view_draws_the_event_strip(run, tmp_path):
    folder, _ = run
    result = run_grade("view", str(folder), "--out", str(tmp_path / "view"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "view" / "events_dvs.png").stat().st_size > 0


def test_an_export_of_the_run_lists_the_event_camera_on_its_card(run, tmp_path):
    folder, _ = run
    result = run_grade("export", "coco", str(folder), "--out", str(tmp_path / "coco"))
    assert result.returncode == 0, result.stderr
    card = json.loads((tmp_path / "coco" / "export.json").read_text())["card"]
    [dvs] = [s for run_card in card["runs"] for s in run_card["sensors"] if s["name"] == "dvs"]
    assert (dvs["kind"], dvs["rate_hz"]) == ("event", None)
    assert "| dvs (event) | events |" in (tmp_path / "coco" / "DATASET.md").read_text()


def test_replay_with_an_event_camera_sees_the_recorded_events(run, tmp_path):
    """An event camera added by `grade replay --with` under another name, set as the recorded ideal one, gives its
    events (the renders are the recorded run's, and an ideal camera draws no random numbers)."""
    folder, _ = run
    overrides = tmp_path / "with.yaml"
    overrides.write_text(yaml.safe_dump({"sensors": [{**DVS, "name": "dvs2"}]}))
    result = run_grade("replay", str(folder), "--out", str(tmp_path / "replay"), "--with", str(overrides))
    assert result.returncode == 0, result.stderr
    replayed = Recording.open(tmp_path / "replay").events("dvs2").events
    assert np.array_equal(replayed, Recording.open(folder).events("dvs").events)


@pytest.mark.parametrize(("entry", "field"), [
    ({**DVS, "positive_threshold": 0}, "robot.sensors.2.positive_threshold"),
    ({**DVS, "negative_threshold": -0.1}, "robot.sensors.2.negative_threshold"),
    ({**DVS, "name": "camera"}, "robot.sensors.2.name"),
])
def test_bad_event_camera_settings_exit_2_naming_the_field(entry, field):
    sensors = [*SENSORS[:2], entry]
    result = run_grade("config", "validate", str(CONFIGS / "demo.yaml"), "--set", f"robot.sensors={json.dumps(sensors)}")
    assert_refused(result, field)

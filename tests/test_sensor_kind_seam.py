"""A sensor kind is a seam (docs/concepts/architecture.md §6): a kind defined in this file alone, its entry model and
SensorKind put into core.config.sensor_kinds.KINDS and its recorder into simulation.recording.sensor_streams'
RECORDERS, is validated in `robot.sensors`, mounted on its link, scheduled at its rate, seeded, recorded into gt/
and the bags, counted in run.json and read back through Recording.sensor by a real run: no other module names it.

The kind is an altimeter: the height of its frame above z = 0 with Gaussian noise from its own generator. Its
readings are checked against the robot's own path in states.npz moved by the mount (the site the backend added for
it), its noise against the generator its seed stream names, its bag messages with rosbags."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from pydantic import Field
from rosbags.highlevel import AnyReader
from scipy.spatial.transform import Rotation

from core.config.base import NonNegFloat, PositiveFloat, Strict
from core.config.sensor_kind import SensorKind
from core.config.sensor_kinds import KINDS
from core.config.sensors import Mount
from core.config_io import load_experiment
from core.errors import InputError
from core.formats.bags.topics import WORLD_FRAME
from core.recording import Recording
from core.seeding import generator
from pipeline.generate import generate
from simulation.recording.sensor_streams import RECORDERS, SensorRecorder
from tests.conftest import CONFIGS

pytestmark = pytest.mark.slow

GT_FILE = "altitude.npy"
TOPIC = "altitude"
MOUNT = {"link": "base_link", "translation": [0.05, -0.02, -0.07]}
RATE_HZ = 20.0
NOISE_M = 0.01
CAMERA = {"type": "camera", "name": "camera", "mount": {"link": "camera_link"}, "width": 32, "height": 24}
ALTIMETER = {"type": "altimeter", "name": "alt", "mount": MOUNT, "rate_hz": RATE_HZ, "noise_m": NOISE_M}
RUN = ["seed=3", "simulation.duration=0.5", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
       "flying_objects.count={min: 1, max: 1}", "exploration.planner=waypoints", "exploration.waypoints=[[9, 9, 1.5]]",
       "recording.bag_formats=[ros2]", f"robot.sensors={json.dumps([CAMERA, ALTIMETER])}"]


class AltimeterConfig(Strict):
    name: str
    mount: Mount = Field(default_factory=Mount)
    rate_hz: PositiveFloat = 10.0
    noise_m: NonNegFloat = 0.0


class AltimeterEntry(AltimeterConfig):
    type: Literal["altimeter"] = "altimeter"


KIND = SensorKind("altimeter", AltimeterEntry, seeded=True, gt_file=GT_FILE, read=np.load)


class AltimeterRecorder(SensorRecorder):
    """Each altimeter's (time, measured height, true height) rows into gt/<name>/altitude.npy, and its pose on
    /<name>/altitude."""

    kind = "altimeter"

    def __init__(self, recording: Any, sensors: list[AltimeterEntry]) -> None:
        super().__init__(recording, sensors)
        self.rows: dict[str, list[tuple[float, float, float]]] = {s.name: [] for s in sensors}
        self.noise = {s.name: generator(recording.config.seed, self.sensor_kind.seed_stream(s.name, recording.name))
                      for s in sensors}

    def sample(self, step: int, t: float) -> None:
        recording = self.recording
        for sensor in self.sensors:
            if not self.due(sensor, step):
                continue
            pose = recording.robot.sensor_pose(sensor.name)
            height = float(pose[2, 3])
            self.rows[sensor.name].append((t, height + self.noise[sensor.name].normal(0.0, sensor.noise_m), height))
            if recording.bags:
                recording.writes.call(recording.bags.pose, recording.topics.topic(sensor.name, TOPIC), t, WORLD_FRAME,
                                      pose)
            recording.count(self.stream(sensor))

    def save(self) -> None:
        for sensor in self.sensors:
            folder = self.recording.gt / sensor.name
            folder.mkdir(parents=True, exist_ok=True)
            np.save(folder / GT_FILE, np.array(self.rows[sensor.name]))


@pytest.fixture(scope="module")
def run(tmp_path_factory, asset_cache) -> Iterator[Path]:
    """The run, with the kind registered while the module's tests read it (the reader finds its kind in KINDS)."""
    folder = tmp_path_factory.mktemp("seam") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(KINDS, KIND.type, KIND)
        patch.setitem(RECORDERS, AltimeterRecorder.kind, AltimeterRecorder)
        generate(load_experiment(CONFIGS / "demo.yaml", RUN), folder, cache=asset_cache)
        yield folder


def test_a_kind_defined_outside_the_project_is_configured_recorded_counted_and_seeded(run):
    info = json.loads((run / "run.json").read_text())
    # Dumped by its own model: as given, with its defaults.
    assert info["config"]["robot"]["sensors"][1] == {**ALTIMETER, "mount": {**MOUNT, "rpy_deg": [0.0, 0.0, 0.0]}}
    rows = Recording.open(run).sensor("alt")
    assert rows.shape[1] == 3 and len(rows) > 1
    # One reading per 1 / RATE_HZ over the bootstrap and the run, from t = 0, as the schedule samples a rate_hz.
    assert np.allclose(rows[:, 0], np.arange(len(rows)) / RATE_HZ)
    assert info["frame_counts"]["altimeter/alt"] == len(rows) == round(0.75 * RATE_HZ) + 1
    assert "sensors/altimeter/alt" in info["derived_seeds"]
    expected_noise = generator(3, "sensors/altimeter/alt").normal(0.0, NOISE_M, len(rows))
    assert np.allclose(rows[:, 1] - rows[:, 2], expected_noise, rtol=0, atol=1e-12)


def test_its_frame_is_the_mount_on_the_robots_path(run):
    recording = Recording.open(run)
    rows, path = recording.sensor("alt"), recording.robot_path()
    steps = np.searchsorted(path.time, rows[:, 0] - 1e-9)
    assert np.allclose(path.time[steps], rows[:, 0])
    rotation = Rotation.from_quat(path.quat_wxyz[steps][:, [1, 2, 3, 0]])
    heights = path.position[steps, 2] + rotation.apply(MOUNT["translation"])[:, 2]
    assert np.allclose(rows[:, 2], heights, atol=1e-6)
    assert np.ptp(heights) > 1e-3  # the UAV moved: the check compares a changing height


def test_its_topic_is_in_the_bags_and_the_reader_names_it_by_kind(run):
    recording = Recording.open(run)
    assert recording.sensor_names("altimeter") == ["alt"] and recording.event_cameras == []
    rows = recording.sensor("alt", "altimeter")
    (bag,) = recording.bags().ros2
    with AnyReader([bag]) as reader:
        connections = [c for c in reader.connections if c.topic == "/alt/altitude"]
        heights = [reader.deserialize(raw, c.msgtype).pose.position.z for c, _, raw in reader.messages(connections)]
    assert np.allclose(heights, rows[:, 2], atol=1e-6)


def test_the_reader_refuses_a_name_without_that_kinds_file_listing_those_there(run):
    recording = Recording.open(run)
    with pytest.raises(InputError, match="no sensor 'camera' with a ground-truth file of its own in this recording; available: alt"):
        recording.sensor("camera")
    with pytest.raises(InputError, match="no event camera 'alt' in this recording; available: none"):
        recording.events("alt")

"""`grade postprocess RUN` and the generate hook on a real short recording: new files beside untouched
originals, seeded and byte-identical, resumable, readable through Recording."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from core.config_io import load_experiment
from core.formats.bags.reader import bag_summary, image_array, open_bag
from core.formats.postprocess import POSTPROCESS_FILE
from core.recording import Recording
from pipeline.generate import generate
from tests.conftest import CONFIGS, TINY_RUN, copy_run, run_grade

pytestmark = pytest.mark.slow


def tree_hashes(root: Path, names: tuple[str, ...]) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.relative_to(root).parts[0] in names}


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_run) -> Path:
    """The session's tiny run, copied: the tests here post-process it in place."""
    return copy_run(tiny_run, tmp_path_factory.mktemp("post") / "run")


def test_preset_writes_every_output_beside_untouched_originals(run):
    originals = tree_hashes(run, ("gt", "states.npz", "bags", "run.json"))
    result = run_grade("postprocess", str(run), "--preset", "grade-paper")
    assert result.returncode == 0, result.stderr
    after = tree_hashes(run, ("gt", "states.npz", "bags", "run.json"))
    assert {k: v for k, v in after.items() if k in originals} == originals  # nothing recorded changed
    recording = Recording.open(run)
    record = recording.postprocess_record()
    assert record.master_seed == recording.info.master_seed and record.imu_file == "imu_noisy.npz"
    assert set(record.streams) >= {"postprocess/imu/imu_body", "postprocess/imu/imu_camera",
                                   "postprocess/depth/camera", "postprocess/exposure/camera"}
    camera = recording.camera("camera")
    timing = record.cameras["camera"]
    assert timing.exposure == 0.02 and timing.readout is not None and timing.readout >= 0
    log = camera.blur_log()
    assert [line.frame for line in log] == [frame.index for frame in camera]
    for frame, line in zip(camera, log, strict=True):
        assert frame.processed("rgb_blur").shape == frame.rgb().shape
        noisy, true = frame.processed("depth_noisy"), frame.depth()
        assert np.all(noisy[true > 3.5 + 1e-3] == 0)  # the preset's range cut on the true depth (0 = invalid)
        assert np.count_nonzero(noisy) > 0 and not np.array_equal(noisy, true)
        assert len(line.sub_poses) == 30 and line.exposure == 0.02
        np.testing.assert_allclose(line.sub_poses[-1], np.eye(4), atol=1e-6)  # the exposure ends at the frame
    clean, noisy = recording.imu()["imu_body"], recording.imu(noisy=True)["imu_body"]
    np.testing.assert_array_equal(clean.time, noisy.time)
    assert not np.array_equal(clean.linear_acceleration, noisy.linear_acceleration)
    # GRADE's accelerometer: white noise of 4e-3 / sqrt(dt) m/s^2 at 240 Hz, plus a constant-ish bias.
    white = np.diff(noisy.linear_acceleration - clean.linear_acceleration, axis=0).std() / np.sqrt(2)
    assert white == pytest.approx(4e-3 * np.sqrt(240), rel=0.25)


def test_same_seed_same_bytes_and_a_second_run_is_up_to_date(run):
    assert run_grade("postprocess", str(run), "--imu", "--depth", "kinect").returncode == 0
    first = tree_hashes(run, ("gt",))
    again = run_grade("postprocess", str(run), "--imu", "--depth", "kinect")
    assert again.returncode == 0 and "up to date" in again.stderr
    forced = run_grade("postprocess", str(run), "--imu", "--depth", "kinect", "--force")
    assert forced.returncode == 0 and "done" in forced.stderr
    assert tree_hashes(run, ("gt",)) == first
    # Other settings replace the earlier outputs: no blur this time, so no blurred images remain.
    assert not any((run / "gt" / "camera").glob("rgb_blur/*"))


def test_nothing_to_apply_and_unknown_preset_are_clear_errors(run):
    for args, words in ((["postprocess", str(run)], ["nothing to apply"]),
                        (["postprocess", str(run), "--preset", "nope"], ["--preset", "grade-paper"]),
                        (["postprocess", str(run), "--depth", "lidar"], ["--depth", "'realsense', 'kinect', 'gaussian'"])):
        result = run_grade(*args)
        assert result.returncode == 2, result.stderr
        assert "Traceback" not in result.stderr and all(w in result.stderr for w in words), result.stderr


def test_generate_applies_the_config_section_without_recording_again(tmp_path, asset_cache):
    folder = tmp_path / "run"
    overrides = [*TINY_RUN, "postprocess.imu={}"]
    generate(load_experiment(CONFIGS / "demo.yaml", overrides), folder, cache=asset_cache)
    assert (folder / "gt" / POSTPROCESS_FILE).is_file()
    recorded = tree_hashes(folder, ("states.npz",))
    result = generate(load_experiment(CONFIGS / "demo.yaml", [*overrides, "postprocess.depth={}"]), folder,
                      cache=asset_cache)
    assert result.skipped  # post-processing settings do not change the recording
    assert tree_hashes(folder, ("states.npz",)) == recorded
    assert Recording.open(folder).postprocess_record().settings["depth"] is not None


def _imu_values(bag: Path, topic: str) -> np.ndarray:
    with open_bag(bag) as reader:
        connections = [c for c in reader.connections if c.topic == topic]
        rows = []
        for connection, _, raw in reader.messages(connections=connections):
            msg = reader.deserialize(raw, connection.msgtype)
            rows.append([msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z])
    return np.array(rows)


@pytest.mark.parametrize("bag", ["demo.bag", "demo"])
def test_bag_is_cropped_and_gets_imu_and_depth_noise_in_a_new_bag(run, tmp_path, bag):
    source = run / "bags" / bag
    before = tree_hashes(run, ("bags",))
    out = tmp_path / ("noisy.bag" if bag.endswith(".bag") else "noisy")
    result = run_grade("postprocess", str(source), "--imu", "--depth", "realsense", "--crop", "--seed", "3",
                       "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert tree_hashes(run, ("bags",)) == before  # the source bag is untouched
    summary = bag_summary(out)
    assert summary["/starting_experiment"].first_ns <= 1  # cropped to the marker, time from 0 (ROS 1: 1 ns)
    clean, noisy = _imu_values(source, "/imu_body"), _imu_values(out, "/imu_body")
    kept = clean[-len(noisy):]  # the crop keeps the messages from the marker on
    assert len(noisy) == summary["/imu_body"].count and not np.array_equal(kept, noisy)
    white = np.diff(noisy - kept, axis=0).std() / np.sqrt(2)
    assert white == pytest.approx(4e-3 * np.sqrt(240), rel=0.3)
    with open_bag(out) as reader:
        depth = [c for c in reader.connections if c.topic == "/camera/depth/image_raw"]
        for connection, _, raw in reader.messages(connections=depth):
            millimetres = image_array(reader.deserialize(raw, connection.msgtype))
            assert millimetres.dtype == np.uint16 and np.count_nonzero(millimetres) > 0


def test_real_ros2_sample_passes_through_noise(realdata, tmp_path):
    source = realdata / "rosbag2" / "test_bag_mcap"
    out = tmp_path / "noisy"
    result = run_grade("postprocess", str(source), "--imu", "--out", str(out))
    assert result.returncode == 0, result.stderr
    original, noisy = bag_summary(source), bag_summary(out)
    assert {t: s.count for t, s in noisy.items()} == {t: s.count for t, s in original.items()}
    imu_topics = [t for t, s in original.items() if s.msgtype == "sensor_msgs/msg/Imu"]
    assert imu_topics
    for topic in imu_topics:
        assert not np.array_equal(_imu_values(source, topic), _imu_values(out, topic))


def test_blur_on_a_bag_without_the_camera_imu_is_a_clear_error(run, tmp_path):
    source = run / "bags" / "demo"
    result = run_grade("postprocess", str(source), "--blur", "--drop", "/imu_camera", "--out", str(tmp_path / "x"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "/imu_camera" in result.stderr and str(source) in result.stderr, result.stderr
    assert not (tmp_path / "x").exists()


def test_bag_output_name_must_match_its_format(run, tmp_path):
    result = run_grade("postprocess", str(run / "bags" / "demo.bag"), "--imu", "--out", str(tmp_path / "noisy"))
    assert result.returncode == 2 and "--out" in result.stderr and "NAME.bag" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "noisy").exists()

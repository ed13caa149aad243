"""An event camera's artifacts: events.h5 (core.formats.events) read back by h5py directly in DSEC's layout and by
the strict reader, which names the file and dataset of what is wrong; dvs_msgs/EventArray written by BagWriter to a
ROS 1 bag and a ROS 2 MCAP bag and read back by rosbags' AnyReader and by ROS 1's own rosbag API, with the MD5 of
rpg_dvs_ros' generated message class; the typestores' other types unchanged by dvs_msgs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.typesys import get_typestore

from core.errors import InputError
from core.formats.bags import messages as m
from core.formats.bags.writer import BagWriter
from core.formats.events import EVENT_DTYPE, EVENTS_FILE, EventsWriter, read_events, write_events

WIDTH, HEIGHT = 346, 260
# rpg_dvs_ros' dvs_msgs/EventArray, as genpy generates it from the package's EventArray.msg (`_md5sum`).
RPG_EVENT_ARRAY_MD5 = "5e8beee5a6c107e504c2e78903c224b8"
SYSTEM_PYTHON = "/usr/bin/python3"


def some_events(count: int = 5000, seed: int = 0, start_ns: int = 0, span_ns: int = 25_000_000) -> np.ndarray:
    rng = np.random.default_rng(seed)
    events = np.zeros(count, EVENT_DTYPE)
    events["t"] = np.sort(start_ns + rng.integers(0, span_ns, count))
    events["x"] = rng.integers(0, WIDTH, count)
    events["y"] = rng.integers(0, HEIGHT, count)
    events["p"] = rng.integers(0, 2, count)
    return events


def dsec_ms_to_idx(t_us: np.ndarray, milliseconds: int) -> list[int]:
    """DSEC's definition, event by event: the first index whose time is at or after each millisecond."""
    index, out = 0, []
    for ms in range(milliseconds):
        while index < len(t_us) and t_us[index] < ms * 1000:
            index += 1
        out.append(index)
    return out


def test_h5py_reads_the_dsec_layout_and_the_reader_gives_the_events_back(tmp_path):
    events = some_events()
    events["t"][:3] = [0, 499, 500]  # 0 us, 0 us (rounded down), 1 us (halves up)
    path = write_events(tmp_path / EVENTS_FILE, events, WIDTH, HEIGHT, end_s=0.030)
    with h5py.File(path, "r") as file:
        assert set(file) == {"events", "ms_to_idx", "t_offset"}
        assert set(file["events"]) == {"x", "y", "t", "p"}
        dtypes = {name: file["events"][name].dtype for name in ("x", "y", "t", "p")}
        assert dtypes == {"x": np.uint16, "y": np.uint16, "t": np.int64, "p": np.uint8}
        t_us = file["events/t"][()]
        assert t_us[:3].tolist() == [0, 0, 1]
        np.testing.assert_array_equal(t_us, np.floor(events["t"] / 1000 + 0.5).astype(np.int64))
        for name in ("x", "y", "p"):
            np.testing.assert_array_equal(file["events"][name][()], events[name])
        assert file["t_offset"][()] == 0
        assert file["ms_to_idx"][()].tolist() == dsec_ms_to_idx(t_us, 31)
        assert (file.attrs["width"], file.attrs["height"]) == (WIDTH, HEIGHT)
    read = read_events(path)
    assert (read.width, read.height) == (WIDTH, HEIGHT)
    np.testing.assert_array_equal(read.events["t"], t_us * 1000)
    for name in ("x", "y", "p"):
        np.testing.assert_array_equal(read.events[name], events[name])


def test_batches_appended_give_the_file_written_at_once(tmp_path):
    """Three batches, the second empty and the third starting in the millisecond the first ended in."""
    first, last = some_events(3000, seed=1, span_ns=10_400_000), some_events(2000, seed=2, start_ns=10_400_000)
    with EventsWriter(tmp_path / "batches.h5", WIDTH, HEIGHT) as writer:
        for batch in (first, np.zeros(0, EVENT_DTYPE), last):
            writer.append(batch)
        writer.close(end_s=0.040)
    whole = write_events(tmp_path / "whole.h5", np.concatenate([first, last]), WIDTH, HEIGHT, end_s=0.040)
    batches, once = read_events(tmp_path / "batches.h5"), read_events(whole)
    assert batches.events.tobytes() == once.events.tobytes()
    np.testing.assert_array_equal(batches.ms_to_idx, once.ms_to_idx)
    assert len(once.ms_to_idx) == 41


def test_a_batch_out_of_time_order_or_outside_the_image_is_refused(tmp_path):
    with EventsWriter(tmp_path / EVENTS_FILE, WIDTH, HEIGHT) as writer:
        writer.append(some_events(start_ns=10_000_000))
        with pytest.raises(ValueError, match="sorted by time"):
            writer.append(some_events(span_ns=1_000))
        outside = some_events(start_ns=50_000_000)
        outside["x"][0] = WIDTH
        with pytest.raises(ValueError, match="outside 346x260"):
            writer.append(outside)


def test_writes_are_atomic(tmp_path):
    path = write_events(tmp_path / EVENTS_FILE, some_events(), WIDTH, HEIGHT, end_s=0.03)
    before = path.read_bytes()
    with pytest.raises(RuntimeError), EventsWriter(path, WIDTH, HEIGHT) as writer:
        writer.append(some_events(seed=5))
        raise RuntimeError("the run failed")
    with EventsWriter(path, WIDTH, HEIGHT) as writer:
        writer.append(some_events(seed=6))  # never closed: dropped as well
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [EVENTS_FILE]


def _rewrite(path: Path, name: str, data: object) -> None:
    with h5py.File(path, "a") as file:
        del file[name]
        file[name] = data


@pytest.mark.parametrize(("name", "data", "message"), [
    ("events/x", None, "missing dataset"),
    ("events/p", np.zeros(10, np.uint8), "10 values, but events/t has"),
    ("events/t", np.zeros(5000, np.float64), "expected a 1D int64 array"),
    ("events/x", np.full(5000, WIDTH, np.uint16), "values must be < 346"),
    ("ms_to_idx", np.zeros(31, np.uint64), "does not index the events by millisecond"),
    ("ms_to_idx", np.zeros(3, np.uint64), "does not index the events by millisecond"),
    ("t_offset", np.zeros(2, np.int64), "expected an integer scalar"),
])
def test_the_reader_names_the_file_and_dataset_of_a_malformed_file(tmp_path, name, data, message):
    path = write_events(tmp_path / EVENTS_FILE, some_events(), WIDTH, HEIGHT, end_s=0.03)
    if data is None:
        with h5py.File(path, "a") as file:
            del file[name]
    else:
        _rewrite(path, name, data)
    with pytest.raises(InputError, match=message) as error:
        read_events(path)
    assert error.value.file == str(path) and error.value.field == name


def test_the_reader_refuses_what_is_not_hdf5_naming_the_file(tmp_path):
    path = tmp_path / EVENTS_FILE
    path.write_bytes(b"not hdf5")
    with pytest.raises(InputError, match="not an HDF5 file") as error:
        read_events(path)
    assert error.value.file == str(path)
    with pytest.raises(InputError, match="no such file"):
        read_events(tmp_path / "missing.h5")


# ---------------------------------------------------------------- dvs_msgs/EventArray in the bags

TOPIC = "/dvs/events"
PACKETS = [(0.01, some_events(300, seed=1, start_ns=0, span_ns=10_000_000)),
           (0.02, some_events(0, seed=2)),
           (0.03, some_events(200, seed=3, start_ns=20_000_000, span_ns=10_000_000))]


@pytest.fixture(scope="module")
def event_bags(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("event-bags")
    with BagWriter(folder, "events", ["ros1", "ros2"]) as writer:
        for t, events in PACKETS:
            writer.events(TOPIC, t, "dvs_optical_frame", events, WIDTH, HEIGHT)
    return {"ros1": folder / "events.bag", "ros2": folder / "events"}


@pytest.mark.parametrize("kind", ["ros1", "ros2"])
def test_event_arrays_round_trip_through_the_bags(event_bags, kind):
    with AnyReader([event_bags[kind]]) as reader:
        (connection,) = reader.connections
        assert (connection.topic, connection.msgtype) == (TOPIC, m.EVENT_ARRAY)
        if kind == "ros1":
            assert connection.digest == RPG_EVENT_ARRAY_MD5
        messages = [(stamp, reader.deserialize(raw, connection.msgtype)) for _, stamp, raw in reader.messages()]
    assert len(messages) == len(PACKETS)
    for (stamp, message), (t, events) in zip(messages, PACKETS):
        assert stamp == round(t * 1e9)
        assert (message.header.stamp.sec, message.header.stamp.nanosec) == divmod(round(t * 1e9), 10**9)
        assert message.header.frame_id == "dvs_optical_frame"
        assert (message.width, message.height) == (WIDTH, HEIGHT)
        got = [(e.x, e.y, e.ts.sec * 10**9 + e.ts.nanosec, e.polarity) for e in message.events]
        assert got == [(int(x), int(y), int(t), bool(p)) for x, y, t, p in events.tolist()]


def test_ros1s_own_rosbag_reads_the_event_arrays(event_bags):
    """ROS 1's rosbag (the system's Python) builds the message class from the definition the bag carries."""
    if subprocess.run([SYSTEM_PYTHON, "-c", "import rosbag"], capture_output=True, check=False).returncode != 0:
        pytest.skip("ROS 1's rosbag Python API is not installed for the system's Python")
    script = ("import json, sys, rosbag\n"
              "with rosbag.Bag(sys.argv[1]) as bag:\n"
              "    print(json.dumps([[topic, msg._type, msg._md5sum, t.to_nsec(), msg.header.stamp.to_nsec(),"
              " msg.width, msg.height, [[e.x, e.y, e.ts.to_nsec(), e.polarity] for e in msg.events]]"
              " for topic, msg, t in bag.read_messages()]))\n")
    result = subprocess.run([SYSTEM_PYTHON, "-c", script, str(event_bags["ros1"])], capture_output=True, text=True,
                            check=True, timeout=60)
    read = json.loads(result.stdout)
    assert len(read) == len(PACKETS)
    for (topic, msgtype, md5, stamp, header, width, height, events), (t, expected) in zip(read, PACKETS):
        assert (topic, msgtype, md5) == (TOPIC, "dvs_msgs/EventArray", RPG_EVENT_ARRAY_MD5)
        assert stamp == header == round(t * 1e9) and (width, height) == (WIDTH, HEIGHT)
        assert events == [[int(x), int(y), int(t), bool(p)] for x, y, t, p in expected.tolist()]


@pytest.mark.parametrize(("ours", "store"), [(m.ros1_typestore, m.ROS1_STORE), (m.ros2_typestore, m.ROS2_STORE)])
def test_dvs_msgs_change_no_other_type(ours, store):
    """Every type of rosbags' own store keeps its definition and hash (so every existing bag its bytes)."""
    stock, mine = get_typestore(store), ours()
    for name in stock.fielddefs:
        assert mine.generate_msgdef(name) == stock.generate_msgdef(name), name
        if store == m.ROS2_STORE:
            assert mine.hash_rihs01(name) == stock.hash_rihs01(name), name
    assert set(mine.fielddefs) - set(stock.fielddefs) <= {m.EVENT, m.EVENT_ARRAY, m.TF}


def test_events_outside_the_image_are_refused_naming_the_topic(tmp_path):
    events = some_events(10)
    events["y"][3] = HEIGHT
    with BagWriter(tmp_path, "bad", ["ros2"]) as writer, pytest.raises(ValueError, match=f"{TOPIC}: events must lie"):
        writer.events(TOPIC, 0.01, "dvs", events, WIDTH, HEIGHT)

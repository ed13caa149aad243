"""recording.bag_compression: tiny real recordings (seeded, so the uncompressed run is the reference) written
uncompressed and with each compression a bag kind takes read back identically through bag_reader, say in the
file that they are compressed, and are smaller; combinations a bag kind cannot do are refused at validation.

Measured on the demo camera (configs/demo.yaml: 640x480 rgb8 + 32FC1 depth at 30 Hz, two IMUs; 1 s bootstrap
+ 2 s; the recorded messages rewritten through BagWriter with each setting), size / uncompressed size:
ROS 1 197 MB uncompressed, lz4 0.52, bz2 0.19 (bz2 took ~36 s for the 3 s bag, lz4 ~1 s);
ROS 2 MCAP 197 MB, lz4 0.52, zstd 0.32 (~4 s); ROS 2 sqlite3 197 MB, zstd 0.32 (rosbag2 file mode: 0.32 too).
"""

from __future__ import annotations

import dataclasses
import io
import json
import sqlite3
import struct
from pathlib import Path

import numpy as np
import pytest
import yaml

from core.config_io import load_experiment
from core.errors import ConfigError
from core.formats.bags.reader import bag_summary, read_messages
from core.formats.bags.writer import BAG_COMPRESSIONS, BagWriter
from pipeline.generate import generate
from tests.conftest import CONFIGS, TINY_RUN, run_grade

TINY = [s for s in TINY_RUN if not s.startswith("recording.bag_formats=")]

# run name -> (bag_formats, ros2_storage, bag_compression); "plain-mcap" is the session's tiny run (TINY_RUN: both
# formats, ROS 2 as uncompressed MCAP, the defaults)
RUNS = {
    "plain-sqlite3": ("[ros2]", "sqlite3", "none"),
    "lz4": ("[ros1, ros2]", "mcap", "lz4"),
    "bz2": ("[ros1]", "mcap", "bz2"),
    "zstd-mcap": ("[ros2]", "mcap", "zstd"),
    "zstd-sqlite3": ("[ros2]", "sqlite3", "zstd"),
}
# (compressed run, bag format, uncompressed reference run, compression)
CASES = [("lz4", "ros1", "plain-mcap", "lz4"), ("bz2", "ros1", "plain-mcap", "bz2"),
         ("lz4", "ros2", "plain-mcap", "lz4"), ("zstd-mcap", "ros2", "plain-mcap", "zstd"),
         ("zstd-sqlite3", "ros2", "plain-sqlite3", "zstd")]
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_run, asset_cache) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("compression")
    folders = {"plain-mcap": tiny_run}
    for name, (formats, storage, compression) in RUNS.items():
        overrides = [f"recording.bag_formats={formats}", f"recording.ros2_storage={storage}",
                     f"recording.bag_compression={compression}"]
        generate(load_experiment(CONFIGS / "demo.yaml", TINY + overrides), root / name, cache=asset_cache)
        folders[name] = root / name
    return folders


def bag(run: Path, bag_format: str) -> Path:
    return run / "bags" / ("demo.bag" if bag_format == "ros1" else "demo")


def size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def plain(value: object) -> object:
    """A deserialised message as nested tuples of comparable values (arrays as dtype, shape and bytes)."""
    if dataclasses.is_dataclass(value):
        return type(value).__name__, tuple(plain(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, np.ndarray):
        return value.dtype.str, value.shape, value.tobytes()
    if isinstance(value, (list, tuple)):
        return tuple(plain(v) for v in value)
    if isinstance(value, float):
        return value.hex()
    return value


# ---------------------------------------------------------------- what the files say


def ros1_chunk_compressions(path: Path) -> list[str]:
    """The `compression` field of every chunk record (op 0x05) of a ROS 1 v2.0 bag."""
    data = path.read_bytes()
    assert data.startswith(b"#ROSBAG V2.0\n")
    pos, found = 13, []
    while pos < len(data):
        (header_len,) = struct.unpack_from("<I", data, pos)
        header, pos = data[pos + 4:pos + 4 + header_len], pos + 4 + header_len
        fields, at = {}, 0
        while at < len(header):
            (field_len,) = struct.unpack_from("<I", header, at)
            key, _, value = header[at + 4:at + 4 + field_len].partition(b"=")
            fields[key], at = value, at + 4 + field_len
        (data_len,) = struct.unpack_from("<I", data, pos)
        pos += 4 + data_len
        if fields[b"op"] == b"\x05":
            found.append(fields[b"compression"].decode())
    return found


def mcap_chunk_compressions(path: Path) -> list[str]:
    """The `compression` field of every Chunk record (opcode 0x06) of an MCAP file."""
    data = path.read_bytes()
    assert data.startswith(b"\x89MCAP0\r\n")
    pos, found = 8, []
    while pos < len(data) - 8:
        opcode, length = data[pos], struct.unpack_from("<Q", data, pos + 1)[0]
        if opcode == 0x06:
            record = io.BytesIO(data[pos + 9:pos + 9 + length])
            record.seek(8 + 8 + 8 + 4)  # message start / end time, uncompressed size, crc
            (name_len,) = struct.unpack("<I", record.read(4))
            found.append(record.read(name_len).decode())
        if opcode == 0x02:  # Footer
            break
        pos += 9 + length
    return found


def compressions_in_file(path: Path, bag_format: str) -> set[str]:
    if bag_format == "ros1":
        return set(ros1_chunk_compressions(path))
    metadata = yaml.safe_load((path / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    if metadata["storage_identifier"] == "mcap":
        assert (metadata["compression_mode"], metadata["compression_format"]) == ("", "")
        return {name or "none" for name in mcap_chunk_compressions(path / "demo.mcap")}
    # sqlite3: rosbag2's per-message compression, every stored message a zstd frame.
    with sqlite3.connect(path / "demo.db3") as db:
        blobs = [row[0] for row in db.execute("SELECT data FROM messages")]
    if metadata["compression_mode"] == "message":
        assert blobs and all(bytes(b[:4]) == ZSTD_MAGIC for b in blobs)
        return {metadata["compression_format"]}
    assert metadata["compression_mode"] == "" and not any(bytes(b[:4]) == ZSTD_MAGIC for b in blobs)
    return {"none"}


# ---------------------------------------------------------------- recordings


@pytest.mark.slow
@pytest.mark.parametrize("run_name, bag_format, reference, compression", CASES)
def test_compressed_bags_read_back_as_the_uncompressed_ones(runs, run_name, bag_format, reference, compression):
    compressed, original = bag(runs[run_name], bag_format), bag(runs[reference], bag_format)
    summary = bag_summary(compressed)
    assert summary == bag_summary(original)  # topics, types, counts, first and last timestamps
    assert summary["/camera/rgb/image_raw"].count > 0 and summary["/camera/depth/image_raw"].count > 0
    sent = list(read_messages(original))
    got = list(read_messages(compressed))
    assert [(topic, t) for topic, t, _ in got] == [(topic, t) for topic, t, _ in sent]
    for (topic, t, msg), (_, _, expected) in zip(got, sent, strict=True):
        assert plain(msg) == plain(expected), (topic, t)


@pytest.mark.slow
@pytest.mark.parametrize("run_name, bag_format, reference, compression", CASES)
def test_the_file_says_it_is_compressed_and_is_smaller(runs, run_name, bag_format, reference, compression):
    compressed, original = bag(runs[run_name], bag_format), bag(runs[reference], bag_format)
    assert compressions_in_file(compressed, bag_format) == {compression}
    assert compressions_in_file(original, bag_format) == {"none"}
    # The rendered images of this tiny run are small, so expect a modest gain: at least 20%.
    assert size(compressed) < 0.8 * size(original), (size(compressed), size(original))


@pytest.mark.slow
def test_run_json_records_the_setting(runs):
    info = json.loads((runs["bz2"] / "run.json").read_text())
    assert info["config"]["recording"]["bag_compression"] == "bz2"


# ---------------------------------------------------------------- what is refused


@pytest.mark.parametrize("formats, storage, compression", [
    ("[ros1]", "mcap", "zstd"), ("[ros2]", "mcap", "bz2"), ("[ros2]", "sqlite3", "lz4"),
    ("[ros2]", "sqlite3", "bz2"), ("[ros1, ros2]", "mcap", "zstd"), ("[ros1, ros2]", "sqlite3", "lz4"),
])
def test_a_compression_a_bag_kind_cannot_do_is_a_config_error(formats, storage, compression):
    overrides = [f"recording.bag_formats={formats}", f"recording.ros2_storage={storage}",
                 f"recording.bag_compression={compression}"]
    with pytest.raises(ConfigError, match=r"recording\.bag_compression"):
        load_experiment(CONFIGS / "demo.yaml", overrides)


def test_grade_config_validate_refuses_it_with_exit_2():
    result = run_grade("config", "validate", str(CONFIGS / "demo.yaml"), "--set", "recording.bag_compression=bz2")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "recording.bag_compression" in result.stderr and "ROS 2 MCAP supports lz4 or zstd" in result.stderr


@pytest.mark.parametrize("formats", [["ros1"], ["ros2"], ["ros1", "ros2"]])
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
@pytest.mark.parametrize("compression", ["none", "lz4", "zstd", "bz2"])
def test_the_config_accepts_what_the_bag_writer_writes(tmp_path, formats, storage, compression):
    overrides = [f"recording.bag_formats=[{', '.join(formats)}]", f"recording.ros2_storage={storage}",
                 f"recording.bag_compression={compression}"]
    try:
        load_experiment(CONFIGS / "demo.yaml", overrides)
        accepted = True
    except ConfigError:
        accepted = False
    kinds = ["ros1" if f == "ros1" else storage for f in formats]
    assert accepted == all(compression in BAG_COMPRESSIONS[kind] for kind in kinds)
    if accepted:
        with BagWriter(tmp_path, "run", formats, storage, compression) as bags:
            bags.marker("/m", 0.0, "x")
    else:
        with pytest.raises(ValueError, match="compression"):
            BagWriter(tmp_path, "run", formats, storage, compression)
        assert list(tmp_path.iterdir()) == []  # nothing left behind

from __future__ import annotations

import json
import os
import stat

import pytest

from core.errors import InputError
from core.formats.csv_table import read_csv_table
from core.formats.dataset_card import read_dataset_card
from core.formats.euroc import read_euroc
from core.formats.frames import read_frames
from core.formats.manifest import StageStatus, invalidate, stage_status, write_manifest
from core.formats.postprocess import read_blur_log
from core.formats.run_info import RunInfo, read_run_info, write_run_info
from core.formats.tum import read_tum
from core.formats.tum_rgbd import read_tum_rgbd
from core.robot_description import load_description
from core.rundir import (
    DIRECTORY_MODE,
    FILE_MODE,
    atomic_directory,
    atomic_write_json,
    atomic_write_text,
    content_hash,
    read_json,
    read_utf8,
)


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path):
    target = tmp_path / "sub" / "a.json"
    atomic_write_json(target, {"x": 1})
    atomic_write_json(target, {"x": 2})
    assert json.loads(target.read_text()) == {"x": 2}
    assert [p.name for p in target.parent.iterdir()] == ["a.json"]


def test_atomic_write_failure_keeps_old_content(tmp_path):
    target = tmp_path / "a.txt"
    atomic_write_text(target, "old")

    class Boom:
        def __str__(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic_write_json(target, {"bad": Boom()})
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_atomic_directory_commits_only_on_success(tmp_path):
    out = tmp_path / "pkg"
    with pytest.raises(ValueError), atomic_directory(out) as tmp:
        (tmp / "f.txt").write_text("half")
        raise ValueError("interrupted")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []
    with atomic_directory(out) as tmp:
        (tmp / "f.txt").write_text("whole")
    assert (out / "f.txt").read_text() == "whole"
    with atomic_directory(out) as tmp:
        (tmp / "g.txt").write_text("new")
    assert sorted(p.name for p in out.iterdir()) == ["g.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["pkg"]


def test_stage_status_lifecycle(tmp_path):
    out = tmp_path / "stage"
    assert stage_status(out) is StageStatus.ABSENT
    out.mkdir()
    (out / "data.bin").write_bytes(b"12345")
    assert stage_status(out) is StageStatus.INCOMPLETE  # no manifest: interrupted
    write_manifest(out, "test", input_hash="abc")
    assert stage_status(out, "abc") is StageStatus.COMPLETE
    assert stage_status(out, "other") is StageStatus.STALE
    (out / "data.bin").write_bytes(b"123")  # truncated after completion
    assert stage_status(out, "abc") is StageStatus.INCOMPLETE
    (out / "data.bin").write_bytes(b"12346")  # same size, other content
    assert stage_status(out, "abc") is StageStatus.COMPLETE
    assert stage_status(out, "abc", verify_hashes=True) is StageStatus.INCOMPLETE
    write_manifest(out, "test", input_hash="abc")
    invalidate(out)
    assert stage_status(out, "abc") is StageStatus.INCOMPLETE
    (out / "MANIFEST.json").write_text("{not json")
    assert stage_status(out) is StageStatus.INCOMPLETE


def test_content_hash_depends_on_file_content(tmp_path):
    f = tmp_path / "a.bin"
    f.write_bytes(b"one")
    h1 = content_hash(f, {"opt": 1})
    assert h1 == content_hash(f, {"opt": 1})
    assert h1 != content_hash(f, {"opt": 2})
    f.write_bytes(b"two")
    assert h1 != content_hash(f, {"opt": 1})


def test_run_info_round_trip(tmp_path):
    info = RunInfo(name="demo", backend="embedded", master_seed=3, config={"a": 1}, derived_seeds={"x": 5})
    write_run_info(tmp_path, info)
    data = json.loads((tmp_path / "run.json").read_text())
    assert data["schema"] == "grade.run/1"
    assert data["status"] == "running"
    assert "numpy" in data["versions"]
    back = read_run_info(tmp_path)
    assert back.derived_seeds == {"x": 5}
    (tmp_path / "run.json").write_text(json.dumps({**data, "status": "weird"}))
    with pytest.raises(InputError, match="run.json"):
        read_run_info(tmp_path)
    os.remove(tmp_path / "run.json")
    with pytest.raises(InputError, match="not found"):
        read_run_info(tmp_path)


def test_atomic_outputs_get_the_permissions_of_a_plain_write(tmp_path):
    # Temporary files and folders are private (0600 / 0700); published outputs must not be.
    plain_file, plain_dir = tmp_path / "plain.txt", tmp_path / "plain"
    plain_file.write_text("x")
    plain_dir.mkdir()
    atomic_write_text(tmp_path / "atomic.txt", "x")
    with atomic_directory(tmp_path / "folder") as folder:
        (folder / "inside.txt").write_text("x")
    assert stat.S_IMODE((tmp_path / "atomic.txt").stat().st_mode) == stat.S_IMODE(plain_file.stat().st_mode) == FILE_MODE
    assert stat.S_IMODE((tmp_path / "folder").stat().st_mode) == stat.S_IMODE(plain_dir.stat().st_mode) == DIRECTORY_MODE


# ---------------------------------------------------------------- strict text reading (issue 45)

LATIN1 = "# caf\xe9\n".encode("latin-1")  # a Latin-1 comment: byte 0xe9 on line 1, column 6


def test_read_utf8_names_the_line_and_column_of_the_first_bad_byte(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"fine\r\nalso fine\nbad \xff here\n")
    with pytest.raises(InputError, match="byte 0xff at column 5") as info:
        read_utf8(path)
    assert info.value.file == str(path) and info.value.field == "line 3"
    path.write_bytes(b"a\r\nb\rc\n")
    assert read_utf8(path) == "a\nb\nc\n"  # universal newlines, as text-mode open() reads them
    with pytest.raises(InputError, match="notes not found"):
        read_utf8(tmp_path / "missing.txt", "notes")


def test_json_refuses_nan_and_infinity_both_ways(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"a": [1, NaN]}')
    with pytest.raises(InputError, match="NaN is not a JSON number"):
        read_json(path)
    path.write_text('{"a": -Infinity}')
    with pytest.raises(InputError, match="-Infinity"):
        read_json(path)
    path.write_text('{"a": 1e400}')
    with pytest.raises(InputError, match="1e400 is beyond the range of a float"):
        read_json(path)
    path.write_text("[1e308, -2.5]")  # large but finite
    assert read_json(path) == [1e308, -2.5]
    with pytest.raises(ValueError, match="not JSON compliant"):
        atomic_write_json(tmp_path / "y.json", {"a": float("inf")})
    assert not (tmp_path / "y.json").exists()


def _tum_rgbd(folder):
    (folder / "camera.yaml").write_text("fx: 1\nfy: 1\ncx: 1\ncy: 1\nwidth: 2\nheight: 2\nrate_hz: 30\n"
                                        "depth_factor: 5000\n")
    (folder / "associations.txt").write_bytes(b"0.0 rgb/0.png 0.0 depth/0.png\n" + LATIN1)
    return folder / "associations.txt", lambda: read_tum_rgbd(folder)


def _euroc(folder):
    camera = folder / "mav0" / "cam0"
    camera.mkdir(parents=True)
    (camera / "sensor.yaml").write_text("intrinsics: [1, 1, 1, 1]\nresolution: [2, 2]\nrate_hz: 20\n")
    (camera / "data.csv").write_bytes(b"#timestamp [ns],filename\n0,0.png\n" + LATIN1)
    return camera / "data.csv", lambda: read_euroc(folder)


def _card(folder):
    (folder / "DATASET.md").write_bytes(b"---\nschema: grade.dataset_card/1\n---\n\n" + LATIN1)
    return folder / "DATASET.md", lambda: read_dataset_card(folder)


def _file(name, reader, head=b""):
    def make(folder):
        (folder / name).write_bytes(head + LATIN1)
        return folder / name, lambda: reader(folder / name)
    return make


TEXT_READERS = {
    "frames.jsonl": _file("frames.jsonl", read_frames),
    "poses.tum": _file("poses.tum", read_tum, b"0 0 0 0 0 0 0 1\n"),
    "blur.jsonl": _file("blur.jsonl", read_blur_log),
    "csv table": _file("wheels.csv", lambda p: read_csv_table(p, ["time"]), b"time\n0\n"),
    "json": _file("run.json", read_json),
    "tum rgb-d associations": _tum_rgbd,
    "euroc data.csv": _euroc,
    "dataset card": _card,
    "robot description": _file("robot.urdf", load_description, b"<robot name='r'>\n"),
}


@pytest.mark.parametrize("name", sorted(TEXT_READERS))
def test_every_text_reader_refuses_bytes_that_are_not_utf8(name, tmp_path):
    """One \\xe9 (Latin-1) in any text input: InputError naming the file and the line, not UnicodeDecodeError."""
    path, read = TEXT_READERS[name](tmp_path)
    lines = path.read_bytes().count(b"\n")
    with pytest.raises(InputError, match="not UTF-8 text: byte 0xe9 at column 6") as info:
        read()
    assert info.value.file == str(path) and info.value.field == f"line {lines}"


@pytest.mark.parametrize(("line", "message"), [
    ("1e308 0 0 0 0 0 0 1", "TUM times are seconds"),
    ("1.3e18 0 0 0 0 0 0 1", "TUM times are seconds"),  # nanoseconds
    ("0 1e308 0 0 0 0 0 1", "beyond"),
    ("0 0 -inf 0 0 0 0 1", "finite"),
    ("0 0 0 nan 0 0 0 1", "finite"),
    ("0 0 0 0 1e308 1e308 1e308 1e308", "norm inf"),
    ("0 0 0 0 1e-300 0 0 0", "norm 1e-300"),
    ("0 0 0 0 0 0 0 0", "norm 0"),
])
def test_tum_numbers_out_of_range_are_refused_naming_the_line(tmp_path, line, message):
    path = tmp_path / "t.tum"
    path.write_text(f"# header\n0 0 0 0 0 0 0 1\n{line}\n")
    with pytest.raises(InputError, match=message) as info:
        read_tum(path)
    assert info.value.field == "line 3"

from __future__ import annotations

import json
import os
import stat

import pytest

from core.errors import InputError
from core.formats.manifest import StageStatus, invalidate, stage_status, write_manifest
from core.formats.run_info import RunInfo, read_run_info, write_run_info
from core.rundir import (
    DIRECTORY_MODE,
    FILE_MODE,
    atomic_directory,
    atomic_write_json,
    atomic_write_text,
    content_hash,
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

"""Corrupt input that looks valid (issue 45, class 8), run as a user would (real `grade` processes): a damaged or
resized frame in a run, a frame listed twice in frames.jsonl, a run given twice to an export, a category no
recording defines, a byte flipped in a ROS 2 MCAP bag. Each is refused with exit 2 and one paragraph naming the file
and the field, leaves no output folder (nor a partial one) and leaves its input as it was.

The runs are copies of the session's tiny run, one per kind of damage, shared by the cases that read them
(module-scoped); cases that only read an intact run read tiny_run itself."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from core.errors import InputError
from core.formats.frames import read_frames
from core.formats.manifest import read_manifest, write_manifest
from core.formats.png import write_png
from tests.conftest import assert_refused, copy_run, run_grade

CAMERA = Path("gt") / "camera"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes (the tiny run is a few MB)."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def remanifest(run: Path) -> None:
    """MANIFEST.json listed again for the run's files as they are now (a file of another size would otherwise make
    the run read as incomplete, refused before the damage is seen)."""
    manifest = read_manifest(run)
    write_manifest(run, manifest.stage, manifest.input_hash,
                   include=sorted({name.split("/")[0] for name in manifest.files}))


def damaged_copy(tiny_run: Path, folder: Path, damage) -> tuple[Path, dict[str, bytes]]:
    run = copy_run(tiny_run, folder / "run")
    damage(run)
    remanifest(run)
    return run, snapshot(run)


def refused_leaving_nothing(run: Path | None, before: dict[str, bytes] | None, cwd: Path, out: Path,
                            *args: str, mentions: tuple[str, ...]) -> str:
    """Run `grade ARGS` in `cwd` and check the refusal: exit 2 with one paragraph naming `mentions`, no `out` nor
    any hidden partial folder beside it, and `run` unchanged. Returns the error text."""
    beside = sorted(p.name for p in out.parent.iterdir())
    result = run_grade(*args, cwd=cwd)
    assert_refused(result, *mentions)
    assert not out.exists() and sorted(p.name for p in out.parent.iterdir()) == beside
    if run is not None:
        assert snapshot(run) == before
    return result.stderr


# ---------------------------------------------------------------- damaged and resized frames


@pytest.fixture(scope="module")
def garbage_frame(tiny_run, tmp_path_factory):
    """A copy of the tiny run whose rgb frame 2 is random bytes of the same size (so the manifest still matches)."""
    def damage(run: Path) -> None:
        frame = run / CAMERA / "rgb" / "000002.png"
        frame.write_bytes(np.random.default_rng(45).bytes(frame.stat().st_size))
    return damaged_copy(tiny_run, tmp_path_factory.mktemp("garbage"), damage)


@pytest.fixture(scope="module")
def resized_frame(tiny_run, tmp_path_factory):
    """A copy of the tiny run (96x72) whose rgb frame 3 is a valid 48x36 PNG, and whose semantic frame 1 has one
    byte flipped inside its image data (a PNG chunk CRC catches it)."""
    def damage(run: Path) -> None:
        write_png(run / CAMERA / "rgb" / "000003.png", np.full((36, 48, 3), 128, np.uint8))
        semantic = run / CAMERA / "semantic" / "000001.png"
        data = bytearray(semantic.read_bytes())
        data[len(data) // 2] ^= 0x10
        semantic.write_bytes(bytes(data))
    return damaged_copy(tiny_run, tmp_path_factory.mktemp("resized"), damage)


@pytest.mark.parametrize("fmt", ["coco", "webdataset", "yolo"])
def test_export_refuses_a_frame_of_random_bytes(garbage_frame, tmp_path, fmt):
    run, before = garbage_frame
    out = tmp_path / "out"
    refused_leaving_nothing(run, before, tmp_path, out, "export", fmt, str(run), "--out", str(out),
                            mentions=("rgb/000002.png", "rgb:", "not a PNG image"))


@pytest.mark.parametrize("fmt", ["euroc", "tum", "kitti"])
def test_sequence_export_refuses_a_frame_of_another_size(resized_frame, tmp_path, fmt):
    run, before = resized_frame
    out = tmp_path / "out"
    refused_leaving_nothing(run, before, tmp_path, out, "export", fmt, str(run), "--out", str(out),
                            mentions=("rgb/000003.png", "rgb:", "image is 48x36, frames.jsonl says 96x72"))


def test_webdataset_refuses_a_flipped_byte_in_a_member_it_only_copies(resized_frame, tmp_path):
    """The semantic PNG goes into the shards unread by the labels: its chunk CRC is checked all the same (frame 1
    comes before the resized rgb frame 3)."""
    run, before = resized_frame
    out = tmp_path / "wds"
    refused_leaving_nothing(run, before, tmp_path, out, "export", "webdataset", str(run), "--out", str(out),
                            mentions=("semantic/000001.png", "semantic:", "IDAT", "damaged"))


# ---------------------------------------------------------------- frames.jsonl


@pytest.fixture(scope="module")
def repeated_line(tiny_run, tmp_path_factory):
    """A copy of the tiny run whose frames.jsonl lists frame 4 twice (lines 5 and 6)."""
    def damage(run: Path) -> None:
        log = run / CAMERA / "frames.jsonl"
        lines = log.read_text().splitlines(keepends=True)
        log.write_text("".join(lines[:5] + lines[4:]))
    return damaged_copy(tiny_run, tmp_path_factory.mktemp("repeated"), damage)


def test_euroc_refuses_a_frame_listed_twice(repeated_line, tmp_path):
    """Twice the same frame gave two equal timestamps and NaN velocities in the EuRoC ground truth."""
    run, before = repeated_line
    out = tmp_path / "euroc"
    refused_leaving_nothing(run, before, tmp_path, out, "export", "euroc", str(run), "--out", str(out),
                            mentions=("frames.jsonl", "line 6: frame", "frame 4 is listed twice (also on line 5)"))


def test_frames_reader_refuses_time_going_back_and_a_size_change(tiny_run, tmp_path):
    """Line 3 replaced by frame 99 at line 2's time, or by frame 2 at another width."""
    lines = (tiny_run / CAMERA / "frames.jsonl").read_text().splitlines(keepends=True)
    cases = {"time": (lines[1].replace('"frame": 1,', '"frame": 99,'), "line 3: time", "is not after line 2's"),
             "width": (lines[2].replace('"width": 96', '"width": 320'), "line 3: width", "320x72 differs from")}
    for name, (third, field, message) in cases.items():
        assert third not in lines
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join([lines[0], lines[1], third, *lines[3:]]))
        with pytest.raises(InputError) as caught:
            read_frames(path)
        assert field in str(caught.value) and message in str(caught.value), caught.value
    assert len(read_frames(tiny_run / CAMERA / "frames.jsonl").frames) == len(lines)


# ---------------------------------------------------------------- a run given twice


@pytest.mark.parametrize("spelling", ["same", "symlink", "dotted"])
def test_export_refuses_a_run_given_twice(tiny_run, tmp_path, spelling):
    """`grade export yolo RUN RUN` put the same frames in train and val."""
    other = {"same": tiny_run, "dotted": tiny_run.parent / "." / tiny_run.name / ".." / tiny_run.name,
             "symlink": tmp_path / "link"}[spelling]
    if spelling == "symlink":
        other.symlink_to(tiny_run, target_is_directory=True)
    out = tmp_path / "yolo"
    refused_leaving_nothing(None, None, tmp_path, out, "export", "yolo", str(tiny_run), str(other), "--out", str(out),
                            mentions=("RUN", f"the recording {tiny_run.resolve()} is given twice"))


@pytest.mark.parametrize("fmt", ["euroc", "kitti"])
def test_sequence_exports_refuse_a_run_given_twice(tiny_run, tmp_path, fmt):
    out = tmp_path / "out"
    refused_leaving_nothing(None, None, tmp_path, out, "export", fmt, str(tiny_run), str(tiny_run) + "/", "--out",
                            str(out), mentions=("RUN", "given twice"))


# ---------------------------------------------------------------- categories


def test_export_refuses_a_category_class_no_recording_defines(tiny_run, tmp_path):
    categories = tmp_path / "categories.yaml"
    categories.write_text("categories:\n  - {id: 1, name: person, classes: [person]}\n"
                          "  - {id: 2, name: seating, classes: [chair, sofaa]}\n")
    out = tmp_path / "coco"
    error = refused_leaving_nothing(None, None, tmp_path, out, "export", "coco", str(tiny_run), "--out", str(out),
                                    "--categories", str(categories),
                                    mentions=("categories.yaml", "categories[1].classes", "'sofaa'", "define:"))
    assert "sofa, " in error and "person" in error  # the known classes are listed


def test_export_warns_of_a_defined_category_without_annotations(tiny_run, tmp_path):
    categories = tmp_path / "categories.yaml"
    categories.write_text("categories:\n  - {id: 1, name: person, classes: [person]}\n"
                          "  - {id: 2, name: baths, classes: [bathtub]}\n")
    result = run_grade("export", "coco", str(tiny_run), "--out", str(tmp_path / "coco"), "--categories",
                       str(categories), "--no-keypoints", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "no annotations" in line]
    assert len(warnings) == 1 and "'baths'" in warnings[0] and "'person'" not in warnings[0], result.stderr


# ---------------------------------------------------------------- a flipped byte in an MCAP bag


def mcap_chunks(path: Path) -> list[tuple[int, int, int]]:
    """(offset, record length, uncompressed_crc) of each Chunk record (opcode 0x06) of an MCAP file."""
    data, at, chunks = path.read_bytes(), 8, []
    while at < len(data) - 8:
        opcode, length = data[at], struct.unpack_from("<Q", data, at + 1)[0]
        if opcode == 0x06:
            chunks.append((at, length, struct.unpack_from("<I", data, at + 9 + 24)[0]))
        if opcode in (0x0F, 0x02):  # DataEnd, Footer
            break
        at += 9 + length
    return chunks


def test_postprocess_refuses_an_mcap_bag_with_a_flipped_byte(tiny_run, tmp_path):
    """The MCAP chunks GRADE writes (the recorder's, and `grade postprocess`'s new bag) carry their CRC-32; one byte
    flipped inside a chunk is refused naming the file and the chunk's offset, with no output bag."""
    bag, out = tmp_path / "demo", tmp_path / "demo_noisy"
    copy_run(tiny_run / "bags" / "demo", bag)
    result = run_grade("postprocess", str(bag), "--imu", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    written = mcap_chunks(next(out.glob("*.mcap")))
    assert written and all(crc != 0 for _, _, crc in written)
    shutil.rmtree(out)

    mcap = bag / "demo.mcap"
    (offset, length, crc), *_ = mcap_chunks(mcap)
    assert crc != 0
    data = bytearray(mcap.read_bytes())
    data[offset + length // 2] ^= 0xFF
    mcap.write_bytes(bytes(data))
    before = snapshot(bag)
    refused_leaving_nothing(bag, before, tmp_path, out, "postprocess", str(bag), "--imu",
                            mentions=(str(mcap), f"chunk at byte {offset}", "Chunk checksum mismatch"))

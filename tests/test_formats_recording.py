"""core.formats, the recording's file formats: each writer's output read back by its reader, a file from a
newer GRADE (higher schema major) refused naming both versions, and malformed input reported as InputError
naming the file and the field."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from scipy.spatial.transform import Rotation

from core.errors import InputError
from core.formats.frames import FRAMES_FILE, Box2D, Box3D, FrameRecord, FramesWriter, read_frames
from core.formats.humans import (
    HumanEntry,
    HumansDocument,
    HumansFrame,
    read_humans_document,
    read_humans_frame,
    sample_files,
    save_humans_frame,
    write_humans_document,
)
from core.formats.images import SUFFIX, depth_millimetres, encode, frame_file, read_image, write_image
from core.formats.imu import ImuSeries, read_imu, save_imu
from core.formats.instances import InstanceEntry, instances_document, read_instances, write_instances
from core.formats.lidar import LidarSweep, read_sweep, save_sweep, sweep_files
from core.formats.manifest import MANIFEST, read_manifest, write_manifest
from core.formats.png import encode_png, write_png
from core.formats.run_info import RunInfo, read_run_info, write_run_info
from core.formats.states import STATES_SCHEMA, load_robot_path, load_states, save_states
from core.formats.tum import read_tum, tum_line
from core.geometry import compose
from core.rundir import sha256_file
from core.seeding import generator

W, H = 8, 6


def rewrite_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    path.write_text(json.dumps(data | changes))


def assert_newer_refused(path: Path, read, kind: str) -> None:
    """A file tagged grade.<kind>/2 is refused by the /1 reader, with both versions in the message."""
    rewrite_json(path, schema=f"grade.{kind}/2")
    with pytest.raises(InputError) as info:
        read()
    assert info.value.file == str(path) and info.value.field == "schema"
    assert f"grade.{kind}/2" in info.value.message and f"grade.{kind}/1" in info.value.message
    rewrite_json(path, schema="grade.other/1")  # another kind's file
    with pytest.raises(InputError, match=f"grade.{kind}/1"):
        read()


# ---------------------------------------------------------------- run.json and MANIFEST.json


def test_run_info_round_trip_newer_and_malformed(tmp_path):
    info = RunInfo(name="r", backend="embedded", master_seed=3, config={"a": [1, 2]}, frame_counts={"camera/c": 4},
                   status="complete", sim_time_end=1.5)
    write_run_info(tmp_path, info)
    assert read_run_info(tmp_path) == info
    rewrite_json(tmp_path / "run.json", status="paused")
    with pytest.raises(InputError) as error:
        read_run_info(tmp_path)
    assert error.value.file == str(tmp_path / "run.json") and error.value.field == "status"
    assert_newer_refused(tmp_path / "run.json", lambda: read_run_info(tmp_path), "run")


def test_manifest_lists_every_file_and_refuses_newer(tmp_path):
    (tmp_path / "gt").mkdir()
    (tmp_path / "gt" / "a.bin").write_bytes(b"abc")
    (tmp_path / "other.txt").write_text("not listed")
    (tmp_path / ".partial").write_text("temporary")
    write_manifest(tmp_path, "record", "h", include=["gt"])
    manifest = read_manifest(tmp_path)
    assert (manifest.stage, manifest.input_hash, list(manifest.files)) == ("record", "h", ["gt/a.bin"])
    assert manifest.files["gt/a.bin"].size == 3 and manifest.files["gt/a.bin"].sha256 == sha256_file(tmp_path / "gt/a.bin")
    data = json.loads((tmp_path / MANIFEST).read_text())
    assert list(data) == ["schema", "stage", "input_hash", "files"] and data["schema"] == "grade.manifest/1"
    assert_newer_refused(tmp_path / MANIFEST, lambda: read_manifest(tmp_path), "manifest")


# ---------------------------------------------------------------- frames.jsonl, instances.json, poses.tum


def frame_record(index: int, boxes: bool) -> FrameRecord:
    pose = compose(Rotation.from_euler("z", 0.1 * index).as_matrix(), np.array([index, 2.0, 3.0]))
    record = FrameRecord(frame=index, time=index / 30, pose=pose.tolist(), K=[[5.0, 0, 4], [0, 5.0, 3], [0, 0, 1]],
                         width=W, height=H, near=0.05, far=100.0, files={"rgb": frame_file("rgb", index)})
    if boxes:
        record.boxes_2d_tight = [Box2D(instance_id=3, semanticId=2, x_min=1, y_min=1, x_max=4, y_max=3,
                                       occlusionRatio=0.25)]
        record.boxes_2d_loose = [Box2D(instance_id=3, semanticId=2, x_min=0, y_min=1, x_max=5, y_max=3,
                                       occlusionRatio=0.25)]
        record.boxes_3d = [Box3D(instance_id=3, semanticId=2, x_min=-1, y_min=-1, z_min=0, x_max=1, y_max=1, z_max=2,
                                 transform=np.eye(4).tolist(), occlusionRatio=0.25)]
    return record


def test_frames_round_trip_and_exact_lines(tmp_path):
    path = tmp_path / FRAMES_FILE
    writer = FramesWriter(path)
    records = [frame_record(0, boxes=True), frame_record(1, boxes=False)]
    for record in records:
        writer.write(record)
    writer.close()
    log = read_frames(path)
    assert log.frames == records and not log.dropped_tail
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert list(lines[0]) == ["frame", "time", "pose", "K", "width", "height", "near", "far", "files",
                              "boxes_2d_tight", "boxes_2d_loose", "boxes_3d"]
    assert "boxes_2d_tight" not in lines[1]  # not recorded, so not written (and read back as [])
    assert list(lines[0]["boxes_2d_tight"][0]) == ["instance_id", "semanticId", "x_min", "y_min", "x_max", "y_max",
                                                   "occlusionRatio"]
    assert np.allclose(log.frames[1].pose_matrix[:3, 3], (1, 2, 3))


def test_frames_truncated_tail_and_malformed_lines(tmp_path):
    path = tmp_path / FRAMES_FILE
    good = json.dumps(frame_record(0, boxes=True).model_dump(exclude_unset=True))
    path.write_text(good + "\n" + good[:30])
    with pytest.raises(InputError) as info:
        read_frames(path)
    assert info.value.file == str(path) and info.value.field == "line 2"
    log = read_frames(path, tolerate_truncated_tail=True)
    assert len(log.frames) == 1 and log.dropped_tail
    path.write_text(good[:30] + "\n" + good + "\n")  # not the last line: an error even for an incomplete run
    with pytest.raises(InputError, match="malformed JSON"):
        read_frames(path, tolerate_truncated_tail=True)
    broken = json.loads(good)
    broken["pose"] = broken["pose"][:3]
    broken["boxes_3d"][0]["transform"] = [[1.0]]
    path.write_text(good + "\n" + json.dumps(broken) + "\n")
    with pytest.raises(InputError, match="4x4") as info:
        read_frames(path)
    assert info.value.field == "line 2: pose"
    del broken["pose"]
    path.write_text(json.dumps(broken) + "\n")
    with pytest.raises(InputError) as info:
        read_frames(path)
    assert info.value.field == "line 1: pose"


def test_instances_round_trip_newer_and_malformed(tmp_path):
    entries = {7: InstanceEntry(prim_path="/World/humans/h", semantic_class="person", semantic_id=4, asset_id="h",
                                kind="human"),
               2: InstanceEntry(prim_path="/World/env/wall", semantic_class=None, semantic_id=0, asset_id="env",
                                kind="environment")}
    path = tmp_path / "instances.json"
    write_instances(path, instances_document(entries, {"wall": 9, "person": 4}))
    data = json.loads(path.read_text())
    assert list(data["instances"]) == ["2", "7"] and list(data["semantic_classes"]) == ["person", "wall"]
    back = read_instances(path)
    assert back.instances == entries and back.semantic_classes == {"person": 4, "wall": 9}
    assert back.label(7, 4) == "person" and back.label(2, 9) == "wall" and back.label(99, 12) == "class 12"
    assert back.is_environment(2) and not back.is_environment(7) and not back.is_environment(99)
    data["instances"]["7"]["kind"] = "robot"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        read_instances(path)
    assert info.value.file == str(path) and info.value.field == "instances.7.kind"
    assert_newer_refused(path, lambda: read_instances(path), "instances")


def test_tum_round_trip_quaternion_order_and_malformed(tmp_path):
    rng = generator(0, "tests/formats/tum")
    rotations = Rotation.random(5, random_state=np.random.default_rng(rng.integers(1 << 31)))
    poses = compose(rotations.as_matrix(), rng.normal(0, 3, (5, 3)))
    times = np.arange(5) / 30
    path = tmp_path / "poses.tum"
    path.write_text("".join(tum_line(t, p) for t, p in zip(times, poses)))
    back_times, back_poses = read_tum(path)
    assert np.allclose(back_times, times, atol=1e-6) and np.allclose(back_poses, poses, atol=1e-8)
    columns = np.loadtxt(path)  # independent of the reader: scipy's (x, y, z, w), sign fixed by w >= 0
    expected = rotations.as_quat() * np.where(rotations.as_quat()[:, 3:] < 0, -1, 1)
    assert np.allclose(columns[:, 4:], expected, atol=1e-8) and np.allclose(columns[:, 1:4], poses[:, :3, 3])
    path.write_text(tum_line(0.0, poses[0]) + "0.1 1 2 3\n")
    with pytest.raises(InputError, match="expected 8 numbers") as info:
        read_tum(path)
    assert info.value.file == str(path) and info.value.field == "line 2"
    path.write_text(tum_line(0.0, poses[0]) + "0.1 1 2")  # an interrupted write
    assert len(read_tum(path, tolerate_truncated_tail=True)[0]) == 1


# ---------------------------------------------------------------- images


def test_images_encode_decode_every_kind(tmp_path):
    rng = generator(0, "tests/formats/images")
    depth = rng.uniform(0.5, 70.0, (H, W)).astype(np.float32)
    depth[0, 0] = 0.0
    images = {"rgb": rng.integers(0, 256, (H, W, 3), dtype=np.uint8), "depth": depth,
              "instance": rng.integers(0, 1 << 16, (H, W), dtype=np.uint16),
              "semantic": rng.integers(0, 300, (H, W), dtype=np.uint16), "depth_npy": depth,
              "normals": rng.normal(0, 1, (H, W, 3)), "flow": rng.normal(0, 2, (H, W, 2))}
    for kind, image in images.items():
        path = tmp_path / frame_file(kind, 12)
        assert path.name == f"000012{SUFFIX[kind]}"
        path.parent.mkdir()
        write_image(path, encode(kind, image))
        back = read_image(path, kind, W, H)
        if kind == "depth":  # millimetres: rounded, 0 kept, beyond 65.535 m saturated
            assert back.dtype == np.float32 and back[0, 0] == 0
            assert np.abs(back - np.minimum(image, 65.535)).max() <= 0.0005 + 1e-6
        elif kind == "normals":
            assert back.dtype == np.float32 and np.allclose(back, image, atol=2e-3 * np.abs(image).max())
        else:
            assert np.array_equal(back, image.astype(back.dtype)), kind
    assert np.array_equal(depth_millimetres(np.array([0.0, 1.2344, 1.2346, 100.0])), [0, 1234, 1235, 65535])


def test_depth_millimetres_is_the_nearest_millimetre_of_the_float32_depth():
    """Against exact rational arithmetic: round(depth * 1000) of the float32 value itself, ties to even (what
    Python's round does with a Fraction). Includes depths a float32 product misses (3.4465, 4.5175) and random
    ones; 0, NaN and inf are no return, beyond 65.535 m saturates."""
    rng = np.random.default_rng(7)
    depth = np.concatenate([np.array([3.4465, 4.5175, 4.9085, 0.0005, 65.5354, 80.0], np.float32),
                            rng.uniform(0.05, 30.0, 20000).astype(np.float32)])
    exact = [min(round(Fraction(float(d)) * 1000), 65535) for d in depth]
    assert depth_millimetres(depth).tolist() == exact
    assert depth_millimetres(np.array([0.0, np.nan, np.inf, -np.inf], np.float32)).tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (9, 1), (37, 53), (480, 640)])
def test_png_writer_decodes_identically_in_opencv_and_pillow(tmp_path, shape):
    """png.py's files (libdeflate, one row filter) decode to the same pixels in two independent readers, for
    colour and 16-bit greyscale, noise and smooth images, tiny and full-size; PNG's own checks (chunk CRCs, zlib's
    Adler-32) pass in Pillow's strict decoder."""
    rng = generator(0, "tests/formats/png")
    height, width = shape
    ramp = (np.arange(height * width).reshape(height, width) * 37 % 65536).astype(np.uint16)
    images = {"noise_rgb": rng.integers(0, 256, (height, width, 3), dtype=np.uint8),
              "smooth_rgb": np.stack([ramp % 256, ramp // 256, ramp % 7], axis=-1).astype(np.uint8),
              "noise_grey": rng.integers(0, 1 << 16, (height, width), dtype=np.uint16), "ramp_grey": ramp}
    for name, image in images.items():
        path = tmp_path / f"{name}.png"
        write_png(path, image)
        decoded = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        if image.ndim == 3:
            decoded = cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB)
        np.testing.assert_array_equal(decoded, image, name)
        with Image.open(path) as pillow:
            pillow.load()
            assert pillow.mode == ("RGB" if image.ndim == 3 else "I;16"), name
            np.testing.assert_array_equal(np.asarray(pillow), image, name)
    with pytest.raises(ValueError, match="uint8 or"):
        encode_png(np.zeros((4, 4), np.float32))


def test_image_errors_name_file_and_kind(tmp_path):
    path = tmp_path / "depth.png"
    write_image(path, depth_millimetres(np.ones((H // 2, W))))
    with pytest.raises(InputError, match=f"image is {W}x{H // 2}, frames.jsonl says {W}x{H}") as info:
        read_image(path, "depth", W, H)
    assert (info.value.file, info.value.field) == (str(path), "depth")
    with pytest.raises(InputError, match="expected 3 channels"):
        read_image(path, "rgb", W, H // 2)
    with pytest.raises(InputError, match="not found") as info:
        read_image(tmp_path / "missing.png", "semantic", W, H)
    assert info.value.field == "semantic"
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    with pytest.raises(InputError, match="not a readable .npy"):
        read_image(tmp_path / "bad.npy", "flow", W, H)


# ---------------------------------------------------------------- npz formats


def test_imu_round_trip_and_misshaped_array(tmp_path):
    t = np.arange(4) / 240
    series = [ImuSeries("imu_b", t, np.ones((4, 3)), np.zeros((4, 3))), ImuSeries("imu_a", t, 2 * np.ones((4, 3)),
                                                                                   np.full((4, 3), 0.5))]
    path = tmp_path / "imu.npz"
    save_imu(path, series)
    assert list(np.load(path).files) == ["imu_b.time", "imu_b.linear_acceleration", "imu_b.angular_velocity",
                                         "imu_a.time", "imu_a.linear_acceleration", "imu_a.angular_velocity"]
    back = read_imu(path)
    assert list(back) == ["imu_a", "imu_b"]
    for original in series:
        read = back[original.name]
        assert all(np.array_equal(getattr(read, k), getattr(original, k))
                   for k in ("time", "linear_acceleration", "angular_velocity"))
    np.savez(path, **{"imu_a.time": t, "imu_a.linear_acceleration": np.ones((4, 3)), "imu_a.angular_velocity": t})
    with pytest.raises(InputError, match=r"expected shape \(4, 3\)") as info:
        read_imu(path)
    assert (info.value.file, info.value.field) == (str(path), "imu_a.angular_velocity")


def states_arrays(steps: int = 5) -> dict[str, np.ndarray]:
    return {"time": np.arange(steps) / 240, "robot_position": np.ones((steps, 3)),
            "robot_quat_wxyz": np.tile([1.0, 0, 0, 0], (steps, 1)), "joint_positions": np.zeros((steps, 2)),
            "joint_velocities": np.zeros((steps, 2)), "command": np.zeros((steps, 6)),
            "checkpoint.qpos": np.zeros((1, 7)), "schema": np.array(STATES_SCHEMA),
            "joint_names": np.array(["a", "b"]), "checkpoint_steps": np.array([0])}


def test_states_round_trip_newer_and_misshaped(tmp_path):
    path = tmp_path / "states.npz"
    arrays = states_arrays()
    save_states(path, arrays)
    assert list(np.load(path).files) == list(arrays)  # written in the given order: stable bytes
    back = load_states(path)
    assert back.keys() == arrays.keys() and all(np.array_equal(back[k], arrays[k]) for k in arrays)
    robot = load_robot_path(path)
    assert np.array_equal(robot.position, arrays["robot_position"]) and robot.quat_wxyz.shape == (5, 4)
    np.savez_compressed(path, **arrays | {"schema": np.array("grade.states/2")})
    with pytest.raises(InputError, match="grade.states/2") as info:
        load_states(path)
    assert info.value.field == "schema" and "grade.states/1" in info.value.message
    np.savez_compressed(path, **arrays | {"command": np.zeros((4, 6))})
    with pytest.raises(InputError, match="has 4 rows, time has 5") as info:
        load_states(path)
    assert (info.value.file, info.value.field) == (str(path), "command")
    with pytest.raises(ValueError, match="robot_quat_wxyz"):
        save_states(path, {k: v for k, v in arrays.items() if k != "robot_quat_wxyz"})


def test_humans_round_trip_newer_and_misshaped(tmp_path):
    document = HumansDocument(rate_hz=30.0, humans=[HumanEntry(prim_path="/World/humans/h0", name="h0", asset_id="a",
                                                               joint_names=["pelvis", "head"])])
    write_humans_document(tmp_path, document)
    assert read_humans_document(tmp_path) == document
    joints = {"h0": np.array([[0, 0, 1], [0, 0, 1.7]], np.float32)}
    for index in range(3):
        save_humans_frame(tmp_path, index, HumansFrame(index / 30, joints, {}))
    files = sample_files(tmp_path)
    assert [f.name for f in files] == ["000000.npz", "000001.npz", "000002.npz"]
    back = read_humans_frame(files[2], document)
    assert back.time == pytest.approx(2 / 30) and np.array_equal(back.joints["h0"], joints["h0"]) and not back.vertices
    np.savez(files[1], time=np.array(0.0), **{"h0.joints": np.zeros((3, 3))})
    with pytest.raises(InputError, match=r"expected shape \(2, 3\)") as info:
        read_humans_frame(files[1], document)
    assert (info.value.file, info.value.field) == (str(files[1]), "h0.joints")
    assert_newer_refused(tmp_path / "humans.json", lambda: read_humans_document(tmp_path), "humans")


def test_lidar_round_trip_and_misshaped(tmp_path):
    sweep = LidarSweep(0.1, np.eye(4), np.ones((4, 36), np.float32), np.ones((10, 3), np.float32),
                       np.arange(10, dtype=np.uint16) % 4)
    save_sweep(tmp_path, 0, sweep)
    save_sweep(tmp_path, 1, LidarSweep(0.2, np.eye(4), sweep.ranges, sweep.points[:0], sweep.ring[:0]))
    files = sweep_files(tmp_path)
    back = read_sweep(files[0])
    assert back.time == 0.1 and all(np.array_equal(getattr(back, k), getattr(sweep, k))
                                    for k in ("pose", "ranges", "points", "ring"))
    assert back.points.dtype == np.float32 and back.ring.dtype == np.uint16
    assert len(read_sweep(files[1]).points) == 0
    np.savez(files[0], time=0.1, pose=np.eye(4), ranges=sweep.ranges, points=sweep.points, ring=sweep.ring[:5])
    with pytest.raises(InputError, match=r"expected shape \(10,\)") as info:
        read_sweep(files[0])
    assert (info.value.file, info.value.field) == (str(files[0]), "ring")

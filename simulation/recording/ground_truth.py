"""Ground-truth files of one camera (gt/<camera>/) and of the IMUs (gt/imu.npz).

Image files are encoded on a writer thread (OpenCV releases the GIL), so the next frame renders while
the last one is written; frames.jsonl and poses.tum are written in frame order on the caller's thread.
Layout and fields: docs/guides/recording.md (depth PNGs are uint16 millimetres of distance to the image
plane, 0 = no return; instance and semantic PNGs uint16 ids; boxes as omni.replicator.core annotators,
inclusive pixel bounds).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from core.formats.frames import FRAMES_FILE, Box2D, Box3D, FrameRecord, FramesWriter
from core.formats.images import encode, frame_file, write_image
from core.formats.imu import ImuSeries, save_imu
from core.formats.instances import INSTANCES_FILE, InstanceEntry, Instances, instances_document, write_instances
from core.formats.tum import TUM_FILE, TumWriter
from simulation.backend import ImuReading, InstanceInfo
from simulation.render import Frame

IMAGE_KINDS = ("rgb", "depth", "instance", "semantic", "depth_npy", "normals", "flow")  # frames.jsonl `files` order
BOX3D_KEYS = ("x_min", "y_min", "z_min", "x_max", "y_max", "z_max")


def boxes_2d(ids: np.ndarray, boxes: np.ndarray) -> list[Box2D]:
    """A rendered frame's box rows (replicator's dtype) as the records of frames.jsonl."""
    return [Box2D(instance_id=int(i), semanticId=int(b["semanticId"]), x_min=int(b["x_min"]), y_min=int(b["y_min"]),
                  x_max=int(b["x_max"]), y_max=int(b["y_max"]), occlusionRatio=float(b["occlusionRatio"]))
            for i, b in zip(ids, boxes)]


def _boxes_3d(ids: np.ndarray, boxes: np.ndarray) -> list[Box3D]:
    return [Box3D(instance_id=int(i), semanticId=int(b["semanticId"]), **{k: float(b[k]) for k in BOX3D_KEYS},
                  transform=b["transform"].astype(np.float64).tolist(), occlusionRatio=float(b["occlusionRatio"]))
            for i, b in zip(ids, boxes)]


def camera_instances(instances: Mapping[int, InstanceInfo], classes: Mapping[str, int]) -> Instances:
    """What a camera's instances.json holds: the world's instances and semantic classes."""
    return instances_document({i: InstanceEntry(**info.as_dict()) for i, info in instances.items()}, classes)


class CameraWriter:
    """gt/<camera>/: images per frame, frames.jsonl, poses.tum, instances.json."""

    def __init__(self, folder: Path, outputs: list[str], depth_npy: bool, instances: Mapping[int, InstanceInfo],
                 classes: Mapping[str, int], pool: ThreadPoolExecutor):
        self.folder, self.outputs, self._pool = folder, set(outputs), pool
        # depth_npy is chosen by recording.depth_npy, the other kinds by the camera's outputs
        self.kinds = [k for k in IMAGE_KINDS if k in self.outputs or (k == "depth_npy" and depth_npy)]
        for kind in self.kinds:
            (folder / kind).mkdir(parents=True, exist_ok=True)
        write_instances(folder / INSTANCES_FILE, camera_instances(instances, classes))
        self._frames = FramesWriter(folder / FRAMES_FILE)
        self._poses = TumWriter(folder / TUM_FILE)
        self._pending: list[Future] = []
        self.count = 0

    def write(self, time: float, frame: Frame) -> None:
        index = self.count
        files = self._submit(index, frame)
        camera = frame.camera
        record = FrameRecord(frame=index, time=time, pose=camera.pose.tolist(), K=camera.K.tolist(), width=camera.width,
                             height=camera.height, near=camera.near, far=camera.far, files=files)
        if not camera.lens.pinhole:
            record.distortion_model, record.D = camera.lens.ros_model, list(camera.lens.coefficients)
        if "boxes2d" in self.outputs:
            record.boxes_2d_tight = boxes_2d(frame.instance_ids, frame.boxes_2d_tight)
            record.boxes_2d_loose = boxes_2d(frame.instance_ids, frame.boxes_2d_loose)
        if "boxes3d" in self.outputs:
            record.boxes_3d = _boxes_3d(frame.instance_ids, frame.boxes_3d)
        self._frames.write(record)
        self._poses.write(time, camera.pose)
        self.count += 1
        self._collect(block=False)

    def _submit(self, index: int, frame: Frame) -> dict[str, str]:
        images = {"rgb": frame.rgb, "depth": frame.depth, "instance": frame.instance, "semantic": frame.semantic,
                  "depth_npy": frame.depth, "normals": frame.normals, "flow": frame.flow}
        # rgb is None for depth-only renders, flow for the first frame
        jobs = {kind: images[kind] for kind in self.kinds if images[kind] is not None}
        files = {kind: frame_file(kind, index) for kind in jobs}
        for kind, image in jobs.items():
            self._pending.append(self._pool.submit(_encode_and_write, self.folder / files[kind], kind, image))
        return files

    def _collect(self, block: bool) -> None:
        """Re-raise a failed write; keep at most a few frames in flight (memory)."""
        keep = [] if block else self._pending[-32:]
        for future in self._pending[:len(self._pending) - len(keep)]:
            future.result()
        self._pending = keep

    def close(self) -> None:
        self._collect(block=True)
        self.close_files()

    def close_files(self) -> None:
        """Close the sequence files without waiting for image writes (after a failure)."""
        self._frames.close()
        self._poses.close()


def _encode_and_write(path: Path, kind: str, image: np.ndarray) -> None:
    write_image(path, encode(kind, image))


class ImuLog:
    """Every IMU reading, saved as gt/imu.npz (core.formats.imu)."""

    def __init__(self, names: list[str]):
        self._readings: dict[str, list[ImuReading]] = {name: [] for name in names}

    def add(self, name: str, reading: ImuReading) -> None:
        self._readings[name].append(reading)

    def series(self) -> list[ImuSeries]:
        return [ImuSeries(name, np.array([r.time for r in readings]),
                          np.array([r.linear_acceleration for r in readings]),
                          np.array([r.angular_velocity for r in readings]))
                for name, readings in self._readings.items()]

    def save(self, path: Path) -> None:
        save_imu(path, self.series())

"""Ground-truth files of one camera (gt/<camera>/) and of the IMUs (gt/imu.npz).

Image files are encoded on a writer thread (OpenCV releases the GIL), so the next frame renders while
the last one is written; frames.jsonl and poses.tum are written in frame order on the caller's thread.
Layout and fields: README "Recording folder" (depth PNGs are uint16 millimetres of distance to the image
plane, 0 = no return; instance and semantic PNGs uint16 ids; boxes as omni.replicator.core annotators,
inclusive pixel bounds).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np

from core.geometry import matrix_to_quat_wxyz
from simulation.backend import ImuReading, InstanceInfo
from simulation.render import Frame

INSTANCES_SCHEMA = "grade.instances/1"
FRAME_DIGITS = 6
MM_PER_M = 1000.0
MAX_DEPTH_MM = np.iinfo(np.uint16).max
PNG_COMPRESSION = 3  # OpenCV's 0-9; 3 is fast with most of the size gain


def frame_name(index: int, suffix: str) -> str:
    return f"{index:0{FRAME_DIGITS}d}{suffix}"


def depth_millimetres(depth: np.ndarray) -> np.ndarray:
    """float metres (0 = no return) -> uint16 millimetres, rounded; beyond 65.535 m saturates."""
    return np.clip(np.rint(depth * MM_PER_M), 0, MAX_DEPTH_MM).astype(np.uint16)


def _boxes_2d(ids: np.ndarray, boxes: np.ndarray) -> list[dict]:
    return [{"instance_id": int(i), "semanticId": int(b["semanticId"]), "x_min": int(b["x_min"]),
             "y_min": int(b["y_min"]), "x_max": int(b["x_max"]), "y_max": int(b["y_max"]),
             "occlusionRatio": float(b["occlusionRatio"])} for i, b in zip(ids, boxes)]


def _boxes_3d(ids: np.ndarray, boxes: np.ndarray) -> list[dict]:
    keys = ("x_min", "y_min", "z_min", "x_max", "y_max", "z_max")
    return [{"instance_id": int(i), "semanticId": int(b["semanticId"]), **{k: float(b[k]) for k in keys},
             "transform": b["transform"].astype(np.float64).tolist(), "occlusionRatio": float(b["occlusionRatio"])}
            for i, b in zip(ids, boxes)]


def tum_line(time: float, pose: np.ndarray) -> str:
    """`time tx ty tz qx qy qz qw` (TUM RGB-D format, ROS quaternion order)."""
    w, x, y, z = matrix_to_quat_wxyz(pose[:3, :3])
    t = pose[:3, 3]
    return f"{time:.6f} {t[0]:.9f} {t[1]:.9f} {t[2]:.9f} {x:.9f} {y:.9f} {z:.9f} {w:.9f}\n"


def instances_document(instances: Mapping[int, InstanceInfo], classes: Mapping[str, int]) -> dict:
    return {"schema": INSTANCES_SCHEMA,
            "instances": {str(i): info.as_dict() for i, info in sorted(instances.items())},
            "semantic_classes": dict(sorted(classes.items(), key=lambda kv: kv[1]))}


class CameraWriter:
    """gt/<camera>/: images per frame, frames.jsonl, poses.tum, instances.json."""

    def __init__(self, folder: Path, outputs: list[str], depth_npy: bool, instances: Mapping[int, InstanceInfo],
                 classes: Mapping[str, int], pool: ThreadPoolExecutor):
        self.folder, self.outputs, self.depth_npy, self._pool = folder, set(outputs), depth_npy, pool
        kinds = [k for k in ("rgb", "depth", "instance", "semantic", "normals", "flow") if k in self.outputs]
        kinds += ["depth_npy"] if depth_npy else []
        for kind in kinds:
            (folder / kind).mkdir(parents=True, exist_ok=True)
        (folder / "instances.json").write_text(json.dumps(instances_document(instances, classes), indent=2) + "\n")
        self._frames = open(folder / "frames.jsonl", "w", encoding="utf-8")
        self._poses = open(folder / "poses.tum", "w", encoding="utf-8")
        self._pending: list[Future] = []
        self.count = 0

    def write(self, time: float, frame: Frame) -> None:
        index = self.count
        files = self._submit(index, frame)
        camera = frame.camera
        record = {"frame": index, "time": time, "pose": camera.pose.tolist(), "K": camera.K.tolist(),
                  "width": camera.width, "height": camera.height, "near": camera.near, "far": camera.far,
                  "files": files}
        if "boxes2d" in self.outputs:
            record["boxes_2d_tight"] = _boxes_2d(frame.instance_ids, frame.boxes_2d_tight)
            record["boxes_2d_loose"] = _boxes_2d(frame.instance_ids, frame.boxes_2d_loose)
        if "boxes3d" in self.outputs:
            record["boxes_3d"] = _boxes_3d(frame.instance_ids, frame.boxes_3d)
        self._frames.write(json.dumps(record) + "\n")
        self._poses.write(tum_line(time, camera.pose))
        self.count += 1
        self._collect(block=False)

    def _submit(self, index: int, frame: Frame) -> dict[str, str]:
        jobs: dict[str, tuple[str, np.ndarray]] = {}
        if "rgb" in self.outputs and frame.rgb is not None:
            jobs["rgb"] = (frame_name(index, ".png"), cv2.cvtColor(frame.rgb, cv2.COLOR_RGB2BGR))
        if "depth" in self.outputs:
            jobs["depth"] = (frame_name(index, ".png"), depth_millimetres(frame.depth))
        if "instance" in self.outputs:
            jobs["instance"] = (frame_name(index, ".png"), frame.instance)
        if "semantic" in self.outputs:
            jobs["semantic"] = (frame_name(index, ".png"), frame.semantic)
        if self.depth_npy:
            jobs["depth_npy"] = (frame_name(index, ".npy"), frame.depth.astype(np.float32))
        if "normals" in self.outputs:
            jobs["normals"] = (frame_name(index, ".npy"), frame.normals.astype(np.float16))
        if "flow" in self.outputs and frame.flow is not None:
            jobs["flow"] = (frame_name(index, ".npy"), frame.flow.astype(np.float32))
        for kind, (name, image) in jobs.items():
            self._pending.append(self._pool.submit(_write_image, self.folder / kind / name, image))
        return {kind: f"{kind}/{name}" for kind, (name, _) in jobs.items()}

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


def _write_image(path: Path, image: np.ndarray) -> None:
    if path.suffix == ".npy":
        np.save(path, image)
        return
    if not cv2.imwrite(str(path), image, [cv2.IMWRITE_PNG_COMPRESSION, PNG_COMPRESSION]):
        raise OSError(f"could not write {path}")


class ImuLog:
    """Every IMU reading, saved as gt/imu.npz ("<name>.time", ".linear_acceleration", ".angular_velocity")."""

    def __init__(self, names: list[str]):
        self._readings: dict[str, list[ImuReading]] = {name: [] for name in names}

    def add(self, name: str, reading: ImuReading) -> None:
        self._readings[name].append(reading)

    def arrays(self) -> dict[str, np.ndarray]:
        arrays = {}
        for name, readings in self._readings.items():
            arrays[f"{name}.time"] = np.array([r.time for r in readings], dtype=np.float64)
            arrays[f"{name}.linear_acceleration"] = np.array([r.linear_acceleration for r in readings],
                                                             dtype=np.float64).reshape(-1, 3)
            arrays[f"{name}.angular_velocity"] = np.array([r.angular_velocity for r in readings],
                                                          dtype=np.float64).reshape(-1, 3)
        return arrays

    def save(self, path: Path) -> None:
        np.savez(path, **self.arrays())

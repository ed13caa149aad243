"""KITTI odometry sequences (`grade export kitti`): one numbered sequence per recording and camera, laid out as
the KITTI odometry benchmark's, so KITTI-style SLAM tools and evaluators (evo's `kitti` mode, pykitti) read it.

    poses/NN.txt                      per frame, the 3x4 row-major pose [R | t] of the camera's optical frame
                                      (z forward, x right, y down) in the optical frame of the sequence's first
                                      frame (the first line is the identity), as KITTI's ground truth
    sequences/NN/times.txt            per frame, its simulation time in seconds (not shifted to start at 0)
    sequences/NN/calib.txt            P0..P3: the 3x4 projection K [I | 0] of this camera (all four the same: one
                                      monocular camera, no stereo baseline; for a stereo pair P1 and P3 are the
                                      right camera's, K [I | (-b, 0, 0)]: P1[0, 3] = -fx b); Tr: LiDAR -> camera
                                      (module below)
    sequences/NN/image_0/NNNNNN.png   8-bit grey, as KITTI's cam0 (cv2's RGB -> grey of the colour image)
    sequences/NN/image_2/NNNNNN.png   the colour image as recorded (processed: rgb_blur), as KITTI's cam2
    sequences/NN/image_1, image_3     a stereo pair's right camera, grey and colour, as KITTI's cam1 and cam3
    sequences.txt                     `NN sequence camera`: which recording and camera each number is

Sequences are numbered 00, 01, ... in the order of the runs given and their cameras; the left and right cameras
of a `stereo:` camera, when both are exported, are one sequence (named after the pair in sequences.txt), with the
left camera's poses. `Tr` is the LiDAR's pose in
the camera's optical frame when a LiDAR of the robot (the first such) is mounted on the camera's link (a fixed
transform), else the identity (KITTI's readers expect the line; there is no LiDAR data in the export).
"""

from __future__ import annotations

from collections.abc import Sequence as Seq
from pathlib import Path

import cv2
import numpy as np

from core.errors import ConfigError, InputError
from core.geometry import optical_from_imu
from core.progress import track
from core.recording import Recording
from export.common import (
    PROCESSED,
    ExportFolder,
    Sequence,
    check_images,
    export_folder,
    exported_image,
    open_sequences,
)
from export.stereo import CameraUnit, camera_units
from simulation.embedded.sensors import BODY_TO_OPTICAL

POSES_DIR, SEQUENCES_DIR, SEQUENCE_LIST = "poses", "sequences", "sequences.txt"
GREY, COLOUR = "image_0", "image_2"
RIGHT_GREY, RIGHT_COLOUR = "image_1", "image_3"  # a stereo pair's right camera


def number(index: int) -> str:
    return f"{index:02d}"


def matrix_line(matrix: np.ndarray) -> str:
    """A 3x4 matrix as KITTI writes it: 12 values, row-major, space separated, in e-notation."""
    return " ".join(f"{v:.12e}" for v in np.asarray(matrix, np.float64)[:3, :4].reshape(-1)) + "\n"


def relative_poses(poses: np.ndarray) -> np.ndarray:
    """(N, 4, 4) world <- optical -> (N, 4, 4) first optical frame <- optical (KITTI's ground truth; the first
    exactly the identity)."""
    relative = np.linalg.inv(poses[0]) @ poses
    relative[0] = np.eye(4)
    return relative


def lidar_to_camera(recording: Recording, camera: str) -> np.ndarray:
    """KITTI's Tr (module docstring): optical <- LiDAR for the first LiDAR on the camera's link, else the
    identity."""
    config = recording.camera_config(camera)
    lidar = next((lidar for lidar in recording.experiment_config().robot.sensors.lidars
                  if lidar.mount.link == config.mount.link), None)
    if lidar is None:
        return np.eye(4)
    return optical_from_imu(config.mount.translation, config.mount.rpy_deg, lidar.mount.translation,
                            lidar.mount.rpy_deg, BODY_TO_OPTICAL)


def calib_text(K: np.ndarray, tr: np.ndarray, baseline: float = 0.0) -> str:
    """P0..P3 and Tr; with a stereo `baseline` (m), P1 and P3 (the right cameras) carry -fx * baseline."""
    projection = np.hstack([K, np.zeros((3, 1))])
    right = projection.copy()
    right[0, 3] = -K[0, 0] * baseline
    return "".join(f"P{i}: {matrix_line(right if i % 2 else projection)}" for i in range(4)) + f"Tr: {matrix_line(tr)}"


def _export_images(folder: ExportFolder, sequence: Sequence, name: str, root: str, grey_dir: str, colour_dir: str,
                   processed: bool) -> None:
    """The camera's images, colour and grey: each atomic, kept on a rerun."""
    camera = sequence.recording.camera(name)
    for position, frame in enumerate(track(camera.frames, f"KITTI {root} ({sequence.name} {name})")):
        image = exported_image(frame, "rgb", processed)
        folder.copy_image(image, f"{root}/{colour_dir}/{position:06d}.png")  # line `position` of times.txt and poses
        grey = f"{root}/{grey_dir}/{position:06d}.png"
        if not folder.path(grey).is_file():
            rgb = frame.processed(PROCESSED["rgb"]) if processed else frame.rgb()
            if rgb is None:  # checked before the export; deleted since
                raise InputError(f"frame {frame.index}'s RGB image is gone", frame.folder)
            _, png = cv2.imencode(".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY))  # 8-bit grey (not png.py's kinds)
            folder.write_bytes(grey, png.tobytes())


def _export_camera(folder: ExportFolder, sequence: Sequence, unit: CameraUnit, index: int, processed: bool) -> int:
    """One camera (or stereo pair) of one recording as KITTI sequence `index`: images first, then the text
    files."""
    name, root = unit.cameras[0], f"{SEQUENCES_DIR}/{number(index)}"
    camera = sequence.recording.camera(name)
    for each, grey_dir, colour_dir in zip(unit.cameras, (GREY, RIGHT_GREY), (COLOUR, RIGHT_COLOUR), strict=False):
        _export_images(folder, sequence, each, root, grey_dir, colour_dir, processed)
    poses = relative_poses(np.stack([frame.pose for frame in camera]))
    folder.write_bytes(f"{POSES_DIR}/{number(index)}.txt", "".join(matrix_line(p) for p in poses).encode())
    folder.write_bytes(f"{root}/times.txt", "".join(f"{frame.time:.6f}\n" for frame in camera).encode())
    folder.write_bytes(f"{root}/calib.txt",
                       calib_text(camera[0].K, lidar_to_camera(sequence.recording, name), unit.baseline or 0.0).encode())
    return len(camera)


def check_pinhole(recording: Recording, name: str) -> None:
    """ConfigError for a camera with a lens other than a pinhole: the KITTI odometry format has no distortion field
    (its calib.txt holds rectified projection matrices); EuRoC's sensor.yaml describes radtan and equidistant lenses."""
    lens = recording.camera_config(name).lens
    if not lens.pinhole:
        raise ConfigError(f"camera {name!r} has lens model {lens.model}, which the KITTI odometry format cannot "
                          "describe (its calib.txt holds rectified projection matrices); export it "
                          "with `grade export euroc`, or record a pinhole camera", field="--camera")


def export_kitti(runs: Seq[Path], out: Path, cameras: Seq[str] | None = None, processed: bool = False,
                 robot: str | None = None) -> dict[str, int]:
    """Export each run's cameras as KITTI odometry sequences into `out`; rerunning the same call after an
    interruption finishes the job. Returns what was written (sequences, frames)."""
    sequences = open_sequences(runs, cameras, robot)
    for sequence in sequences:  # everything checked before the export folder is touched
        for name in sequence.cameras:
            check_images(sequence.recording, sequence.recording.camera(name), ("rgb",), processed)
            check_pinhole(sequence.recording, name)
    pairs = [(s, unit) for s in sequences for unit in camera_units(s)]
    recorded = {"cameras": list(cameras or []), "processed": processed}
    with export_folder(out, "kitti", recorded, sequences) as folder:
        frames = sum(_export_camera(folder, s, unit, i, processed) for i, (s, unit) in enumerate(pairs))
        folder.write_bytes(SEQUENCE_LIST, "".join(f"{number(i)} {s.name} {unit.name}\n"
                                                  for i, (s, unit) in enumerate(pairs)).encode())
        counts = {"sequences": len(pairs), "frames": frames}
        folder.finish(counts, [])
    return counts

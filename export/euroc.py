"""EuRoC/ASL sequences (`grade export euroc`): one folder per recording and camera in the layout of the EuRoC
MAV dataset, so visual-inertial pipelines (ORB-SLAM3, OpenVINS, Kalibr) and evo read it unchanged.

    <sequence>/mav0/cam0/data.csv, data/<ns>.png, sensor.yaml     the camera's images (colour PNGs as recorded)
    <sequence>/mav0/cam1/...                                       a stereo camera's right camera (its left: cam0)
    <sequence>/mav0/imu0/data.csv, sensor.yaml                     gyro and accelerometer, sensor frame
    <sequence>/mav0/state_groundtruth_estimate0/data.csv           the camera's pose, velocity, zero biases

The body frame B is the camera's optical frame (z forward, x right, y down), so the ground truth equals the
recording's camera poses at the camera's frame times: cam0's T_BS is the identity and imu0's is the IMU's pose
in the optical frame, known when the IMU sits on the camera's link. Timestamps are simulation time in integer
nanoseconds (rounded).

The left and right cameras of a `stereo:` camera, when both are exported, make one sequence named after the pair:
cam0 the left, cam1 the right, whose T_BS is the right optical frame in the left one (the baseline along x).
"""

from __future__ import annotations

from collections.abc import Sequence as Seq
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.config import CameraConfig, ImuConfig
from core.config.lens import Lens
from core.errors import ConfigError, InputError
from core.formats.euroc import (
    CAMERA_HEADER,
    DATA_FILE,
    IMAGES,
    IMU,
    IMU_HEADER,
    ROOT,
    SENSOR_FILE,
    STATE,
    STATE_HEADER,
    csv_bytes,
    nanoseconds,
    sensor_yaml,
    t_bs,
)
from core.formats.images import RGB_BLUR
from core.formats.imu import ImuSeries
from core.geometry import matrix_to_quat_wxyz, optical_from_imu
from core.progress import track
from core.recording import Recording
from export.common import ExportFolder, Sequence, check_images, export_folder, exported_image, open_sequences
from export.stereo import CameraUnit, camera_units, unit_folder
from simulation.embedded.sensors import BODY_TO_OPTICAL


@dataclass(frozen=True)
class EurocOptions:
    imu: str | None = None  # the IMU for imu0; None: the one on the camera's link, else the first
    processed: bool = False  # rgb_blur images and the noisy IMU (gt/imu_noisy.npz) of `grade postprocess`



def choose_imu(recording: Recording, camera: CameraConfig, options: EurocOptions) -> ImuSeries | None:
    """The IMU exported as imu0: `options.imu`, else the one mounted on the camera's link, else the first;
    None when the robot has no IMU (the sequence is then visual only)."""
    clean = recording.imu()
    series = recording.imu(noisy=True) if options.processed else clean
    if options.processed and clean and not series:
        raise InputError("--processed needs the noisy IMU: post-process the run with `grade postprocess RUN --imu`",
                         recording.path)
    if options.imu is not None:
        if options.imu not in series:
            raise InputError(f"no IMU {options.imu!r} in this recording; available: {', '.join(series) or 'none'}",
                             recording.path)
        return series[options.imu]
    on_link = [i.name for i in recording.experiment_config().robot.sensors.imus
               if i.mount.link == camera.mount.link and i.name in series]
    return series[on_link[0]] if on_link else next(iter(series.values()), None)


def _imu_config(recording: Recording, name: str) -> ImuConfig:
    return next(i for i in recording.experiment_config().robot.sensors.imus if i.name == name)


def euroc_distortion(lens: Lens) -> dict:
    """EuRoC's (and Kalibr's) lens fields: radial-tangential k1, k2, p1, p2 (OpenCV's k3 has no place there, so a
    radtan lens with k3 != 0 is refused before the export) or equidistant k1..k4."""
    if lens.model == "equidistant":
        return {"distortion_model": "equidistant", "distortion_coefficients": list(lens.coefficients)}
    return {"distortion_model": "radial-tangential", "distortion_coefficients": [float(c) for c in lens.D[:4]]}


def check_lens(recording: Recording, name: str) -> None:
    """ConfigError for a camera whose lens EuRoC's sensor.yaml cannot describe."""
    lens = recording.camera_config(name).lens
    if lens.model == "radtan" and lens.coefficients[4] != 0.0:
        raise ConfigError(f"camera {name!r}'s radtan lens has k3 = {lens.coefficients[4]}; EuRoC's "
                          "radial-tangential model has k1, k2, p1, p2 only", field="--camera")


def _export_images(folder: ExportFolder, recording: Recording, name: str, body: CameraConfig, root: str,
                   index: int, options: EurocOptions) -> None:
    """Camera `name` as `cam<index>` under `root`: images first (each atomic, kept on a rerun), then data.csv and
    sensor.yaml, whose T_BS is its optical frame in `body`'s (both on one link)."""
    camera, config = recording.camera(name), recording.camera_config(name)
    stamps, cam = nanoseconds([frame.time for frame in camera]), f"cam{index}"
    for frame, ns in zip(track(camera.frames, f"EuRoC {root} {cam}"), stamps, strict=True):
        folder.copy_image(exported_image(frame, "rgb", options.processed), f"{root}/{cam}/{IMAGES}/{ns}.png")
    folder.write_bytes(f"{root}/{cam}/{DATA_FILE}", csv_bytes(CAMERA_HEADER, ((ns, f"{ns}.png") for ns in stamps)))
    K = camera[0].K
    body_from_camera = np.eye(4)
    if index:
        body_from_camera = optical_from_imu(body.mount.translation, body.mount.rpy_deg, config.mount.translation,
                                            config.mount.rpy_deg, BODY_TO_OPTICAL) @ BODY_TO_OPTICAL
    body_frame = f"the optical frame of {body.name}" if index else "its optical frame"
    folder.write_bytes(f"{root}/{cam}/{SENSOR_FILE}", sensor_yaml({
        "sensor_type": "camera",
        "comment": f"GRADE camera {name} ({RGB_BLUR if options.processed else 'rgb'}); body frame B = "
                   f"{body_frame} (z forward, x right, y down)",
        "T_BS": t_bs(body_from_camera), "rate_hz": config.rate_hz,
        "resolution": [camera[0].width, camera[0].height],
        "camera_model": "pinhole", "intrinsics": [float(K[0, 0]), float(K[1, 1]), float(K[0, 2]), float(K[1, 2])],
        **euroc_distortion(config.lens)}))


def _export_camera(folder: ExportFolder, sequence: Sequence, unit: CameraUnit,
                   options: EurocOptions) -> tuple[int, int]:
    """One camera (or stereo pair) of one recording as an EuRoC sequence. Returns (frames, IMU samples)."""
    recording = sequence.recording
    name = unit.cameras[0]
    camera = recording.camera(name)
    config = recording.camera_config(name)
    root = f"{unit_folder(sequence, unit)}/{ROOT}"
    for index, each in enumerate(unit.cameras):
        _export_images(folder, recording, each, config, root, index, options)
    stamps = nanoseconds([frame.time for frame in camera])

    poses = np.stack([frame.pose for frame in camera])
    times = np.array([frame.time for frame in camera])
    positions, quaternions = poses[:, :3, 3], matrix_to_quat_wxyz(poses[:, :3, :3])
    velocities = np.gradient(positions, times, axis=0) if len(times) > 1 else np.zeros_like(positions)
    state = np.hstack([positions, quaternions, velocities, np.zeros((len(times), 6))])
    folder.write_bytes(f"{root}/{STATE}/{DATA_FILE}",
                       csv_bytes(STATE_HEADER, ([ns, *row] for ns, row in zip(stamps, state.tolist(), strict=True))))

    imu = choose_imu(recording, config, options)
    if imu is None:
        return len(camera), 0
    values = np.hstack([imu.angular_velocity, imu.linear_acceleration]).tolist()
    folder.write_bytes(f"{root}/{IMU}/{DATA_FILE}",
                       csv_bytes(IMU_HEADER, ([ns, *row] for ns, row in zip(nanoseconds(imu.time), values, strict=True))))
    imu_config = _imu_config(recording, imu.name)
    sensor: dict[str, object] = {"sensor_type": "imu", "comment": f"GRADE IMU {imu.name} "
                                 f"({'noisy, grade postprocess' if options.processed else 'noise-free'})"}
    if imu_config.mount.link == config.mount.link:  # fixed to the camera: optical <- IMU from the two mounts
        sensor["T_BS"] = t_bs(optical_from_imu(config.mount.translation, config.mount.rpy_deg,
                                                imu_config.mount.translation, imu_config.mount.rpy_deg,
                                                BODY_TO_OPTICAL))
    else:
        sensor["comment"] += (f"; mounted on {imu_config.mount.link}, not on the camera's link "
                              f"{config.mount.link}, so T_BS is not a fixed transform and is left out")
    sensor["rate_hz"] = imu_config.rate_hz
    folder.write_bytes(f"{root}/{IMU}/{SENSOR_FILE}", sensor_yaml(sensor))
    return len(camera), len(imu.time)


def export_euroc(runs: Seq[Path], out: Path, cameras: Seq[str] | None = None,
                 options: EurocOptions = EurocOptions(), robot: str | None = None) -> dict[str, int]:
    """Export each run's cameras as EuRoC/ASL sequences into `out`; rerunning the same call after an
    interruption finishes the job. Returns what was written (sequences, frames, IMU samples)."""
    sequences = open_sequences(runs, cameras, robot)
    for sequence in sequences:  # everything checked before the export folder is touched
        for name in sequence.cameras:
            check_images(sequence.recording, sequence.recording.camera(name), ("rgb",), options.processed)
            choose_imu(sequence.recording, sequence.recording.camera_config(name), options)
            check_lens(sequence.recording, name)
    recorded = {"cameras": list(cameras or []), "imu": options.imu, "processed": options.processed}
    with export_folder(out, "euroc", recorded, sequences) as folder:
        written = [_export_camera(folder, s, unit, options) for s in sequences for unit in camera_units(s)]
        counts = {"sequences": len(written), "frames": sum(f for f, _ in written),
                  "imu samples": sum(n for _, n in written)}
        folder.finish(counts, [])
    return counts

"""An EuRoC/ASL sequence folder (`grade export euroc` writes it; SLAM runners read it back, as well as EuRoC MAV
dataset sequences):

    mav0/cam0/data.csv, data/<ns>.png, sensor.yaml     images; `#timestamp [ns],filename`; pinhole intrinsics
                                                       [fu, fv, cu, cv], resolution [w, h], rate_hz, T_BS
    mav0/imu0/data.csv, sensor.yaml                    `ns, w_x, w_y, w_z, a_x, a_y, a_z` (sensor frame);
                                                       rate_hz, T_BS when fixed, noise densities when known
    mav0/state_groundtruth_estimate0/data.csv          `ns, p (3), q w x y z, v (3), b_w (3), b_a (3)`

T_BS is body <- sensor (4x4, `data` row-major). Timestamps are integer nanoseconds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from core.errors import InputError
from core.formats.imu import ImuSeries
from core.rundir import read_utf8

NS_PER_S = 1e9
ROOT = "mav0"
CAMERA, IMU, STATE = "cam0", "imu0", "state_groundtruth_estimate0"
DATA_FILE, SENSOR_FILE, IMAGES = "data.csv", "sensor.yaml", "data"
CAMERA_HEADER = "#timestamp [ns],filename"
IMU_HEADER = ("#timestamp [ns],w_RS_S_x [rad s^-1],w_RS_S_y [rad s^-1],w_RS_S_z [rad s^-1],"
              "a_RS_S_x [m s^-2],a_RS_S_y [m s^-2],a_RS_S_z [m s^-2]")
STATE_HEADER = ("#timestamp, p_RS_R_x [m], p_RS_R_y [m], p_RS_R_z [m], q_RS_w [], q_RS_x [], q_RS_y [], q_RS_z [], "
                "v_RS_R_x [m s^-1], v_RS_R_y [m s^-1], v_RS_R_z [m s^-1], b_w_RS_S_x [rad s^-1], "
                "b_w_RS_S_y [rad s^-1], b_w_RS_S_z [rad s^-1], b_a_RS_S_x [m s^-2], b_a_RS_S_y [m s^-2], "
                "b_a_RS_S_z [m s^-2]")
# sensor.yaml noise keys (the EuRoC dataset's) -> ORB-SLAM3's names
NOISE_KEYS = {"gyroscope_noise_density": "NoiseGyro", "accelerometer_noise_density": "NoiseAcc",
              "gyroscope_random_walk": "GyroWalk", "accelerometer_random_walk": "AccWalk"}


def nanoseconds(times: np.ndarray | float) -> np.ndarray:
    """Seconds -> integer nanoseconds, rounded (a truncated 1/30 s would drift a nanosecond)."""
    return np.rint(np.asarray(times, dtype=np.float64) * NS_PER_S).astype(np.int64)


def csv_bytes(header: str, rows: Iterable[Iterable[object]]) -> bytes:
    """Comma-separated lines; floats as Python writes them (the shortest text that reads back exactly)."""
    return (header + "\n" + "".join(",".join(map(str, row)) + "\n" for row in rows)).encode()


def t_bs(matrix: np.ndarray) -> dict[str, object]:
    return {"cols": 4, "rows": 4, "data": [float(v) for v in np.asarray(matrix).reshape(-1)]}


def sensor_yaml(data: dict[str, object]) -> bytes:
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=120).encode()


@dataclass(frozen=True)
class EurocSequence:
    folder: Path
    K: np.ndarray  # (3, 3)
    width: int
    height: int
    rate_hz: float
    frames: list[tuple[float, Path]]  # (time s, image) in time order
    imu: ImuSeries | None
    imu_rate_hz: float | None
    imu_from_camera: np.ndarray | None  # (4, 4) IMU <- camera, when both T_BS are given
    imu_noise: dict[str, float]  # ORB-SLAM3 names, those sensor.yaml gives


def is_euroc(folder: str | Path) -> bool:
    return (Path(folder) / ROOT / CAMERA / DATA_FILE).is_file()


def _sensor(path: Path) -> dict:
    try:
        data = yaml.safe_load(read_utf8(path)) if path.is_file() else {}
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"not readable YAML ({exc})", path) from None
    if not isinstance(data, dict):
        raise InputError("expected a mapping", path)
    return data


def _matrix(data: dict, path: Path) -> np.ndarray | None:
    if "T_BS" not in data:
        return None
    try:
        return np.asarray(data["T_BS"]["data"], dtype=np.float64).reshape(4, 4)
    except (KeyError, TypeError, ValueError):
        raise InputError("expected 16 numbers in data", path, "T_BS") from None


def _rows(path: Path, columns: int) -> list[list[str]]:
    rows = []
    for number, line in enumerate(read_utf8(path).splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != columns:
            raise InputError(f"line {number}: expected {columns} comma-separated values", path)
        rows.append(fields)
    return rows


def read_euroc(folder: str | Path) -> EurocSequence:
    """The camera (and IMU, when there is one) of the sequence in `folder`; InputError naming the file, line and
    field of anything malformed."""
    folder = Path(folder)
    camera_folder = folder / ROOT / CAMERA
    data_path, sensor_path = camera_folder / DATA_FILE, camera_folder / SENSOR_FILE
    if not data_path.is_file():
        raise InputError("not found: an EuRoC sequence holds mav0/cam0/data.csv", data_path)
    sensor = _sensor(sensor_path)
    try:
        fu, fv, cu, cv = (float(v) for v in sensor["intrinsics"])
        width, height = (int(v) for v in sensor["resolution"])
        rate = float(sensor["rate_hz"])
    except (KeyError, TypeError, ValueError):
        raise InputError("expected intrinsics [fu, fv, cu, cv], resolution [w, h] and rate_hz", sensor_path) from None
    try:
        frames = [(int(ns) / NS_PER_S, camera_folder / IMAGES / name) for ns, name in _rows(data_path, 2)]
    except ValueError:
        raise InputError("timestamps must be integer nanoseconds", data_path) from None
    if not frames:
        raise InputError("no images listed", data_path)
    imu, imu_rate, imu_from_camera, noise = None, None, None, {}
    imu_data = folder / ROOT / IMU / DATA_FILE
    if imu_data.is_file():
        try:
            table = np.array(_rows(imu_data, 7), dtype=np.float64).reshape(-1, 7)
        except ValueError:
            raise InputError("expected numbers", imu_data) from None
        imu = ImuSeries(IMU, table[:, 0] / NS_PER_S, table[:, 4:7], table[:, 1:4])
        imu_sensor_path = folder / ROOT / IMU / SENSOR_FILE
        imu_sensor = _sensor(imu_sensor_path)
        imu_rate = float(imu_sensor["rate_hz"]) if "rate_hz" in imu_sensor else None
        noise = {name: float(imu_sensor[key]) for key, name in NOISE_KEYS.items() if key in imu_sensor}
        body_camera, body_imu = _matrix(sensor, sensor_path), _matrix(imu_sensor, imu_sensor_path)
        if body_camera is not None and body_imu is not None:
            imu_from_camera = np.linalg.inv(body_imu) @ body_camera
    K = np.array([[fu, 0, cu], [0, fv, cv], [0, 0, 1]])
    return EurocSequence(folder, K, width, height, rate, frames, imu, imu_rate, imu_from_camera, noise)

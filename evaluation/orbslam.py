"""ORB-SLAM3 on a recording through pyorbslam3 (GPL-3.0: the optional `slam` extra, imported only in the runner).

The settings file (OpenCV YAML, ORB-SLAM3 1.0 `File.version: "1.0"` layout) is generated from the recording:
pinhole intrinsics and size from frames.jsonl, the camera rate from the run's config, depth as float metres
(`RGBD.DepthMapFactor: 1.0`), for `stereo` two cameras that form a rectified pair (the right one's optical frame
is the left's moved along x, same intrinsics and rate: `Stereo.T_c1_c2` holds the baseline), and
for `mono_inertial` the IMU mounted on the camera's link: its rate, its
pose in the camera (`IMU.T_b_c1`, body <- optical frame, from the two mounts) and its noise (the run's
`postprocess.imu` densities and random walks when the noisy IMU of `grade postprocess` is fed, else small
defaults for the noise-free IMU). Frames are fed in order with their simulation times: RGB (or `rgb_blur`)
and float depth in metres (or `depth_noisy`); IMU samples in (previous frame, this frame].

Output (see evaluation.runner): `trajectory.tum` holds, for every frame ORB-SLAM3 returned a pose for (state
OK or RECENTLY_LOST), that pose as tracked online: pyorbslam3's `pose_wc`, world <- camera, and ORB-SLAM3's
camera frame is the optical frame (z forward, x right, y down), as the recording's poses.tum. Its world is
ORB-SLAM3's map frame (the first frame's camera, gravity-aligned once the IMU is initialised in
mono_inertial); monocular trajectories have an arbitrary scale, so compare them after Sim(3) alignment.
`runner.json` holds each frame's tracking state; `orbslam3.yaml` is the settings file used.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from core.config import CameraConfig, ImuConfig, Mount
from core.errors import ConfigError, GradeError, InputError
from core.formats.imu import ImuSeries
from core.geometry import compose, quat_wxyz_to_matrix
from core.progress import track
from core.recording import Camera, Frame, Recording
from core.rundir import Stopwatch, atomic_write_text
from evaluation.runner import INSTALL_HINT, RunnerResult, finish_run
from evaluation.vocabulary import MAX_K, MAX_LEVELS, build_vocabulary
from simulation.embedded.sensors import BODY_TO_OPTICAL
from simulation.robots.mjcf import rpy_quat

METHOD = "orbslam3"
MODES = {"rgbd": "RGBD", "mono": "MONOCULAR", "mono_inertial": "IMU_MONOCULAR", "stereo": "STEREO"}  # -> Sensor
# A stereo pair must be rectified by construction: the right camera's optical frame is the left's moved along
# its x axis (rotation and the other offsets within these tolerances), with the same intrinsics and size.
STEREO_ROTATION_TOLERANCE_RAD, STEREO_OFFSET_TOLERANCE_M = 1e-6, 1e-6
SETTINGS_FILE = "orbslam3.yaml"
VOCABULARY_FILE = "vocabulary.txt"  # what --build-vocabulary writes into the output folder
VOCABULARY_ENV = "PYORBSLAM3_VOCAB"
# ORB-SLAM3's defaults (its TUM and EuRoC examples).
ORB_EXTRACTOR = {"nFeatures": 1000, "scaleFactor": 1.2, "nLevels": 8, "iniThFAST": 20, "minThFAST": 7}
# RGB-D: depth is exact, so a virtual stereo baseline of 8 cm with ORB-SLAM3's threshold of 40 baselines
# treats points up to 3.2 m as close (triangulated from one frame), as in its TUM RGB-D settings.
STEREO_BASELINE, CLOSE_DEPTH_BASELINES = 0.08, 40.0
# The noise-free IMU still has to be given some noise (ORB-SLAM3 inverts the covariances); about a tenth of
# GRADE's noise model (core.config.ImuNoiseConfig), per sqrt(Hz).
CLEAN_IMU_NOISE = {"NoiseGyro": 3e-5, "NoiseAcc": 4e-4, "GyroWalk": 4e-6, "AccWalk": 6e-4}
VIEWER = {"KeyFrameSize": 0.05, "KeyFrameLineWidth": 1.0, "GraphLineWidth": 0.9, "PointSize": 2.0,
          "CameraSize": 0.08, "CameraLineWidth": 3.0, "ViewpointX": 0.0, "ViewpointY": -0.7, "ViewpointZ": -1.8,
          "ViewpointF": 500.0}


def vocabulary_hint() -> str:
    return (f"ORB-SLAM3 needs an ORB vocabulary: pass --vocabulary FILE (ORBvoc.txt or one built by "
            f"evaluation.vocabulary.build_vocabulary), set {VOCABULARY_ENV} to the file, download ORBvoc.txt "
            "(139 MB) into pyorbslam3's cache once on a machine with internet with "
            "`python -c 'import pyorbslam3; pyorbslam3.vocabulary_path()'`, or let `grade benchmark run orbslam3` "
            "build a small one from the run's own frames with --build-vocabulary")


def check_vocabulary(path: Path) -> Path:
    """`path` if its first line is a DBoW2 text header ORB-SLAM3 accepts: ORB-SLAM3 exits the whole process
    on a vocabulary it cannot read, so it is checked here first."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"vocabulary file not found. {vocabulary_hint()}", path)
    with open(path, encoding="utf-8", errors="replace") as handle:
        header = handle.readline().split()
    try:
        k, levels, scoring, weighting = (int(v) for v in header)
    except ValueError:
        k = levels = scoring = weighting = -1
    if not (0 <= k <= MAX_K and 1 <= levels <= MAX_LEVELS and 0 <= scoring <= 5 and 0 <= weighting <= 3):
        raise InputError(f"not a DBoW2 text vocabulary (first line {' '.join(header)!r}, expected 'k L scoring "
                         "weighting'); ORB-SLAM3 reads the text format of ORBvoc.txt", path)
    return path


def resolve_vocabulary(vocabulary: Path | None) -> Path:
    """`vocabulary`, else $PYORBSLAM3_VOCAB, else pyorbslam3's downloaded copy (never downloads here)."""
    if vocabulary is not None:
        return check_vocabulary(vocabulary)
    if os.environ.get(VOCABULARY_ENV):
        return check_vocabulary(Path(os.environ[VOCABULARY_ENV]))
    import pyorbslam3

    try:
        return check_vocabulary(Path(pyorbslam3.vocabulary_path(download=False)))
    except FileNotFoundError:
        raise GradeError(f"no ORB vocabulary given. {vocabulary_hint()}") from None


def _mount_matrix(mount: Mount) -> np.ndarray:
    """link <- sensor frame of a mount, as the simulation places it (simulation.physics.sensors)."""
    return compose(quat_wxyz_to_matrix(rpy_quat(mount.rpy_deg)), mount.translation)


def choose_camera(recording: Recording, camera: str | None) -> CameraConfig:
    """`camera`'s config, else the first camera of the run's config that has ground truth."""
    configs = recording.experiment_config().robot.sensors.cameras
    if camera is None:
        recorded = [c for c in configs if c.name in recording.cameras]
        if not recorded:
            raise InputError("the recording has no camera ground truth (gt/<camera>/frames.jsonl)", recording.path)
        return recorded[0]
    recording.camera(camera)  # InputError listing the cameras when there is none of that name
    for config in configs:
        if config.name == camera:
            return config
    raise InputError(f"camera {camera!r} has ground truth but is not in the run's config", recording.path)


def camera_imu(recording: Recording, camera: CameraConfig, processed: bool) -> tuple[ImuConfig, ImuSeries]:
    """The IMU fixed to the camera (mounted on its link): its config and readings (noisy ones if `processed`)."""
    series = recording.imu(noisy=processed)
    if processed and not series:
        raise InputError("--processed needs the noisy IMU: post-process the run with `grade postprocess RUN`",
                         recording.path)
    for imu in recording.experiment_config().robot.sensors.imus:
        if imu.mount.link == camera.mount.link and imu.name in series:
            return imu, series[imu.name]
    raise ConfigError(f"mono_inertial needs an IMU mounted on the camera's link {camera.mount.link!r} (a fixed "
                      f"camera-IMU transform); the run's IMUs: {', '.join(series) or 'none'}", recording.path,
                      "robot.sensors.imus")


def imu_noise(recording: Recording, processed: bool) -> dict[str, float]:
    """ORB-SLAM3's IMU noise entries: the post-processing noise model when its noisy IMU is fed."""
    record = recording.postprocess_record()
    settings = record.settings.get("imu") if processed and record is not None else None
    if not settings:
        return dict(CLEAN_IMU_NOISE)
    return {"NoiseGyro": settings["gyro_noise_density"], "NoiseAcc": settings["accel_noise_density"],
            "GyroWalk": settings["gyro_random_walk"], "AccWalk": settings["accel_random_walk"]}


def _number(value: float) -> str:
    return repr(float(value))


def _opencv_matrix(matrix: np.ndarray) -> str:
    data = ", ".join(_number(v) for v in np.asarray(matrix).reshape(-1))
    return f"!!opencv-matrix\n   rows: {matrix.shape[0]}\n   cols: {matrix.shape[1]}\n   dt: f\n   data: [{data}]"


def stereo_baseline(left: Camera, right: Camera) -> float:
    """The baseline (m) of a rectified stereo pair (STEREO_* tolerances); ConfigError naming what breaks it."""
    a, b = left[0], right[0]
    problems = []
    if not np.allclose(a.K, b.K) or (a.width, a.height) != (b.width, b.height):
        problems.append("different intrinsics or image size")
    if len(left) != len(right) or any(abs(x.time - y.time) > 1e-9 for x, y in zip(left, right, strict=False)):
        problems.append("frames at different times (give both cameras the same rate)")
    relative = np.linalg.inv(a.pose) @ b.pose  # left optical <- right optical
    angle = np.arccos(np.clip((np.trace(relative[:3, :3]) - 1) / 2, -1.0, 1.0))
    offset = relative[:3, 3]
    if angle > STEREO_ROTATION_TOLERANCE_RAD or np.abs(offset[1:]).max() > STEREO_OFFSET_TOLERANCE_M \
            or offset[0] <= STEREO_OFFSET_TOLERANCE_M:
        problems.append(f"the right camera is not the left one moved to its right (rotation {np.degrees(angle):.3g}"
                        f" deg, offset {np.round(offset, 4).tolist()} m in the left optical frame)")
    if problems:
        raise ConfigError(f"cameras {left.name!r} and {right.name!r} are not a rectified stereo pair: "
                          f"{'; '.join(problems)}", None, "--right-camera")
    return float(offset[0])


def settings_yaml(camera: Camera, config: CameraConfig, mode: str,
                  imu: tuple[ImuConfig, dict[str, float]] | None = None, baseline: float | None = None) -> str:
    """The ORB-SLAM3 settings file for `camera` (OpenCV YAML, File.version 1.0); `imu` (its config and noise)
    for mono_inertial; the stereo `baseline` (m) for stereo: the pair as two pinholes with `Stereo.T_c1_c2`
    (ORB-SLAM3 1.0's "Rectified" type crashes its stereo tracking; rectifying an already rectified pair is the
    identity)."""
    first = camera[0]
    K = first.K
    entries: list[tuple[str, str]] = [("File.version", '"1.0"'), ("Camera.type", '"PinHole"')]
    for index in (1, 2) if mode == "stereo" else (1,):  # a stereo pair: the same pinhole twice
        entries += [(f"Camera{index}.{name}", _number(value)) for name, value in
                    (("fx", K[0, 0]), ("fy", K[1, 1]), ("cx", K[0, 2]), ("cy", K[1, 2]))]
        entries += [(f"Camera{index}.{name}", "0.0") for name in ("k1", "k2", "p1", "p2")]  # the renderer: pinhole
    entries += [("Camera.width", str(first.width)), ("Camera.height", str(first.height)),
                ("Camera.fps", str(round(config.rate_hz))), ("Camera.RGB", "1")]
    if mode == "rgbd":
        entries += [("Stereo.ThDepth", _number(CLOSE_DEPTH_BASELINES)), ("Stereo.b", _number(STEREO_BASELINE)),
                    ("RGBD.DepthMapFactor", "1.0")]
    if mode == "stereo":
        left_from_right = np.eye(4)
        left_from_right[0, 3] = baseline
        entries += [("Stereo.ThDepth", _number(CLOSE_DEPTH_BASELINES)),
                    ("Stereo.T_c1_c2", _opencv_matrix(left_from_right))]
    if imu is not None:
        imu_config, noise = imu
        body_from_camera = np.linalg.inv(_mount_matrix(imu_config.mount)) @ _mount_matrix(config.mount) @ BODY_TO_OPTICAL
        entries.append(("IMU.T_b_c1", _opencv_matrix(body_from_camera)))
        entries += [(f"IMU.{name}", _number(value)) for name, value in noise.items()]
        entries.append(("IMU.Frequency", _number(imu_config.rate_hz)))
    entries += [(f"ORBextractor.{name}", str(value)) for name, value in ORB_EXTRACTOR.items()]
    entries += [(f"Viewer.{name}", _number(value)) for name, value in VIEWER.items()]
    return "%YAML:1.0\n---\n" + "".join(f"{key}: {value}\n" for key, value in entries)


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """ORB-SLAM3 prints its log on the C++ stdout; send it to stderr so stdout stays the command's own."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def vocabulary_from_run(run: Path, path: Path, camera: str | None = None, processed: bool = False) -> Path:
    """A small vocabulary (evaluation.vocabulary defaults: k 10, 3 levels) built from the frames the runner will
    track, for machines without ORBvoc.txt; seeded with the run's master seed."""
    recording = Recording.open(run)
    frames = recording.camera(choose_camera(recording, camera).name)
    images = (_frame_images(frame, "mono", processed)[0] for frame in track(frames.frames, "vocabulary"))
    return build_vocabulary(images, path, seed=recording.info.master_seed)


def _frame_images(frame: Frame, mode: str, processed: bool) -> tuple[np.ndarray, np.ndarray | None]:
    rgb = frame.processed("rgb_blur") if processed else frame.rgb()
    depth = (frame.processed("depth_noisy") if processed else frame.depth()) if mode == "rgbd" else None
    if rgb is None or (mode == "rgbd" and depth is None):
        what = "rgb_blur and depth_noisy (run `grade postprocess RUN`)" if processed else "RGB and depth"
        raise InputError(f"frame {frame.index} has no {what} images", frame.folder)
    return rgb, depth


def run_orbslam3(run: Path, out: Path, mode: str = "rgbd", camera: str | None = None,
                 vocabulary: Path | None = None, processed: bool = False,
                 right_camera: str | None = None) -> RunnerResult:
    """Run ORB-SLAM3 (`mode` rgbd, mono, mono_inertial, or stereo with `right_camera` as the pair's right
    camera) on one camera of the recording `run` and write its trajectory, settings and runner.json into `out`
    (an existing folder; the CLI holds its lock)."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}", None, "mode")
    try:
        import pyorbslam3
    except ImportError:
        raise GradeError(f"ORB-SLAM3 is not installed: it comes with the optional `slam` extra (pyorbslam3, "
                         f"GPL-3.0), installed with {INSTALL_HINT}") from None
    recording = Recording.open(run)
    config = choose_camera(recording, camera)
    frames = recording.camera(config.name)
    if len(frames) == 0:
        raise InputError(f"camera {config.name!r} recorded no frames", frames.folder)
    right, baseline = None, None
    if mode == "stereo":
        if right_camera is None:
            raise ConfigError("stereo needs the pair's right camera (--right-camera NAME)", None, "--right-camera")
        right = recording.camera(choose_camera(recording, right_camera).name)
        baseline = stereo_baseline(frames, right)
    vocabulary = resolve_vocabulary(vocabulary)
    imu_config, imu = camera_imu(recording, config, processed) if mode == "mono_inertial" else (None, None)
    imu_settings = (imu_config, imu_noise(recording, processed)) if imu_config is not None else None
    settings_path = atomic_write_text(Path(out) / SETTINGS_FILE,
                                      settings_yaml(frames, config, mode, imu_settings, baseline))
    times, poses, states, tracking = [], [], [], 0.0
    previous = -np.inf
    with _stdout_to_stderr():
        slam = pyorbslam3.Slam(vocabulary, settings_path, getattr(pyorbslam3.Sensor, MODES[mode]))
        try:
            for index, frame in enumerate(track(frames.frames, f"ORB-SLAM3 {mode} {config.name}")):
                rgb, depth = _frame_images(frame, mode, processed)
                samples = None
                if imu is not None:
                    window = (imu.time > previous) & (imu.time <= frame.time)
                    samples = np.hstack([imu.time[window, None], imu.angular_velocity[window],
                                         imu.linear_acceleration[window]])
                previous = frame.time
                clock = Stopwatch()
                if mode == "rgbd":
                    result = slam.track_rgbd(rgb, depth.astype(np.float32), frame.time)
                elif right is not None:
                    result = slam.track_stereo(rgb, _frame_images(right[index], mode, processed)[0], frame.time)
                else:
                    result = slam.track_monocular(rgb, frame.time, imu=samples)
                tracking += clock.seconds()
                states.append((frame.time, result.state.name))
                if result.pose_valid:
                    times.append(frame.time)
                    poses.append(np.asarray(result.pose_wc, dtype=np.float64))
        finally:
            slam.shutdown()
    settings = {"mode": mode, "camera": config.name, "vocabulary": str(Path(vocabulary).resolve()),
                "processed": processed, "settings_file": SETTINGS_FILE}
    if imu_config is not None:
        settings["imu"] = imu_config.name
    if right is not None:
        settings |= {"right_camera": right.name, "baseline_m": baseline}
    return finish_run(out, METHOD, run, times, poses, len(frames), tracking, settings, states)

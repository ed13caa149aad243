"""ORB-SLAM3 on a recording through pyorbslam3 (GPL-3.0: the optional `slam` extra, imported only in the runner).

The settings file (OpenCV YAML, ORB-SLAM3 1.0 `File.version: "1.0"` layout) is generated from the recording:
pinhole intrinsics and size from frames.jsonl, the camera rate from the run's config, depth as float metres
(`RGBD.DepthMapFactor: 1.0`), for `stereo` two cameras that form a rectified pair (the right one's optical frame
is the left's moved along x, same intrinsics and rate: `Stereo.T_c1_c2` holds the baseline; a `stereo:` camera's
two cameras are such a pair, taken by its name or its left camera's without --right-camera), and
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

import math
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from core.config import CameraConfig, ImuConfig
from core.config.sensors import STEREO_SIDES, stereo_name
from core.errors import ConfigError, GradeError, InputError
from core.formats.euroc import CAMERA, IMU, is_euroc, read_euroc
from core.formats.images import DEPTH_NOISY, RGB_BLUR
from core.formats.imu import ImuSeries
from core.formats.tum_rgbd import TumRgbdFrame, is_tum_rgbd, read_tum_rgbd
from core.geometry import optical_from_imu
from core.progress import track
from core.recording import Camera, Frame, Recording
from core.rundir import Stopwatch, atomic_write_text
from evaluation.runner import INSTALL_HINT, RunnerResult, finish_run
from evaluation.vocabulary import MAX_K, MAX_LEVELS, build_vocabulary
from simulation.embedded.sensors import BODY_TO_OPTICAL

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



def choose_camera(recording: Recording, camera: str | None) -> CameraConfig:
    """`camera`'s config, else the first camera of the run's config that has ground truth."""
    if camera is None:
        recorded = [c for c in recording.experiment_config().robot.sensors.cameras if c.name in recording.cameras]
        if not recorded:
            raise InputError("the recording has no camera ground truth (gt/<camera>/frames.jsonl)", recording.path)
        return recorded[0]
    recording.camera(camera)  # InputError listing the cameras when there is none of that name
    return recording.camera_config(camera)


def stereo_cameras(recording: Recording, camera: str | None, right_camera: str | None) -> tuple[str | None,
                                                                                               str | None]:
    """(left, right) for stereo: as given with --right-camera; else the pair of the `stereo:` camera named (by its
    own name or its left camera's), or with no --camera the first such pair of the run."""
    if right_camera is not None:
        return camera, right_camera
    sides = [c.stereo_side for c in recording.experiment_config().robot.sensors.cameras
             if c.stereo_side and c.stereo_side.side == STEREO_SIDES[0] and c.name in recording.cameras]
    side = next((s for s in sides if camera in (None, s.pair, stereo_name(s.pair, s.side))), None)
    if side is None:
        return camera, None
    return tuple(stereo_name(side.pair, s) for s in STEREO_SIDES)


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
    data = ", ".join(_number(v) for v in (np.asarray(matrix) + 0.0).reshape(-1))  # + 0.0: no "-0.0" entries
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


@dataclass(frozen=True)
class Feed:
    """What ORB-SLAM3 is given: the pinhole camera, the frames in time order (each loads its colour image, depth
    in metres for rgbd and the right image for stereo), and for mono_inertial the IMU readings with the IMU's
    pose in the camera (body <- optical frame), rate and noise; for stereo the baseline (m)."""

    source: Path
    camera: str
    K: np.ndarray
    width: int
    height: int
    rate_hz: float
    frames: list[tuple[float, Callable[[], tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]]]
    imu: ImuSeries | None = None
    imu_settings: tuple[str, np.ndarray, float, dict[str, float]] | None = None  # name, body <- camera, Hz, noise
    baseline: float | None = None
    right_camera: str | None = None


# ORB-SLAM3's extractor keeps a 16-pixel border (EDGE_THRESHOLD - 3) on each side of every pyramid level and
# splits the rest into round(width / height) initial nodes: a level under MIN_LEVEL_SIDE pixels, or one less than
# half as wide as it is high, makes it resize a vector by a negative size (a C++ length_error) or crash outright.
MIN_LEVEL_SIDE = 33  # measured: 117x117 runs, 160x116 and 112x120 fail (8 levels at 1.2)


def check_frame_size(feed: Feed) -> None:
    """InputError when `feed`'s frames are too small or too narrow for ORB_EXTRACTOR's pyramid (above)."""
    scale, levels = ORB_EXTRACTOR["scaleFactor"], ORB_EXTRACTOR["nLevels"]
    for level in range(levels):
        width, height = (round(side / scale**level) for side in (feed.width, feed.height))
        if min(width, height) < MIN_LEVEL_SIDE or (width - 32) < 0.5 * (height - 32):
            smallest = math.ceil((MIN_LEVEL_SIDE - 0.5) * scale ** (levels - 1))
            raise InputError(f"camera {feed.camera!r} is {feed.width}x{feed.height}: ORB-SLAM3's {levels}-level "
                             f"pyramid (scale {scale}) needs frames of at least {smallest}x{smallest} pixels and no "
                             f"more than about twice as high as wide; record, or replay (`grade replay RUN --with "
                             f"CAMERAS.yaml`), a larger camera", feed.source)


def settings_yaml(feed: Feed, mode: str) -> str:
    """The ORB-SLAM3 settings file for `feed` (OpenCV YAML, File.version 1.0). A stereo pair is written as two
    pinholes with `Stereo.T_c1_c2` (ORB-SLAM3 1.0's "Rectified" type crashes its stereo tracking; rectifying an
    already rectified pair is the identity)."""
    K = feed.K
    entries: list[tuple[str, str]] = [("File.version", '"1.0"'), ("Camera.type", '"PinHole"')]
    for index in (1, 2) if mode == "stereo" else (1,):  # a stereo pair: the same pinhole twice
        entries += [(f"Camera{index}.{name}", _number(value)) for name, value in
                    (("fx", K[0, 0]), ("fy", K[1, 1]), ("cx", K[0, 2]), ("cy", K[1, 2]))]
        entries += [(f"Camera{index}.{name}", "0.0") for name in ("k1", "k2", "p1", "p2")]  # the renderer: pinhole
    entries += [("Camera.width", str(feed.width)), ("Camera.height", str(feed.height)),
                ("Camera.fps", str(round(feed.rate_hz))), ("Camera.RGB", "1")]
    if mode == "rgbd":
        entries += [("Stereo.ThDepth", _number(CLOSE_DEPTH_BASELINES)), ("Stereo.b", _number(STEREO_BASELINE)),
                    ("RGBD.DepthMapFactor", "1.0")]
    if mode == "stereo":
        left_from_right = np.eye(4)
        left_from_right[0, 3] = feed.baseline
        entries += [("Stereo.ThDepth", _number(CLOSE_DEPTH_BASELINES)),
                    ("Stereo.T_c1_c2", _opencv_matrix(left_from_right))]
    if feed.imu_settings is not None:
        _, body_from_camera, rate_hz, noise = feed.imu_settings
        entries.append(("IMU.T_b_c1", _opencv_matrix(body_from_camera)))
        entries += [(f"IMU.{name}", _number(value)) for name, value in noise.items()]
        entries.append(("IMU.Frequency", _number(rate_hz)))
    entries += [(f"ORBextractor.{name}", str(value)) for name, value in ORB_EXTRACTOR.items()]
    entries += [(f"Viewer.{name}", _number(value)) for name, value in VIEWER.items()]
    return "%YAML:1.0\n---\n" + "".join(f"{key}: {value}\n" for key, value in entries)


def recording_feed(run: Path, mode: str, camera: str | None, processed: bool, right_camera: str | None) -> Feed:
    """The frames of one camera of a recording (module docstring), checked before ORB-SLAM3 starts."""
    recording = Recording.open(run)
    if mode == "stereo":
        camera, right_camera = stereo_cameras(recording, camera, right_camera)
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
    imu, imu_settings = None, None
    if mode == "mono_inertial":
        imu_config, imu = camera_imu(recording, config, processed)
        body_from_camera = np.linalg.inv(optical_from_imu(config.mount.translation, config.mount.rpy_deg,
                                                          imu_config.mount.translation, imu_config.mount.rpy_deg,
                                                          BODY_TO_OPTICAL))
        imu_settings = (imu_config.name, body_from_camera, imu_config.rate_hz, imu_noise(recording, processed))

    def loader(index: int) -> Callable[[], tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]:
        def load() -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
            rgb, depth = _frame_images(frames[index], mode, processed)
            return rgb, depth, _frame_images(right[index], mode, processed)[0] if right is not None else None
        return load

    first = frames[0]
    return Feed(recording.path, config.name, first.K, first.width, first.height, config.rate_hz,
                [(frame.time, loader(i)) for i, frame in enumerate(frames)], imu, imu_settings, baseline,
                right_camera)


def tum_feed(folder: Path, mode: str) -> Feed:
    """The frames of a TUM RGB-D sequence (`grade export tum`, core.formats.tum_rgbd) for rgbd or mono."""
    if mode not in ("rgbd", "mono"):
        raise ConfigError(f"a TUM RGB-D sequence feeds rgbd or mono, not {mode}", None, "--mode")
    sequence = read_tum_rgbd(folder)

    def loader(frame: TumRgbdFrame) -> Callable[[], tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]:
        def load() -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
            rgb, depth = sequence.images(frame)
            return rgb, depth if mode == "rgbd" else None, None
        return load

    return Feed(Path(folder), Path(folder).name, sequence.K, sequence.width, sequence.height, sequence.rate_hz,
                [(frame.time, loader(frame)) for frame in sequence.frames])


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
    track (a recording's camera, or a TUM RGB-D or EuRoC sequence), for machines without ORBvoc.txt; seeded
    with the run's master seed (0 for a sequence)."""
    sequence = is_tum_rgbd(run) or is_euroc(run)
    feed = _feed(Path(run), "mono", camera, processed, None)
    images = (load()[0] for _, load in track(feed.frames, "vocabulary"))
    return build_vocabulary(images, path, seed=0 if sequence else Recording.open(run).info.master_seed)


def _frame_images(frame: Frame, mode: str, processed: bool) -> tuple[np.ndarray, np.ndarray | None]:
    rgb = frame.processed(RGB_BLUR) if processed else frame.rgb()
    depth = (frame.processed(DEPTH_NOISY) if processed else frame.depth()) if mode == "rgbd" else None
    if rgb is None or (mode == "rgbd" and depth is None):
        what = f"{RGB_BLUR} and {DEPTH_NOISY} (run `grade postprocess RUN`)" if processed else "RGB and depth"
        raise InputError(f"frame {frame.index} has no {what} images", frame.folder)
    return rgb, depth


def euroc_feed(folder: Path, mode: str) -> Feed:
    """The frames (and IMU) of an EuRoC sequence (`grade export euroc` or the EuRoC MAV dataset,
    core.formats.euroc) for mono or mono_inertial; the IMU's noise from its sensor.yaml when given."""
    if mode not in ("mono", "mono_inertial"):
        raise ConfigError(f"an EuRoC sequence feeds mono or mono_inertial, not {mode}", None, "--mode")
    sequence = read_euroc(folder)
    imu_settings = None
    if mode == "mono_inertial":
        if sequence.imu is None or sequence.imu_from_camera is None or sequence.imu_rate_hz is None:
            raise InputError("mono_inertial needs mav0/imu0 with its rate_hz and the T_BS of both cam0 and imu0 (a "
                             "fixed camera-IMU transform)", folder)
        imu_settings = (IMU, sequence.imu_from_camera, sequence.imu_rate_hz, {**CLEAN_IMU_NOISE, **sequence.imu_noise})

    def loader(image: Path) -> Callable[[], tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]:
        def load() -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
            bgr = cv2.imread(str(image), cv2.IMREAD_COLOR)
            if bgr is None:
                raise InputError("not a readable image", image)
            return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB), None, None
        return load

    return Feed(Path(folder), CAMERA, sequence.K, sequence.width, sequence.height, sequence.rate_hz,
                [(time, loader(image)) for time, image in sequence.frames],
                sequence.imu if mode == "mono_inertial" else None, imu_settings)


def _feed(run: Path, mode: str, camera: str | None, processed: bool, right_camera: str | None) -> Feed:
    """A recording's camera, or a TUM RGB-D or EuRoC sequence folder."""
    if is_tum_rgbd(run):
        return tum_feed(run, mode)
    if is_euroc(run):
        return euroc_feed(run, mode)
    return recording_feed(run, mode, camera, processed, right_camera)


def run_orbslam3(run: Path, out: Path, mode: str = "rgbd", camera: str | None = None,
                 vocabulary: Path | None = None, processed: bool = False,
                 right_camera: str | None = None, build_vocabulary: bool = False) -> RunnerResult:
    """Run ORB-SLAM3 (`mode` rgbd, mono, mono_inertial, or stereo with `right_camera` as the pair's right
    camera) on one camera of the recording `run`, or on the TUM RGB-D (rgbd, mono) or EuRoC (mono,
    mono_inertial) sequence folder `run`, and write its trajectory, settings and runner.json into `out` (an
    existing folder; the CLI holds its lock). With `build_vocabulary`, the vocabulary is built from the frames
    into `out` (vocabulary_from_run) once every option is checked, so a bad one costs no build."""
    if mode not in MODES:
        raise ConfigError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}", None, "mode")
    try:
        import pyorbslam3
    except ImportError:
        raise GradeError(f"ORB-SLAM3 is not installed: it comes with the optional `slam` extra (pyorbslam3, "
                         f"GPL-3.0), installed with {INSTALL_HINT}") from None
    feed = _feed(Path(run), mode, camera, processed, right_camera)
    check_frame_size(feed)
    if build_vocabulary:
        vocabulary = vocabulary_from_run(run, Path(out) / VOCABULARY_FILE, feed.camera, processed)
    else:
        vocabulary = resolve_vocabulary(vocabulary)
    settings_path = atomic_write_text(Path(out) / SETTINGS_FILE, settings_yaml(feed, mode))
    times, poses, states, tracking = [], [], [], 0.0
    previous = -np.inf
    imu = feed.imu
    with _stdout_to_stderr():
        slam = pyorbslam3.Slam(vocabulary, settings_path, getattr(pyorbslam3.Sensor, MODES[mode]))
        try:
            for time, load in track(feed.frames, f"ORB-SLAM3 {mode} {feed.camera}"):
                rgb, depth, right = load()
                samples = None
                if imu is not None:
                    window = (imu.time > previous) & (imu.time <= time)
                    samples = np.hstack([imu.time[window, None], imu.angular_velocity[window],
                                         imu.linear_acceleration[window]])
                previous = time
                clock = Stopwatch()
                try:
                    if mode == "rgbd":
                        result = slam.track_rgbd(rgb, depth.astype(np.float32), time)
                    elif mode == "stereo":
                        result = slam.track_stereo(rgb, right, time)
                    else:
                        result = slam.track_monocular(rgb, time, imu=samples)
                except (RuntimeError, ValueError) as exc:  # a C++ exception, as pybind11 passes it on
                    raise GradeError(f"ORB-SLAM3 ({mode}) stopped on camera {feed.camera!r} at {time:.6f} s with a "
                                     f"C++ error: {exc}") from None
                tracking += clock.seconds()
                states.append((time, result.state.name))
                if result.pose_valid:
                    times.append(time)
                    poses.append(np.asarray(result.pose_wc, dtype=np.float64))
        finally:
            slam.shutdown()
    settings = {"mode": mode, "camera": feed.camera, "vocabulary": str(Path(vocabulary).resolve()),
                "processed": processed, "settings_file": SETTINGS_FILE}
    if feed.imu_settings is not None:
        settings["imu"] = feed.imu_settings[0]
    if feed.baseline is not None:
        settings |= {"right_camera": feed.right_camera, "baseline_m": feed.baseline}
    return finish_run(out, METHOD, feed.source, times, poses, len(feed.frames), tracking, settings, states)

"""SLAM metrics (evaluation.metrics) against evo on the real TUM RGB-D files, against analytic cases (known
rigid and similarity transforms, known gaps), and `grade evaluate slam` end to end on TUM files, a recording
and its ROS 1 and ROS 2 bags."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from evo.core import metrics as evo_metrics
from evo.core import sync
from evo.core.trajectory import PoseTrajectory3D
from evo.tools import file_interface
from scipy.spatial.transform import Rotation

from core.errors import InputError
from core.formats.slam_metrics import read_slam_metrics
from core.formats.tum import read_tum
from core.recording import Recording
from evaluation.metrics import associate, ate, delta_pairs, evaluate_slam, missing_time, rpe, umeyama
from evaluation.plots import ERRORS_FILE, TRAJECTORIES_FILE
from evaluation.trajectory import Trajectory, load_trajectory, write_tum
from tests.conftest import CONFIGS, run_grade

GT_FILE, ORB_FILE = "tum/freiburg1_xyz-groundtruth.txt", "tum/freiburg1_xyz-ORB_kf_mono.txt"
STATS = ("rmse", "mean", "median", "std", "min", "max")
TOLERANCE = 1e-6
MAX_DIFF = 0.02


def similarity(rotvec: tuple[float, float, float], translation: tuple[float, float, float]) -> tuple:
    return Rotation.from_rotvec(rotvec).as_matrix(), np.array(translation, dtype=np.float64)


def transformed(trajectory: Trajectory, rotation: np.ndarray, translation: np.ndarray, scale: float = 1.0,
                source: str = "") -> Trajectory:
    """Every pose mapped by x -> s R x + t (a known misalignment the metrics must undo)."""
    poses = trajectory.poses.copy()
    poses[:, :3, :3] = rotation @ poses[:, :3, :3]
    poses[:, :3, 3] = scale * trajectory.positions @ rotation.T + translation
    return Trajectory(trajectory.times, poses, source)


def evo_ape(gt_path: Path, est_path: Path, sim3: bool) -> dict[str, float]:
    reference = file_interface.read_tum_trajectory_file(str(gt_path))
    estimate = file_interface.read_tum_trajectory_file(str(est_path))
    reference, estimate = sync.associate_trajectories(reference, estimate, max_diff=MAX_DIFF)
    estimate.align(reference, correct_scale=sim3)
    metric = evo_metrics.APE(evo_metrics.PoseRelation.translation_part)
    metric.process_data((reference, estimate))
    return metric.get_all_statistics()


def assert_stats_equal(ours, theirs: dict[str, float]) -> None:
    for name in STATS:
        assert getattr(ours, name) == pytest.approx(theirs[name], abs=TOLERANCE), name


# ---------------------------------------------------------------- ATE against evo on the real TUM files


def test_se3_ate_equals_evo_for_the_ground_truth_under_a_rigid_transform(realdata, tmp_path):
    gt_path = realdata / GT_FILE
    gt = load_trajectory(gt_path)
    rotation, translation = similarity((0.3, -0.2, 1.1), (2.0, -1.0, 0.5))
    exact = write_tum(tmp_path / "exact.txt", transformed(gt, rotation, translation))
    result = ate(gt, load_trajectory(exact))
    assert result.stats.rmse < 1e-6 and result.stats.max < 1e-6  # the file keeps 9 decimals
    assert_stats_equal(result.stats, evo_ape(gt_path, exact, sim3=False))
    # Non-zero errors too: every third pose, with seeded noise, so that the comparison means something.
    rng = np.random.default_rng(16)
    every_third = Trajectory(gt.times[::3], gt.poses[::3])
    noisy = transformed(every_third, rotation, translation)
    poses = noisy.poses.copy()
    poses[:, :3, 3] += rng.normal(0.0, 0.01, size=(len(noisy), 3))
    noisy_path = write_tum(tmp_path / "noisy.txt", Trajectory(noisy.times, poses))
    result = ate(gt, load_trajectory(noisy_path))
    assert result.stats.rmse > 0.005
    assert_stats_equal(result.stats, evo_ape(gt_path, noisy_path, sim3=False))
    np.testing.assert_allclose(result.rotation, rotation.T, atol=1e-2)  # est -> gt undoes the transform


def test_sim3_ate_equals_evo_for_the_monocular_orb_keyframes(realdata):
    gt_path, est_path = realdata / GT_FILE, realdata / ORB_FILE
    result = ate(load_trajectory(gt_path), load_trajectory(est_path), sim3=True)
    assert len(result.errors) == 32 and result.scale != pytest.approx(1.0, abs=0.01)
    assert_stats_equal(result.stats, evo_ape(gt_path, est_path, sim3=True))


def test_our_association_equals_evo_on_the_real_files(realdata):
    gt, est = load_trajectory(realdata / GT_FILE), load_trajectory(realdata / ORB_FILE)
    gt_indices, est_indices = associate(gt.times, est.times, MAX_DIFF)
    theirs_est, theirs_gt = sync.matching_time_indices(est.times, gt.times, MAX_DIFF)
    assert est_indices.tolist() == theirs_est and gt_indices.tolist() == theirs_gt


# ---------------------------------------------------------------- RPE against evo


def synthetic(count: int = 200, rate: float = 10.0) -> Trajectory:
    """A smooth 3D path with turning orientation, sampled evenly from t = 100 s."""
    times = 100.0 + np.arange(count) / rate
    phase = np.linspace(0.0, 4 * np.pi, count)
    positions = np.stack([3 * np.cos(phase), 2 * np.sin(phase), 0.5 * np.sin(3 * phase)], axis=1)
    rotations = Rotation.from_euler("zyx", np.stack([phase, 0.3 * np.sin(phase), 0.2 * np.cos(2 * phase)], axis=1))
    poses = np.tile(np.eye(4), (count, 1, 1))
    poses[:, :3, :3], poses[:, :3, 3] = rotations.as_matrix(), positions
    return Trajectory(times, poses, "synthetic")


def noisy_copy(trajectory: Trajectory, seed: int, position_sigma: float, angle_sigma: float) -> Trajectory:
    rng = np.random.default_rng(seed)
    poses = trajectory.poses.copy()
    poses[:, :3, 3] += rng.normal(0.0, position_sigma, size=(len(poses), 3))
    wobble = Rotation.from_rotvec(rng.normal(0.0, angle_sigma, size=(len(poses), 3))).as_matrix()
    poses[:, :3, :3] = poses[:, :3, :3] @ wobble
    return Trajectory(trajectory.times, poses, "noisy")


def evo_trajectory(trajectory: Trajectory) -> PoseTrajectory3D:
    return PoseTrajectory3D(poses_se3=list(trajectory.poses), timestamps=trajectory.times.copy())


@pytest.mark.parametrize("sim3", [False, True])
def test_rpe_equals_evo_on_evenly_sampled_data(sim3):
    """Our delta is in seconds, evo's in frames: on poses sampled evenly at 10 Hz, and associated one to one,
    delta 1 s is delta 10 frames over every start pose (evo's all_pairs), so the two definitions coincide."""
    gt = synthetic()
    rotation, translation = similarity((0.1, 0.4, -0.7), (1.0, 2.0, 3.0))
    est = transformed(noisy_copy(gt, seed=3, position_sigma=0.02, angle_sigma=0.01), rotation, translation,
                      scale=0.4 if sim3 else 1.0)
    ours = rpe(gt, est, delta_s=1.0, sim3=sim3)
    reference, estimate = evo_trajectory(gt), evo_trajectory(est)
    estimate.align(reference, correct_scale=sim3)
    for relation, errors, stats in ((evo_metrics.PoseRelation.translation_part, ours.translation_errors,
                                     ours.translation),
                                    (evo_metrics.PoseRelation.rotation_angle_deg, ours.rotation_errors,
                                     ours.rotation)):
        metric = evo_metrics.RPE(relation, delta=10, delta_unit=evo_metrics.Unit.frames, all_pairs=True)
        metric.process_data((reference, estimate))
        np.testing.assert_allclose(errors, metric.error, atol=TOLERANCE)
        assert_stats_equal(stats, metric.get_all_statistics())
    assert len(ours.times) == len(gt) - 10


def test_rpe_pairs_skip_spans_far_from_delta_and_the_end():
    times = np.array([0.0, 0.5, 1.0, 1.5, 5.0, 5.5, 6.0, 6.5])
    first, second = delta_pairs(times, 1.0)
    # 1.0 -> 1.5 (span 0.5, off by half of delta: kept); 1.5 -> 5.0 (span 3.5) is left out, and so are
    # 6.0 and 6.5, less than 1 s before the end
    assert list(zip(first.tolist(), second.tolist(), strict=True)) == [(0, 2), (1, 3), (2, 3), (4, 6), (5, 7)]


# ---------------------------------------------------------------- analytic cases


def test_known_rigid_transform_gives_zero_ate_and_rpe():
    gt = synthetic()
    rotation, translation = similarity((0.5, 0.5, 2.0), (-3.0, 7.0, 1.0))
    result = ate(gt, transformed(gt, rotation, translation))
    assert result.stats.max < 1e-9 and result.scale == 1.0
    np.testing.assert_allclose(result.rotation.T, rotation, atol=1e-9)  # est -> gt undoes the transform
    relative = rpe(gt, transformed(gt, rotation, translation))
    assert relative.translation.max < 1e-9 and relative.rotation.max < 1e-5


def test_known_scale_gives_zero_ate_with_sim3_only():
    gt = synthetic()
    rotation, translation = similarity((-0.2, 0.9, 0.3), (0.5, 0.0, -2.0))
    scaled = transformed(gt, rotation, translation, scale=2.5)
    result = ate(gt, scaled, sim3=True)
    assert result.stats.max < 1e-9 and result.scale == pytest.approx(1 / 2.5, rel=1e-12)
    assert ate(gt, scaled, sim3=False).stats.rmse > 0.5
    assert rpe(gt, scaled, sim3=True).translation.max < 1e-9


def test_umeyama_recovers_a_similarity():
    source = synthetic(50).positions
    rotation, translation = similarity((1.0, -0.5, 0.25), (4.0, 5.0, 6.0))
    target = 0.7 * source @ rotation.T + translation
    found_rotation, found_translation, scale = umeyama(source, target, with_scale=True)
    np.testing.assert_allclose(found_rotation, rotation, atol=1e-12)
    np.testing.assert_allclose(found_translation, translation, atol=1e-12)
    assert scale == pytest.approx(0.7, rel=1e-12)
    with pytest.raises(ValueError, match="line"):
        umeyama(np.outer(np.arange(5.0), [1.0, 2.0, 3.0]), np.outer(np.arange(5.0), [1.0, 0.0, 0.0]), False)


def test_association_uses_each_sample_once_and_closest_first():
    a = np.array([0.0, 0.010, 0.020, 1.0])
    b = np.array([0.012, 0.013, 2.0])
    ia, ib = associate(a, b, max_difference=0.02)
    # 0.012 goes to 0.010 (closest pair), 0.013 then to the closest free one, 0.020; 1.0 and 2.0 stay alone
    assert ia.tolist() == [1, 2] and ib.tolist() == [0, 1]
    assert associate(a, np.array([5.0]))[0].size == 0


def test_too_few_pairs_is_an_input_error_naming_the_estimate():
    gt = synthetic()
    late = Trajectory(gt.times[:2] + 0.001, gt.poses[:2], "late.txt")
    with pytest.raises(InputError, match="late.txt"):
        ate(gt, late)


FPS = 4.0  # 1/fps = 0.25 s, exact in binary
STEP = 1 / FPS


@pytest.mark.parametrize(("times", "missing"), [
    (np.arange(0.0, 10.0 + STEP / 2, STEP), 0.0),  # every frame: gaps exactly 1/fps are not missing
    (np.arange(0.0, 10.0, STEP), 0.0),  # last estimate 1/fps before the end: not missing either
    (np.r_[np.arange(0.0, 2.0 + STEP / 2, STEP), np.arange(3.0, 10.0 + STEP / 2, STEP)], 1.0),  # a 1 s gap
    (np.r_[np.arange(0.0, 2.0 + STEP / 2, STEP), np.arange(3.0, 5.0 + STEP / 2, STEP),
           np.arange(8.0, 10.0 + STEP / 2, STEP)], 4.0),  # gaps of 1 s and 3 s
    (np.arange(2.0, 10.0 + STEP / 2, STEP), 2.0),  # tracking starts 2 s late
    (np.arange(0.0, 8.0 + STEP / 2, STEP), 2.0),  # tracking lost 2 s before the end
    (np.arange(2.0, 8.0 + STEP / 2, STEP), 4.0),  # both
    (np.arange(-5.0, 15.0, STEP), 0.0),  # estimates outside the window do not count
    (np.array([5.0]), 10.0),  # one estimate: 5 s before and 5 s after it
    (np.array([]), 10.0),  # no estimates: everything is missing
    (np.r_[np.arange(0.0, 5.0, STEP), 5.0 + 5e-6, np.arange(5.25, 10.0 + STEP / 2, STEP)], 0.0),  # jitter < 1e-5
    (np.r_[np.arange(0.0, 5.0 + STEP / 2, STEP), np.arange(5.5, 10.0 + STEP / 2, STEP)], 0.5),  # two frames lost
])
def test_missing_time_is_exact(times, missing):
    found, tracked = missing_time(times, (0.0, 10.0), FPS)
    assert found == pytest.approx(missing, abs=1e-12)
    assert tracked == pytest.approx(1 - missing / 10.0, abs=1e-12)


def test_missing_time_threshold_is_one_frame_plus_ten_microseconds():
    just_over = STEP + 2e-5
    times = np.r_[np.arange(0.0, 5.0 + STEP / 2, STEP), 5.0 + just_over + np.arange(0.0, 4.0, STEP)]
    window = (0.0, float(times[-1]))
    assert missing_time(times, window, FPS)[0] == pytest.approx(just_over, abs=1e-12)
    with pytest.raises(InputError, match="window"):
        missing_time(times, (3.0, 3.0), FPS)


def test_evaluate_slam_defaults_window_and_fps_from_the_ground_truth():
    gt = synthetic()
    est = Trajectory(np.r_[gt.times[:50], gt.times[80:]], np.concatenate([gt.poses[:50], gt.poses[80:]]), "est")
    metrics = evaluate_slam(gt, est)
    assert metrics.window == (gt.times[0], gt.times[-1]) and metrics.fps == pytest.approx(10.0)
    assert metrics.missing_time_s == pytest.approx(gt.times[80] - gt.times[49], abs=1e-9)
    assert metrics.ate.max < 1e-9 and metrics.alignment == "se3" and metrics.pairs == 170
    assert metrics.gt == "synthetic" and metrics.est == "est"


def test_trajectory_rejects_times_that_do_not_increase():
    gt = synthetic(5)
    with pytest.raises(InputError, match="increase"):
        Trajectory(gt.times[::-1], gt.poses, "reversed.txt")


# ---------------------------------------------------------------- the CLI and the readers


def test_cli_on_the_tum_files_writes_metrics_that_read_back(realdata, tmp_path):
    out = tmp_path / "eval"
    result = run_grade("evaluate", "slam", "--gt", str(realdata / GT_FILE), "--est", str(realdata / ORB_FILE),
                       "--sim3", "--fps", "30", "--out", str(out))
    assert result.returncode == 0, result.stderr + result.stdout
    assert "ATE rmse" in result.stdout
    metrics = read_slam_metrics(out)
    direct = evaluate_slam(load_trajectory(realdata / GT_FILE), load_trajectory(realdata / ORB_FILE), sim3=True,
                           fps=30.0)
    assert metrics.model_dump() == direct.model_dump()
    assert metrics.alignment == "sim3" and metrics.pairs == 32 and metrics.rpe is not None
    assert (out / TRAJECTORIES_FILE).read_bytes()[:4] == b"\x89PNG" and (out / ERRORS_FILE).stat().st_size > 0


def test_cli_bad_inputs_exit_2_naming_the_file(realdata, tmp_path):
    gt = str(realdata / GT_FILE)
    malformed = tmp_path / "malformed.txt"
    malformed.write_text("# comment\n1.0 0 0 0 0 0 0 1\n2.0 0 0 zero 0 0 0 1\n")
    far = tmp_path / "far.txt"
    times, poses = read_tum(realdata / ORB_FILE)
    write_tum(far, Trajectory(times + 1000.0, poses))
    missing = tmp_path / "absent.txt"
    for est, expected in ((missing, "absent.txt"), (malformed, "line 3"), (far, "far.txt")):
        result = run_grade("evaluate", "slam", "--gt", gt, "--est", str(est))
        assert result.returncode == 2, result.stderr + result.stdout
        assert str(est) in result.stderr and expected in result.stderr
        assert "Traceback" not in result.stderr


@pytest.fixture(scope="module")
def recording(tmp_path_factory, asset_cache) -> Path:
    out = tmp_path_factory.mktemp("evaluation") / "run"
    overrides = ["simulation.duration=1.0", "simulation.bootstrap=0.25", "humans.count={min: 0, max: 0}",
                 "flying_objects.count={min: 0, max: 0}", "robot.sensors.cameras.0.width=32",
                 "robot.sensors.cameras.0.height=24", "robot.sensors.cameras.0.outputs=[rgb]",
                 "recording.bag_formats=[ros1, ros2]",
                 # A turn on the spot: the camera, ahead of the body, draws an arc (a straight line leaves the
                 # alignment's rotation about it undetermined).
                 "exploration.initial_turn_deg=360",
                 "robot.sensors.lidar={name: lidar, channels: 4, horizontal_resolution_deg: 10, rate_hz: 10}",
                 f"assets_dir={asset_cache}"]
    args = ["generate", str(CONFIGS / "demo.yaml"), "--out", str(out)]
    for override in overrides:
        args += ["--set", override]
    result = run_grade(*args)
    assert result.returncode == 0, result.stderr + result.stdout
    return out


@pytest.mark.slow
def test_recording_and_its_bags_give_the_same_camera_trajectory(recording, tmp_path):
    run = Recording.open(recording)
    camera = load_trajectory(recording)
    times, poses = run.camera(run.cameras[0]).poses()
    np.testing.assert_array_equal(camera.times, times)
    np.testing.assert_array_equal(camera.poses, poses)
    lidar = load_trajectory(recording, camera="lidar")
    sweeps = list(run.lidar("lidar"))
    np.testing.assert_array_equal(lidar.times, [s.time for s in sweeps])
    np.testing.assert_array_equal(lidar.poses, [s.pose for s in sweeps])
    for bag in (*run.bags().ros1, *run.bags().ros2):
        from_bag = load_trajectory(bag)  # the first PoseStamped topic: /camera/pose, world <- optical frame
        assert "/camera/pose" in from_bag.source
        result = ate(camera, from_bag)
        assert result.stats.max < 1e-6 and len(result.errors) == len(camera)
        odometry = load_trajectory(bag, topic="/odom")
        assert len(odometry) > len(camera)
        with pytest.raises(InputError, match="/nope"):
            load_trajectory(bag, topic="/nope")
    with pytest.raises(InputError, match="no camera or LiDAR 'nope'"):
        load_trajectory(recording, camera="nope")
    out = tmp_path / "eval"
    result = run_grade("evaluate", "slam", "--gt", str(recording), "--est", str(run.bags().ros2[0]), "--out", str(out))
    assert result.returncode == 0, result.stderr + result.stdout
    metrics = read_slam_metrics(out)
    assert metrics.tracked_fraction == 1.0 and metrics.ate.max < 1e-6
    result = run_grade("evaluate", "slam", "--gt", str(recording), "--est", str(run.bags().ros1[0]), "--est-topic",
                       "/nope")
    assert result.returncode == 2 and str(run.bags().ros1[0]) in result.stderr and "/nope" in result.stderr

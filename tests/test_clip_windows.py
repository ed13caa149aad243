"""Windows of long SMPL-family clips (humans.window): the real CMU 01_01 walk cut to the least-sweep window,
checked against a brute-force sweep over every window computed from the numpy SMPL forward pass; split
windows tile the clip and each package holds exactly its frames; random windows are seeded; CLOTH3D garments
follow the body's window."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import pdist
from smpl_fixtures import build_body_model, save_npz, write_cloth3d_sample

from asset_converters.smpl import convert_cloth3d, convert_sequence, forward, load_body_model, sequence_jobs
from asset_converters.smpl.windows import window_range
from core.assets.animation import load_animation
from core.config import ClipWindowConfig
from core.formats.asset_meta import load_meta
from core.geometry import Y_UP_TO_Z_UP

CMU_WALK = "amass/cmu_01_01_smpl_poses.npz"  # 241 frames at 30 fps, Y up, walks 3.6 m
FPS = 30.0
TOL = 1e-6  # m


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("body_models")
    save_npz(build_body_model(), folder / "SMPL_NEUTRAL.npz")
    return folder


def clip_joints(realdata: Path, model_dir: Path) -> np.ndarray:
    """World joints (N, 24, 3) of the whole walk at its own 30 fps, from the SMPL forward pass (not the rig)."""
    data = np.load(realdata / CMU_WALK)
    model = load_body_model(model_dir / "SMPL_NEUTRAL.npz")
    _, joints = forward(model, None, np.asarray(data["poses"], np.float64), data["trans"], pose_correctives=False)
    return joints @ Y_UP_TO_Z_UP.T


def brute_sweeps(joints: np.ndarray, length: int) -> np.ndarray:
    """Every window's largest horizontal distance between any two joints of any two of its frames."""
    return np.array([pdist(joints[s : s + length, :, :2].reshape(-1, 2)).max()
                     for s in range(len(joints) - length + 1)])


def test_default_window_of_the_real_walk_has_the_least_sweep(realdata, model_dir, tmp_path):
    window = ClipWindowConfig()  # the default: least_sweep
    joints = clip_joints(realdata, model_dir)
    length = round(window.duration * FPS)
    sweeps = brute_sweeps(joints, length)
    whole = pdist(joints[:, :, :2].reshape(-1, 2)).max()
    out = convert_sequence(realdata / CMU_WALK, tmp_path / "walk", model_dir, fps=FPS)
    meta = load_meta(out)
    start, stop = meta.source.options["frames"]
    assert stop - start == length == meta.animation.frame_count
    assert sweeps[start] == pytest.approx(sweeps.min(), abs=TOL)
    # The package holds exactly those frames: its joints are the forward pass's over the window.
    packaged = np.load(out / "animation.npz")["joint_positions"]
    np.testing.assert_allclose(packaged, joints[start:stop], atol=1e-5)
    assert pdist(packaged[:, :, :2].reshape(-1, 2)).max() == pytest.approx(sweeps.min(), abs=1e-5)
    assert whole > 3.5 and sweeps.min() < whole / 3  # a walk of metres becomes a clip that fits in a room
    print(f"CMU 01_01 sweep: whole clip {whole:.2f} m, least-sweep {window.duration:g} s window {sweeps.min():.2f} m "
          f"(frames {start}-{stop}), largest {window.duration:g} s window {sweeps.max():.2f} m")


def test_split_windows_tile_the_clip_and_hold_their_frames(realdata, model_dir, tmp_path):
    fps, window = 10.0, ClipWindowConfig(select="split", duration=2.0, max_windows=8)
    jobs = sequence_jobs(realdata / CMU_WALK, tmp_path / "out", model_dir, fps=fps, window=window)
    frames = int((241 - 1) / 30 * fps) + 1  # 81 frames at 10 fps
    length = round(window.duration * fps)
    assert [j.out.name for j in jobs] == [f"cmu_01_01_smpl_poses_w{i:02d}" for i in range(frames // length)]
    joints = clip_joints(realdata, model_dir)[::3]  # 30 -> 10 fps keeps every third frame exactly
    ranges = []
    for job in jobs:
        job.run(job.out, job.input_hash)
        start, stop = load_meta(job.out).source.options["frames"]
        ranges.append((start, stop))
        np.testing.assert_allclose(np.load(job.out / "animation.npz")["joint_positions"], joints[start:stop],
                                   atol=1e-5)
    assert ranges[0][0] == 0 and ranges[-1][1] == frames  # from the first frame to the last
    assert all(stop - start == length for start, stop in ranges)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))  # consecutive, no overlap
    capped = ClipWindowConfig(select="split", duration=2.0, max_windows=2)
    assert len(sequence_jobs(realdata / CMU_WALK, tmp_path / "capped", model_dir, fps=fps, window=capped)) == 2


def test_random_window_is_drawn_from_the_seed_and_the_name():
    window, frames, fps = ClipWindowConfig(select="random", duration=1.0), 241, 30.0

    def start(seed: int, name: str) -> int:
        a, b = window_range(window, 0, frames, fps, lambda: pytest.fail("random needs no joints"), seed, name)
        assert b - a == 30 and 0 <= a and b <= frames
        return a

    assert start(3, "walk") == start(3, "walk")
    assert len({start(seed, "walk") for seed in range(20)}) > 10
    assert len({start(3, f"walk{i}") for i in range(20)}) > 10
    # A clip no longer than the window is used whole, whatever the choice.
    assert window_range(window, 0, 20, fps, lambda: None, 3, "short") == (0, 20)


def test_cloth3d_garments_follow_the_body_window(tmp_path, model_dir):
    sample = write_cloth3d_sample(tmp_path / "sample", frames=12)
    whole = convert_cloth3d(tmp_path / "sample", tmp_path / "whole", model_dir,
                            window=ClipWindowConfig(select="whole"))
    window = ClipWindowConfig(select="split", duration=4 / 30, max_windows=3)
    out = convert_cloth3d(tmp_path / "sample", tmp_path / "part", model_dir, window=window, window_index=1)
    start, stop = load_meta(out).source.options["frames"]
    assert (start, stop) == (4, 8) and len(sample["points"]) == 12
    full, part = load_animation(whole), load_animation(out)
    for a, b in zip(full.point_caches, part.point_caches):  # body and skirt
        np.testing.assert_allclose(b.points, a.points[start:stop], atol=TOL)

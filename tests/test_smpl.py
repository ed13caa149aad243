"""SMPL-family sequences -> animated packages: the numpy body model against analytic truth and against smplx
(stored reference output), both real AMASS / SMPL samples converted with a synthetic model and checked through pxr,
model files (npz and chumpy-style pickles), the missing-model message, bad inputs and the CLI batch."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import trimesh
from conftest import run_grade
from pxr import Usd, UsdGeom, UsdSkel
from scipy.spatial.transform import Rotation, Slerp
from smpl_fixtures import build_model, model_digest, save_chumpy_pickle, save_npz

from asset_converters.animated import TRACE_TOLERANCE
from asset_converters.smpl import convert_sequence, forward, load_body_model, read_sequence
from asset_converters.smpl.body_model import SMPL_JOINT_NAMES, find_body_model
from asset_converters.smpl.sequences import MotionSequence, detected_up, resample
from core.assets.usd_read import get_semantic_label, read_meshes
from core.config import ClipWindowConfig
from core.errors import ExitCode, InputError
from core.formats.asset_meta import load_meta
from core.formats.manifest import StageStatus, stage_status
from core.geometry import Y_UP_TO_Z_UP
from core.seeding import generator

AMASS = "amass/dmpl_sample.npz"
CMU = "amass/cmu_01_01_smpl_poses.npz"
TOL = 1e-4  # float32 points in USD
LEFT_ELBOW = SMPL_JOINT_NAMES.index("left_elbow")
SMPL_REFERENCE = Path(__file__).parent / "data" / "smpl_reference.npz"
WHOLE_CLIP = ClipWindowConfig(select="whole")
SMPLX_TOLERANCE = 1e-5  # m; the gap is ~1e-7 m (smplx adds 1e-8 to every rotation angle)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("body_models")
    save_npz(build_model(), folder / "SMPL_NEUTRAL.npz")
    return folder


@pytest.fixture(scope="module")
def model(model_dir):
    return load_body_model(model_dir / "SMPL_NEUTRAL.npz")


def lbs_expected(model, seq_path: Path, fps: float, correctives: bool):
    """Independent expectation for an AMASS (SMPL-H) file: scipy Slerp per body joint at the target times,
    flat hands, then the numpy forward pass."""
    data = np.load(seq_path)
    poses = np.asarray(data["poses"], dtype=np.float64).reshape(len(data["poses"]), -1, 3)
    source_fps = float(data["mocap_framerate"] if "mocap_framerate" in data else data["fps"])
    n = len(poses)
    src_t = np.arange(n) / source_fps
    count = int(np.floor((n - 1) / source_fps * fps + 1e-6)) + 1
    t = np.minimum(np.arange(count) / fps, src_t[-1])
    body = np.stack([Slerp(src_t, Rotation.from_rotvec(poses[:, j]))(t).as_rotvec() for j in range(22)], axis=1)
    fitted = np.concatenate([body, np.zeros((count, 2, 3))], axis=1)
    trans = np.stack([np.interp(t, src_t, data["trans"][:, k]) for k in range(3)], axis=1)
    betas = data.get("betas")
    vertices, joints = forward(model, betas, fitted, trans, pose_correctives=correctives)
    return vertices, joints, trans, count


# ---------------------------------------------------------------- the body model


def test_zero_pose_and_betas_give_the_template(model):
    vertices, joints = forward(model, np.zeros(10), np.zeros((1, 24, 3)), np.zeros((1, 3)))
    np.testing.assert_allclose(vertices[0], model.v_template, atol=1e-12)
    np.testing.assert_allclose(joints[0], model.J_regressor @ model.v_template, atol=1e-12)


def test_single_joint_rotation_moves_only_its_weighted_vertices(model):
    subtree = [LEFT_ELBOW] + [j for j in range(24) if model.parents[j] == LEFT_ELBOW]
    subtree += [j for j in range(24) if model.parents[j] in subtree[1:]]
    poses = np.zeros((1, 24, 3))
    poses[0, LEFT_ELBOW] = [0.0, 0.0, np.pi / 2]
    vertices, joints = forward(model, None, poses, np.zeros((1, 3)), pose_correctives=False)
    on_subtree = model.weights[:, subtree].sum(axis=1)
    still, rigid = on_subtree == 0, on_subtree > 1 - 1e-12
    assert still.sum() > 50 and rigid.sum() > 5
    np.testing.assert_allclose(vertices[0, still], model.v_template[still], atol=1e-12)
    elbow = (model.J_regressor @ model.v_template)[LEFT_ELBOW]
    rotated = (model.v_template[rigid] - elbow) @ Rotation.from_rotvec([0, 0, np.pi / 2]).as_matrix().T + elbow
    np.testing.assert_allclose(vertices[0, rigid], rotated, atol=1e-12)
    np.testing.assert_allclose(joints[0, LEFT_ELBOW], elbow, atol=1e-12)


def test_pose_correctives_add_posedirs_times_rotation_features(model):
    poses = np.zeros((1, 24, 3))
    poses[0, 5] = [0.3, -0.2, 0.1]  # right knee
    full, _ = forward(model, None, poses, np.zeros((1, 3)), pose_correctives=True)
    plain, _ = forward(model, None, poses, np.zeros((1, 3)), pose_correctives=False)
    feature = np.zeros((23, 3, 3))
    feature[4] = Rotation.from_rotvec(poses[0, 5]).as_matrix() - np.eye(3)
    offsets = model.posedirs @ feature.reshape(-1)
    # Vertices that do not follow the knee (zero weight on it or its children) get the offset unrotated.
    below = [5, 8, 11]
    free = model.weights[:, below].sum(axis=1) == 0
    np.testing.assert_allclose(full[0, free] - plain[0, free], offsets[free], atol=1e-12)
    assert np.abs(offsets).max() > 1e-4


def test_numpy_forward_matches_smplx_reference(model):
    """smplx's own vertices and joints for this synthetic model (tests/data/make_smpl_reference.py, run once
    with torch) against the numpy forward pass: two bodies, three random poses and translations each."""
    reference = np.load(SMPL_REFERENCE)
    # The digest is of the model's exact bits, which may differ in the last place between machines (numpy picks
    # SIMD code for exp and friends by CPU), so a different digest only explains a mismatch: it does not fail.
    hint = ("" if str(reference["model_digest"]) == model_digest(build_model()) else
            "build_model's arrays differ from those the reference was made from (in the last bits on another "
            "CPU, or build_model changed: then rerun tests/data/make_smpl_reference.py)")
    for body in range(len(reference["betas"])):
        vertices, joints = forward(model, reference["betas"][body], reference["poses"][body], reference["trans"][body])
        np.testing.assert_allclose(vertices, reference["vertices"][body], rtol=0, atol=SMPLX_TOLERANCE, err_msg=hint)
        np.testing.assert_allclose(joints, reference["joints"][body], rtol=0, atol=SMPLX_TOLERANCE, err_msg=hint)
    assert np.ptp(reference["vertices"], axis=(1, 2)).min() > 0.1  # the poses do move the body


def test_chumpy_pickle_loads_without_chumpy_like_the_npz(tmp_path, model):
    arrays = build_model()
    pkl = save_chumpy_pickle(arrays, tmp_path / "basicModel_f_lbs_10_207_0_v1.0.0.pkl")
    assert b"chumpy.ch" in pkl.read_bytes() and b"csc_matrix" in pkl.read_bytes()
    loaded = load_body_model(pkl)
    for field in ("v_template", "faces", "shapedirs", "posedirs", "J_regressor", "weights", "parents"):
        np.testing.assert_array_equal(getattr(loaded, field), getattr(model, field), err_msg=field)
    assert find_body_model(tmp_path, ["smpl"], "female") == pkl  # the official v1.0 file name


class _Calls:
    """A pickle that would call a function when loaded; the restricted Unpickler must refuse it."""

    def __reduce__(self):
        return (Path.cwd, ())


def test_model_pickle_refuses_anything_but_arrays(tmp_path):
    path = tmp_path / "SMPL_NEUTRAL.pkl"
    path.write_bytes(pickle.dumps({"v_template": _Calls()}, protocol=2))
    with pytest.raises(InputError, match="refusing"):
        load_body_model(path)


def test_body_model_with_wrong_shapes_is_rejected(tmp_path):
    arrays = build_model()
    bad_arrays = {"posedirs": arrays["posedirs"][:, :, :200], "weights": arrays["weights"][:, :20],
                  "J_regressor": arrays["J_regressor"][:, :-1], "kintree_table": arrays["kintree_table"][:, :23]}
    for field, bad in bad_arrays.items():
        path = save_npz(arrays | {field: bad}, tmp_path / field / "SMPL_NEUTRAL.npz")
        with pytest.raises(InputError) as err:
            load_body_model(path)
        assert err.value.field == field and err.value.file == str(path)


# ---------------------------------------------------------------- real sequences through pxr


@pytest.mark.slow
def test_amass_skeleton_package_matches_numpy_lbs(realdata, model_dir, model, tmp_path):
    source = realdata / AMASS
    out = convert_sequence(source, tmp_path / "amass", model_dir, fps=30, representation="skeleton")
    vertices, joints, trans, count = lbs_expected(model, source, 30, correctives=False)
    assert count == int(np.floor((235 - 1) / float(np.load(source)["mocap_framerate"]) * 30)) + 1 == 59
    assert stage_status(out) is StageStatus.COMPLETE

    stage = Usd.Stage.Open(str(out / "asset.usdc"))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    assert stage.GetTimeCodesPerSecond() == 30.0
    animation = UsdSkel.Animation(stage.GetPrimAtPath("/asset/amass/animation"))
    assert len(animation.GetRotationsAttr().GetTimeSamples()) == count
    assert len(animation.GetTranslationsAttr().GetTimeSamples()) == count
    skeleton = UsdSkel.Skeleton(stage.GetPrimAtPath("/asset/amass/skeleton"))
    assert list(skeleton.GetJointNamesAttr().Get()) == SMPL_JOINT_NAMES
    body = stage.GetPrimAtPath("/asset/amass/body")
    assert UsdSkel.BindingAPI(body).GetSkeletonRel().GetTargets() == [skeleton.GetPath()]
    assert get_semantic_label(body) == "person"
    # The bind pose is the shaped rest pose stood upright in the Z-up world.
    bind = np.array([np.array(m).T for m in skeleton.GetBindTransformsAttr().Get()])
    rest_joints = model.J_regressor @ (model.v_template + model.shapedirs @ np.load(source)["betas"][:10])
    np.testing.assert_allclose(bind[:, :3, 3], rest_joints @ Y_UP_TO_Z_UP.T, atol=1e-9)

    for frame in (0, 29, count - 1):
        usd = read_meshes(out / "asset.usdc", time=frame)[0].vertices
        np.testing.assert_allclose(usd, vertices[frame], atol=TOL)
    meta = load_meta(out)
    assert meta.animation.frame_count == count and meta.animation.representation == "skeleton"
    assert meta.semantic_labels == {"/asset/amass": "person"}
    np.testing.assert_allclose(meta.animation.root_trajectory, trans + rest_joints[0], atol=1e-9)
    assert np.ptp(np.array(meta.animation.root_trajectory)[:, 2]) < 0.5  # Z up: the pelvis height barely changes
    npz = np.load(out / "animation.npz")
    np.testing.assert_allclose(npz["joint_positions"], joints, atol=TOL)
    assert (joints[:, SMPL_JOINT_NAMES.index("head"), 2] > joints[:, 0, 2]).all()  # upright in Z

    trace = trimesh.load(out / "trace.stl")
    assert (trace.nearest.signed_distance(vertices.reshape(-1, 3)) > -TRACE_TOLERANCE - 1e-9).all()


def test_amass_points_package_includes_pose_correctives(realdata, model_dir, model, tmp_path):
    source = realdata / AMASS
    out = convert_sequence(source, tmp_path / "amass_points", model_dir, fps=10, representation="points")
    full, _, _, count = lbs_expected(model, source, 10, correctives=True)
    plain, _, _, _ = lbs_expected(model, source, 10, correctives=False)
    assert count == 20
    stage = Usd.Stage.Open(str(out / "asset.usdc"))
    points = UsdGeom.Mesh(stage.GetPrimAtPath("/asset/amass_points/body")).GetPointsAttr()
    assert len(points.GetTimeSamples()) == count
    for frame in (0, count - 1):
        usd = read_meshes(out / "asset.usdc", time=frame)[0].vertices
        np.testing.assert_allclose(usd, full[frame], atol=TOL)
        assert np.abs(usd - plain[frame]).max() > 10 * TOL  # the correctives are really there
    assert load_meta(out).animation.representation == "points"


def test_plain_smpl_y_up_sequence_comes_out_z_up_and_resampled(realdata, model_dir, model, tmp_path):
    source = realdata / CMU
    out = convert_sequence(source, tmp_path / "cmu", model_dir, fps=5, window=WHOLE_CLIP)
    data = np.load(source)
    count = int(np.floor((241 - 1) / 30 * 5)) + 1
    meta = load_meta(out)
    assert meta.animation.frame_count == count == 41
    assert meta.source.options["up_resolved"] == "y" and meta.source.dataset == "smpl"
    # 30 -> 5 fps picks every sixth source frame exactly; Y-up data is rotated to Z-up.
    rest_pelvis = (model.J_regressor @ model.v_template)[0]
    expected_root = (data["trans"][::6].astype(np.float64) + rest_pelvis) @ Y_UP_TO_Z_UP.T
    np.testing.assert_allclose(meta.animation.root_trajectory, expected_root, atol=1e-6)
    poses = np.asarray(data["poses"][::6], dtype=np.float64)
    vertices, _ = forward(model, None, poses, data["trans"][::6], pose_correctives=False)
    for frame in (0, count - 1):
        usd = read_meshes(out / "asset.usdc", time=frame)[0].vertices
        np.testing.assert_allclose(usd, vertices[frame] @ Y_UP_TO_Z_UP.T, atol=TOL)
    world_joints = np.load(out / "animation.npz")["joint_positions"]
    assert (world_joints[:, SMPL_JOINT_NAMES.index("head"), 2] - world_joints[:, 0, 2] > 0.3).all()


def test_up_axis_of_the_real_samples_is_detected(realdata):
    assert detected_up(read_sequence(realdata / AMASS).poses) == "z"
    assert detected_up(read_sequence(realdata / CMU).poses) == "y"


def test_amass_with_smplh_model_keeps_all_52_joints(realdata, tmp_path):
    folder = tmp_path / "models"
    save_npz(build_model(joints=52), folder / "smplh" / "female" / "model.npz")  # AMASS's own layout
    out = convert_sequence(realdata / AMASS, tmp_path / "amass_h", folder, fps=10)
    meta = load_meta(out)
    assert len(meta.animation.joint_names) == 52 and meta.source.options["body_model"] == "model.npz"
    smplh = load_body_model(folder / "smplh" / "female" / "model.npz")
    seq = resample(read_sequence(realdata / AMASS), 10)
    vertices, _ = forward(smplh, seq.betas, seq.poses, seq.trans, pose_correctives=False)
    np.testing.assert_allclose(read_meshes(out / "asset.usdc", time=5)[0].vertices, vertices[5], atol=TOL)


# ---------------------------------------------------------------- resampling


def test_resampling_slerps_rotations_and_lerps_translations():
    poses = np.zeros((2, 24, 3))
    poses[1, 0] = [0.0, 0.0, np.pi / 2]
    poses[1, 3] = [np.pi / 3, 0.0, 0.0]
    seq = MotionSequence(Path("x.npz"), "smpl", poses, np.array([[0.0, 0, 0], [1.0, 2.0, 0]]), fps=1.0)
    half = resample(seq, 4.0)
    assert half.frame_count == 5 and half.fps == 4.0
    np.testing.assert_allclose(half.poses[2, 0], [0, 0, np.pi / 4], atol=1e-12)
    np.testing.assert_allclose(half.poses[1, 3], [np.pi / 12, 0, 0], atol=1e-12)
    np.testing.assert_allclose(half.trans[3], [0.75, 1.5, 0], atol=1e-12)
    np.testing.assert_array_equal(half.poses[4], poses[1])


# ---------------------------------------------------------------- errors


def test_missing_body_model_says_which_files_and_where(realdata, tmp_path):
    empty = tmp_path / "models"
    empty.mkdir()
    with pytest.raises(InputError) as err:
        convert_sequence(realdata / AMASS, tmp_path / "out", empty)
    message = str(err.value)
    for name in ("smplh_female.npz", "smpl_female.pkl", "basicmodel_f_lbs_*.pkl", "smpl_neutral.npz", str(empty),
                 "smpl.is.tue.mpg.de"):
        assert name in message
    assert not (tmp_path / "out").exists()


def write_sequence(path: Path, **arrays) -> Path:
    base = {"poses": np.zeros((4, 72)), "trans": np.zeros((4, 3)), "fps": np.array(30)}
    np.savez(path, **{k: v for k, v in (base | arrays).items() if v is not None})
    return path


@pytest.mark.parametrize("arrays, field", [
    ({"poses": None}, "poses"),
    ({"poses": np.zeros((4, 70))}, "poses"),
    ({"trans": np.zeros((3, 3))}, "trans"),
    ({"poses": np.where(np.arange(72) == 5, np.nan, 0.0)[None].repeat(4, 0)}, "poses"),
    ({"fps": None}, "fps"),
])
def test_bad_sequences_raise_naming_file_and_field(tmp_path, model_dir, arrays, field):
    path = write_sequence(tmp_path / "bad.npz", **arrays)
    with pytest.raises(InputError) as err:
        convert_sequence(path, tmp_path / "out", model_dir)
    assert err.value.field == field and err.value.file == str(path)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_cli_batch_reports_bad_files_converts_the_rest_and_skips_on_rerun(tmp_path, model_dir):
    folder = tmp_path / "seqs"
    folder.mkdir()
    rng = generator(1, "tests/smpl/cli")
    write_sequence(folder / "good.npz", poses=rng.normal(0, 0.2, (4, 72)), trans=np.zeros((4, 3)))
    write_sequence(folder / "bad.npz", poses=None)
    np.savez(folder / "shape.npz", betas=np.zeros(16))  # AMASS subject shape file: not a sequence
    args = ("convert", "smpl", str(folder), "--body-model", str(model_dir), "--out", str(tmp_path / "out"))
    first = run_grade(*args)
    assert first.returncode == ExitCode.CONVERT_FAILURES, first.stderr
    assert "converted 1" in first.stderr and "failed 1" in first.stderr
    assert "bad.npz" in first.stderr and "poses" in first.stderr
    assert stage_status(tmp_path / "out" / "good") is StageStatus.COMPLETE
    assert not (tmp_path / "out" / "bad").exists() and not (tmp_path / "out" / "shape").exists()
    (folder / "bad.npz").unlink()
    second = run_grade(*args)
    assert second.returncode == 0 and "skipped 1" in second.stderr, second.stderr


@pytest.mark.slow
def test_cli_missing_model_exits_2(tmp_path, realdata):
    result = run_grade("convert", "smpl", str(realdata / AMASS), "--body-model", str(tmp_path), "--out",
                       str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "SMPL-family body model" in result.stderr

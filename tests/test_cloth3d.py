"""CLOTH3D: the PC2 / pc16 point-cache reader against files written with the documented header layout,
and a synthetic sample (info.mat + garment OBJ + pc16) converted with a synthetic SMPL model and
checked through pxr against the starter kit's placement rule (world = zrot @ (p + trans))."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pxr import Usd, UsdGeom
from smpl_fixtures import build_model, save_npz, write_cloth3d_sample, write_pc2

from asset_converters.batch import run_jobs
from asset_converters.smpl import cloth3d_jobs, convert_cloth3d, forward, load_body_model, read_point_cache
from asset_converters.smpl.body_model import SMPL_JOINT_NAMES
from core.assets.usd_read import read_meshes
from core.errors import InputError
from core.formats.asset_meta import load_meta
from core.seeding import generator

FRAMES = 6
TOL = 1e-4  # float32 points in USD


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("body_models")
    save_npz(build_model(), folder / "smpl" / "SMPL_MALE.npz")
    return folder


def zrot_matrix(angle: float) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# ---------------------------------------------------------------- point caches


@pytest.mark.parametrize("suffix, float16", [(".pc16", True), (".pc2", False)])
def test_point_cache_round_trip(tmp_path, suffix, float16):
    points = generator(0, "tests/cloth3d/pc").normal(0.0, 1.0, size=(5, 7, 3))
    path = tmp_path / f"garment{suffix}"
    write_pc2(path, points, float16=float16, start_frame=2.0, sample_rate=0.5)
    assert path.stat().st_size == 32 + 5 * 7 * 3 * (2 if float16 else 4)
    cache = read_point_cache(path)
    expected = points.astype(np.float16 if float16 else np.float32)
    np.testing.assert_array_equal(cache.points, expected.astype(np.float32))
    assert (cache.start_frame, cache.sample_rate) == (2.0, 0.5)


def test_point_cache_errors_name_file_and_field(tmp_path):
    path = tmp_path / "g.pc16"
    write_pc2(path, np.zeros((3, 4, 3)), float16=True)
    path.write_bytes(path.read_bytes()[:-2])
    with pytest.raises(InputError) as err:
        read_point_cache(path)
    assert err.value.field == "numSamples" and err.value.file == str(path)
    path.write_bytes(b"POINTCACHE3\0" + bytes(100))
    with pytest.raises(InputError, match="signature"):
        read_point_cache(path)


# ---------------------------------------------------------------- samples


def test_cloth3d_sample_body_and_garment_through_pxr(tmp_path, model_dir):
    sample = write_cloth3d_sample(tmp_path / "00001", frames=FRAMES)
    out = convert_cloth3d(tmp_path / "00001", tmp_path / "out" / "00001", model_dir)
    stage = Usd.Stage.Open(str(out / "asset.usdc"))
    assert UsdGeom.GetStageUpAxis(stage) == UsdGeom.Tokens.z
    skirt = UsdGeom.Mesh(stage.GetPrimAtPath("/asset/_00001/Skirt"))
    assert len(skirt.GetPointsAttr().GetTimeSamples()) == FRAMES
    assert len(skirt.GetFaceVertexCountsAttr().Get()) == 2 * len(sample["quads"])  # quads triangulated

    info, zrot = sample["info"], zrot_matrix(sample["info"]["zrot"])
    trans = info["trans"].T
    cached = sample["points"].astype(np.float16).astype(np.float64)
    model = load_body_model(model_dir / "smpl" / "SMPL_MALE.npz")  # gender 1 = male
    rest_pelvis = (model.J_regressor @ (model.v_template + model.shapedirs @ info["shape"]))[0]
    body, _ = forward(model, info["shape"], info["poses"].T.reshape(FRAMES, 24, 3), trans - rest_pelvis)
    for frame in (0, FRAMES - 1):
        meshes = {m.prim_path.rsplit("/", 1)[1]: m for m in read_meshes(out / "asset.usdc", time=frame)}
        assert len(meshes["Skirt"].vertices) == len(sample["rest"])
        np.testing.assert_allclose(meshes["Skirt"].vertices, (cached[frame] + trans[frame]) @ zrot.T, atol=TOL)
        np.testing.assert_allclose(meshes["body"].vertices, body[frame] @ zrot.T, atol=TOL)
        assert meshes["Skirt"].base_color == pytest.approx((0.2, 0.4, 0.6))
        assert meshes["body"].semantic_label == meshes["Skirt"].semantic_label == "person"
    meta = load_meta(out)
    assert meta.animation.frame_count == FRAMES and meta.animation.representation == "points"
    assert meta.animation.joint_names == SMPL_JOINT_NAMES
    np.testing.assert_allclose(meta.animation.root_trajectory, trans @ zrot.T, atol=1e-9)  # root joint at trans
    assert meta.source.options["garments"] == ["Skirt"]


def test_cloth3d_resampling_lerps_garments(tmp_path, model_dir):
    sample = write_cloth3d_sample(tmp_path / "s", frames=FRAMES)
    out = convert_cloth3d(tmp_path / "s", tmp_path / "out", model_dir, fps=20)
    count = int(np.floor((FRAMES - 1) / 30 * 20)) + 1
    assert load_meta(out).animation.frame_count == count == 4
    zrot, trans = zrot_matrix(sample["info"]["zrot"]), sample["info"]["trans"].T
    cached = sample["points"].astype(np.float16).astype(np.float64)
    # Target frame 1 is source frame 1.5: halfway between frames 1 and 2.
    expected = ((cached[1] + cached[2]) / 2 + (trans[1] + trans[2]) / 2) @ zrot.T
    skirt = next(m for m in read_meshes(out / "asset.usdc", time=1) if m.prim_path.endswith("Skirt"))
    np.testing.assert_allclose(skirt.vertices, expected, atol=TOL)


def test_bad_cloth3d_samples_raise_and_write_nothing(tmp_path, model_dir):
    folder = tmp_path / "bad"
    write_cloth3d_sample(folder, frames=FRAMES)
    write_pc2(folder / "Skirt.pc16", np.zeros((FRAMES, 5, 3)), float16=True)
    with pytest.raises(InputError) as err:
        convert_cloth3d(folder, tmp_path / "out", model_dir)
    assert err.value.field == "numPoints" and err.value.file == str(folder / "Skirt.pc16")
    write_pc2(folder / "Skirt.pc16", np.zeros((FRAMES + 1, 48, 3)), float16=True)
    with pytest.raises(InputError, match="frames"):
        convert_cloth3d(folder, tmp_path / "out", model_dir)
    (folder / "Skirt.obj").unlink()
    with pytest.raises(InputError) as err:
        convert_cloth3d(folder, tmp_path / "out", model_dir)
    assert err.value.file == str(folder / "Skirt.obj")
    assert not (tmp_path / "out").exists()


def test_cloth3d_batch_continues_past_bad_samples_and_skips_done_ones(tmp_path, model_dir):
    root = tmp_path / "train"
    write_cloth3d_sample(root / "good", frames=3)
    (root / "broken").mkdir(parents=True)
    (root / "broken" / "info.mat").write_bytes(b"not a mat file")
    first = run_jobs(cloth3d_jobs(root, tmp_path / "out", model_dir), "CLOTH3D")
    assert [p.name for p in first.converted] == ["good"]
    assert [(p.name, "info.mat" in message) for p, message in first.failed] == [("broken", True)]
    second = run_jobs(cloth3d_jobs(root / "good", tmp_path / "out", model_dir), "CLOTH3D")
    assert [p.name for p in second.skipped] == ["good"] and not second.converted

"""GSO models and generic mesh files -> object / environment packages, checked through pxr and trimesh."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest
import trimesh
from conftest import run_grade
from PIL import Image

from asset_converters.batch import run_jobs
from asset_converters.gso import convert_gso, gso_jobs, gso_label
from asset_converters.mesh import MeshOptions, convert_mesh_file, mesh_jobs
from core.assets.usd_read import read_meshes
from core.errors import ExitCode, InputError
from core.formats.asset_meta import load_meta

# A 0.1 x 0.06 x 0.2 m box standing on z = 0; every corner has its own texture coordinate.
BOX_CORNERS = np.array([[x, y, z] for x in (-0.05, 0.05) for y in (-0.03, 0.03) for z in (0.0, 0.2)])
BOX_UVS = np.array([[0.1 * i, 1.0 - 0.11 * i] for i in range(8)])


def box_faces() -> np.ndarray:
    hull = trimesh.Trimesh(BOX_CORNERS, process=False).convex_hull
    # Map the hull's vertices back to our corner order so that faces index BOX_CORNERS.
    index = [int(np.argmin(np.linalg.norm(BOX_CORNERS - v, axis=1))) for v in hull.vertices]
    return np.array(index)[hull.faces]


def write_gso_model(folder, name="Threshold_Porcelain_Coffee_Mug_White", texture=True, obj=True):
    """A GSO-style model as Gazebo Fuel ships it: the MTL names texture.png, which lives in materials/."""
    (folder / "meshes").mkdir(parents=True)
    (folder / "materials" / "textures").mkdir(parents=True)
    if obj:
        lines = ["mtllib model.mtl", "usemtl material_0"]
        lines += [f"v {x} {y} {z}" for x, y, z in BOX_CORNERS] + [f"vt {u} {v}" for u, v in BOX_UVS]
        lines += [f"f {a + 1}/{a + 1} {b + 1}/{b + 1} {c + 1}/{c + 1}" for a, b, c in box_faces()]
        (folder / "meshes" / "model.obj").write_text("\n".join(lines) + "\n")
    (folder / "meshes" / "model.mtl").write_text("newmtl material_0\nKd 1 1 1\nmap_Kd texture.png\n")
    if texture:
        pixels = np.arange(4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 3) * 5
        Image.fromarray(pixels).save(folder / "materials" / "textures" / "texture.png")
    (folder / "model.config").write_text(
        f"<?xml version='1.0'?><model><name>{name}</name><version>1.0</version>"
        "<sdf version='1.6'>model.sdf</sdf><description>A white porcelain mug.</description></model>")
    (folder / "model.sdf").write_text(
        "<?xml version='1.0'?><sdf version='1.6'><model name='m'><link name='l'><visual name='v'><geometry><mesh>"
        "<uri>meshes/model.obj</uri></mesh></geometry></visual></link></model></sdf>")
    return folder


def zip_folder(folder, archive, top="Mug"):
    with zipfile.ZipFile(archive, "w") as zf:
        for file in sorted(folder.rglob("*")):
            if file.is_file():
                zf.write(file, f"{top}/{file.relative_to(folder).as_posix()}")
    return archive


def assert_textured_box(package, texture_file):
    meta = load_meta(package)
    assert meta.kind == "object" and meta.source.dataset == "gso"
    assert set(meta.semantic_labels.values()) == {"cup"}
    np.testing.assert_allclose(meta.object.extents, [0.1, 0.06, 0.2], atol=1e-6)  # Z up, metres, unchanged
    copied = sorted((package / "textures").iterdir())
    assert len(copied) == 1 and copied[0].read_bytes() == texture_file.read_bytes()
    [mesh] = read_meshes(package / "asset.usdc")
    assert mesh.texture is not None and mesh.texture.name == copied[0].name
    assert mesh.semantic_label == "cup"
    for vertex, uv in zip(mesh.vertices, mesh.uvs):
        corner = int(np.argmin(np.linalg.norm(BOX_CORNERS - vertex, axis=1)))
        np.testing.assert_allclose(vertex, BOX_CORNERS[corner], atol=1e-6)
        np.testing.assert_allclose(uv, BOX_UVS[corner], atol=1e-6)
    hull = trimesh.load(package / "collision.stl")
    assert hull.is_convex and hull.volume == pytest.approx(0.1 * 0.06 * 0.2, rel=1e-4)


def test_gso_folder_and_zip_convert_with_texture_uvs_label_and_skip(tmp_path):
    model = write_gso_model(tmp_path / "src" / "Mug")
    zip_folder(model, tmp_path / "src" / "MugZip.zip")
    result = run_jobs(gso_jobs(tmp_path / "src", tmp_path / "out"), "gso")
    assert sorted(p.name for p in result.converted) == ["Mug", "MugZip"] and not result.failed
    texture = model / "materials" / "textures" / "texture.png"
    assert_textured_box(tmp_path / "out" / "Mug", texture)
    assert_textured_box(tmp_path / "out" / "MugZip", texture)
    again = run_jobs(gso_jobs(tmp_path / "src", tmp_path / "out"), "gso")
    assert len(again.skipped) == 2 and not again.converted


def test_gso_label_sources(tmp_path):
    model = write_gso_model(tmp_path / "Nike_Air_Zoom", name="Nike_Air_Zoom_Pegasus_Running_Shoes")
    assert gso_label(model, model.name) == "shoe"  # "Shoes" in the name, plural
    assert gso_label(model, model.name, "sneaker") == "sneaker"  # --label wins
    (model / "model.config").unlink()
    assert gso_label(model, model.name) == "nike_air_zoom"  # the folder name


def test_gso_bad_inputs_raise_and_write_nothing(tmp_path):
    no_obj = write_gso_model(tmp_path / "NoObj", obj=False)
    with pytest.raises(InputError, match="meshes/model.obj"):
        convert_gso(no_obj, tmp_path / "out" / "a", "h")
    no_texture = write_gso_model(tmp_path / "NoTex", texture=False)
    with pytest.raises(InputError, match="texture not found"):
        convert_gso(no_texture, tmp_path / "out" / "b", "h")
    empty_zip = tmp_path / "empty.zip"
    with zipfile.ZipFile(empty_zip, "w") as zf:
        zf.writestr("readme.txt", "no model here")
    with pytest.raises(InputError, match="holds no model"):
        convert_gso(empty_zip, tmp_path / "out" / "c", "h")
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../escape.txt", "outside")
    with pytest.raises(InputError, match="outside the extraction folder") as info:
        convert_gso(evil, tmp_path / "out" / "d", "h")
    assert info.value.field == "../escape.txt" and str(evil) in str(info.value)
    not_zip = tmp_path / "broken.zip"
    not_zip.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(InputError, match="not a readable zip"):
        convert_gso(not_zip, tmp_path / "out" / "e", "h")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "escape.txt").exists()
    # In a batch the bad models are reported and the good one still converts.
    good = write_gso_model(tmp_path / "batch" / "Mug")
    (tmp_path / "batch" / "NoObj").mkdir()
    (no_obj / "model.config").rename(tmp_path / "batch" / "NoObj" / "model.config")
    result = run_jobs(gso_jobs(good.parent, tmp_path / "out2"), "gso")
    assert [p.name for p in result.converted] == ["Mug"]
    assert len(result.failed) == 1 and "model.obj" in result.failed[0][1]


@pytest.mark.parametrize("suffix", [".obj", ".ply", ".stl"])
def test_z_up_mesh_files_keep_their_bounds(tmp_path, suffix):
    box = trimesh.creation.box(extents=(0.4, 0.2, 0.6))
    box.apply_translation((1.0, 2.0, 0.3))
    path = tmp_path / f"crate{suffix}"
    box.export(path)
    out = convert_mesh_file(path, tmp_path / "crate", "h", MeshOptions(scale=2.0))
    meta = load_meta(out)
    assert meta.kind == "object" and set(meta.semantic_labels.values()) == {"crate"}
    np.testing.assert_allclose(meta.object.extents, [0.8, 0.4, 1.2], atol=1e-6)
    np.testing.assert_allclose(meta.object.center, [2.0, 4.0, 0.6], atol=1e-6)
    [mesh] = read_meshes(out / "asset.usdc")
    np.testing.assert_allclose(mesh.vertices.min(axis=0), [1.6, 3.8, 0.0], atol=1e-6)


def test_y_up_glb_scene_keeps_each_geometry_with_its_texture(tmp_path):
    box = trimesh.creation.box(extents=(1.0, 2.0, 3.0))  # in the GLB: 2 m along Y = up
    uvs = (np.arange(2 * len(box.vertices)).reshape(-1, 2) * 0.37) % 1.0  # distinct, deterministic
    texture = Image.fromarray(np.full((4, 4, 3), (10, 200, 30), dtype=np.uint8))
    box.visual = trimesh.visual.TextureVisuals(uv=uvs, image=texture)
    ball = trimesh.creation.icosphere(subdivisions=1, radius=0.5)
    ball.visual.face_colors = (200, 20, 20, 255)
    ball.apply_translation((3.0, 0.0, 0.0))
    path = tmp_path / "scene.glb"
    trimesh.Scene({"box": box, "ball": ball}).export(path)

    out = convert_mesh_file(path, tmp_path / "scene", "h", MeshOptions(label="clutter"))
    meshes = {m.prim_path.rsplit("/", 1)[1]: m for m in read_meshes(out / "asset.usdc")}
    assert set(meshes) == {"box", "ball"}
    # Y up -> Z up: (x, y, z) -> (x, -z, y), so the box is 1 x 3 x 2 and the ball moved along x only.
    np.testing.assert_allclose(np.ptp(meshes["box"].vertices, axis=0), [1.0, 3.0, 2.0], atol=1e-6)
    np.testing.assert_allclose(meshes["ball"].vertices.mean(axis=0), [3.0, 0.0, 0.0], atol=1e-6)
    assert meshes["box"].texture is not None and meshes["ball"].texture is None
    assert np.array(Image.open(meshes["box"].texture))[0, 0].tolist() == [10, 200, 30]
    assert meshes["ball"].base_color == pytest.approx((200 / 255, 20 / 255, 20 / 255), abs=1e-6)
    for vertex, uv in zip(meshes["box"].vertices, meshes["box"].uvs):
        source = np.array([vertex[0], vertex[2], -vertex[1]])  # back to the GLB's Y-up frame
        matches = np.flatnonzero(np.linalg.norm(box.vertices - source, axis=1) < 1e-6)
        assert any(np.allclose(uv, uvs[i], atol=1e-6) for i in matches)
    assert {m.semantic_label for m in meshes.values()} == {"clutter"}


def room_obj(path):
    """A 4 x 3 m floor at z = 0 with a table, one wall and a small stray ledge below the floor."""
    floor = trimesh.Trimesh([[0, 0, 0], [4, 0, 0], [4, 3, 0], [0, 3, 0]], [[0, 1, 2], [0, 2, 3]])
    table = trimesh.creation.box(extents=(1.0, 0.6, 0.75))
    table.apply_translation((2.0, 1.5, 0.375))
    wall = trimesh.creation.box(extents=(4.0, 0.1, 2.5))
    wall.apply_translation((2.0, -0.05, 1.25))
    ledge = trimesh.creation.box(extents=(0.1, 0.1, 0.02))
    ledge.apply_translation((0.5, -0.5, -0.4))
    trimesh.util.concatenate([floor, table, wall, ledge]).export(path)
    return path


def test_environment_floor_heuristic_and_floor_label(tmp_path):
    path = room_obj(tmp_path / "room.obj")
    out = convert_mesh_file(path, tmp_path / "room", "h", MeshOptions(kind="environment"))
    env = load_meta(out).environment
    assert env.floor_height == pytest.approx(0.0)
    # The floor plus the table top? No: the table top is up-facing but 0.75 m above the floor band.
    assert env.floor_area == pytest.approx(4 * 3, abs=1e-6)
    labels = {m.semantic_label for m in read_meshes(out / "asset.usdc")}
    assert labels == {"floor", "room"}
    with pytest.raises(InputError, match="no geometry named 'ground'") as info:
        convert_mesh_file(path, tmp_path / "room2", "h", MeshOptions(kind="environment", floor_label="ground"))
    assert info.value.field == "floor_label"
    assert not (tmp_path / "room2").exists()


def test_mesh_bad_inputs(tmp_path):
    empty = tmp_path / "empty.obj"
    empty.write_text("# nothing\n")
    with pytest.raises(InputError, match="no triangles"):
        convert_mesh_file(empty, tmp_path / "a", "h", MeshOptions())
    flat = tmp_path / "flat.stl"
    trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]]).export(flat)
    with pytest.raises(InputError, match="degenerate"):
        convert_mesh_file(flat, tmp_path / "b", "h", MeshOptions())
    with pytest.raises(InputError, match="needs a skinned glTF"):
        convert_mesh_file(flat, tmp_path / "c", "h", MeshOptions(kind="animated"))
    (tmp_path / "notes.txt").write_text("not a mesh")
    with pytest.raises(InputError, match="unsupported"):
        mesh_jobs(tmp_path / "notes.txt", tmp_path / "out", MeshOptions())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.obj", "flat.stl", "notes.txt"]


@pytest.mark.slow
def test_cli_convert_gso_and_mesh(tmp_path):
    write_gso_model(tmp_path / "Mug")
    result = run_grade("convert", "gso", str(tmp_path / "Mug"), "--out", str(tmp_path / "out"), "--label", "mug")
    assert result.returncode == 0, result.stderr
    assert set(load_meta(tmp_path / "out" / "Mug").semantic_labels.values()) == {"mug"}
    (tmp_path / "files").mkdir()
    trimesh.creation.box(extents=(1, 2, 3)).export(tmp_path / "files" / "box.glb")
    (tmp_path / "files" / "bad.stl").write_bytes(b"solid x\nendsolid x\n")
    result = run_grade("convert", "mesh", str(tmp_path / "files"), "--out", str(tmp_path / "meshes"), "--up", "z")
    assert result.returncode == ExitCode.CONVERT_FAILURES  # one failure reported, the rest converted
    assert "bad.stl" in result.stderr.replace("\n", "")
    np.testing.assert_allclose(load_meta(tmp_path / "meshes" / "box").object.extents, [1, 2, 3], atol=1e-6)
    missing = run_grade("convert", "gso", str(tmp_path / "nothing"), "--out", str(tmp_path / "o"))
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr

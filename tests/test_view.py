"""`grade view`: contact sheets, trajectory and IMU plots and the Rerun export of a synthetic recording
whose content is known pixel by pixel, plus the errors a broken recording must give."""

from __future__ import annotations

import io
import json
import shutil
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
import trimesh
from PIL import Image

from asset_converters.environment import write_environment_package
from core.assets.parts import SceneMesh
from core.errors import GradeError, InputError
from core.figures import figure_png
from core.formats.asset_meta import SourceInfo
from core.formats.frames import Box2D
from core.formats.instances import InstanceEntry, Instances
from core.formats.manifest import write_manifest
from core.formats.placement import (
    AnimationSchedule,
    EnvironmentRef,
    PlacedHuman,
    Placement,
    PlacementParameters,
    RobotStart,
    RobotVolume,
    write_placement,
)
from core.formats.run_info import RunInfo, write_run_info
from core.formats.states import STATES_SCHEMA, load_robot_path
from core.recording import Recording
from postprocess.backdrop import read_map_backdrop
from postprocess.cli import view_command
from postprocess.contact_sheet import (
    GAP_PX,
    HEADER_PX,
    MISSING_RGB,
    PANEL_MAX_WIDTH,
    ROW_BAND_PX,
    TITLE_PX,
    FrameImages,
    SheetRow,
    colorize_depth,
    id_palette,
    panel_origin,
    pixel_bounds,
    render_contact_sheet,
)
from postprocess.plots import imu_figure, trajectory_figure
from postprocess.view import select_frames, view_run
from tests.rrd_columns import rrd_columns

W, H = 64, 48
FRAMES = 3
FRAME_DT = 0.1  # s between camera frames
BOX_SHIFT = 4  # px the box moves right per frame
BOX = (10, 12, 29, 31)  # x_min, y_min, x_max, y_max of frame 0, inclusive
BACKGROUND_RGB = (50, 50, 50)
BOX_RGB = (200, 30, 30)
CHAIR_INSTANCE, CHAIR_CLASS = 3, 2
HIDDEN_INSTANCE, HIDDEN_CLASS = 4, 5  # listed with an empty box: must not be drawn
NO_RETURN_ROWS = 4  # the top rows of every depth image have no return
NEAR_MM, FAR_MM = 1000, 2000
ROOM = (4.0, 3.0)
HUMAN_XY = (1.0, 2.5)
STEPS = 50
IMU_SAMPLES = 40
SHEET_COLUMNS = 4
NS = 1e-9  # s per ns


# ---------------------------------------------------------------- the synthetic recording


def box_of(frame: int) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = BOX
    return x0 + BOX_SHIFT * frame, y0, x1 + BOX_SHIFT * frame, y1


def write_camera(folder: Path, frames: int) -> None:
    for kind in ("rgb", "depth", "instance", "semantic"):
        (folder / kind).mkdir(parents=True)
    lines = []
    for frame in range(frames):
        x0, y0, x1, y1 = box_of(frame)
        rgb = np.full((H, W, 3), BACKGROUND_RGB, np.uint8)
        rgb[y0:y1 + 1, x0:x1 + 1] = BOX_RGB
        depth = np.full((H, W), FAR_MM, np.uint16)
        depth[y0:y1 + 1, x0:x1 + 1] = NEAR_MM
        depth[:NO_RETURN_ROWS] = 0
        instance = np.zeros((H, W), np.uint16)
        instance[y0:y1 + 1, x0:x1 + 1] = CHAIR_INSTANCE
        semantic = np.where(instance == CHAIR_INSTANCE, CHAIR_CLASS, 0).astype(np.uint16)
        name = f"{frame:06d}.png"
        cv2.imwrite(str(folder / "rgb" / name), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
        for kind, image in (("depth", depth), ("instance", instance), ("semantic", semantic)):
            cv2.imwrite(str(folder / kind / name), image)
        pose = np.eye(4)
        pose[:3, :3] = [[0, 0, 1], [-1, 0, 0], [0, -1, 0]]  # optical z along world +x
        pose[:3, 3] = (0.5 + frame * 0.5, 1.0, 1.2)
        boxes = [{"instance_id": CHAIR_INSTANCE, "semanticId": CHAIR_CLASS, "x_min": x0, "y_min": y0, "x_max": x1,
                  "y_max": y1, "occlusionRatio": 0.25},
                 {"instance_id": HIDDEN_INSTANCE, "semanticId": HIDDEN_CLASS, "x_min": 0, "y_min": 0, "x_max": -1,
                  "y_max": -1, "occlusionRatio": 1.0}]
        lines.append(json.dumps({
            "frame": frame, "time": round(1.0 + frame * FRAME_DT, 6), "pose": pose.tolist(),
            "K": [[50.0, 0, W / 2], [0, 50.0, H / 2], [0, 0, 1]], "width": W, "height": H, "near": 0.1, "far": 20.0,
            "files": {kind: f"{kind}/{name}" for kind in ("rgb", "depth", "instance", "semantic")},
            "boxes_2d_tight": boxes, "boxes_2d_loose": boxes, "boxes_3d": []}))
    (folder / "frames.jsonl").write_text("".join(line + "\n" for line in lines))
    (folder / "instances.json").write_text(json.dumps({
        "schema": "grade.instances/1",
        "instances": {str(CHAIR_INSTANCE): {"prim_path": "/World/chair", "semantic_class": "chair",
                                            "semantic_id": CHAIR_CLASS, "asset_id": "chair", "kind": "object"},
                      str(HIDDEN_INSTANCE): {"prim_path": "/World/cup", "semantic_class": "cup",
                                             "semantic_id": HIDDEN_CLASS, "asset_id": "env", "kind": "environment"}},
        "semantic_classes": {"chair": CHAIR_CLASS, "cup": HIDDEN_CLASS}}))


def environment_package(folder: Path) -> Path:
    """A real environment package (floor + a table), so occupancy.npz is the converter's own."""
    sx, sy = ROOM
    table = trimesh.creation.box(extents=(0.6, 0.6, 1.0))
    table.apply_translation((2.5, 1.5, 0.5))
    floor = SceneMesh("floor", np.array([(0, 0, 0), (sx, 0, 0), (sx, sy, 0), (0, sy, 0)], float),
                      [[0, 1, 2], [0, 2, 3]], "floor", "architecture", is_floor=True)
    return write_environment_package([floor, SceneMesh("table", table.vertices, table.faces, "table")], [],
                                     folder, SourceInfo(dataset="test"), "room")


def robot_states(end: tuple[float, float] = (3.5, 2.5)) -> dict[str, np.ndarray]:
    s = np.linspace(0.0, 1.0, STEPS)
    position = np.stack([0.5 + s * (end[0] - 0.5), 1.0 + s * (end[1] - 1.0), np.zeros(STEPS)], axis=1)
    yaw = np.pi / 2  # wxyz of a 90 deg turn about z: (cos 45, 0, 0, sin 45)
    quat = np.tile([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)], (STEPS, 1))
    return {"schema": np.array(STATES_SCHEMA), "time": np.linspace(0.0, 2.0, STEPS), "robot_position": position,
            "robot_quat_wxyz": quat}


def write_run(run: Path, assets: Path, status: str = "complete", frames: int = FRAMES) -> Path:
    write_run_info(run, RunInfo(name="synthetic", status=status, backend="embedded", master_seed=7, config={}))
    write_camera(run / "gt" / "front", frames)
    np.savez(run / "states.npz", **robot_states())
    t = np.linspace(0.0, 2.0, IMU_SAMPLES)
    imu = {}
    for name in ("body_imu", "camera_imu"):
        imu |= {f"{name}.time": t, f"{name}.linear_acceleration": np.stack([np.sin(t), np.cos(t), 9.81 + 0 * t], 1),
                f"{name}.angular_velocity": np.stack([0 * t, 0 * t, 0.1 * t], 1)}
    np.savez(run / "gt" / "imu.npz", **imu)
    placement = Placement(
        seed=0, environment=EnvironmentRef(id="room", path=str(assets)),
        parameters=PlacementParameters(human_count_range=(1, 1), human_candidates=1, max_tries=1, contact_threshold=1,
                                       human_contact_threshold=1, flying_count_range=(0, 0), flying_candidates=0,
                                       flying_collision_check=False),
        humans=[PlacedHuman(asset_id="walker", asset_path=str(assets), x=HUMAN_XY[0], y=HUMAN_XY[1], z=0.0, yaw=0.0,
                            animation=AnimationSchedule(start=0.0, clip_end=1.0, period=1.0, reverse=False),
                            contacts=0, tries=1)],
        rejected_humans=[], flying_objects=[], rejected_flying_objects=[],
        robot=RobotStart(kind="tiago_omni", x=0.5, y=1.0, z=0.0, yaw=0.0,
                         volume=RobotVolume(shape="cylinder", extents=(0.6, 0.6, 1.2)), heading_clearance=1.0, tries=1),
    )
    write_placement(placement, run / "scene" / "placement.json")
    write_manifest(run, "record", "synthetic", include=("gt", "states.npz", "run.json"))
    return run


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    return environment_package(tmp_path_factory.mktemp("assets") / "room")


@pytest.fixture
def run(tmp_path, assets) -> Path:
    return write_run(tmp_path / "run", assets)


def read_rgb(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


# ---------------------------------------------------------------- contact sheet


def test_frame_selection_spreads_evenly_and_keeps_both_ends():
    assert select_frames(10, 6) == [0, 2, 4, 5, 7, 9]
    assert select_frames(3, 6) == [0, 1, 2]
    assert select_frames(7, 2) == [0, 6]
    assert select_frames(0, 6) == []


@pytest.mark.slow
def test_contact_sheet_layout_boxes_and_panels(run, tmp_path):
    out = tmp_path / "view"
    result = view_run(run, frames=2, out=out)
    assert result.warnings == []
    assert sorted(p.name for p in result.written) == ["contact_sheet_front.png", "imu.png", "trajectory.png"]
    sheet = read_rgb(out / "contact_sheet_front.png")
    rows = 2
    assert sheet.shape == (TITLE_PX + HEADER_PX + rows * (ROW_BAND_PX + H + GAP_PX),
                           GAP_PX + SHEET_COLUMNS * (W + GAP_PX), 3)

    chair = id_palette("semantic")[CHAIR_CLASS]
    turbo = cv2.cvtColor(cv2.applyColorMap(np.array([[0, 255]], np.uint8), cv2.COLORMAP_TURBO), cv2.COLOR_BGR2RGB)[0]
    for row, frame in enumerate((0, FRAMES - 1)):  # 2 of 3 frames: the first and the last
        x0, y0, x1, y1 = box_of(frame)
        px, py = panel_origin(row, 0, W, H)
        rgb = sheet[py:py + H, px:px + W]
        # The outline lies exactly on the inclusive bounds: the pixels just inside keep the box's colour,
        # the pixels just outside the background's.
        outline = np.concatenate([rgb[y0, x0:x1 + 1], rgb[y1, x0:x1 + 1], rgb[y0:y1 + 1, x0], rgb[y0:y1 + 1, x1]])
        assert (outline == chair).all(), frame
        assert (rgb[y0 + 1:y1, x0 + 1:x1] == BOX_RGB).all()
        assert (rgb[y0 + 1:y1, x0 - 1] == BACKGROUND_RGB).all() and (rgb[y0 + 1:y1, x1 + 1] == BACKGROUND_RGB).all()
        assert (rgb[y1 + 1:, :] == BACKGROUND_RGB).all()  # nothing drawn below the box
        # The empty box of the hidden cup is not drawn anywhere.
        assert not (rgb == id_palette("semantic")[HIDDEN_CLASS]).all(axis=2).any()
        assert (rgb[:y0 - 1] != BACKGROUND_RGB).any(axis=2).any()  # the caption sits above the box

        px, py = panel_origin(row, 1, W, H)
        depth = sheet[py:py + H, px:px + W]
        assert (depth[:NO_RETURN_ROWS] == 0).all()  # no return: black
        assert (depth[y0:y1 + 1, x0:x1 + 1] == turbo[0]).all()  # nearest return: the start of the colour map
        assert (depth[NO_RETURN_ROWS:y0] == turbo[1]).all()  # farthest return: its end

        px, py = panel_origin(row, 2, W, H)
        instance = sheet[py:py + H, px:px + W]
        assert (instance[y0:y1 + 1, x0:x1 + 1] == id_palette("instance")[CHAIR_INSTANCE]).all()
        assert (instance[:y0] == 0).all()
        px, py = panel_origin(row, 3, W, H)
        assert (sheet[py + y0:py + y1 + 1, px + x0:px + x1 + 1] == chair).all()
        assert (sheet[py:py + y0, px:px + W] == 0).all()


@pytest.mark.slow
def test_environment_boxes_are_drawn_only_on_request(run, tmp_path):
    instances = json.loads((run / "gt" / "front" / "instances.json").read_text())
    instances["instances"][str(CHAIR_INSTANCE)]["kind"] = "environment"  # the chair as part of the house
    folder = tmp_path / "environment_chair"
    shutil.copytree(run, folder)
    (folder / "gt" / "front" / "instances.json").write_text(json.dumps(instances))
    chair = id_palette("semantic")[CHAIR_CLASS]
    x0, y0, x1, _ = box_of(0)
    for all_boxes, drawn in ((False, False), (True, True)):
        view_run(folder, frames=1, out=tmp_path / f"view{all_boxes}", all_boxes=all_boxes)
        sheet = read_rgb(tmp_path / f"view{all_boxes}" / "contact_sheet_front.png")
        px, py = panel_origin(0, 0, W, H)
        outline = sheet[py + y0, px + x0:px + x1 + 1]
        assert bool((outline == chair).all()) is drawn
        assert drawn or (outline == BOX_RGB).all()


def test_wide_cameras_are_scaled_down_with_their_boxes():
    width, height, scale = 2 * PANEL_MAX_WIDTH, 2 * 360, 0.5
    x0, y0, x1, y1 = 100, 200, 299, 399  # inclusive: 200 px -> 100 px
    rgb = np.zeros((height, width, 3), np.uint8)
    box = Box2D(instance_id=1, semanticId=CHAIR_CLASS, x_min=x0, y_min=y0, x_max=x1, y_max=y1, occlusionRatio=0.0)
    assert pixel_bounds(box, scale, scale) == (50, 100, 149, 199)
    row = SheetRow(frame=0, time=0.0, width=width, height=height, images=FrameImages(rgb, None, None, None),
                   boxes=[box])
    chair_entry = InstanceEntry(prim_path="/World/chair", semantic_class="chair", semantic_id=CHAIR_CLASS,
                                asset_id="chair", kind="object")
    sheet = render_contact_sheet([row], Instances(instances={1: chair_entry}, semantic_classes={}), "wide")
    assert sheet.shape[1] == GAP_PX + SHEET_COLUMNS * (PANEL_MAX_WIDTH + GAP_PX)
    px, py = panel_origin(0, 0, PANEL_MAX_WIDTH, 360)
    panel = sheet[py:py + 360, px:px + PANEL_MAX_WIDTH]
    chair = id_palette("semantic")[CHAIR_CLASS]
    assert (panel[100, 50:150] == chair).all() and (panel[100:200, 149] == chair).all()
    assert (panel[101:199, 51:149] == 0).all()
    px, py = panel_origin(0, 1, PANEL_MAX_WIDTH, 360)
    assert (sheet[py:py + 360, px:px + PANEL_MAX_WIDTH] == MISSING_RGB).mean() > 0.9  # "no depth" panel


def test_depth_colours_ignore_no_return_and_ids_have_fixed_colours():
    depth = np.array([[0.0, 1.0, 3.0]], np.float32)
    rgb = colorize_depth(depth, 1.0, 3.0)
    assert (rgb[0, 0] == 0).all() and (rgb[0, 1] != rgb[0, 2]).any()
    palette = id_palette("instance")
    assert palette.shape == (1 << 16, 3) and (palette[0] == 0).all() and (palette[1:].min(axis=1) > 0).all()
    assert len({tuple(c) for c in palette[1:200]}) == 199  # neighbouring ids are told apart
    assert (palette != id_palette("semantic")).any()


# ---------------------------------------------------------------- plots


def colour_at(image: np.ndarray, figure, xy: tuple[float, float]) -> np.ndarray:
    """The PNG's colour at world point `xy`, through the plot's own data -> display transform."""
    u, v = figure.axes[0].transData.transform(xy)
    return image[image.shape[0] - 1 - int(v), int(u)]


def test_trajectory_map_sits_at_its_world_coordinates(run):
    robot, layout = load_robot_path(run / "states.npz"), read_map_backdrop(run)
    figure = trajectory_figure(robot, layout, {}, "t")
    image = np.asarray(Image.open(io.BytesIO(figure_png(figure))).convert("RGB"))
    table, free, outside = (2.5, 1.5), (3.5, 0.5), (-0.3, 1.5)  # table centre; a free floor point; off the floor
    assert (colour_at(image, figure, table) == (105, 105, 105)).all()  # dimgray: occupied
    assert (colour_at(image, figure, free) == 255).all()
    assert (colour_at(image, figure, outside) == (211, 211, 211)).all()  # lightgray
    # Transposing map2d by mistake would put the table at (1.5, 2.5): that point must be free floor.
    assert (colour_at(image, figure, (1.5, 2.5)) == 255).all()
    middle = robot.position[STEPS // 2, :2]
    assert (colour_at(image, figure, tuple(middle)) == (31, 119, 180)).all()  # tab:blue path


@pytest.mark.slow
def test_trajectory_plot_follows_the_trajectory(run, tmp_path):
    first = view_run(run, out=tmp_path / "a")
    image = read_rgb(tmp_path / "a" / "trajectory.png")
    assert image.shape == (800, 800, 3)
    dark = (np.abs(image.astype(int) - (105, 105, 105)).sum(axis=2) < 10)  # dimgray: the table's occupied cells
    assert dark.sum() > 100
    again = view_run(run, out=tmp_path / "b")
    assert (tmp_path / "a" / "trajectory.png").read_bytes() == (tmp_path / "b" / "trajectory.png").read_bytes()

    np.savez(run / "states.npz", **robot_states(end=(3.5, 0.5)))
    view_run(run, out=tmp_path / "c")
    changed = read_rgb(tmp_path / "c" / "trajectory.png")
    assert changed.shape == image.shape
    assert (changed != image).any(axis=2).sum() > 200
    assert len(first.written) == len(again.written) == 3


@pytest.mark.slow
def test_imu_plot_has_a_row_per_imu(run, tmp_path):
    view_run(run, out=tmp_path / "view")
    assert read_rgb(tmp_path / "view" / "imu.png").shape == (600, 1200, 3)  # 2 IMUs x 3 in, 12 in wide, 100 dpi


def test_imu_plot_draws_the_recorded_series(run):
    """The plotted lines are the arrays in gt/imu.npz (read here with numpy alone), IMU by IMU and axis by axis."""
    figure = imu_figure(list(Recording.open(run).imu().values()), "t")
    recorded = np.load(run / "gt" / "imu.npz")
    rows = np.array(figure.axes).reshape(-1, 2)
    assert [axes.get_title().split(":")[0] for axes in rows[:, 0]] == ["body_imu", "camera_imu"]
    for row, name in zip(rows, ("body_imu", "camera_imu")):
        for axes, kind in zip(row, ("linear_acceleration", "angular_velocity")):
            lines = axes.get_lines()
            assert [line.get_label() for line in lines] == ["x", "y", "z"]
            for axis, line in enumerate(lines):
                assert np.array_equal(line.get_xdata(), recorded[f"{name}.time"])
                assert np.array_equal(line.get_ydata(), recorded[f"{name}.{kind}"][:, axis])
    t = recorded["body_imu.time"]  # and the data are what write_run put there
    assert np.allclose(rows[0, 0].get_lines()[0].get_ydata(), np.sin(t))
    assert np.allclose(rows[1, 1].get_lines()[2].get_ydata(), 0.1 * t)


# ---------------------------------------------------------------- CLI and errors


def grade(args: list[str], monkeypatch, capsys) -> tuple[int, str, str]:
    """Run `grade view ...` through pipeline.cli.main, as the console script does."""
    from pipeline import cli

    if not any(command.callback is view_command for command in cli.app.registered_commands):
        monkeypatch.setattr(cli.app, "registered_commands", [*cli.app.registered_commands])
        cli.app.command("view")(view_command)
    monkeypatch.setattr(sys, "argv", ["grade", "view", *args])
    monkeypatch.setenv("COLUMNS", "300")
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code or 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.slow
def test_cli_prints_the_paths_written(run, monkeypatch, capsys):
    code, out, err = grade([str(run), "--camera", "front", "--frames", "3"], monkeypatch, capsys)
    assert code == 0, err
    printed = out.split()
    assert printed == [str(run / "view" / name) for name in ("contact_sheet_front.png", "trajectory.png", "imu.png")]
    assert all(Path(p).is_file() for p in printed)
    assert read_rgb(run / "view" / "contact_sheet_front.png").shape[0] == (
        TITLE_PX + HEADER_PX + FRAMES * (ROW_BAND_PX + H + GAP_PX))


def test_not_a_recording_exits_2(tmp_path, monkeypatch, capsys):
    code, _, err = grade([str(tmp_path)], monkeypatch, capsys)
    assert code == 2 and "run.json" in err and "Traceback" not in err


def test_missing_camera_lists_the_available_ones(run, monkeypatch, capsys):
    code, _, err = grade([str(run), "--camera", "rear"], monkeypatch, capsys)
    assert code == 2 and "'rear'" in err and "available: front" in err
    assert not (run / "view").exists()


def test_run_without_frames_exits_2(run, monkeypatch, capsys):
    (run / "gt" / "front" / "frames.jsonl").write_text("")
    code, _, err = grade([str(run)], monkeypatch, capsys)
    assert code == 2 and "no frames" in err
    shutil.rmtree(run / "gt" / "front")
    with pytest.raises(InputError, match="no frames"):
        view_run(run)


def test_malformed_frame_line_names_file_and_line(run, monkeypatch, capsys):
    path = run / "gt" / "front" / "frames.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[1][:40], lines[2]]) + "\n")
    code, _, err = grade([str(run)], monkeypatch, capsys)
    assert code == 2
    assert str(path) in err.replace("\n", "") and "line 2" in err

    record = json.loads(lines[2])
    del record["time"]
    path.write_text("\n".join([lines[0], lines[1], json.dumps(record)]) + "\n")
    with pytest.raises(InputError) as info:
        view_run(run)
    assert info.value.file == str(path) and info.value.field == "line 3: time"


def test_missing_image_and_wrong_size_name_the_file(run):
    image = run / "gt" / "front" / "depth" / "000002.png"
    cv2.imwrite(str(image), np.zeros((H // 2, W), np.uint16))
    with pytest.raises(InputError, match="64x24") as info:
        view_run(run)
    assert info.value.file == str(image)
    image.unlink()
    with pytest.raises(InputError, match="not found") as info:
        view_run(run)
    assert info.value.file == str(image) and info.value.field == "depth"


@pytest.mark.slow
def test_incomplete_run_renders_with_a_warning(tmp_path, assets, monkeypatch, capsys):
    run = write_run(tmp_path / "run", assets, status="running")
    frames = run / "gt" / "front" / "frames.jsonl"
    frames.write_text(frames.read_text() + '{"frame": 3, "time": 1.3, "po')  # cut short by the interruption
    code, out, err = grade([str(run), "--out", str(tmp_path / "v")], monkeypatch, capsys)
    assert code == 0, err
    assert "incomplete" in err and "half-written" in err
    assert len(out.split()) == 3
    assert read_rgb(tmp_path / "v" / "contact_sheet_front.png").shape[0] == (
        TITLE_PX + HEADER_PX + FRAMES * (ROW_BAND_PX + H + GAP_PX))
    # In a complete run the same line is an error, not an interruption.
    write_run_info(run, RunInfo(name="synthetic", status="complete", backend="embedded", master_seed=7, config={}))
    with pytest.raises(InputError, match="line 4"):
        view_run(run)


def test_rerun_without_the_viz_extra_is_a_clear_error(run, monkeypatch):
    monkeypatch.setitem(sys.modules, "rerun", None)  # makes `import rerun` raise ImportError
    with pytest.raises(GradeError, match=r"pip install \"\.\[viz\]\""):
        view_run(run, rerun=run / "x.rrd")
    assert not (run / "view").exists() and not (run / "x.rrd").exists()


# ---------------------------------------------------------------- Rerun


@pytest.mark.slow
def test_rerun_export_reads_back(run, tmp_path):
    pytest.importorskip("rerun")
    rrd = tmp_path / "run.rrd"
    result = view_run(run, rerun=rrd)
    assert rrd in result.written and not list(tmp_path.glob(".run.rrd.*"))
    columns = rrd_columns(rrd)
    assert "log_time" not in json.dumps(sorted(k for c in columns.values() for k in c))  # simulation time only

    rgb = columns["/world/front/rgb"]
    assert [t * NS for t in rgb["sim_time"]] == pytest.approx([1.0 + i * FRAME_DT for i in range(FRAMES)])
    decoded = cv2.imdecode(np.frombuffer(bytes(rgb["EncodedImage:blob"][2][0]), np.uint8), cv2.IMREAD_COLOR)
    assert (decoded[BOX[1], box_of(2)[0]] == BOX_RGB[::-1]).all()

    boxes = columns["/world/front/boxes"]
    x0, y0, x1, y1 = box_of(1)
    assert boxes["Boxes2D:centers"][1] == [pytest.approx([(x0 + x1 + 1) / 2, (y0 + y1 + 1) / 2])]
    assert boxes["Boxes2D:half_sizes"][1] == [pytest.approx([(x1 - x0 + 1) / 2, (y1 - y0 + 1) / 2])]
    assert boxes["Boxes2D:class_ids"][1] == [CHAIR_CLASS] and boxes["Boxes2D:labels"][1] == ["chair occ 25%"]

    depth = columns["/world/front/depth"]
    assert len(depth["sim_time"]) == FRAMES
    robot = columns["/world/robot"]
    states = robot_states()
    timed = [i for i, t in enumerate(robot.get("sim_time", [])) if t is not None]
    assert len(timed) == STEPS
    assert np.allclose([robot["Transform3D:translation"][i][0] for i in timed], states["robot_position"])
    half = np.sqrt(0.5)
    assert np.allclose(robot["Transform3D:quaternion"][timed[0]][0], [0.0, 0.0, half, half])  # xyzw
    camera = columns["/world/front"]
    translations = [row[0] for row in camera["Transform3D:translation"] if row]
    assert np.allclose(translations, [(0.5 + f * 0.5, 1.0, 1.2) for f in range(FRAMES)])

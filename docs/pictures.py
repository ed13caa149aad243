"""The pictures on the docs' home page and in the README, drawn from a recording of the demo.

    .venv/bin/grade demo --out runs/demo          # or `make demo`: the CPU demo, a few minutes
    .venv/bin/python docs/pictures.py runs/demo   # writes docs/images/demo_*.png

- demo_contact_sheet.png: `grade view`'s contact sheet (RGB with the 2D boxes of people and objects,
  depth, instance and semantic segmentation) of the frames with the most people and objects in view;
- demo_trajectory.png: `grade view`'s trajectory plot, the robot's path on the occupancy map;
- demo_lit_vs_fast.png: one of those frames as recorded (`render.quality: fast`, the default) beside the
  same frame re-rendered by `grade replay --frames N --set render.quality=high` (indirect light, soft
  shadows), on the CPU like the rest.

Every picture is drawn by the code `grade view` uses, at a size that fits the page, and written as a
palette PNG: the same recording gives the same bytes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from io import BytesIO
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageOps

from core.formats.frames import Box2D
from core.recording import Camera, Frame, Recording
from postprocess.backdrop import read_map_backdrop
from postprocess.contact_sheet import (
    BACKGROUND_RGB,
    FONT,
    FONT_SCALE,
    GAP_PX,
    TEXT_RGB,
    FrameImages,
    SheetRow,
    pixel_bounds,
    render_contact_sheet,
    sheet_row,
)
from postprocess.plots import plot_trajectory

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images"
CAMERA = "camera"  # the demo's only camera
SHEET_FRAMES = 3
MIN_SPACING_S = 3.0  # the sheet's frames are this far apart, so they show different rooms and people
# Four sheet panels side by side fill 960 px; grade view's panels (up to 480 px) would make it twice as wide.
SHEET_PANEL_WIDTH = 232
LIT_PANEL_WIDTH = 476  # two side by side, with gaps: 960 px
LIT_QUALITY = "high"  # the ray caster's best lighting (docs/guides/rendering.md)
LABEL_PX = 20
TRIM_MARGIN_PX = 8
PALETTE_COLOURS = 256  # a palette PNG is a third of an RGB one here, with no visible banding at this size


def shown_boxes(frame: Frame, camera: Camera) -> list[Box2D]:
    """The frame's boxes of people and objects: `grade view` leaves out the environment's too."""
    return [b for b in frame.boxes_2d_tight if not b.empty and not camera.instances.is_environment(b.instance_id)]


def crowd(frame: Frame, camera: Camera) -> tuple[int, int]:
    """How many people and objects are in view, and how many pixels their boxes cover."""
    boxes = shown_boxes(frame, camera)
    return len(boxes), sum((b.x_max - b.x_min + 1) * (b.y_max - b.y_min + 1) for b in boxes)


def busiest_frames(camera: Camera, count: int) -> list[Frame]:
    """The `count` frames with the most people and objects in view (ties: the larger boxes), at least
    MIN_SPACING_S apart, in time order."""
    picked: list[Frame] = []
    # sorted() is stable: among equally busy frames the earliest comes first.
    for frame in sorted(camera, key=lambda frame: crowd(frame, camera), reverse=True):
        if all(abs(frame.time - other.time) >= MIN_SPACING_S for other in picked):
            picked.append(frame)
        if len(picked) == count:
            break
    return sorted(picked, key=lambda frame: frame.index)


def _resize(image: np.ndarray | None, size: tuple[int, int], interpolation: int) -> np.ndarray | None:
    return None if image is None else cv2.resize(image, size, interpolation=interpolation)


def small_row(frame: Frame, camera: Camera, width: int) -> SheetRow:
    """The frame's contact-sheet row with its images scaled to `width` px and its boxes with them (ids and
    depth nearest-neighbour: no blended ids or depths)."""
    row = sheet_row(frame)
    scale = width / row.width
    size = (width, round(row.height * scale))
    images = row.images
    row.images = FrameImages(_resize(images.rgb, size, cv2.INTER_AREA),
                             _resize(images.depth, size, cv2.INTER_NEAREST),
                             _resize(images.instance, size, cv2.INTER_NEAREST),
                             _resize(images.semantic, size, cv2.INTER_NEAREST))
    row.boxes = []
    for box in shown_boxes(frame, camera):
        x_min, y_min, x_max, y_max = pixel_bounds(box, scale, scale)
        row.boxes.append(box.model_copy(update={"x_min": x_min, "y_min": y_min, "x_max": x_max, "y_max": y_max}))
    row.width, row.height = size
    return row


def rerender(run: Path, frame: Frame, folder: Path) -> np.ndarray:
    """`frame`'s RGB rendered again at LIT_QUALITY by `grade replay` (only that frame: a few seconds)."""
    out = folder / "lit"
    subprocess.run([sys.executable, "-m", "pipeline.cli", "replay", str(run), "--out", str(out),
                    "--frames", str(frame.index), "--set", f"render.quality={LIT_QUALITY}"], check=True)
    (lit,) = list(Recording.open(out).camera(CAMERA))
    return lit.rgb()


def side_by_side(panels: list[tuple[str, np.ndarray]], width: int) -> np.ndarray:
    """Panels scaled to `width` px in a row, each under its label, on the contact sheet's background."""
    scaled = [cv2.resize(rgb, (width, round(rgb.shape[0] * width / rgb.shape[1])), interpolation=cv2.INTER_AREA)
              for _, rgb in panels]
    height = LABEL_PX + max(panel.shape[0] for panel in scaled) + GAP_PX
    image = np.full((height, GAP_PX + len(panels) * (width + GAP_PX), 3), BACKGROUND_RGB, dtype=np.uint8)
    for index, ((label, _), panel) in enumerate(zip(panels, scaled)):
        x = GAP_PX + index * (width + GAP_PX)
        cv2.putText(image, label, (x, LABEL_PX - 6), FONT, FONT_SCALE, TEXT_RGB, 1, cv2.LINE_AA)
        image[LABEL_PX:LABEL_PX + panel.shape[0], x:x + width] = panel
    return image


def trim(image: Image.Image) -> Image.Image:
    """The image without its blank border (a tall map leaves wide white sides in grade view's square figure)."""
    left, top, right, bottom = ImageOps.invert(image.convert("RGB")).getbbox()
    return image.crop((max(0, left - TRIM_MARGIN_PX), max(0, top - TRIM_MARGIN_PX),
                       min(image.width, right + TRIM_MARGIN_PX), min(image.height, bottom + TRIM_MARGIN_PX)))


def palette_png(image: Image.Image) -> bytes:
    """The image as an optimised palette PNG (median cut, Floyd-Steinberg dither: deterministic)."""
    buffer = BytesIO()
    image.convert("RGB").quantize(PALETTE_COLOURS, method=Image.Quantize.MEDIANCUT).save(
        buffer, format="png", optimize=True)
    return buffer.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a recording of configs/demo.yaml (grade demo --out RUN)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    recording = Recording.open(args.run)
    camera = recording.camera(CAMERA)
    frames = busiest_frames(camera, SHEET_FRAMES)

    rows = [small_row(frame, camera, SHEET_PANEL_WIDTH) for frame in frames]
    sheet = render_contact_sheet(rows, camera.instances, f"{recording.info.name} / {CAMERA}")

    camera_xy = {CAMERA: np.array([frame.pose[:2, 3] for frame in camera])}
    trajectory = plot_trajectory(recording.robot_path(), read_map_backdrop(recording.path), camera_xy,
                                 recording.info.name)

    # The frame of the sheet whose people and objects are largest in view shows shadows and shading best.
    shown = max(frames, key=lambda frame: crowd(frame, camera)[1])
    with tempfile.TemporaryDirectory() as folder:
        lit = rerender(args.run, shown, Path(folder))
    recorded = recording.experiment_config().render.quality  # the demo's: fast
    comparison = side_by_side([(f"frame {shown.index} as recorded: render.quality {recorded}", shown.rgb()),
                               (f"the same frame replayed at render.quality {LIT_QUALITY}", lit)],
                              LIT_PANEL_WIDTH)

    args.out.mkdir(parents=True, exist_ok=True)
    pictures = {"demo_contact_sheet.png": Image.fromarray(sheet),
                "demo_trajectory.png": trim(Image.open(BytesIO(trajectory))),
                "demo_lit_vs_fast.png": Image.fromarray(comparison)}
    for name, image in pictures.items():
        data = palette_png(image)
        (args.out / name).write_bytes(data)
        print(f"{args.out / name}: {image.width}x{image.height}, {len(data) // 1024} KB")


if __name__ == "__main__":
    main()

"""A contact sheet of one camera: a row per frame, columns RGB (+ tight 2D boxes), depth, instance, semantic.

Images are drawn with OpenCV on whole arrays. Panels keep the camera's resolution up to
PANEL_MAX_WIDTH (larger images are scaled down), so on small images a box outline lies exactly on the
box's inclusive pixel bounds. Colours per id come from fixed look-up tables (core.id_display): the same id
has the same colour in every run, every sheet and the Rerun views, and the box of a class has the colour of that
class in the semantic panel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from core.formats.frames import Box2D
from core.formats.instances import Instances
from core.id_display import ID_COLOURS, box_caption, id_palette
from core.recording import Frame

COLUMNS = ("rgb", "depth", "instance", "semantic")
PANEL_MAX_WIDTH = 480  # px: wider cameras are scaled down so a sheet of 6 rows stays viewable
GAP_PX = 4
TITLE_PX = 18  # the sheet's title line
HEADER_PX = 16  # the column names
ROW_BAND_PX = 16  # "frame N  t = ... s" above each row
FONT = cv2.FONT_HERSHEY_SIMPLEX
FONT_SCALE = 0.4
LABEL_SCALE = 0.35
TEXT_BASELINE_PX = 4  # from the bottom of a text band
BACKGROUND_RGB = (255, 255, 255)
TEXT_RGB = (0, 0, 0)
MISSING_RGB = (160, 160, 160)
NO_RETURN_RGB = (0, 0, 0)  # turbo never reaches black, so black only means "no return"


@dataclass
class FrameImages:
    """One frame's images; None where the camera does not record that output."""

    rgb: np.ndarray | None  # (H, W, 3) uint8 RGB
    depth: np.ndarray | None  # (H, W) float32 metres, 0 = no return
    instance: np.ndarray | None  # (H, W) integer ids
    semantic: np.ndarray | None


@dataclass
class SheetRow:
    frame: int
    time: float
    width: int
    height: int
    images: FrameImages
    boxes: list[Box2D]


def sheet_row(frame: Frame) -> SheetRow:
    """A row of the sheet: the frame's images read from disk and its tight boxes."""
    images = FrameImages(frame.rgb(), frame.depth(), frame.instance(), frame.semantic())
    return SheetRow(frame.index, frame.time, frame.width, frame.height, images, list(frame.boxes_2d_tight))


def colorize_ids(ids: np.ndarray, palette: np.ndarray) -> np.ndarray:
    return palette[np.asarray(ids, dtype=np.int64) % len(palette)]


def depth_range(depths: list[np.ndarray]) -> tuple[float, float]:
    """One colour scale for the whole sheet (so rows compare): min and max of the returns."""
    valid = [d[d > 0] for d in depths if d is not None and np.any(d > 0)]
    if not valid:
        return 0.0, 1.0
    lo, hi = min(float(v.min()) for v in valid), max(float(v.max()) for v in valid)
    return lo, max(hi, lo + 1e-3)


def colorize_depth(depth: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Metres -> turbo colours (near blue, far red); no return (0) black."""
    scaled = np.clip((depth - lo) / (hi - lo), 0.0, 1.0) * 255.0
    bgr = cv2.applyColorMap(np.rint(scaled).astype(np.uint8), cv2.COLORMAP_TURBO)
    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    rgb[depth <= 0] = NO_RETURN_RGB
    return rgb


def panel_size(width: int, height: int) -> tuple[int, int]:
    scale = min(1.0, PANEL_MAX_WIDTH / width)
    return max(1, round(width * scale)), max(1, round(height * scale))


def sheet_size(rows: int, panel_width: int, panel_height: int) -> tuple[int, int]:
    """(width, height) of a sheet with `rows` frames."""
    width = GAP_PX + len(COLUMNS) * (panel_width + GAP_PX)
    height = TITLE_PX + HEADER_PX + rows * (ROW_BAND_PX + panel_height + GAP_PX)
    return width, height


def panel_origin(row: int, column: int, panel_width: int, panel_height: int) -> tuple[int, int]:
    """(x, y) of a panel's top-left pixel in the sheet."""
    x = GAP_PX + column * (panel_width + GAP_PX)
    y = TITLE_PX + HEADER_PX + row * (ROW_BAND_PX + panel_height + GAP_PX) + ROW_BAND_PX
    return x, y


def _put_text(image: np.ndarray, text: str, x: int, y: int, color: tuple[int, int, int],
              scale: float = FONT_SCALE, outline: bool = False) -> None:
    if outline:  # a dark rim keeps a coloured label readable on any background
        cv2.putText(image, text, (x, y), FONT, scale, TEXT_RGB, 2, cv2.LINE_AA)
    cv2.putText(image, text, (x, y), FONT, scale, color, 1, cv2.LINE_AA)


def _resize(image: np.ndarray, size: tuple[int, int], interpolation: int) -> np.ndarray:
    if image.shape[1] == size[0] and image.shape[0] == size[1]:
        return image
    return cv2.resize(image, size, interpolation=interpolation)


def _missing(size: tuple[int, int], kind: str) -> np.ndarray:
    panel = np.full((size[1], size[0], 3), MISSING_RGB, dtype=np.uint8)
    _put_text(panel, f"no {kind}", 2, size[1] // 2, TEXT_RGB)
    return panel


def pixel_bounds(box: Box2D, scale_x: float, scale_y: float) -> tuple[int, int, int, int]:
    """A box's inclusive pixel bounds in a panel scaled by (scale_x, scale_y): pixel x covers [x, x+1)."""
    x0, y0 = math.floor(box.x_min * scale_x), math.floor(box.y_min * scale_y)
    x1, y1 = math.ceil((box.x_max + 1) * scale_x) - 1, math.ceil((box.y_max + 1) * scale_y) - 1
    return x0, y0, max(x0, x1), max(y0, y1)


def draw_boxes(panel: np.ndarray, boxes: list[Box2D], scale: tuple[float, float], instances: Instances) -> np.ndarray:
    """Outlines (1 px, on the inclusive bounds) and captions coloured by semantic class."""
    panel = panel.copy()
    palette = id_palette("semantic")
    visible = [b for b in boxes if not b.empty]
    text_height = cv2.getTextSize("Ag", FONT, LABEL_SCALE, 1)[0][1]
    # Captions first and outlines last: an outline is never covered by another box's caption.
    for box in visible:
        x0, y0, _, _ = pixel_bounds(box, *scale)
        color = tuple(int(c) for c in palette[box.semanticId % ID_COLOURS])
        above = y0 - 2
        _put_text(panel, box_caption(box, instances), x0, above if above - text_height >= 0 else y0 + text_height + 2,
                  color, LABEL_SCALE, outline=True)
    for box in visible:
        x0, y0, x1, y1 = pixel_bounds(box, *scale)
        color = tuple(int(c) for c in palette[box.semanticId % ID_COLOURS])
        cv2.rectangle(panel, (x0, y0), (x1, y1), color, 1)
    return panel


def _row_panels(row: SheetRow, size: tuple[int, int], depth_scale: tuple[float, float],
                instances: Instances) -> list[np.ndarray]:
    images = row.images
    scale = (size[0] / row.width, size[1] / row.height)
    panels = []
    if images.rgb is not None:
        panels.append(draw_boxes(_resize(images.rgb, size, cv2.INTER_AREA), row.boxes, scale, instances))
    else:
        panels.append(_missing(size, "rgb"))
    if images.depth is not None:
        panels.append(_resize(colorize_depth(images.depth, *depth_scale), size, cv2.INTER_NEAREST))
    else:
        panels.append(_missing(size, "depth"))
    for kind, ids in (("instance", images.instance), ("semantic", images.semantic)):
        if ids is None:
            panels.append(_missing(size, kind))
        else:
            panels.append(_resize(colorize_ids(ids, id_palette(kind)), size, cv2.INTER_NEAREST))
    return panels


def render_contact_sheet(rows: list[SheetRow], instances: Instances, title: str) -> np.ndarray:
    """The sheet as an (H, W, 3) uint8 RGB image; panel size from the first row's resolution."""
    if not rows:
        raise ValueError("a contact sheet needs at least one frame")
    size = panel_size(rows[0].width, rows[0].height)
    width, height = sheet_size(len(rows), *size)
    sheet = np.full((height, width, 3), BACKGROUND_RGB, dtype=np.uint8)
    depth_scale = depth_range([row.images.depth for row in rows])
    _put_text(sheet, f"{title}   depth {depth_scale[0]:.2f}-{depth_scale[1]:.2f} m (black: no return)",
              GAP_PX, TITLE_PX - TEXT_BASELINE_PX, TEXT_RGB)
    for column, name in enumerate(COLUMNS):
        x, _ = panel_origin(0, column, *size)
        _put_text(sheet, name, x, TITLE_PX + HEADER_PX - TEXT_BASELINE_PX, TEXT_RGB)
    for index, row in enumerate(rows):
        _, y = panel_origin(index, 0, *size)
        _put_text(sheet, f"frame {row.frame}  t = {row.time:.3f} s", GAP_PX, y - TEXT_BASELINE_PX, TEXT_RGB)
        for column, panel in enumerate(_row_panels(row, size, depth_scale, instances)):
            x, y = panel_origin(index, column, *size)
            sheet[y:y + size[1], x:x + size[0]] = panel
    return sheet

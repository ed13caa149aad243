"""Event frames: the events of one 30 Hz window drawn as rpg_dvs_ros' dvs_renderer draws them, for `grade view`'s
event strips and the Rerun export's event images."""

from __future__ import annotations

import numpy as np

# The last event of a pixel wins: ON blue, OFF red, on white.
EVENT_WINDOW_NS = 33_333_333
EVENT_BACKGROUND = (255, 255, 255)
EVENT_COLOURS = np.array([(255, 0, 0), (0, 0, 255)], np.uint8)  # RGB of OFF (p = 0), ON (p = 1)


def event_frame(events: np.ndarray, width: int, height: int, start_ns: int, end_ns: int) -> np.ndarray:
    """(H, W, 3) uint8 RGB of the events (core.formats.events.EVENT_DTYPE, sorted by time) in [start_ns, end_ns):
    each pixel the colour of its last event's polarity, the background where it has none."""
    frame = np.empty((height, width, 3), np.uint8)
    frame[:] = EVENT_BACKGROUND
    window = events[np.searchsorted(events["t"], start_ns):np.searchsorted(events["t"], end_ns)]
    pixel = window["y"].astype(np.int64) * width + window["x"]
    # The first of the reversed window is each pixel's last event.
    pixels, first = np.unique(pixel[::-1], return_index=True)
    frame.reshape(-1, 3)[pixels] = EVENT_COLOURS[window["p"][::-1][first]]
    return frame

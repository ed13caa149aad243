"""Event cameras in the Rerun export (postprocess/rerun_export.py), read back with rerun's own reader.

Events written to a real events.h5 (core.formats.events) and read back are exported; the .rrd holds one PNG image
per 30 Hz window the events span, at the window's end on the sim_time timeline, and each decodes (cv2) to the
window's events drawn as `grade view` draws them: here checked pixel by pixel against the events themselves.
"""

from __future__ import annotations

import cv2
import numpy as np

from core.formats.events import EVENT_DTYPE, read_events, write_events
from core.formats.run_info import RunInfo
from postprocess.event_frames import EVENT_WINDOW_NS
from postprocess.rerun_export import RobotExport, export_rerun
from tests.rrd_columns import rrd_columns

WIDTH, HEIGHT = 32, 24
BLUE, RED, WHITE = (0, 0, 255), (255, 0, 0), (255, 255, 255)


def test_the_rrd_holds_an_image_of_each_windows_events(tmp_path):
    # Window 1 (33.3-66.7 ms): pixel (3, 4) ON then OFF (the last wins: red), (10, 2) ON. Window 3: (5, 5) ON.
    # Window 2 holds none: its image is all background.
    events = np.zeros(4, EVENT_DTYPE)
    events["t"] = [40_000_000, 50_000_000, 60_000_000, 110_000_000]
    events["x"], events["y"], events["p"] = [3, 10, 3, 5], [4, 2, 4, 5], [1, 1, 0, 1]
    write_events(tmp_path / "events.h5", events, WIDTH, HEIGHT, 0.2)
    info = RunInfo(name="events", backend="embedded", master_seed=3, config={})
    rrd = export_rerun(tmp_path / "run.rrd", info, [RobotExport(None, [], None, [],
                                                                {"dvs": read_events(tmp_path / "events.h5")})], None)
    column = rrd_columns(rrd)["/world/dvs/events"]
    times = column["sim_time"]
    blobs = [key for key in column if key.endswith("EncodedImage:blob")]
    assert times == [2 * EVENT_WINDOW_NS, 3 * EVENT_WINDOW_NS, 4 * EVENT_WINDOW_NS]
    images = [cv2.cvtColor(cv2.imdecode(np.frombuffer(bytes(blob[0]), np.uint8), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
              for blob in column[blobs[0]]]
    expected = [np.full((HEIGHT, WIDTH, 3), WHITE, np.uint8) for _ in range(3)]
    expected[0][4, 3], expected[0][2, 10], expected[2][5, 5] = RED, BLUE, BLUE
    for image, want in zip(images, expected, strict=True):
        np.testing.assert_array_equal(image, want)

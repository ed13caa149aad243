"""Post-processing of recordings (DESIGN.md §1): for now `grade view`, a visual check of a run.

Public surface: `view_run` (RUN folder in, contact sheets / trajectory / IMU plots / optional .rrd
out), the figures it draws and `export_rerun`; runs are read through core.recording.Recording. Names
are imported on first use, so the CLI starts without loading OpenCV, matplotlib or rerun.
"""

from importlib import import_module

DEFAULT_FRAMES = 6  # frames per contact sheet; here so the CLI reads it without loading OpenCV

_EXPORTS = {
    **{name: "view" for name in ("ViewResult", "view_run", "read_scene_layout", "select_frames")},
    "render_contact_sheet": "contact_sheet", "plot_trajectory": "plots", "plot_imu": "plots",
    "export_rerun": "rerun_export",
}
__all__ = [
    "DEFAULT_FRAMES", "ViewResult", "export_rerun", "plot_imu", "plot_trajectory", "read_scene_layout",
    "render_contact_sheet", "select_frames", "view_run",
]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'postprocess' has no attribute {name!r}")
    return getattr(import_module(f"postprocess.{_EXPORTS[name]}"), name)

"""Post-processing of recordings and bags: `grade postprocess` (IMU and depth noise, motion blur, rolling
shutter, blur-aware labels, bag crop/retime/rename/reindex) and `grade view` (a visual check of a run).

Public surface: `process_run` (a run folder in, noisy/blurred files beside its originals), `process_bag`
(a bag in, a new bag out), `view_run` (contact sheets / trajectory / IMU plots / optional .rrd), the figures
it draws and `export_rerun`; runs are read through core.recording.Recording. Names are imported on first
use, so the CLI starts without loading OpenCV, numba, matplotlib or rerun.
"""

from importlib import import_module

DEFAULT_FRAMES = 6  # frames per contact sheet; here so the CLI reads it without loading OpenCV

_EXPORTS = {
    **{name: "view" for name in ("ViewResult", "view_run", "read_scene_layout", "select_frames")},
    "render_contact_sheet": "contact_sheet", "plot_trajectory": "plots", "plot_imu": "plots",
    "export_rerun": "rerun_export", "process_run": "process_run", "process_bag": "process_bag",
}
__all__ = [
    "DEFAULT_FRAMES",
    "ViewResult",
    "export_rerun",
    "plot_imu",
    "plot_trajectory",
    "process_bag",
    "process_run",
    "read_scene_layout",
    "render_contact_sheet",
    "select_frames",
    "view_run",
]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'postprocess' has no attribute {name!r}")
    return getattr(import_module(f"postprocess.{_EXPORTS[name]}"), name)

"""Post-processing of recordings and bags: `grade postprocess` (IMU and depth noise, motion blur, rolling
shutter, blur-aware labels, bag crop/retime/rename/reindex) and `grade view` (a visual check of a run).

Modules: `process_run` (a run folder in, noisy/blurred files beside its originals), `process_bag` (a bag
in, a new bag out), `view` (`view_run`: contact sheets / trajectory / IMU plots / optional .rrd), the
figures it draws (`contact_sheet`, `plots`) and `rerun_export`; runs are read through
core.recording.Recording. Import the defining module: importing this package loads none of them, so the
CLI starts without OpenCV, numba, matplotlib or rerun.
"""

DEFAULT_FRAMES = 6  # frames per contact sheet; here so the CLI reads it without loading OpenCV

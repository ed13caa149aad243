"""Exports of recordings for training and benchmarking: COCO and YOLO training sets, TUM RGB-D and EuRoC
sequences (`grade export FORMAT RUN... --out DIR`). Reads recordings only through core.recording."""

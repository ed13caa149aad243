"""Recording a run: the rate schedule, the recorder that samples every stream once per physics step,
ROS 1 / ROS 2 bags (writer and an AnyReader-based reader), ground-truth files and the state log.

Names are imported on first use, so reading bags (`bag_reader`) does not load the renderer.
"""

from __future__ import annotations

import importlib

# name -> the module that defines it
_LAZY = {
    "Schedule": "simulation.recording.schedule",
    "Recorder": "simulation.recording.recorder",
    "BagWriter": "simulation.recording.bags",
    "bag_summary": "simulation.recording.bag_reader",
    "read_messages": "simulation.recording.bag_reader",
    "image_array": "simulation.recording.bag_reader",
    "point_cloud_array": "simulation.recording.bag_reader",
    "CameraWriter": "simulation.recording.ground_truth",
    "ImuLog": "simulation.recording.ground_truth",
    "StateLog": "simulation.recording.states",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'simulation.recording' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

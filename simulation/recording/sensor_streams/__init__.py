"""The recorder's half of each sensor kind (core.config.sensor_kinds holds the config's half): how the sensors
of one kind on one robot are sampled and written, one `SensorRecorder` subclass per kind, each in its kind's module
here, with its line in `RECORDERS`.

A robot's recording (recorder._RobotStreams) makes one recorder per kind, in `RECORDERS`' order, and calls them
at fixed points of each step: `sample_step_start` first (the streams stamped with the state a step started
from: the IMUs), then `sample_pose` at the pose rate, then `sample`. Within a kind its sensors go in config
order. Each sensor's stream (`<type>/<name>`) is due at its own rate (schedule.py) and counted under it.
"""

from __future__ import annotations

from simulation.recording.sensor_streams.base import RobotRecording, SensorRecorder
from simulation.recording.sensor_streams.camera import CameraRecorder
from simulation.recording.sensor_streams.event import EventRecorder
from simulation.recording.sensor_streams.imu import ImuRecorder
from simulation.recording.sensor_streams.lidar import LidarRecorder

RECORDERS: dict[str, type[SensorRecorder]] = {recorder.kind: recorder for recorder in (
    CameraRecorder, ImuRecorder, LidarRecorder, EventRecorder)}

__all__ = ["RECORDERS", "CameraRecorder", "EventRecorder", "ImuRecorder", "LidarRecorder", "RobotRecording", "SensorRecorder"]

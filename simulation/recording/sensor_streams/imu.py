"""The recorder of IMUs (`type: imu`): readings into the bags and gt/imu.npz."""

from __future__ import annotations

from core.config import ImuConfig
from core.formats.imu import IMU_FILE
from simulation.recording.ground_truth import ImuLog
from simulation.recording.sensor_streams.base import RobotRecording, SensorRecorder


class ImuRecorder(SensorRecorder):
    """Each IMU's readings into the bags and, all of them, gt/imu.npz."""

    kind = "imu"

    def __init__(self, recording: RobotRecording, sensors: list[ImuConfig]) -> None:
        super().__init__(recording, sensors)
        self.log = ImuLog([imu.name for imu in sensors])

    def sample_step_start(self, step: int) -> None:
        recording = self.recording
        for imu in self.sensors:
            if not self.due(imu, step):
                continue
            reading = recording.robot.imu(imu.name)
            self.log.add(imu.name, reading)
            if recording.bags:
                recording.writes.call(recording.bags.imu, recording.topics.imu(imu.name),
                                      recording.topics.frame(imu.name), reading.time, reading.linear_acceleration,
                                      reading.angular_velocity)
            recording.count(self.stream(imu))

    def save(self) -> None:
        if self.sensors:
            self.recording.gt.mkdir(parents=True, exist_ok=True)
            self.log.save(self.recording.gt / IMU_FILE)

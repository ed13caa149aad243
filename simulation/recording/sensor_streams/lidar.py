"""The recorder of LiDARs (`type: lidar`): sweeps into gt/<lidar>/ and PointCloud2 messages."""

from __future__ import annotations

from core.config import LidarConfig
from core.formats.lidar import LidarSweep, save_sweep
from simulation.recording.sensor_streams.base import SensorRecorder


class LidarRecorder(SensorRecorder):
    """Each LiDAR's sweeps into gt/<lidar>/NNNNNN.npz and PointCloud2 messages on /<lidar>/points."""

    kind = "lidar"
    sensors: list[LidarConfig]

    def sample(self, step: int, t: float) -> None:
        recording = self.recording
        for lidar in self.sensors:
            if not self.due(lidar, step):
                continue
            scan = recording.robot.lidar(lidar.name)
            folder = recording.gt / lidar.name
            folder.mkdir(parents=True, exist_ok=True)
            sweep = LidarSweep(scan.time, scan.pose, scan.ranges, scan.points, scan.ring)
            save_sweep(folder, recording.samples(self.stream(lidar)), sweep)
            if recording.observer:
                recording.observer.lidar_sweep(recording.name, lidar.name, sweep)
            if recording.bags:
                recording.writes.call(recording.bags.point_cloud, recording.topics.points(lidar.name), t,
                                      recording.topics.frame(lidar.name), scan.points, scan.intensity, scan.ring)
            recording.count(self.stream(lidar))

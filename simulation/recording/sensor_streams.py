"""The recorder's half of each sensor kind (core.config.sensor_kinds holds the config's half): how the sensors
of one kind on one robot are sampled and written, one `SensorRecorder` subclass per kind in `RECORDERS`.

A robot's recording (recorder._RobotStreams) makes one recorder per kind, in `RECORDERS`' order, and calls them
at fixed points of each step: `sample_step_start` first (the streams stamped with the state a step started
from: the IMUs), then `sample_pose` at the pose rate, then `sample`. Within a kind its sensors go in config
order. Each sensor's stream (`<type>/<name>`) is due at its own rate (schedule.py) and counted under it.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

from core.config import CameraConfig, ExperimentConfig, ImuConfig, LidarConfig
from core.config.event_camera import EventCameraConfig
from core.config.sensor_kinds import KINDS
from core.formats.bags.topics import WORLD_FRAME, BagTopics
from core.formats.bags.writer import BagWriter
from core.formats.events import EVENTS_FILE, EventsWriter
from core.formats.imu import IMU_FILE
from core.formats.lidar import LidarSweep, save_sweep
from core.seeding import generator
from simulation.backend import Robot
from simulation.recording.ground_truth import CameraWriter, ImuLog
from simulation.recording.observer import RecordingObserver
from simulation.recording.schedule import Schedule
from simulation.recording.writes import OrderedWrites
from simulation.render import Frame
from simulation.sensors.event_camera import EventSimulator


class RobotRecording(Protocol):
    """What a kind's recorder uses of its robot's recording (recorder._RobotStreams)."""

    robot: Robot
    config: ExperimentConfig
    gt: Path  # gt/, or gt/<robot>/ in a multi-robot run
    bags: BagWriter | None
    writes: OrderedWrites
    topics: BagTopics
    schedule: Schedule
    pool: ThreadPoolExecutor
    observer: RecordingObserver | None
    name: str | None  # the robot's, in a multi-robot run

    def count(self, stream: str) -> None: ...

    def samples(self, stream: str) -> int:
        """How many samples of `stream` were counted so far."""


class SensorRecorder:
    """Samples and writes the sensors of one kind on one robot."""

    kind: ClassVar[str]

    def __init__(self, recording: RobotRecording, sensors: list[Any]) -> None:
        self.recording, self.sensors = recording, sensors

    def stream(self, sensor: Any) -> str:
        return f"{self.kind}/{sensor.name}"

    def due(self, sensor: Any, step: int) -> bool:
        return self.recording.schedule.due(self.stream(sensor), step)

    def static_transforms(self) -> list[tuple[str, str, np.ndarray]]:
        """Fixed frames of the kind's own beyond each sensor's frame in its link: (parent, child, parent <-
        child), sent once on /tf_static."""
        return []

    def sample_step_start(self, step: int) -> None:
        """The readings of the step from `step` to `step + 1`, stamped with the state it started from."""

    def sample_pose(self, t: float) -> None:
        """The poses published at the pose rate."""

    def sample(self, step: int, t: float) -> None:
        """The readings due at `step` (time `t`)."""

    def close(self) -> None:
        """Finish the files written on the writer threads (after every write was drained)."""

    def save(self) -> None:
        """Write what is kept in memory to the end (after the writer threads stopped)."""

    def abort(self) -> None:
        """Close open files after a failure, writing nothing more."""


class CameraRecorder(SensorRecorder):
    """Each camera recording to the bags or gt/: its pose (at the pose rate) and frames into gt/<camera>/ and the
    bags, the frame rendered while the robot steps on."""

    kind = "camera"

    def __init__(self, recording: RobotRecording, sensors: list[CameraConfig]) -> None:
        super().__init__(recording, [c for c in sensors if c.to_bag or c.to_gt])
        self.configured = sensors
        world, config = recording.robot.world, recording.config.recording
        instances, classes = world.instances(), world.semantic_classes()
        self.writers = {c.name: CameraWriter(recording.gt / c.name, list(c.outputs), config.depth_npy, instances,
                                             classes, recording.pool) for c in self.sensors if c.to_gt}

    def static_transforms(self) -> list[tuple[str, str, np.ndarray]]:
        """Each camera's optical frame in its body frame (all cameras, recorded or not: the TF tree is the robot's)."""
        robot, topics = self.recording.robot, self.recording.topics
        return [(topics.frame(camera.name), topics.optical_frame(camera.name),
                 np.linalg.inv(robot.sensor_pose(camera.name)) @ robot.camera_pose(camera.name))
                for camera in self.configured]

    def sample_pose(self, t: float) -> None:
        recording = self.recording
        for camera in self.sensors:
            if camera.to_bag and recording.bags:
                recording.writes.call(recording.bags.pose, recording.topics.camera_pose(camera.name), t, WORLD_FRAME,
                                      recording.robot.camera_pose(camera.name))

    def sample(self, step: int, t: float) -> None:
        recording = self.recording
        for camera in self.sensors:
            if not self.due(camera, step):
                continue
            if camera.name in self.writers or camera.to_bag and recording.bags:
                recording.writes.call_with_frame(self._write, camera, t, recording.robot.render_async(camera.name))
            recording.count(self.stream(camera))

    def _write(self, camera: CameraConfig, t: float, rendering: Future[Frame]) -> None:
        """The camera's frame into gt/ and the bags, once rendered (on the writer thread)."""
        frame, recording = rendering.result(), self.recording
        if camera.name in self.writers:
            self.writers[camera.name].write(t, frame)
        if camera.to_bag and recording.bags:
            bags, topics, name = recording.bags, recording.topics, camera.name
            frame_id, params = topics.optical_frame(name), frame.camera
            if frame.rgb is not None:
                bags.image(topics.rgb(name), t, frame_id, frame.rgb)
            bags.depth(topics.depth(name), t, frame_id, frame.depth, recording.config.recording.depth_encoding)
            stereo = camera.stereo_side
            bags.camera_info(topics.camera_info(name), t, frame_id, params.K, params.width, params.height,
                             params.lens.ros_model, params.lens.D,
                             stereo.projection_tx(float(params.K[0, 0])) if stereo else 0.0)
        if recording.observer:
            recording.observer.camera_frame(recording.name, camera, t, frame)

    def close(self) -> None:
        for writer in self.writers.values():
            writer.close()

    def abort(self) -> None:
        for writer in self.writers.values():
            writer.close_files()


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


class EventRecorder(SensorRecorder):
    """Each event camera's events into gt/<name>/events.h5 and, in packets of PACKET_HZ, dvs_msgs/EventArray
    messages on /<name>/events. Its simulator (simulation.sensors.event_camera) sets when it renders: at the first
    physics step at or after the time its adaptive step asks for (the stream is due every step). The render is
    waited for at once, since the next render's time depends on it. Randomness (per-pixel thresholds, noise) comes
    from the sensor's own generator (SensorKind.seed_stream), so the same seed gives the same events."""

    kind = "event"
    sensors: list[EventCameraConfig]
    PACKET_HZ = 30.0  # as the DVS drivers publish (dvs_ros_driver's default streaming rate)
    TIME_TOLERANCE = 1e-9  # s: a render asked for at a step's time is taken at that step

    def __init__(self, recording: RobotRecording, sensors: list[EventCameraConfig]) -> None:
        super().__init__(recording, sensors)
        seed, kind = recording.config.seed, KINDS[self.kind]
        self.simulators = {s.name: EventSimulator(s, generator(seed, kind.seed_stream(s.name, recording.name)))
                           for s in sensors}
        self.writers: dict[str, EventsWriter] = {}
        self.packets: dict[str, list[np.ndarray]] = {s.name: [] for s in sensors}
        self.packet_end: float | None = None  # the end of the packet being filled
        self.last_t: float | None = None

    def static_transforms(self) -> list[tuple[str, str, np.ndarray]]:
        """Each event camera's optical frame in its body frame, as a camera's."""
        robot, topics = self.recording.robot, self.recording.topics
        return [(topics.frame(sensor.name), topics.optical_frame(sensor.name),
                 np.linalg.inv(robot.sensor_pose(sensor.name)) @ robot.camera_pose(sensor.name))
                for sensor in self.sensors]

    def sample(self, step: int, t: float) -> None:
        if not self.sensors:
            return
        recording = self.recording
        if self.packet_end is None:
            self.packet_end = (np.floor(t * self.PACKET_HZ) + 1) / self.PACKET_HZ
        for sensor in self.sensors:
            simulator = self.simulators[sensor.name]
            if simulator.sample_times and t + self.TIME_TOLERANCE < simulator.next_sample_time():
                continue
            if sensor.name not in self.writers:
                self.writers[sensor.name] = EventsWriter(recording.gt / sensor.name / EVENTS_FILE, sensor.width,
                                                         sensor.height)
            events = simulator.add_sample(t, recording.robot.render_async(sensor.name).result().linear)
            if len(events):
                recording.writes.call(self.writers[sensor.name].append, events)
                self.packets[sensor.name].append(events)
            recording.count(self.stream(sensor))
        self.last_t = t
        if t + self.TIME_TOLERANCE >= self.packet_end:
            self._send_packets(t)
            self.packet_end = (np.floor(t * self.PACKET_HZ + self.TIME_TOLERANCE) + 1) / self.PACKET_HZ

    def _send_packets(self, t: float) -> None:
        """The events since the last packet, one EventArray per camera stamped `t` (none where there were none)."""
        recording = self.recording
        for sensor in self.sensors:
            batches, self.packets[sensor.name] = self.packets[sensor.name], []
            if batches and recording.bags:
                recording.writes.call(recording.bags.events, recording.topics.events(sensor.name), t,
                                      recording.topics.optical_frame(sensor.name), np.concatenate(batches),
                                      sensor.width, sensor.height)

    def close(self) -> None:
        if self.last_t is not None:
            self._send_packets(self.last_t)
        self.recording.writes.run(self._finish)

    def _finish(self) -> None:
        """On the writer thread, after every append: each events.h5 indexed to the last render and moved into
        place."""
        for writer in self.writers.values():
            writer.close(self.last_t)

    def abort(self) -> None:
        for writer in self.writers.values():
            writer.abort()


RECORDERS: dict[str, type[SensorRecorder]] = {recorder.kind: recorder for recorder in (
    CameraRecorder, ImuRecorder, LidarRecorder, EventRecorder)}

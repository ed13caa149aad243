"""The recorder of event cameras (`type: event`, core.config.event_camera): events into gt/<name>/events.h5 and
dvs_msgs/EventArray packets on /<name>/events."""

from __future__ import annotations

import numpy as np

from core.config.event_camera import EventCameraConfig
from core.formats.events import EVENTS_FILE, EventsWriter
from core.seeding import generator
from simulation.recording.sensor_streams.base import RobotRecording, SensorRecorder
from simulation.sensors.event_camera import EventSimulator

TOPIC = "events"  # /<name>/events, as the DVS drivers name it


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
        seed, kind = recording.config.seed, self.sensor_kind
        self.simulators = {s.name: EventSimulator(s, generator(seed, kind.seed_stream(s.name, recording.name)))
                           for s in sensors}
        self.writers: dict[str, EventsWriter] = {}
        self.packets: dict[str, list[np.ndarray]] = {s.name: [] for s in sensors}
        self.packet_end: float | None = None  # the end of the packet being filled
        self.last_t: float | None = None

    def static_transforms(self) -> list[tuple[str, str, np.ndarray]]:
        """Each event camera's optical frame in its body frame, as a camera's."""
        return self.optical_frames(self.sensors)

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
                recording.writes.call(recording.bags.events, recording.topics.topic(sensor.name, TOPIC), t,
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

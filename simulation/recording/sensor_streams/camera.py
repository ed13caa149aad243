"""The recorder of cameras (`type: camera`): pose, frames into gt/<camera>/ and the bags."""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np

from core.config import CameraConfig
from core.formats.bags.topics import WORLD_FRAME
from simulation.recording.ground_truth import CameraWriter
from simulation.recording.sensor_streams.base import RobotRecording, SensorRecorder
from simulation.render import Frame


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
        return self.optical_frames(self.configured)

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

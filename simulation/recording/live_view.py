"""The live view of a run as it records: a recording observer (observer.py) that logs what the recorder records to
a Rerun stream (live_target.py), with the entities and logging of the offline export (core.rerun_log), so the two
look the same. A camera shows the images it records (its outputs in gt/, else RGB and depth as in the bags).

The robot's path is not known ahead, so it is logged as the path so far every PATH_PERIOD_S of simulation time
and once more at the end. Only simulation time is logged; the observer reads its data and changes none of it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from core.config import ExperimentConfig
from core.config.sensors import CameraConfig
from core.formats.lidar import LidarSweep
from core.rerun_log import (
    CameraImages,
    RobotEntities,
    log_camera_frame,
    log_camera_labels,
    log_camera_lens,
    log_humans,
    log_lidar_sweep,
    log_pose,
    log_robot_marker,
    log_robot_path,
    log_world,
)
from simulation.backend import World
from simulation.recording.ground_truth import boxes_2d, camera_instances
from simulation.recording.live_target import LiveStream
from simulation.render import Frame

PATH_PERIOD_S = 0.5
BAG_OUTPUTS = ("rgb", "depth")  # what a camera that is in the bags only records


class LiveView:
    """A RecordingObserver on `stream` for the run of `config` in `world`; `finish` after the recorder closes."""

    def __init__(self, stream: LiveStream, world: World, config: ExperimentConfig):
        self._rr, self._rec = stream.rr, stream.rec
        classes = world.semantic_classes()
        self._instances = camera_instances(world.instances(), classes)
        log_world(self._rr, self._rec, classes)
        names = config.robot_names if config.multi_robot else [None]
        self._entities = {name: RobotEntities(name) for name in names}
        for name, entities in self._entities.items():
            log_robot_marker(self._rr, self._rec, entities)
            for camera in config.for_robot(name).robot.sensors.cameras:
                log_camera_labels(self._rr, self._rec, entities.sensor(camera.name), self._instances)
        self._paths: dict[str | None, list[np.ndarray]] = {name: [] for name in names}
        self._times = dict.fromkeys(names, 0.0)  # of each robot's last pose
        self._path_due = dict.fromkeys(names, 0.0)
        self._lens_noted: set[str] = set()  # camera entities whose lens note is logged (core.rerun_log)

    def robot_pose(self, robot: str | None, time: float, pose: np.ndarray) -> None:
        entities = self._entities[robot]
        log_pose(self._rr, self._rec, entities.pose, time, pose)
        self._paths[robot].append(pose[:3, 3].copy())
        self._times[robot] = time
        if time >= self._path_due[robot]:
            log_robot_path(self._rr, self._rec, entities, np.array(self._paths[robot]), time)
            self._path_due[robot] = time + PATH_PERIOD_S

    def camera_frame(self, robot: str | None, camera: CameraConfig, time: float, frame: Frame) -> None:
        outputs = set(camera.outputs) if camera.to_gt else set(BAG_OUTPUTS)

        def recorded(kind: str, image: np.ndarray | None) -> np.ndarray | None:
            return image if kind in outputs else None

        images = CameraImages(recorded("rgb", frame.rgb), recorded("depth", frame.depth),
                              recorded("instance", frame.instance), recorded("semantic", frame.semantic))
        boxes = boxes_2d(frame.instance_ids, frame.boxes_2d_tight) if "boxes2d" in outputs else []
        params = frame.camera
        entity = self._entities[robot].sensor(camera.name)
        if entity not in self._lens_noted:
            self._lens_noted.add(entity)
            log_camera_lens(self._rr, self._rec, entity, params.lens)
        log_camera_frame(self._rr, self._rec, entity, time, params.pose, params.K, (params.width, params.height), images,
                         boxes, self._instances, params.lens)

    def lidar_sweep(self, robot: str | None, lidar: str, sweep: LidarSweep) -> None:
        log_lidar_sweep(self._rr, self._rec, self._entities[robot].sensor(lidar), sweep.time, sweep.pose, sweep.points)

    def humans(self, time: float, joints: Mapping[str, np.ndarray]) -> None:
        log_humans(self._rr, self._rec, time, joints)

    def finish(self) -> None:
        """The whole path, at the last time logged."""
        for name, positions in self._paths.items():
            if positions:
                log_robot_path(self._rr, self._rec, self._entities[name], np.array(positions), self._times[name])

"""Our pinhole camera (simulation.render.camera) as a Blender camera with the same rays through the same
pixel centres.

Blender fits its sensor to the image width (sensor_fit HORIZONTAL), so the focal length in pixels along x
is lens / sensor_width x width. A pixel aspect ratio x:y of fy:fx makes the focal length along y fy.
Blender's pixel u (from the left) has its centre at u + 0.5 from the image's left edge and its unshifted
principal point at the image centre, that is at our (width - 1) / 2; shift_x and shift_y move the
principal point in units of the view's width (shift_y upwards, while our rows run downwards).
Blender cameras look along their local -z with +y up; our optical frame looks along +z with +y down.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.render.camera import Camera

SENSOR_WIDTH_MM = 36.0  # any width works: only lens / sensor_width matters
OPTICAL_TO_BLENDER = np.diag([1.0, -1.0, -1.0, 1.0])  # optical frame -> Blender camera frame (right-multiplied)


@dataclass(frozen=True)
class BlenderCamera:
    """The Blender camera and render settings that reproduce a `Camera`."""

    resolution: tuple[int, int]
    lens: float  # mm
    shift_x: float
    shift_y: float
    pixel_aspect: tuple[float, float]  # x, y; Blender wants both >= 1
    clip: tuple[float, float]  # near, far

    @classmethod
    def of(cls, camera: Camera) -> BlenderCamera:
        width, height = camera.width, camera.height
        ratio = camera.fy / camera.fx
        aspect = (ratio, 1.0) if ratio >= 1.0 else (1.0, 1.0 / ratio)
        return cls(
            resolution=(width, height),
            lens=camera.fx * SENSOR_WIDTH_MM / width,
            shift_x=((width - 1) / 2.0 - camera.cx) / width,
            shift_y=(camera.cy - (height - 1) / 2.0) * camera.fx / (camera.fy * width),
            pixel_aspect=aspect,
            clip=(camera.near, camera.far),
        )

    def apply(self, scene, camera_data) -> None:
        """Sets a bpy scene's resolution and pixel aspect and a bpy camera's lens, shift and clipping."""
        render = scene.render
        render.resolution_x, render.resolution_y = self.resolution
        render.resolution_percentage = 100
        render.pixel_aspect_x, render.pixel_aspect_y = self.pixel_aspect
        camera_data.type = "PERSP"
        camera_data.lens_unit = "MILLIMETERS"
        camera_data.sensor_fit = "HORIZONTAL"
        camera_data.sensor_width = SENSOR_WIDTH_MM
        camera_data.lens = self.lens
        camera_data.shift_x, camera_data.shift_y = self.shift_x, self.shift_y
        camera_data.clip_start, camera_data.clip_end = self.clip


def blender_pose(pose: np.ndarray) -> np.ndarray:
    """Blender's world matrix of a camera whose optical frame has world<-camera `pose`."""
    return np.asarray(pose, dtype=np.float64) @ OPTICAL_TO_BLENDER

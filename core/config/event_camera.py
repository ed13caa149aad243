"""An event camera (a DVS) after ESIM (Rebecq, Gehrig and Scaramuzza, "ESIM: an Open Event Camera Simulator",
CoRL 2018): its projection, as a camera's, and the model that turns rendered intensity into events
(simulation.sensors.event_camera); its entry in `robot.sensors` (`type: event`) and its kind (`EVENT`, a line of
core.config.sensor_kinds.KINDS). The recorder's half is simulation.recording.sensor_streams.event."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationError, model_validator

from core.config.base import NonNegFloat, PositiveFloat, PositiveInt, Strict
from core.config.sensor_kind import SensorKind
from core.config.sensors import CameraConfig, Mount
from core.formats.events import EVENTS_FILE, read_events


class EventCameraConfig(Strict):
    """A pinhole event camera: per-pixel log intensity sampled from the renderer at an adaptive rate, events where
    it crosses the contrast thresholds. Give `fov_deg` (horizontal) or full intrinsics (fx, fy, cx, cy), as for a
    camera. The default resolution is the DAVIS346's."""

    name: str
    mount: Mount = Field(default_factory=Mount)
    width: PositiveInt = 346
    height: PositiveInt = 260
    fov_deg: float | None = 90.0
    intrinsics: tuple[PositiveFloat, PositiveFloat, float, float] | None = Field(
        None, description="fx, fy, cx, cy in pixels; overrides fov_deg"
    )
    positive_threshold: PositiveFloat = Field(0.2, description="C+: log-intensity rise per ON event")
    negative_threshold: PositiveFloat = Field(0.2, description="C-: log-intensity fall per OFF event")
    threshold_sigma: NonNegFloat = Field(
        0.03, description="standard deviation of each pixel's thresholds around C+ and C- (fixed per pixel)"
    )
    refractory_s: NonNegFloat = Field(0.0, description="least time between two events of one pixel")
    noise_rate_hz: NonNegFloat = Field(0.0, description="noise events per pixel per second (Poisson)")
    max_log_change: PositiveFloat = Field(
        0.1, description="adaptive sampling: the largest log-intensity change of any pixel between two renders, "
        "as the last two renders' rate predicts it"
    )
    min_step_s: NonNegFloat = Field(0.0, description="shortest time between two renders")
    # Caps the step where nothing changes (and the first step, before a rate is known).
    max_step_s: Annotated[float, Field(gt=0, le=1.0)] = 0.01

    @model_validator(mode="after")
    def _check(self) -> EventCameraConfig:
        if self.min_step_s > self.max_step_s:
            raise ValueError(f"min_step_s ({self.min_step_s}) must be <= max_step_s ({self.max_step_s})")
        self.projection()
        return self

    def projection(self) -> CameraConfig:
        """The camera that renders this sensor's intensity: the same mount, resolution and projection, colour
        only. Its checks (field of view, pixel count) are this model's: a failing one is raised naming the
        field."""
        try:
            return CameraConfig(name=self.name, mount=self.mount, width=self.width, height=self.height,
                                fov_deg=self.fov_deg, intrinsics=self.intrinsics, outputs=["rgb"], to_bag=False,
                                to_gt=False)
        except ValidationError as error:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'width, height'}: "
                                 f"{e['msg'].removeprefix('Value error, ')}" for e in error.errors())
            raise ValueError(problems) from None


class EventEntry(EventCameraConfig):
    type: Literal["event"] = "event"


# Sampled every step (its simulator decides when it renders), rendering scene-linear light through its projection,
# with per-pixel thresholds and noise from a generator of its own; gt/<name>/events.h5.
EVENT = SensorKind("event", EventEntry, every_step=True, renders="linear", seeded=True, gt_file=EVENTS_FILE,
                   read=read_events, title="event camera")

"""How a robot moves (`exploration`): the frontier or tour explorer, given waypoints, or standing still."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from core.config.base import NonNegFloat, PositiveFloat, Strict, Vec3


class ExplorationConfig(Strict):
    planner: Literal["frontier", "tour", "waypoints", "external", "none"] = Field(
        "tour", description="frontier: go to the best-looking frontier next; tour: a global tour over frontier "
                                "clusters (FUEL-like), moving and turning at once; waypoints: the given points; "
                                "external: your own ROS node's commands (live); none: stay put")
    waypoints: list[Vec3] = Field(default_factory=list, description="x, y, z (m) for planner 'waypoints'")
    map_resolution: Annotated[float, Field(ge=0.02, le=1.0)] = Field(
        0.1, description="m per cell of the robot's maps (finer than 2 cm, a flat's maps and path searches take "
                         "gigabytes and hours)")
    stop_explored_fraction: Annotated[float, Field(gt=0, le=1)] = 0.95
    replan_period: PositiveFloat = 1.0
    safety_margin: NonNegFloat = 0.3
    initial_turn_deg: Annotated[float, Field(ge=0, le=360)] = Field(
        360.0, description="frontier and tour planners: how far the robot turns in place before it sets off (360: a full "
                           "look around; the start pose faces the most open direction, so less sets off sooner)")
    cameras: list[str] = Field(
        default_factory=list, description="frontier and tour planners: the depth cameras whose images build the "
        "robot's map, each pinhole; the first is the one it looks with (the viewpoints it picks, the way it goes "
        "kept in its view). Empty: the robot's first camera. A robot with cameras to its sides and back maps the "
        "people beside and behind it too")
    stop_distance: PositiveFloat | None = Field(
        None, description="waypoints planner: the robot waits while its first camera's depth shows something in "
                          "its way (its width, its height) closer than this many m ahead of its body (another "
                          "robot, a person); unset: it follows the waypoints blindly")

    @model_validator(mode="after")
    def _waypoints(self) -> ExplorationConfig:
        if self.planner == "waypoints" and not self.waypoints:
            raise ValueError("planner 'waypoints' needs a non-empty 'waypoints' list")
        return self

    @model_validator(mode="after")
    def _cameras_once(self) -> ExplorationConfig:
        twice = sorted({name for name in self.cameras if self.cameras.count(name) > 1})
        if twice:
            raise ValueError(f"cameras lists {twice} more than once")
        return self

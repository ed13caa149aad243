"""The static environment (`environment`): a procedural house or terrain, a 3D-Front house, a mesh or a
converted package."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, model_validator

from core.config.base import IntRange, NonNegFloat, Strict, at_most
from core.config.paths import InputPath

# Of a procedural house: beyond these, generating and furnishing it takes minutes per room or piece.
MAX_ROOMS = 64
MAX_FURNITURE = 500

# Luminance of the lights the 3D-Front converter makes (USD sphere-light nits), inside GRADE's randomisation range.
FRONT3D_LIGHT_INTENSITY = 2500.0


class TerrainConfig(Strict):
    """The procedural terrain (environment kind terrain, source procedural): rolling ground, rocks, trees, sun."""

    size: Annotated[float, Field(gt=4.0, le=500.0)] = Field(40.0, description="m, side of the square ground "
                                                                               "(centred on the origin)")
    relief: Annotated[float, Field(ge=0.0, le=50.0)] = Field(1.5, description="m between the lowest and the "
                                                                               "highest ground")
    rocks: Annotated[int, Field(ge=0, le=1000)] = 12
    trees: Annotated[int, Field(ge=0, le=1000)] = 10


class EnvironmentConfig(Strict):
    """Where the static environment comes from."""

    source: Literal["procedural", "front3d", "mesh", "package"] = "procedural"
    kind: Literal["indoor", "terrain"] = Field(
        "indoor", description="terrain: an outdoor environment with uneven ground under open sky and a sun; "
                              "procedural then makes a terrain (`terrain`) instead of a house, mesh reads the file "
                              "as a terrain whose ground is the geometry with the most upward-facing area; "
                              "front3d and package take no kind (a package says what it is)")
    path: InputPath | None = Field(None, description="house JSON, mesh file or converted package folder")
    future_models: InputPath | None = Field(None, description="3D-FUTURE model folder (front3d only)")
    textures: InputPath | None = Field(None, description="3D-Front texture folder (front3d only)")
    room: str | None = Field(None, description="convert only this room id (front3d only)")
    light_intensity: NonNegFloat = Field(FRONT3D_LIGHT_INTENSITY, description="front3d: luminance (nits) of the "
                                         "ceiling lights and lamps made for the house (before randomisation)")
    rooms: Annotated[int, Field(ge=1, le=MAX_ROOMS)] = Field(3, description="procedural: number of rooms/alcoves")
    furniture: Annotated[IntRange, AfterValidator(at_most(MAX_FURNITURE, "furniture pieces"))] = Field(
        default_factory=lambda: IntRange(min=10, max=20))
    terrain: TerrainConfig = Field(default_factory=TerrainConfig, description="procedural terrain options")
    region: list[tuple[float, float]] | None = Field(
        None, description="polygon [[x, y], ...] (m, at least 3 corners) where humans, animals, flying objects and "
                          "the robot start are placed and the frontier explorer explores, within the environment's "
                          "floor polygon (a terrain: its ground's outline); default: the whole floor polygon")

    @model_validator(mode="after")
    def _path_needed(self) -> EnvironmentConfig:
        if self.source != "procedural" and self.path is None:
            raise ValueError(f"environment source {self.source!r} needs a 'path'")
        if self.kind == "terrain" and self.source in ("front3d", "package"):
            raise ValueError(f"environment kind 'terrain' applies to sources procedural and mesh, not {self.source!r}")
        if self.region is not None and len(self.region) < 3:
            raise ValueError(f"region needs at least 3 corners, got {len(self.region)}")
        return self

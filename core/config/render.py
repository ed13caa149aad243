"""How cameras render (`render`): the ray caster's quality or Blender Cycles, the background and the exposure."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, field_validator

from core.config.base import NonNegFloat, Strict, Vec3
from core.config.paths import InputPath

# What rays that leave the scene (open doorways, windows) see by default: a light, slightly blue grey sky,
# linear RGB, about as bright as a lit wall.
DEFAULT_SKY = (0.5, 0.6, 0.75)


class ExposureConfig(Strict):
    """How every camera turns shaded (linear) colour into 8-bit sRGB, as a camera's exposure and tone curve."""

    mode: Literal["auto", "fixed"] = Field(
        "auto", description="auto: each frame's log-average luminance is brought to middle grey (metered on that "
                            "frame alone, so replays match); fixed: the shaded colour is scaled by 2^ev")
    ev: float = Field(0.0, ge=-20, le=20, description="stops: fixed: the scale is 2^ev; auto: exposure "
                                                      "compensation on top of the metered exposure (+1 = twice as "
                                                      "bright)")
    tone_map: Literal["filmic", "clip"] = Field(
        "filmic", description="filmic: ACES filmic curve, highlights roll off towards white; clip: values above "
                              "1 clip to white")


class CyclesConfig(Strict):
    """Blender Cycles path tracing on the CPU, when render.rgb is cycles (the `cycles` extra: bpy)."""

    samples: Annotated[int, Field(ge=1, le=65536)] = Field(
        7, description="path-traced samples per pixel (the most, with adaptive sampling)")
    adaptive_threshold: Annotated[float, Field(ge=0, le=1)] = Field(
        0.01, description="adaptive sampling: past adaptive_min_samples, a pixel stops taking samples once its "
                          "estimated noise is below this (Cycles' noise threshold; Cycles checks every 16 samples); "
                          "0: every pixel takes every sample")
    adaptive_min_samples: Annotated[int, Field(ge=0, le=65536)] = Field(
        0, description="samples every pixel takes before adaptive sampling may stop it; 0: Cycles' choice, "
                       "16 / adaptive_threshold^0.3 (64 at 0.01)")
    denoise: StrictBool = Field(True, description="OpenImageDenoise (bundled with Blender) on every frame, "
                                                  "guided by the albedo and normals")
    denoise_prefilter: Literal["none", "fast", "accurate"] = Field(
        "fast", description="how the denoiser treats its albedo and normal guides: fast takes them as they are "
                            "(they are nearly noise-free without depth of field or motion blur), accurate "
                            "denoises them first (three denoiser passes instead of one), none ignores their noise")
    motion_blur: Annotated[float, Field(ge=0, le=1)] = Field(
        0.0, description="exposure time, s, over which the camera's and the humans' and objects' motion blurs "
                         "each frame (the shutter opens at the frame's time); 0: sharp frames")
    max_bounces: Annotated[int, Field(ge=0, le=1024)] = Field(12, description="most bounces of a light path")
    diffuse_bounces: Annotated[int, Field(ge=0, le=1024)] = Field(
        4, description="most diffuse bounces of a light path (within max_bounces)")
    glossy_bounces: Annotated[int, Field(ge=0, le=1024)] = Field(
        4, description="most glossy (specular) bounces of a light path (within max_bounces)")
    light_tree: StrictBool = Field(True, description="sample the lights by their estimated contribution to "
                                                     "each point (Cycles' light tree) rather than uniformly")


class RenderConfig(Strict):
    """The embedded renderer's background and exposure (every camera)."""

    rgb: Literal["raycast", "cycles"] = Field(
        "raycast", description="what renders the RGB images: raycast (the Embree ray caster, fast) or cycles "
                               "(Blender Cycles path tracing, photoreal, needs the cycles extra); depth, ids, boxes "
                               "and flow always come from the ray caster")
    cycles: CyclesConfig = Field(default_factory=CyclesConfig)
    quality: Literal["fast", "default", "high"] = Field(
        "fast", description="the ray caster's lighting: fast (hard shadows, flat ambient, Blinn-Phong: the look and "
                            "speed of earlier versions, which older runs replay with), default (indirect light from "
                            "irradiance probes baked once per scene, soft shadows from the lights' size, GGX "
                            "highlights; up to 2x the frame time) or high (more shadow rays, denser probes)")

    background: Vec3 = Field(DEFAULT_SKY, description="linear RGB (>= 0) seen by rays that hit nothing "
                                                      "(open doorways, windows), unless `environment` is set")
    environment: InputPath | None = Field(None, description="equirectangular image seen by rays that hit nothing "
                                                       "(world frame, Z up, centre column along +X): Radiance .hdr "
                                                       "(linear) or an 8-bit sRGB image")
    environment_strength: NonNegFloat = Field(1.0, description="factor on the environment image's colours")
    exposure: ExposureConfig = Field(default_factory=ExposureConfig)

    @field_validator("background")
    @classmethod
    def _non_negative(cls, value: Vec3) -> Vec3:
        if min(value) < 0:
            raise ValueError(f"colour components must be >= 0, got {list(value)}")
        return value

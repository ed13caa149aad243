"""Validated configuration of an experiment: one module per section, each holding its models and their
defaults (`grade config show FILE` prints a config with every default filled in). Units: metres, seconds,
degrees (named `*_deg`), hertz (`*_hz`). Input paths (`InputPath` fields) are read relative to the config
file's folder; `output_dir` is relative to the current directory. Loading YAML, overrides and error messages:
core.config_io. The batch and SLAM-benchmark documents live beside their commands (pipeline.batch_config,
pipeline.benchmark_config)."""

from core.config.animated import (
    MAX_ANIMATED,
    AnimalsConfig,
    AnimatedConfig,
    ClipWindowConfig,
    GroundFitConfig,
    HumansConfig,
)
from core.config.base import (
    MAX_SEED,
    NOT_AVAILABLE,
    FloatRange,
    IntRange,
    NonNegFloat,
    PositiveFloat,
    PositiveInt,
    Seed,
    Strict,
    Vec3,
)
from core.config.environment import (
    FRONT3D_LIGHT_INTENSITY,
    MAX_FURNITURE,
    MAX_ROOMS,
    EnvironmentConfig,
    TerrainConfig,
)
from core.config.experiment import ExperimentConfig
from core.config.exploration import ExplorationConfig
from core.config.live import MAX_LIVE_TIMEOUT_S, LiveConfig
from core.config.objects import MAX_FLYING_OBJECTS, FlyingObjectsConfig
from core.config.paths import InputPath, input_paths, resolve_input_paths
from core.config.postprocess import (
    BlurConfig,
    DepthNoiseConfig,
    ImuNoiseConfig,
    PostprocessConfig,
    RollingShutterConfig,
)
from core.config.recording import RecordingConfig
from core.config.render import DEFAULT_SKY, CyclesConfig, ExposureConfig, RenderConfig
from core.config.robots import (
    DEFAULT_ROBOT_NAME,
    MAX_ROBOTS,
    ROBOT_NAME_PATTERN,
    PidGains,
    RobotConfig,
    RobotEntry,
    TiagoConfig,
    UavLimits,
)
from core.config.sensor_kinds import KINDS as SENSOR_KINDS
from core.config.sensor_kinds import SensorKind, SensorsConfig
from core.config.sensors import MAX_CAMERA_PIXELS, CameraConfig, ImuConfig, LidarConfig, Mount
from core.config.simulation import MAX_DURATION_S, RandomizationConfig, RatesConfig, SimulationConfig

__all__ = [
    "DEFAULT_ROBOT_NAME",
    "DEFAULT_SKY",
    "FRONT3D_LIGHT_INTENSITY",
    "MAX_ANIMATED",
    "MAX_CAMERA_PIXELS",
    "MAX_DURATION_S",
    "MAX_FLYING_OBJECTS",
    "MAX_FURNITURE",
    "MAX_LIVE_TIMEOUT_S",
    "MAX_ROBOTS",
    "MAX_ROOMS",
    "MAX_SEED",
    "NOT_AVAILABLE",
    "ROBOT_NAME_PATTERN",
    "SENSOR_KINDS",
    "AnimalsConfig",
    "AnimatedConfig",
    "BlurConfig",
    "CameraConfig",
    "ClipWindowConfig",
    "CyclesConfig",
    "DepthNoiseConfig",
    "EnvironmentConfig",
    "ExperimentConfig",
    "ExplorationConfig",
    "ExposureConfig",
    "FloatRange",
    "FlyingObjectsConfig",
    "GroundFitConfig",
    "HumansConfig",
    "ImuConfig",
    "ImuNoiseConfig",
    "InputPath",
    "IntRange",
    "LidarConfig",
    "LiveConfig",
    "Mount",
    "NonNegFloat",
    "PidGains",
    "PositiveFloat",
    "PositiveInt",
    "PostprocessConfig",
    "RandomizationConfig",
    "RatesConfig",
    "RecordingConfig",
    "RenderConfig",
    "RobotConfig",
    "RobotEntry",
    "RollingShutterConfig",
    "Seed",
    "SensorKind",
    "SensorsConfig",
    "SimulationConfig",
    "Strict",
    "TerrainConfig",
    "TiagoConfig",
    "UavLimits",
    "Vec3",
    "input_paths",
    "resolve_input_paths",
]

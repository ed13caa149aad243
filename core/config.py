"""Validated configuration models for an experiment and for a batch of experiments.

This module is the one place where defaults live; `grade config show FILE` prints a config with
every default filled in. Units: metres, seconds, degrees (named `*_deg`), hertz (`*_hz`).
Paths to input data are resolved relative to the config file's folder; `output_dir` is relative to
the current directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    field_validator,
    model_serializer,
    model_validator,
)

from core.bag_topics import check_namespace
from core.errors import ConfigError

# Seeds are stored as 32-bit signed integers by some consumers (USD int attributes such as scene.usda's
# grade:seed), so the master seed stays within that range everywhere.
MAX_SEED = 2**31 - 1
Seed = Annotated[StrictInt, Field(ge=0, le=MAX_SEED, description=f"0 <= seed <= {MAX_SEED}")]
# Longest experiment or bootstrap accepted, s: one hour at 240 Hz is 864,000 physics steps whose state log is
# held in memory until the run ends.
MAX_DURATION_S = 3600.0
# Most pixels a camera may render per frame (after supersampling): 8K UHD. Beyond it one frame's buffers
# take gigabytes.
MAX_CAMERA_PIXELS = 7680 * 4320
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegFloat = Annotated[float, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
Vec3 = tuple[float, float, float]


class Strict(BaseModel):
    """Base for every config model: unknown keys are errors, assignments are validated."""

    # Booleans must be written true/false (StrictBool fields), and no float may be inf or nan.
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class FloatRange(Strict):
    """An inclusive range [min, max] sampled uniformly."""

    min: float
    max: float

    @model_validator(mode="after")
    def _ordered(self) -> FloatRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must be <= max ({self.max})")
        return self


class IntRange(Strict):
    """An inclusive integer range [min, max]."""

    min: Annotated[int, Field(ge=0)]
    max: Annotated[int, Field(ge=0)]

    @model_validator(mode="after")
    def _ordered(self) -> IntRange:
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) must be <= max ({self.max})")
        return self


# ---------------------------------------------------------------- assets and scene


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
    path: Path | None = Field(None, description="house JSON, mesh file or converted package folder")
    future_models: Path | None = Field(None, description="3D-FUTURE model folder (front3d only)")
    textures: Path | None = Field(None, description="3D-Front texture folder (front3d only)")
    room: str | None = Field(None, description="convert only this room id (front3d only)")
    light_intensity: NonNegFloat = Field(FRONT3D_LIGHT_INTENSITY, description="front3d: luminance (nits) of the "
                                         "ceiling lights and lamps made for the house (before randomisation)")
    rooms: PositiveInt = Field(3, description="procedural: number of rooms/alcoves")
    furniture: IntRange = Field(default_factory=lambda: IntRange(min=10, max=20))
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


class ClipWindowConfig(Strict):
    """Which part of a long SMPL-family clip (amass, smpl, cloth3d) becomes an animated asset. A whole
    walk sweeps metres of floor and fits in no room; GRADE keeps 50-500 frames of each sequence."""

    select: Literal["least_sweep", "random", "split", "whole"] = Field(
        "least_sweep", description="least_sweep: the window whose joints cover the shortest horizontal distance; "
                                   "random: one window drawn from the experiment seed; split: consecutive windows, "
                                   "each its own asset; whole: the entire clip")
    duration: PositiveFloat = Field(2.0, description="s per window (GRADE: 50-500 frames); a shorter clip is used "
                                                     "whole")
    max_windows: PositiveInt = Field(8, description="split: at most this many windows per clip, spread over it")


class GroundFitConfig(Strict):
    """How an animated asset stands on a terrain's uneven ground (environment kind terrain; a flat floor has no
    slope and no gaps). Its support is the lowest part of its swept trace (the feet over the whole clip): the
    asset stands at one height, resting its support on the highest ground under it."""

    max_slope_deg: Annotated[float, Field(ge=0, le=90)] = Field(
        15.0, description="reject a pose where the ground under any support point is steeper than this")
    max_gap: NonNegFloat = Field(0.1, description="m: reject a pose where any support point would float higher "
                                                  "than this above the ground under it")


class AnimatedConfig(Strict):
    """What humans and animals share: how many, and how their swept traces are placed collision-free."""

    paths: list[Path] = Field(default_factory=list, description="files or folders of animations")
    count: IntRange = Field(default_factory=lambda: IntRange(min=7, max=40))
    max_tries: PositiveInt = 99
    contact_threshold: Annotated[int, Field(ge=1, description="accept a trace with fewer FCL contacts than this")] = 200
    max_inside_fraction: Annotated[float, Field(ge=0, le=1)] = Field(
        0.02, description="reject a trace with more of its volume than this inside closed furniture: contact "
                          "counts alone depend on mesh density, so a coarse sofa would let a human stand in it")
    fps: PositiveFloat = 30.0
    reverse_playback: StrictBool = Field(True, description="play animations forward then backward to loop smoothly")
    ground: GroundFitConfig = Field(default_factory=GroundFitConfig)


class HumansConfig(AnimatedConfig):
    """Animated humans placed collision-free in the environment."""

    source: Literal["procedural", "amass", "smpl", "cloth3d", "gltf", "package"] = "procedural"
    body_model: Path | None = Field(None, description="folder with the user's licensed SMPL/SMPL-H model files")
    window: ClipWindowConfig = Field(default_factory=ClipWindowConfig)

    @model_validator(mode="after")
    def _paths_needed(self) -> HumansConfig:
        if self.source != "procedural" and not self.paths:
            raise ValueError(f"humans source {self.source!r} needs 'paths'")
        if self.source in ("amass", "smpl") and self.body_model is None:
            raise ValueError(f"humans source {self.source!r} needs 'body_model' (your licensed SMPL files)")
        return self


class AnimalsConfig(AnimatedConfig):
    """Animated animals placed like humans (after them, clear of them), with the semantic class animal."""

    source: Literal["procedural", "gltf", "package"] = Field(
        "procedural", description="procedural: striped quadrupeds walking in place or grazing; gltf: skinned, "
                                  "animated glTF files (first clip each); package: converted animated packages")
    count: IntRange = Field(default_factory=lambda: IntRange(min=0, max=0))

    @model_validator(mode="after")
    def _paths_needed(self) -> AnimalsConfig:
        if self.source != "procedural" and not self.paths:
            raise ValueError(f"animals source {self.source!r} needs 'paths'")
        return self


class FlyingObjectsConfig(Strict):
    """Household objects that fly through the scene as kinematic bodies."""

    source: Literal["procedural", "gso", "mesh", "package"] = "procedural"
    paths: list[Path] = Field(default_factory=list)
    count: IntRange = Field(default_factory=lambda: IntRange(min=0, max=10))
    speed: FloatRange = Field(default_factory=lambda: FloatRange(min=0.1, max=0.6), description="m/s")
    angular_speed_deg: FloatRange = Field(default_factory=lambda: FloatRange(min=0.0, max=90.0))
    collision_check: StrictBool = False

    @model_validator(mode="after")
    def _paths_needed(self) -> FlyingObjectsConfig:
        if self.source != "procedural" and not self.paths:
            raise ValueError(f"flying object source {self.source!r} needs 'paths'")
        if self.speed.min < 0:
            raise ValueError("speed.min must be >= 0")
        return self


# ---------------------------------------------------------------- sensors


class Mount(Strict):
    """A sensor pose in its parent link: translation (m) and roll/pitch/yaw (deg, XYZ extrinsic)."""

    link: str = "base_link"
    translation: Vec3 = (0.0, 0.0, 0.0)
    rpy_deg: Vec3 = (0.0, 0.0, 0.0)


class CameraConfig(Strict):
    """A pinhole RGB-D camera. Give `fov_deg` (horizontal) or full intrinsics (fx, fy, cx, cy)."""

    name: str
    mount: Mount = Field(default_factory=Mount)
    width: PositiveInt = 640
    height: PositiveInt = 480
    fov_deg: float | None = 90.0
    intrinsics: tuple[PositiveFloat, PositiveFloat, float, float] | None = Field(
        None, description="fx, fy, cx, cy in pixels; overrides fov_deg"
    )
    rate_hz: PositiveFloat = 30.0
    near: PositiveFloat = 0.05
    far: PositiveFloat = 100.0
    outputs: list[Literal["rgb", "depth", "instance", "semantic", "normals", "flow", "boxes2d", "boxes3d"]] = Field(
        default_factory=lambda: ["rgb", "depth", "instance", "semantic", "boxes2d", "boxes3d"]
    )
    to_bag: StrictBool = Field(True, description="publish this camera in the ROS bags")
    to_gt: StrictBool = Field(True, description="write this camera's frames to gt/<name>/")
    supersampling: Annotated[int, Field(ge=1, le=4)] = 1

    @field_validator("fov_deg")
    @classmethod
    def _fov_range(cls, value: float | None) -> float | None:
        if value is not None and not 0.0 < value < 180.0:
            raise ValueError(f"fov_deg must be in (0, 180), got {value}")
        return value

    @model_validator(mode="after")
    def _check(self) -> CameraConfig:
        if self.fov_deg is None and self.intrinsics is None:
            raise ValueError("give fov_deg or intrinsics")
        if self.near >= self.far:
            raise ValueError(f"near ({self.near}) must be < far ({self.far})")
        pixels = self.width * self.height * self.supersampling**2
        if pixels > MAX_CAMERA_PIXELS:
            raise ValueError(f"{self.width}x{self.height} at supersampling {self.supersampling} is {pixels:,} pixels "
                             f"per frame, more than the {MAX_CAMERA_PIXELS:,} pixels (7680x4320) a camera may render")
        return self


class ImuConfig(Strict):
    name: str
    mount: Mount = Field(default_factory=Mount)
    rate_hz: PositiveFloat = 240.0


class LidarConfig(Strict):
    name: str = "lidar"
    mount: Mount = Field(default_factory=Mount)
    channels: PositiveInt = 16
    vertical_fov_deg: FloatRange = Field(default_factory=lambda: FloatRange(min=-15.0, max=15.0))
    horizontal_fov_deg: Annotated[float, Field(gt=0, le=360)] = 360.0
    horizontal_resolution_deg: Annotated[float, Field(gt=0, le=10)] = 0.4
    min_range: NonNegFloat = 0.1
    max_range: PositiveFloat = 30.0
    rate_hz: PositiveFloat = 10.0

    @model_validator(mode="after")
    def _check(self) -> LidarConfig:
        if self.min_range >= self.max_range:
            raise ValueError(f"min_range ({self.min_range}) must be < max_range ({self.max_range})")
        if self.vertical_fov_deg.min < -90 or self.vertical_fov_deg.max > 90:
            raise ValueError("vertical_fov_deg must lie within [-90, 90]")
        return self


class SensorsConfig(Strict):
    cameras: list[CameraConfig] = Field(default_factory=list)
    imus: list[ImuConfig] = Field(default_factory=list)
    lidar: LidarConfig | None = None

    @model_validator(mode="after")
    def _unique_names(self) -> SensorsConfig:
        names = [c.name for c in self.cameras] + [i.name for i in self.imus]
        names += [self.lidar.name] if self.lidar else []
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"sensor names must be unique, repeated: {duplicates}")
        return self


# ---------------------------------------------------------------- robots


class UavLimits(Strict):
    """Paper defaults for the 6-DOF UAV."""

    max_speed: PositiveFloat = 0.5
    max_tilt_deg: Annotated[float, Field(ge=0, le=90)] = 25.0
    lock_roll_pitch: StrictBool = Field(False, description="'horizontal' flight: roll and pitch stay zero")
    roll_pitch_rate_deg: PositiveFloat = 40.0
    yaw_rate_deg: PositiveFloat = 30.0
    z_band: FloatRange = Field(default_factory=lambda: FloatRange(min=0.5, max=2.5), description="flight altitude, m")
    # Dynamics limits, so that motion and IMU readings stay those of a real quadrotor. Defaults: PX4's
    # auto-mode trajectory limits (MPC_ACC_HOR 3 m/s^2, MPC_JERK_AUTO 4 m/s^3, MPC_YAWRAUTO_ACC 60 deg/s^2);
    # roll/pitch at 180 deg/s^2, a sixth of ArduCopter's default for 10-inch props (ATC_ACCEL_R/P_MAX
    # 1100 deg/s^2), is ample to follow the tilt a 4 m/s^3 trajectory asks for (~23 deg/s).
    max_acceleration: PositiveFloat = Field(3.0, description="m/s^2 (capped at g tan(max_tilt_deg), the most "
                                                             "a quadrotor tilted that far can reach)")
    max_jerk: PositiveFloat = Field(4.0, description="m/s^3: how fast the acceleration (and so the tilt) changes")
    roll_pitch_acceleration_deg: PositiveFloat = Field(180.0, description="angular acceleration, deg/s^2")
    yaw_acceleration_deg: PositiveFloat = Field(60.0, description="angular acceleration, deg/s^2")


class PidGains(Strict):
    kp: NonNegFloat = 2.0
    ki: NonNegFloat = 0.0
    kd: NonNegFloat = 0.2


class TiagoConfig(Strict):
    model: Literal["physical", "lightweight"] = "lightweight"
    max_speed: PositiveFloat = 1.0
    max_yaw_rate_deg: PositiveFloat = 86.0
    s_curve: Path | None = Field(None, description="calibrated S-curve network (.npz); built-in default if unset")
    velocity_profile: Literal["s_curve", "direct"] = Field(
        "direct", description="s_curve: base commands reach the base through the learned S-shaped profile, as "
                              "on the real robot; direct: commands apply at once. The frontier explorer's base "
                              "controller (60 Hz, its own acceleration limits) is tuned for direct: through the "
                              "S-curve each new command restarts a flat ramp, the base lags and overshoots "
                              "(demo house, 90 s: 76-79% coverage with wall contacts instead of 97% and none)")


class RobotConfig(Strict):
    kind: Literal["uav", "tiago_omni"] = "uav"
    uav: UavLimits = Field(default_factory=UavLimits)
    position_gains: PidGains = Field(default_factory=PidGains)
    attitude_gains: PidGains = Field(default_factory=lambda: PidGains(kp=3.0, ki=0.0, kd=0.1))
    tiago: TiagoConfig = Field(default_factory=TiagoConfig)
    sensors: SensorsConfig = Field(default_factory=SensorsConfig)


class ExplorationConfig(Strict):
    planner: Literal["frontier", "waypoints", "none"] = "frontier"
    waypoints: list[Vec3] = Field(default_factory=list, description="x, y, z (m) for planner 'waypoints'")
    map_resolution: PositiveFloat = 0.1
    stop_explored_fraction: Annotated[float, Field(gt=0, le=1)] = 0.95
    replan_period: PositiveFloat = 1.0
    safety_margin: NonNegFloat = 0.3
    initial_turn_deg: Annotated[float, Field(ge=0, le=360)] = Field(
        360.0, description="frontier planner: how far the robot turns in place before it sets off (360: a full "
                           "look around; the start pose faces the most open direction, so less sets off sooner)")
    stop_distance: PositiveFloat | None = Field(
        None, description="waypoints planner: the robot waits while its first camera's depth shows something in "
                          "its way (its width, its height) closer than this many m ahead of its body (another "
                          "robot, a person); unset: it follows the waypoints blindly")

    @model_validator(mode="after")
    def _waypoints(self) -> ExplorationConfig:
        if self.planner == "waypoints" and not self.waypoints:
            raise ValueError("planner 'waypoints' needs a non-empty 'waypoints' list")
        return self


# Most robots in one run: each gets its own MuJoCo collision bit (simulation.physics.model.ROBOT_BIT_SHIFT).
MAX_ROBOTS = 8
# The name of the one robot of a `robot:` config, and the default of the first entry of `robots:`.
DEFAULT_ROBOT_NAME = "my_robot_0"
# A robot name: one ROS namespace token (its topics are /<name>/..., its ground truth gt/<name>/).
ROBOT_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"


class RobotEntry(RobotConfig):
    """One robot of a multi-robot experiment (`robots:`): a robot config with a name and its own exploration."""

    name: Annotated[str, Field(pattern=ROBOT_NAME_PATTERN)] | None = Field(
        None, description="ROS namespace of its topics and TF frames and its gt/<name>/ folder; default "
                          "my_robot_<index>")
    exploration: ExplorationConfig | None = Field(None, description="its planner (default: the experiment's "
                                                                    "`exploration`)")


# ---------------------------------------------------------------- simulation and outputs


class RatesConfig(Strict):
    """Recording rates (DESIGN.md §4); camera rates live on each camera."""

    clock_hz: PositiveFloat = 240.0
    tf_hz: PositiveFloat = 120.0
    joint_states_hz: PositiveFloat = 120.0
    pose_hz: PositiveFloat = 60.0
    odom_hz: PositiveFloat = 60.0
    humans_hz: PositiveFloat = Field(30.0, description="humans/ skeleton (and optional vertex) frames")


class RandomizationConfig(Strict):
    """Domain randomisation of the embedded backend (simulation.embedded.randomization). GRADE's own
    settings: roughness {min: 0.1, max: 0.9}, light_intensity {min: 600, max: 4500}, light_color random,
    light_intensity_scale {min: 1, max: 1}."""

    light_intensity_scale: FloatRange = Field(
        default_factory=lambda: FloatRange(min=0.8, max=1.2),
        description="factor drawn per light, multiplying its authored intensity (or the light_intensity draw)")
    light_intensity: FloatRange | None = Field(
        None, description="absolute intensity drawn per light, replacing the authored one, in USD sphere-light "
                          "units (nits; each light keeps its radius), as GRADE draws it: 600-4500; unset: authored")
    light_color: Literal["temperature", "random", "authored"] = Field(
        "temperature", description="temperature: the authored colour times a black body of a temperature drawn from "
                                   "light_color_temperature_k; random: each channel U(0, 1), as GRADE draws it; "
                                   "authored: the colour as authored")
    light_color_temperature_k: FloatRange = Field(
        default_factory=lambda: FloatRange(min=4000, max=6500),
        description="colour temperature range, K, when light_color is temperature")
    roughness: FloatRange = Field(default_factory=lambda: FloatRange(min=0.3, max=0.9),
                                  description="roughness drawn per environment mesh (GRADE: 0.1-0.9)")
    material_color: FloatRange | None = Field(
        None, description="factor drawn per channel and per environment material (meshes sharing a colour or "
                          "texture share it), multiplying its linear colour or texture; unset: authored colours")
    during_run: StrictBool = Field(False, description="also re-randomise lights during the run")
    period: PositiveFloat = Field(5.0, description="seconds between re-randomisations when during_run")

    @model_validator(mode="after")
    def _check(self) -> RandomizationConfig:
        if self.light_intensity_scale.min < 0 or self.roughness.min < 0 or self.roughness.max > 1:
            raise ValueError("light_intensity_scale must be >= 0 and roughness within [0, 1]")
        for name in ("light_intensity", "material_color"):
            drawn = getattr(self, name)
            if drawn is not None and drawn.min < 0:
                raise ValueError(f"{name} must be >= 0")
        return self


class SimulationConfig(Strict):
    backend: Literal["embedded"] = Field("embedded", description="MuJoCo physics + Embree ray casting on the CPU")
    physics_hz: PositiveFloat = 240.0
    duration: Annotated[float, Field(gt=0, le=MAX_DURATION_S)] = Field(
        60.0, description=f"experiment length after the bootstrap, s (at most {MAX_DURATION_S:g})")
    bootstrap: Annotated[float, Field(ge=0, le=MAX_DURATION_S)] = Field(
        1.0, description=f"settling period before the start marker, s (at most {MAX_DURATION_S:g})")
    rates: RatesConfig = Field(default_factory=RatesConfig)
    randomization: RandomizationConfig = Field(default_factory=RandomizationConfig)

    @field_validator("backend", mode="before")
    @classmethod
    def _available_backend(cls, value: object) -> object:
        # The original GRADE ran on Isaac Sim, so configs may name 'isaac': say it is not available here
        # rather than pydantic's bare "Input should be 'embedded'".
        if value != "embedded":
            raise ValueError(f"backend {value!r} is not available in this version (only 'embedded')")
        return value


class RecordingConfig(Strict):
    bag_formats: list[Literal["ros1", "ros2"]] = Field(default_factory=lambda: ["ros2"])
    ros2_storage: Literal["mcap", "sqlite3"] = "mcap"
    bag_compression: Literal["none", "lz4", "zstd", "bz2"] = Field(
        "none", description="compress the bags: ROS 1 chunks lz4 or bz2, ROS 2 MCAP chunks lz4 or zstd, "
                            "ROS 2 sqlite3 messages zstd")
    depth_encoding: Literal["32FC1", "16UC1"] = Field("32FC1", description="32FC1 metres or 16UC1 millimetres")
    depth_npy: StrictBool = Field(False, description="also save float32 depth in metres as .npy")
    human_vertices: StrictBool = Field(False, description="save posed human vertices per frame (large)")
    class_map: Path | None = Field(None, description="YAML file overriding the global semantic class map "
                                                     "(default: NYU40 + GRADE's extras; README 'Semantic classes')")
    checkpoint_period: PositiveFloat = Field(1.0, description="s between full simulator states in states.npz "
                                                              "(replay can start at any of them)")
    namespace: str = Field(
        "", description="ROS namespace of the robot's bag topics and TF frames: my_robot_0 (GRADE) records "
                        "/my_robot_0/camera/rgb/image_raw with frames my_robot_0/base_link; empty: /camera/rgb/"
                        "image_raw, base_link. /clock, /tf, /tf_static, /starting_experiment and world stay global")

    @field_validator("namespace")
    @classmethod
    def _ros_namespace(cls, value: str) -> str:
        return check_namespace(value)

    @model_validator(mode="after")
    def _compression_fits_formats(self) -> RecordingConfig:
        # What each bag kind can be compressed with (simulation.recording.bags.BAG_COMPRESSIONS writes them).
        kinds = {"ros1": ("ROS 1", ("lz4", "bz2")), "mcap": ("ROS 2 MCAP", ("lz4", "zstd")),
                 "sqlite3": ("ROS 2 sqlite3", ("zstd",))}
        used = [kinds["ros1" if f == "ros1" else self.ros2_storage] for f in self.bag_formats]
        refused = [f"{label} supports {' or '.join(ok)}" for label, ok in used
                   if self.bag_compression != "none" and self.bag_compression not in ok]
        if refused:
            raise ValueError(f"recording.bag_compression {self.bag_compression!r} cannot compress every bag of "
                             f"bag_formats {self.bag_formats}: {'; '.join(refused)}")
        return self


class ImuNoiseConfig(Strict):
    """The RotorS discrete IMU noise model GRADE applies, per axis: white noise of density `*_noise_density`,
    a first-order Gauss-Markov bias (random walk `*_random_walk`, correlation time `*_bias_correlation_time`)
    and a turn-on bias drawn once per axis. Defaults: GRADE's. Units: gyro rad/s, accelerometer m/s^2."""

    gyro_noise_density: NonNegFloat = Field(3.394e-4, description="rad/s/sqrt(Hz)")
    gyro_random_walk: NonNegFloat = Field(3.8785e-5, description="rad/s^2/sqrt(Hz)")
    gyro_bias_correlation_time: PositiveFloat = Field(1000.0, description="s")
    gyro_turn_on_bias: NonNegFloat = Field(0.0087, description="rad/s: sigma of the normal draw, or the upper "
                                                               "bound of the upstream uniform draw")
    accel_noise_density: NonNegFloat = Field(4.0e-3, description="m/s^2/sqrt(Hz)")
    accel_random_walk: NonNegFloat = Field(6.0e-3, description="m/s^3/sqrt(Hz)")
    accel_bias_correlation_time: PositiveFloat = Field(300.0, description="s")
    accel_turn_on_bias: NonNegFloat = Field(0.196, description="m/s^2, as gyro_turn_on_bias")
    turn_on_draw: Literal["normal", "upstream_uniform"] = Field(
        "normal", description="normal: N(0, turn_on_bias) per axis; upstream_uniform: U(0, turn_on_bias) as GRADE's "
                              "code draws it (always positive), for replication")


class DepthNoiseConfig(Strict):
    """Depth camera noise on float depth in metres; pixels outside [min_range, max_range] become invalid
    (0 in uint16 PNGs, NaN in float outputs)."""

    model: Literal["realsense", "kinect", "gaussian"] = Field(
        "realsense", description="realsense: sigma = min(z^2 subpixel / (f baseline), 10), f from K; kinect: sigma = "
                                 "0.0012 + 0.0019 (z - 0.4)^2, valid 0.5-3 m; gaussian: polynomials in z")
    subpixel: PositiveFloat = Field(0.2, description="realsense: disparity error, pixels")
    baseline: PositiveFloat = Field(0.05, description="realsense: stereo baseline, m")
    gaussian_mean: list[float] = Field(default_factory=lambda: [0.0],
                                       description="gaussian: bias polynomial in z, coefficients c0 + c1 z + ...")
    gaussian_sigma: list[float] = Field(default_factory=lambda: [0.0, 0.0, 0.001],
                                        description="gaussian: sigma polynomial in z, coefficients c0 + c1 z + ...")
    min_range: NonNegFloat = Field(0.0, description="m")
    max_range: PositiveFloat = Field(3.5, description="m (GRADE: 3.5 for image files, 5 for bags)")

    @model_validator(mode="after")
    def _ranges(self) -> DepthNoiseConfig:
        if self.min_range >= self.max_range:
            raise ValueError(f"min_range ({self.min_range}) must be < max_range ({self.max_range})")
        return self


class BlurConfig(Strict):
    """Motion blur from the camera's true motion over the exposure, averaged over sub-poses."""

    model: Literal["depth_aware", "homography"] = Field(
        "depth_aware", description="depth_aware: warp with the exact per-pixel depth; homography: GRADE's "
                                   "fronto-parallel plane K (R + T n^T / d) K^-1, for replication")
    exposure: Annotated[float, Field(gt=0, le=1)] | None = Field(
        0.02, description="s; null draws it once per sequence from U(0, max_exposure)")
    max_exposure: Annotated[float, Field(gt=0, le=1)] = Field(0.1, description="s, when exposure is null")
    sub_poses: Annotated[int, Field(ge=2, le=256)] = 30
    plane_distance: PositiveFloat = Field(1.0, description="homography model: distance d of the plane, m")


class RollingShutterConfig(Strict):
    """Rows exposed one after another: the readout time (first to last row) is drawn once per sequence."""

    readout_mean: NonNegFloat = Field(0.015, description="s")
    readout_std: NonNegFloat = Field(0.006, description="s")


class PostprocessConfig(Strict):
    """What `grade postprocess` (and `grade generate` after recording) applies; a section left out is not applied.
    Outputs go to new files beside the originals, which are never changed."""

    imu: ImuNoiseConfig | None = None
    depth: DepthNoiseConfig | None = None
    blur: BlurConfig | None = None
    rolling_shutter: RollingShutterConfig | None = None

    @property
    def enabled(self) -> bool:
        return any(step is not None for step in (self.imu, self.depth, self.blur, self.rolling_shutter))


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
    environment: Path | None = Field(None, description="equirectangular image seen by rays that hit nothing "
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


class ExperimentConfig(Strict):
    """One experiment: a scene, a robot with sensors, a run length and what to record."""

    name: str = "experiment"
    seed: Seed = 0
    output_dir: Path = Path("runs/experiment")
    assets_dir: Path | None = Field(None, description="cache of converted packages (default <output_dir>/assets); "
                                                      "share one between experiments to convert each input once")
    environment: EnvironmentConfig = Field(default_factory=EnvironmentConfig)
    humans: HumansConfig = Field(default_factory=HumansConfig)
    animals: AnimalsConfig = Field(default_factory=AnimalsConfig)
    flying_objects: FlyingObjectsConfig = Field(default_factory=FlyingObjectsConfig)
    robot: RobotConfig = Field(default_factory=RobotConfig, description="the robot (one-robot shorthand of "
                                                                        "`robots`)")
    robots: list[RobotEntry] = Field(default_factory=list, description=f"several robots in one run (at most "
                                     f"{MAX_ROBOTS}), instead of `robot`")
    exploration: ExplorationConfig = Field(default_factory=ExplorationConfig)
    simulation: SimulationConfig = Field(default_factory=SimulationConfig)
    recording: RecordingConfig = Field(default_factory=RecordingConfig)
    render: RenderConfig = Field(default_factory=RenderConfig)
    postprocess: PostprocessConfig = Field(default_factory=PostprocessConfig,
                                           description="applied after recording (and by `grade postprocess`)")

    @model_validator(mode="after")
    def _one_robot_form(self) -> ExperimentConfig:
        """`robot` or `robots`, not both; robots named (my_robot_<index> by default), uniquely; `robot` then
        mirrors the first, so what reads one robot reads that one."""
        if not self.robots:
            return self
        if "robot" in self.model_fields_set:
            raise ValueError("give `robot` (one robot) or `robots` (a list of robots), not both")
        if len(self.robots) > MAX_ROBOTS:
            raise ValueError(f"robots: {len(self.robots)} robots, at most {MAX_ROBOTS} per run")
        for index, entry in enumerate(self.robots):
            if entry.name is None:
                entry.name = f"my_robot_{index}"
        names = [entry.name for entry in self.robots]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"robots: names must be unique, repeated: {repeated}")
        first = self.robots[0]
        # Not an assignment (that would mark `robot` as given): the mirror shares the entry's sections.
        self.__dict__["robot"] = RobotConfig.model_construct(**{k: getattr(first, k) for k in RobotConfig.model_fields})
        return self

    @model_serializer(mode="wrap")
    def _dump_one_form(self, handler: SerializerFunctionWrapHandler) -> dict:
        # Only the form given is written, so a dump (run.json) validates again and one-robot dumps stay as they were.
        data = handler(self)
        data.pop("robot" if self.robots else "robots", None)
        return data

    def robot_entries(self) -> list[tuple[str, str, RobotConfig, ExplorationConfig]]:
        """(name, config key, robot config, its exploration) of every robot, in order."""
        if not self.robots:
            return [(DEFAULT_ROBOT_NAME, "robot", self.robot, self.exploration)]
        return [(e.name, f"robots.{i}", e, e.exploration or self.exploration) for i, e in enumerate(self.robots)]

    @property
    def robot_names(self) -> list[str]:
        return [name for name, _, _, _ in self.robot_entries()]

    @property
    def multi_robot(self) -> bool:
        """Several robots: each robot's topics, TF frames and ground truth are under its name."""
        return len(self.robots) > 1

    def for_robot(self, name: str | None = None) -> ExperimentConfig:
        """The experiment as robot `name` (default: the first) sees it alone: `robot` and `exploration` are its own,
        and with several robots `recording.namespace` is its namespace (the configured one, then its name). Not
        validated again (a view for the stages that handle one robot)."""
        entries = {entry[0]: entry for entry in self.robot_entries()}
        if name is None:
            name = next(iter(entries))
        if name not in entries:
            raise ConfigError(f"no robot named {name!r}; robots: {', '.join(entries)}", field="robots")
        _, _, robot, exploration = entries[name]
        if not self.robots:
            return self
        alone = RobotConfig.model_construct(**{k: getattr(robot, k) for k in RobotConfig.model_fields})
        recording = self.recording
        if self.multi_robot:
            namespace = "/".join(part for part in (recording.namespace, name) if part)
            recording = recording.model_copy(update={"namespace": namespace})
        view = self.model_copy(update={"robots": [], "exploration": exploration, "recording": recording})
        view.__dict__["robot"] = alone
        return view

    @model_validator(mode="after")
    def _rates_divide_physics(self) -> ExperimentConfig:
        physics = self.simulation.physics_hz
        streams = {f"simulation.rates.{k}": v for k, v in self.simulation.rates.model_dump().items()}
        for _, key, robot, _ in self.robot_entries():
            sensors = robot.sensors
            for i, cam in enumerate(sensors.cameras):
                streams[f"{key}.sensors.cameras.{i}.rate_hz"] = cam.rate_hz
            for i, imu in enumerate(sensors.imus):
                streams[f"{key}.sensors.imus.{i}.rate_hz"] = imu.rate_hz
            if sensors.lidar:
                streams[f"{key}.sensors.lidar.rate_hz"] = sensors.lidar.rate_hz
        for key, rate in streams.items():
            ratio = physics / rate
            if rate > physics or abs(ratio - round(ratio)) > 1e-9:
                raise ValueError(
                    f"{key} = {rate:g} Hz must divide simulation.physics_hz = {physics:g} Hz "
                    f"(e.g. {', '.join(f'{physics / n:g}' for n in (1, 2, 4, 8))})"
                )
        step = 1.0 / physics
        for key in ("duration", "bootstrap"):
            value = getattr(self.simulation, key)
            if abs(value / step - round(value / step)) > 1e-6:
                raise ValueError(f"simulation.{key} = {value} s must be a whole number of physics steps ({step:g} s)")
        return self

    @model_validator(mode="after")
    def _has_a_sensor(self) -> ExperimentConfig:
        for _, key, robot, _ in self.robot_entries():
            sensors = robot.sensors
            if not (sensors.cameras or sensors.imus or sensors.lidar):
                raise ValueError(f"{key}.sensors: a robot needs at least one sensor (a camera, an IMU or a LiDAR); "
                                 "nothing would be recorded")
        return self

    @model_validator(mode="after")
    def _links_exist(self) -> ExperimentConfig:
        for _, robot_key, robot, _ in self.robot_entries():
            links = ROBOT_LINKS[robot.kind]
            sensors = robot.sensors
            mounts = [(f"cameras.{i}", c.mount) for i, c in enumerate(sensors.cameras)]
            mounts += [(f"imus.{i}", m.mount) for i, m in enumerate(sensors.imus)]
            mounts += [("lidar", sensors.lidar.mount)] if sensors.lidar else []
            names = [c.name for c in sensors.cameras] + [i.name for i in sensors.imus]
            names += [sensors.lidar.name] if sensors.lidar else []
            clashes = sorted(set(names) & set(links))
            if clashes:
                raise ValueError(f"sensor names {clashes} are robot link names; sensors get their own TF frames, "
                                 f"so name them differently (links: {sorted(links)})")
            for key, mount in mounts:
                if mount.link not in links:
                    raise ValueError(
                        f"{robot_key}.sensors.{key}.mount.link {mount.link!r} is not a link of robot "
                        f"{robot.kind!r}; expected one of {sorted(links)}"
                    )
        return self

    def resolve_paths(self, base: Path) -> ExperimentConfig:
        """A copy with relative input paths made absolute against `base` (the config's folder)."""

        def fix(p: Path | None) -> Path | None:
            return None if p is None or p.is_absolute() else (base / p).resolve()

        data = self.model_copy(deep=True)
        env, humans, objects = data.environment, data.humans, data.flying_objects
        for model, key in ((env, "path"), (env, "future_models"), (env, "textures"), (humans, "body_model")):
            value = getattr(model, key)
            if value is not None and not value.is_absolute():
                setattr(model, key, fix(value))
        humans.paths = [p if p.is_absolute() else fix(p) for p in humans.paths]
        data.animals.paths = [p if p.is_absolute() else fix(p) for p in data.animals.paths]
        objects.paths = [p if p.is_absolute() else fix(p) for p in objects.paths]
        for robot in (data.robot, *data.robots):
            if robot.tiago.s_curve is not None and not robot.tiago.s_curve.is_absolute():
                robot.tiago.s_curve = fix(robot.tiago.s_curve)
        if data.recording.class_map is not None and not data.recording.class_map.is_absolute():
            data.recording.class_map = fix(data.recording.class_map)
        if data.render.environment is not None and not data.render.environment.is_absolute():
            data.render.environment = fix(data.render.environment)
        return data

    def input_paths(self) -> dict[str, Path]:
        """Every input path with its key path, for existence checks."""
        found: dict[str, Path] = {}
        env = self.environment
        for key in ("path", "future_models", "textures"):
            if getattr(env, key) is not None:
                found[f"environment.{key}"] = getattr(env, key)
        for i, p in enumerate(self.humans.paths):
            found[f"humans.paths.{i}"] = p
        if self.humans.body_model is not None:
            found["humans.body_model"] = self.humans.body_model
        for i, p in enumerate(self.animals.paths):
            found[f"animals.paths.{i}"] = p
        for i, p in enumerate(self.flying_objects.paths):
            found[f"flying_objects.paths.{i}"] = p
        for _, key, robot, _ in self.robot_entries():
            if robot.tiago.s_curve is not None:
                found[f"{key}.tiago.s_curve"] = robot.tiago.s_curve
        if self.recording.class_map is not None:
            found["recording.class_map"] = self.recording.class_map
        if self.render.environment is not None:
            found["render.environment"] = self.render.environment
        return found


# Links a sensor may be mounted on, per robot. The robot models (simulation/robots) define the
# same names; a test keeps the two in step.
ROBOT_LINKS: dict[str, frozenset[str]] = {
    "uav": frozenset({"base_link", "camera_link"}),
    "tiago_omni": frozenset({"base_link", "torso_lift_link", "head_1_link", "head_2_link", "base_laser_link"}),
}


# ---------------------------------------------------------------- batches


class FileDraw(Strict):
    """A file drawn per sequence from a folder (relative to the batch file), matching `glob`."""

    folder: Path
    glob: str = "*"


class Variant(Strict):
    """A named set of `key.path: value` overrides applied on top of the base experiment, optionally with its own
    number of sequences (`count`: seeds first, first + 1, ..., first being the batch's first seed) and values
    drawn per sequence (`draw`: from a list, an integer range, or the files of a folder; seeded by the
    sequence's seed and the variant's name, so the same batch draws the same values)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    set: dict[str, object] = Field(default_factory=dict)
    count: PositiveInt | None = Field(None, description="sequences of this variant (default: one per batch seed)")
    draw: dict[str, list[object] | IntRange | FileDraw] = Field(default_factory=dict)  # IntRange: drawn uniformly

    @field_validator("draw")
    @classmethod
    def _non_empty(cls, draw: dict) -> dict:
        for key, values in draw.items():
            if isinstance(values, list) and not values:
                raise ValueError(f"draw.{key}: an empty list to draw from")
        return draw


class ExecutorConfig(Strict):
    """Where `grade batch` runs its jobs: a local process pool, Ray, or SLURM through submitit."""

    kind: Literal["local", "ray", "slurm", "submitit-local"] = Field(
        "local", description="local: a pool of `workers` processes here; ray: tasks on a Ray cluster (`ray_address`, "
                             "or a local instance); slurm: submitit jobs on a SLURM cluster; submitit-local: "
                             "submitit's local executor (the SLURM path without a cluster)")
    workers: PositiveInt = Field(1, description="jobs at a time (local, ray, submitit-local)")
    retries: Annotated[int, Field(ge=0, le=10)] = Field(1, description="attempts after a failed one, per job")
    ray_address: str | None = Field(None, description="ray: 'auto' or host:port; default: start a local instance")
    cpus_per_job: PositiveInt = Field(2, description="ray task num_cpus / slurm cpus_per_task")
    threads_per_job: PositiveInt | None = Field(None, description="render threads of each job (GRADE_THREADS; "
                                                                  "default: local: the cores / workers, ray and "
                                                                  "slurm: cpus_per_job)")
    pin_cores: bool = Field(False, description="local: run each worker's jobs on cores of their own (Linux CPU "
                                               "affinity, threads_per_job cores each), so that no job's threads "
                                               "compete with another's")
    gpus_per_job: NonNegFloat = Field(0.0, description="ray task num_gpus / slurm gpus_per_node, for GPU backends")
    slurm_partition: str | None = None
    slurm_time_min: PositiveInt = Field(120, description="slurm: time limit per job, minutes")
    slurm_mem_gb: PositiveFloat = Field(8.0, description="slurm: memory per job, GB")

    @model_validator(mode="after")
    def _pinned_locally(self) -> ExecutorConfig:
        if self.pin_cores and self.kind != "local":
            raise ValueError("pin_cores applies to the local pool only (Ray and SLURM place jobs on cores "
                             "themselves)")
        return self


class BatchConfig(Strict):
    """Many experiments: a base config crossed with seeds and variants, run as jobs by an executor."""

    base: Path = Field(description="experiment YAML, relative to the batch file")
    seeds: list[Seed] = Field(default_factory=lambda: [0])
    variants: list[Variant] = Field(default_factory=lambda: [Variant(name="default")])
    output_dir: Path = Path("runs/batch")
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    exports: list[Literal["coco", "yolo", "tum", "euroc"]] = Field(
        default_factory=list, description="exports of every run, made when all jobs are done (<dir>/exports/<format>, "
                                          "the `grade export` defaults)")

    @model_validator(mode="after")
    def _unique(self) -> BatchConfig:
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError(f"variant names must be unique: {names}")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be unique: {self.seeds}")
        return self


# ---------------------------------------------------------------- SLAM benchmark


class SlamSequence(Strict):
    """A sequence of a SLAM benchmark, from one source: an existing recording (`run`), one recorded from an
    experiment config (`experiment`, with `set` overrides, into <output_dir>/sequences/<name>), a teleport
    replay of another sequence with its humans hidden (`without_humans_of`: the same trajectory without the
    people), or another sequence's recording post-processed with the grade-paper preset (`noisy_of`: IMU,
    depth, blur and rolling-shutter noise; the methods get the noisy data)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    run: Path | None = None
    experiment: Path | None = None
    set: list[str] = Field(default_factory=list, description="key.path=value overrides of `experiment`")
    without_humans_of: str | None = Field(None, description="another sequence's name")
    noisy_of: str | None = Field(None, description="another sequence's name")

    @model_validator(mode="after")
    def _one_source(self) -> SlamSequence:
        given = [k for k in SEQUENCE_SOURCES if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(SEQUENCE_SOURCES)} (got {given or 'none'})")
        if self.set and self.experiment is None:
            raise ValueError("`set` overrides an `experiment`")
        return self

    @property
    def source(self) -> str | None:
        """The sequence this one derives from, if any."""
        return self.without_humans_of or self.noisy_of

    @property
    def noise(self) -> bool:
        return self.noisy_of is not None


SEQUENCE_SOURCES = ("run", "experiment", "without_humans_of", "noisy_of")


class SlamMethod(Strict):
    """A SLAM method: ORB-SLAM3 (pyorbslam3, the `slam` extra) in one of its modes, KISS-ICP on the LiDAR, or
    an external command run on a TUM RGB-D or EuRoC export of the sequence."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    runner: Literal["orbslam3", "kiss-icp", "external"]
    mode: Literal["rgbd", "mono", "mono_inertial", "stereo"] = "rgbd"
    camera: str | None = Field(None, description="default: the recording's first camera")
    right_camera: str | None = Field(None, description="stereo: the pair's right camera (`camera` is the left)")
    lidar: str | None = Field(None, description="kiss-icp: default the recording's LiDAR")
    command: str | None = Field(None, description="external: template with {sequence} and {out}")
    trajectory: str | None = Field(None, description="external: the TUM file the command writes into {out}")
    export: Literal["tum", "euroc"] = Field("tum", description="external: the sequence format it reads")
    timeout_s: PositiveFloat = 3600.0

    @model_validator(mode="after")
    def _external(self) -> SlamMethod:
        if self.runner == "external" and (self.command is None or self.trajectory is None):
            raise ValueError("an external method needs `command` and `trajectory`")
        if (self.mode == "stereo") != (self.right_camera is not None) and self.runner == "orbslam3":
            raise ValueError("stereo takes `right_camera`, and only stereo does")
        return self

    @property
    def sim3(self) -> bool:
        """Monocular methods know the trajectory up to scale: align with Sim(3)."""
        return self.runner == "orbslam3" and self.mode == "mono"


class SlamBenchmarkConfig(Strict):
    """Methods x sequences x repetitions (`grade benchmark slam`); paths relative to the config file."""

    name: str = "slam-benchmark"
    sequences: list[SlamSequence]
    methods: list[SlamMethod]
    repetitions: PositiveInt = 1
    vocabulary: Path | None = Field(None, description="ORB vocabulary (ORBvoc.txt); default PYORBSLAM3_VOCAB, "
                                                      "else one built from the first sequence's frames")
    delta_s: PositiveFloat = Field(1.0, description="RPE step, s")
    max_difference: PositiveFloat = Field(0.02, description="association tolerance, s")
    output_dir: Path = Path("runs/slam-benchmark")

    @model_validator(mode="after")
    def _names(self) -> SlamBenchmarkConfig:
        for kind, items in (("sequence", self.sequences), ("method", self.methods)):
            names = [item.name for item in items]
            if len(set(names)) != len(names) or not names:
                raise ValueError(f"{kind} names must be unique and at least one given: {names}")
        known = {s.name for s in self.sequences}
        for sequence in self.sequences:
            if sequence.source is not None and sequence.source not in known - {sequence.name}:
                raise ValueError(f"sequence {sequence.name!r}: {sequence.source!r} names no other sequence")
        return self


# Keys that earlier versions declared but no stage applied. They are not in the schema (a setting
# must do something); a config naming one gets this message instead of a "did you mean" hint.
NOT_AVAILABLE: dict[type[BaseModel], dict[str, str]] = {}

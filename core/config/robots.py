"""The robot (`robot`, or each entry of `robots`): its kind, flight and drive limits, controller gains and
sensors; for a robot of kind `custom`, its description file. What each kind is (links, volume, drive) lives in
core.robot_catalogue."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, model_validator

from core.config.base import FloatRange, NonNegFloat, PositiveFloat, Strict
from core.config.exploration import ExplorationConfig
from core.config.paths import InputPath
from core.config.sensor_kinds import SensorsConfig
from core.robot_catalogue import CUSTOM_KEYS, KINDS, Drive, RobotKind


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
    s_curve: InputPath | None = Field(None, description="calibrated S-curve network (.npz); built-in default if unset")
    velocity_profile: Literal["s_curve", "direct"] = Field(
        "direct", description="s_curve: base commands reach the base through the learned S-shaped profile, as "
                              "on the real robot; direct: commands apply at once. The frontier explorer's base "
                              "controller (60 Hz, its own acceleration limits) is tuned for direct: through the "
                              "S-curve each new command restarts a flat ramp, the base lags and overshoots "
                              "(demo house, 90 s: 76-79% coverage with wall contacts instead of 97% and none)")


class GroundLimits(Strict):
    """A ground robot of kind `custom`: how fast its base drives and turns."""

    max_speed: PositiveFloat = 1.0
    max_yaw_rate_deg: PositiveFloat = 90.0


class RobotConfig(Strict):
    kind: RobotKind = Field("uav", description="uav, tiago_omni, or custom: a robot from its URDF or MJCF "
                                               "`description`")
    uav: UavLimits = Field(default_factory=UavLimits, description="flight limits (the UAV; a custom robot with "
                                                                  "drive floating)")
    position_gains: PidGains = Field(default_factory=PidGains)
    attitude_gains: PidGains = Field(default_factory=lambda: PidGains(kp=3.0, ki=0.0, kd=0.1))
    tiago: TiagoConfig = Field(default_factory=TiagoConfig)
    description: InputPath | None = Field(None, description="kind custom: the robot's URDF (.urdf) or MJCF (.xml)")
    packages: dict[str, InputPath] = Field(default_factory=dict, description="kind custom: the folder each ROS "
                                           "package of the description's package:// URIs is in")
    drive: Drive | None = Field(None, description="kind custom: differential (forward and turn; skid steer too), "
                                                  "holonomic (any planar twist) or floating (flies like the UAV)")
    base_link: str | None = Field(None, description="kind custom: the link that is the robot's base (default "
                                                    "base_link, else the description's root link)")
    ground: GroundLimits = Field(default_factory=GroundLimits, description="kind custom, drive differential or "
                                                                           "holonomic: base speed limits")
    sensors: SensorsConfig = Field(default_factory=SensorsConfig)

    @model_validator(mode="after")
    def _kind_settings(self) -> RobotConfig:
        KINDS[self.kind].check(self)
        return self

    def unwritten_fields(self) -> frozenset[str]:
        """A description's keys, for a built-in kind: so its dumps (run.json) stay as they were."""
        return frozenset(CUSTOM_KEYS) if KINDS[self.kind].built_in else frozenset()


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

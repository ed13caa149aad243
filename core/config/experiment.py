"""One experiment (`grade generate CONFIG`): the sections together, and the checks that span them."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from core.config.animated import AnimalsConfig, HumansConfig
from core.config.base import Seed, Strict
from core.config.environment import EnvironmentConfig
from core.config.exploration import ExplorationConfig
from core.config.live import LiveConfig
from core.config.objects import FlyingObjectsConfig
from core.config.postprocess import PostprocessConfig
from core.config.recording import RecordingConfig
from core.config.render import RenderConfig
from core.config.robots import DEFAULT_ROBOT_NAME, MAX_ROBOTS, RobotConfig, RobotEntry
from core.config.sensor_kinds import KINDS as SENSOR_KINDS
from core.config.simulation import SimulationConfig
from core.errors import ConfigError
from core.robot_catalogue import KINDS


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
    robot: RobotConfig | None = Field(default_factory=RobotConfig, description="the robot (one-robot shorthand "
                                                                               "of `robots`; unset when they are "
                                                                               "given)")
    robots: list[RobotEntry] = Field(default_factory=list, description=f"several robots in one run (at most "
                                     f"{MAX_ROBOTS}), instead of `robot`")
    exploration: ExplorationConfig = Field(default_factory=ExplorationConfig)
    simulation: SimulationConfig = Field(default_factory=SimulationConfig)
    recording: RecordingConfig = Field(default_factory=RecordingConfig)
    render: RenderConfig = Field(default_factory=RenderConfig)
    postprocess: PostprocessConfig = Field(default_factory=PostprocessConfig,
                                           description="applied after recording (and by `grade postprocess`)")
    live: LiveConfig = Field(default_factory=LiveConfig, description="publish the run to ROS as it records, and "
                                                                     "take commands from your own node")

    @model_validator(mode="before")
    @classmethod
    def _one_robot_form(cls, data: object) -> object:
        """`robot` or `robots`, not both: with `robots`, `robot` is unset (None), so nothing reads a default UAV
        where a list of robots was given."""
        if isinstance(data, dict) and data.get("robots"):
            if data.get("robot") is not None:
                raise ValueError("give `robot` (one robot) or `robots` (a list of robots), not both")
            data = {**data, "robot": None}
        return data

    @model_validator(mode="after")
    def _robots_named(self) -> ExperimentConfig:
        """At most MAX_ROBOTS robots, named (my_robot_<index> by default), uniquely."""
        if not self.robots:
            if self.robot is None:
                raise ValueError("give `robot` (one robot) or `robots` (a list of robots)")
            return self
        if len(self.robots) > MAX_ROBOTS:
            raise ValueError(f"robots: {len(self.robots)} robots, at most {MAX_ROBOTS} per run")
        for index, entry in enumerate(self.robots):
            if entry.name is None:
                entry.name = f"my_robot_{index}"
        names = [entry.name for entry in self.robots]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"robots: names must be unique, repeated: {repeated}")
        return self

    def unwritten_fields(self) -> frozenset[str]:
        """The robot form not given: `robot` is unset when `robots` are given, and `robots` empty when not."""
        return frozenset({"robot" if self.robots else "robots"})

    def robot_entries(self) -> list[tuple[str, str, RobotConfig, ExplorationConfig]]:
        """(name, config key, robot config, its exploration) of every robot, in order: the one list of robots,
        whichever form the config gave them in."""
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
        """The experiment as robot `name` (default: the first) sees it alone, in the one-robot form: `robot` and
        `exploration` are its own, and with several robots `recording.namespace` is its namespace (the configured
        one, then its name)."""
        entries = {entry[0]: entry for entry in self.robot_entries()}
        if name is None:
            name = next(iter(entries))
        if name not in entries:
            raise ConfigError(f"no robot named {name!r}; robots: {', '.join(entries)}", field="robots")
        _, _, robot, exploration = entries[name]
        if not self.robots:
            return self
        # Its own settings, validated again as a robot of the one-robot form (RobotEntry's name and exploration
        # left out).
        given = robot.model_fields_set & RobotConfig.model_fields.keys()
        alone = RobotConfig(**{key: getattr(robot, key) for key in given})
        recording = self.recording
        if self.multi_robot:
            namespace = "/".join(part for part in (recording.namespace, name) if part)
            recording = recording.model_copy(update={"namespace": namespace})
        return self.model_copy(update={"robots": [], "robot": alone, "exploration": exploration,
                                       "recording": recording})

    @model_validator(mode="after")
    def _rates_divide_physics(self) -> ExperimentConfig:
        physics = self.simulation.physics_hz
        streams = {f"simulation.rates.{k}": v for k, v in self.simulation.rates.model_dump().items()}
        for _, key, robot, _ in self.robot_entries():
            streams |= {f"{key}.sensors.{at}.rate_hz": sensor.rate_hz for at, sensor in robot.sensors.keyed()
                        if not SENSOR_KINDS[sensor.type].every_step}
        for key, rate in streams.items():
            ratio = physics / rate
            if rate > physics or abs(ratio - round(ratio)) > 1e-9:
                raise ValueError(
                    f"{key} = {rate:g} Hz must divide simulation.physics_hz = {physics:g} Hz "
                    f"(e.g. {', '.join(f'{physics / n:g}' for n in (1, 2, 4, 8))})"
                )
        ratio = physics / self.live.control_hz
        if abs(ratio - round(ratio)) > 1e-9 or ratio < 1 - 1e-9:
            raise ValueError(f"live.control_hz = {self.live.control_hz:g} Hz must divide simulation.physics_hz = "
                             f"{physics:g} Hz (e.g. {', '.join(f'{physics / n:g}' for n in (4, 8, 24))})")
        step = 1.0 / physics
        for key in ("duration", "bootstrap"):
            value = getattr(self.simulation, key)
            if abs(value / step - round(value / step)) > 1e-6:
                raise ValueError(f"simulation.{key} = {value} s must be a whole number of physics steps ({step:g} s)")
        return self

    @model_validator(mode="after")
    def _has_a_sensor(self) -> ExperimentConfig:
        for _, key, robot, _ in self.robot_entries():
            if not robot.sensors.root:
                raise ValueError(f"{key}.sensors: a robot needs at least one sensor (of {', '.join(SENSOR_KINDS)}); "
                                 "nothing would be recorded")
        return self

    @model_validator(mode="after")
    def _links_exist(self) -> ExperimentConfig:
        for _, robot_key, robot, _ in self.robot_entries():
            links = KINDS[robot.kind].links(robot)
            if links is None:  # a description's links: checked when it is loaded (simulation.embedded.sensors)
                continue
            mounts = robot.sensors.mounts()
            clashes = sorted({name for _, name, _ in mounts} & set(links))
            if clashes:
                raise ValueError(f"sensor names {clashes} are robot link names; sensors get their own TF frames, "
                                 f"so name them differently (links: {sorted(links)})")
            for key, _, mount in mounts:
                if mount.link not in links:
                    raise ValueError(
                        f"{robot_key}.sensors.{key}.mount.link {mount.link!r} is not a link of robot "
                        f"{robot.kind!r}; expected one of {sorted(links)}"
                    )
        return self

    @model_validator(mode="after")
    def _exploration_cameras_exist(self) -> ExperimentConfig:
        for _, key, robot, exploration in self.robot_entries():
            names = [camera.name for camera in robot.sensors.cameras]
            missing = [name for name in exploration.cameras if name not in names]
            if missing:
                raise ValueError(f"exploration.cameras names {missing}, which {key} does not carry; its cameras: "
                                 f"{names}")
        return self

    @model_validator(mode="after")
    def _external_needs_live(self) -> ExperimentConfig:
        external = [key for _, key, _, exploration in self.robot_entries() if exploration.planner == "external"]
        if external and self.live.middleware == "none":
            raise ValueError(f"exploration.planner 'external' ({', '.join(external)}) takes its commands from your "
                             "own ROS node: set live.middleware (ros1 or ros2), or run `grade generate CONFIG --live "
                             "ros1`")
        return self

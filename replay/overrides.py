"""What a replay changes (`grade replay RUN --with overrides.yaml`), validated, and the replay's config.

    cameras:                  # by name: replaces the run's camera of that name, or adds one
      - {name: camera, width: 1280, height: 960, outputs: [rgb, depth, instance, semantic, normals, flow]}
      - {name: side, mount: {link: camera_link, rpy_deg: [0, 0, 90]}}
    imus: [{name: imu_extra, mount: {link: base_link}}]     # by name, as cameras
    lidar: {channels: 32}                                   # adds the LiDAR, or replaces the run's one (by name
                                                            # when it has several)
    sensors: [{type: lidar, name: rear, mount: {link: base_link, rpy_deg: [0, 0, 180]}}]  # any kind, by name
    lights: {intensity_scale: 2.0, color: [1.0, 0.8, 0.6]}  # every light, on top of the recorded ones
    hide: {humans: all, flying_objects: [object_00_mug]}    # prim names (leaf or full path) or all
    add_objects:                                            # static objects: a package, or a mesh converted
      - {path: meshes/crate.obj, position: [2.0, 1.0, 0.25], yaw_deg: 30, label: box}
    depth_npy: true                                         # float32 depth files as well
    set: {recording.bag_formats: [ros1]}                    # other recording, sensor, rate and render keys

Only what a replay can honour is accepted: sensors, recording options, sensor rates, rendering (render.rgb:
cycles re-renders a run photoreal with the same ground truth), lights, which actors are shown and static
objects added (after the run's flying objects, so every recorded instance keeps its id; paths relative to
the overrides file). The scene, robot, planner, physics rate, timing and seed are the recorded run's (replay
follows its timeline), so `set` refuses keys outside robot.sensors, recording, simulation.rates and render.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, FieldSerializationInfo, field_serializer

from core.config import (
    DEFAULT_ROBOT_NAME,
    CameraConfig,
    ExperimentConfig,
    ImuConfig,
    LidarConfig,
    PositiveFloat,
    SensorsConfig,
    Strict,
    Vec3,
)
from core.config.sensor_kinds import SensorEntry
from core.config_io import apply_overrides, parse_override, validate_model
from core.errors import ConfigError, InputError
from core.formats.scene_layout import SceneHuman, SceneObject
from core.yaml_io import read_yaml

SETTABLE = ("robot.sensors.", "recording.", "simulation.rates.", "render.")
# `grade replay --set`: the rendering only (every camera's), which changes no trajectory and no ground truth.
RENDER = "render."
FILE_KEYS = ("recording.class_map", "render.environment")  # settable keys naming a file


class LightOverride(Strict):
    intensity_scale: PositiveFloat = Field(1.0, description="factor on every light's recorded intensity")
    color: Vec3 | None = Field(None, description="linear RGB in [0, 1] for every light (default: as recorded)")


class HideOverride(Strict):
    humans: Literal["all"] | list[str] = Field(default_factory=list)
    flying_objects: Literal["all"] | list[str] = Field(default_factory=list)


class AddedObject(Strict):
    path: Path = Field(description="an object package folder, or a mesh file (OBJ, PLY, STL, GLB, glTF) to convert")
    position: Vec3 = Field(description="where the object's bounding-box centre stands, world m")
    yaw_deg: float = 0.0
    label: str | None = Field(None, description="semantic label of a mesh file (default: its file name)")
    scale: PositiveFloat | None = Field(None, description="metres per unit of a mesh file (default 1)")


class ReplayOverrides(Strict):
    cameras: list[CameraConfig] = Field(default_factory=list)
    imus: list[ImuConfig] = Field(default_factory=list)
    lidar: LidarConfig | None = None
    sensors: list[SensorEntry] = Field(default_factory=list)
    lights: LightOverride | None = None
    hide: HideOverride = Field(default_factory=HideOverride)
    add_objects: list[AddedObject] = Field(default_factory=list)
    depth_npy: bool | None = None
    set: dict[str, Any] = Field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return self == ReplayOverrides()

    @field_serializer("sensors")
    def _typed(self, sensors: list[Strict], info: FieldSerializationInfo) -> list[dict[str, Any]]:
        """Each sensor with its type, also in a dump that leaves out defaults (the replay's record)."""
        return [{"type": sensor.type, **sensor.model_dump(mode=info.mode, exclude_defaults=info.exclude_defaults)}
                for sensor in sensors]


def load_overrides(path: Path | None) -> ReplayOverrides:
    """The overrides file (module docstring); none without a file."""
    if path is None:
        return ReplayOverrides()
    data, lines = read_yaml(path)
    if not data:  # an empty file (or `{}`) would replay the run unchanged: surely not what was meant
        raise InputError("holds no overrides (cameras, imus, lidar, sensors, lights, hide, add_objects, depth_npy, set); "
                         "leave out "
                         "--with to replay the run as it was", path)
    overrides = validate_model(ReplayOverrides, data, path, lines)
    # Paths are relative to the overrides file, as config paths are to the config's.
    added = [o.model_copy(update={"path": _from(path, o.path)}) for o in overrides.add_objects]
    files = {key: str(_from(path, Path(value))) for key, value in overrides.set.items()
             if key in FILE_KEYS and isinstance(value, str)}
    return overrides.model_copy(update={"add_objects": added, "set": {**overrides.set, **files}})


def render_settings(texts: list[str]) -> dict[str, Any]:
    """`--set render.KEY=VALUE` options (parsed as `grade generate --set` parses them) as the overrides' `set`
    entries; ConfigError for a key outside render. Relative paths are the working folder's, as a command line's."""
    settings: dict[str, Any] = {}
    for text in texts:
        parts, value = parse_override(text)
        key = ".".join(parts)
        if not key.startswith(RENDER):
            raise ConfigError(f"--set changes only the rendering (keys under {RENDER.rstrip('.')}), which leaves the "
                              f"run's trajectory and ground truth as recorded; {key!r} is not one. Sensors, recording "
                              "and rates go in a --with file's `set`", field=f"--set {key}")
        if key in FILE_KEYS and isinstance(value, str):
            value = str(Path(value).resolve())
        settings[key] = value
    return settings


def _from(overrides_file: Path, path: Path) -> Path:
    return path if path.is_absolute() else (overrides_file.parent / path).resolve()


def _sensors(recorded: Any, overrides: ReplayOverrides, source: str) -> Any:
    """The recorded sensors (a run.json dump) with the overrides' put in by name, dumped as run.json holds
    them (so that `set` keys such as robot.sensors.cameras.0.width still apply)."""
    sensors = validate_model(SensorsConfig, recorded, source)
    lidars = sensors.lidars
    if overrides.lidar is not None and len(lidars) == 1 and overrides.lidar.name not in sensors.names:
        sensors.lidar = overrides.lidar  # the run's one LiDAR, whatever its name
    elif overrides.lidar is not None:
        sensors.put(overrides.lidar)
    for sensor in [*overrides.cameras, *overrides.imus, *overrides.sensors]:
        sensors.put(sensor)
    return sensors.model_dump(mode="json")


def replay_config(recorded: dict[str, Any], overrides: ReplayOverrides, source: str,
                  robot_name: str | None = None) -> ExperimentConfig:
    """The replay's experiment config: the recorded run's (run.json) with the overrides applied; in a multi-robot
    run to robot `robot_name`'s sensors (default: the first robot's), `robot.sensors.*` keys included."""
    data = dict(recorded)
    robots = [dict(entry) for entry in data.get("robots", [])]
    index = _robot_index(robots, robot_name, source)
    robot = robots[index] if robots else dict(data.get("robot", {}))
    robot["sensors"] = _sensors(robot.get("sensors", {}), overrides, source)
    if robots:
        robots[index], data["robots"] = robot, robots
    else:
        data["robot"] = robot
    if overrides.depth_npy is not None:
        data["recording"] = {**data.get("recording", {}), "depth_npy": overrides.depth_npy}
    for key in overrides.set:
        if not key.startswith(SETTABLE):
            raise ConfigError(f"a replay follows the recorded run's scene, robot and timeline; set only keys under "
                              f"{', '.join(s.rstrip('.') for s in SETTABLE)}", source, f"set.{key}")
    keys = {key: f"robots.{index}.{key.removeprefix('robot.')}" if robots and key.startswith("robot.") else key
            for key in overrides.set}
    data = apply_overrides(data, [f"{keys[key]}={_yaml(value)}" for key, value in overrides.set.items()])
    return validate_model(ExperimentConfig, data, source)


def _robot_index(robots: list[dict[str, Any]], name: str | None, source: str) -> int:
    """The index of robot `name` among a multi-robot run's (default: 0); ConfigError naming them otherwise."""
    names = [entry.get("name") for entry in robots]
    if name is None or (not robots and name == DEFAULT_ROBOT_NAME):
        return 0
    if name not in names:
        raise ConfigError(f"no robot {name!r} in the run; robots: {', '.join(names) or DEFAULT_ROBOT_NAME}", source,
                          "--robot")
    return names.index(name)


def _yaml(value: Any) -> str:
    return json.dumps(value)  # JSON is YAML: the override parser reads it back as the same value


def hidden_prims(overrides: ReplayOverrides, humans: tuple[SceneHuman, ...], objects: tuple[SceneObject, ...],
                 source: str) -> frozenset[str]:
    """Prim paths of the humans and flying objects to hide; ConfigError naming an unknown one."""
    hidden: set[str] = set()
    for kind, chosen, prims in (("humans", overrides.hide.humans, humans),
                                ("flying_objects", overrides.hide.flying_objects, objects)):
        paths = {p.prim_path for p in prims}
        if chosen == "all":
            hidden |= paths
            continue
        leaves = {path.rsplit("/", 1)[-1]: path for path in paths}
        for name in chosen:
            path = name if name in paths else leaves.get(name)
            if path is None:
                listed = ", ".join(sorted(leaves)) or "none"
                raise ConfigError(f"no {kind[:-1].replace('_', ' ')} named {name!r} in the run's scene; it has: "
                                  f"{listed}", source, f"hide.{kind}")
            hidden.add(path)
    return frozenset(hidden)

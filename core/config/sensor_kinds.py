"""A robot's sensors (`robot.sensors`) as one list of typed entries, and the sensor kinds it may hold.

    sensors:
      - {type: camera, name: camera, mount: {link: camera_link}}
      - {type: lidar, name: front_lidar, mount: {link: base_link}}
      - {type: lidar, name: rear_lidar, mount: {link: base_link, rpy_deg: [0, 0, 180]}}

Each kind (`SensorKind`, core.config.sensor_kind, one line each in `KINDS`) names its config model, the key of
the form before the list (`cameras`, `imus`, `lidar`: still accepted, and normalised to the list when the config is
read) and its stream (`<type>/<name>` in the rate schedule and run.json's frame counts), and says what the other
layers need of it. The camera, IMU and LiDAR entries are here, beside the earlier form they make up; a newer kind's
entry and SensorKind are in its own module (core.config.event_camera). The simulation layer's half of each kind (how
the recorder samples and writes it) is its module in simulation.recording.sensor_streams.

A config given in the earlier form is dumped in it again (run.json, the stages' content hashes), so existing
configs' outputs stay byte for byte what they were; `grade config show` prints the list (`LIST_CONTEXT`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import (
    Field,
    GetJsonSchemaHandler,
    PrivateAttr,
    RootModel,
    SerializationInfo,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, InitErrorDetails, PydanticCustomError

from core.config.base import Strict
from core.config.event_camera import EVENT
from core.config.sensor_kind import SensorKind
from core.config.sensors import STEREO_SIDES, CameraConfig, ImuConfig, LidarConfig, Mount, StereoSide, stereo_name

# Serialisation context under which the sensors are dumped as the typed list even when the earlier form holds
# them (core.config_io.dump_yaml: `grade config show`).
LIST_CONTEXT = {"sensor_list": True}


class CameraEntry(CameraConfig):
    type: Literal["camera"] = "camera"


class ImuEntry(ImuConfig):
    type: Literal["imu"] = "imu"


class LidarEntry(LidarConfig):
    type: Literal["lidar"] = "lidar"


# The kinds, in the order the earlier form and the backend's mount sites take them: a new kind goes last.
KINDS: dict[str, SensorKind] = {kind.type: kind for kind in (
    SensorKind("camera", CameraEntry, "cameras", many=True, renders="display"),
    SensorKind("imu", ImuEntry, "imus", many=True, mount="inertial"),
    SensorKind("lidar", LidarEntry, "lidar", many=False),
    EVENT,
)}
# One of the kinds' entries, told apart by `type` (for models holding sensors beside SensorsConfig: replay's
# overrides). SensorsConfig itself looks each entry's kind up in KINDS as it validates, so a kind added to KINDS at
# run time (tests/test_sensor_kind_seam.py) is taken too.
SensorEntry = Annotated[Union[tuple(kind.entry for kind in KINDS.values())], Field(discriminator="type")]  # noqa: UP007
_LEGACY_KEYS = {kind.legacy_key: kind for kind in KINDS.values() if kind.legacy_key}


def kind_of(entry: Strict) -> SensorKind:
    return KINDS[entry.type]


def _as_entry(kind: SensorKind, value: Any) -> Any:
    """A model of the kind's base config (CameraConfig, ...) made its list entry; anything else as it is."""
    if isinstance(value, kind.entry.__mro__[1]) and not isinstance(value, kind.entry):
        return kind.entry.model_validate(value.model_dump())
    return value


def _raise(errors: list[InitErrorDetails]) -> None:
    if errors:
        raise ValidationError.from_exception_data("SensorsConfig", errors)


class EarlierForm(Strict):
    """The sensors as configs gave them before the list: validating it locates errors at the keys written
    (`cameras.0.width`)."""

    cameras: list[CameraEntry] = Field(default_factory=list)
    imus: list[ImuEntry] = Field(default_factory=list)
    lidar: LidarEntry | None = None


@functools.lru_cache(maxsize=64)
def _entries_adapter(entries: tuple[type[Strict], ...]) -> TypeAdapter:
    """The list of these entry models, as a tuple of them: errors are located at `<index>.<key>`, without the
    union's tag a discriminated list would put between."""
    return TypeAdapter(tuple[entries])


class SensorsConfig(RootModel[list[SerializeAsAny[SensorEntry]]]):
    """A robot's sensors, any number of each kind, names unique (each names its topics, TF frame and gt
    folder). Read from the list or from the earlier form ({cameras: [...], imus: [...], lidar: {...}})."""

    # Each entry dumped by its own model (SerializeAsAny), as its kind in KINDS validated it.
    root: list[SerializeAsAny[SensorEntry]] = Field(default_factory=list)
    input_forms: ClassVar[tuple[type[Strict], ...]] = (EarlierForm,)  # for core.config_io's did-you-mean
    _given_in_earlier_form: bool = PrivateAttr(True)

    @model_validator(mode="wrap")
    @classmethod
    def _normalise(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> SensorsConfig:
        if isinstance(data, SensorsConfig):
            return data
        legacy = isinstance(data, dict)
        if legacy:
            given = {key: ([_as_entry(_LEGACY_KEYS[key], v) for v in value] if isinstance(value, list)
                           else _as_entry(_LEGACY_KEYS[key], value)) if key in _LEGACY_KEYS else value
                     for key, value in data.items()}
            form = EarlierForm.model_validate(given)
            entries = [*form.cameras, *form.imus, *([form.lidar] if form.lidar else [])]
        elif isinstance(data, list):
            kinds = [(item.get("type") if isinstance(item, dict) else getattr(_kind_of_model(item), "type", None))
                     for item in data]
            _raise([InitErrorDetails(type=PydanticCustomError(
                "sensor_type", "type must be one of {types}, got {got}", {"types": ", ".join(KINDS), "got": repr(kind)}),
                loc=(i, "type"), input=data[i]) for i, kind in enumerate(kinds) if kind not in KINDS])
            entries = list(_entries_adapter(tuple(KINDS[kind].entry for kind in kinds)).validate_python(
                tuple(_as_entry(KINDS[kind], item) for kind, item in zip(kinds, data, strict=True))))
        else:
            return handler(data)
        entries = [camera for entry in entries for camera in (
            entry.stereo_pair() if isinstance(entry, CameraEntry) and entry.stereo else [entry])]
        # Each entry was validated by its kind's model in KINDS as it is now, so the root is built without checking
        # it against SensorEntry, the union of the kinds at import time.
        config = cls.model_construct(entries)
        config._given_in_earlier_form = legacy
        config._check_names()
        return config

    def _check_names(self) -> None:
        seen: dict[str, tuple[str, Strict]] = {}
        for key, entry in self.keyed():
            if entry.name in seen:
                other_key, other = seen[entry.name]
                # A derived name clashes: the `stereo` key made it, so the message points there.
                paired = next(((k, e) for k, e in ((key, entry), (other_key, other)) if _stereo_of(e)), None)
                where, field = (paired[0], "stereo") if paired else (key, "name")
                derived = (f" (sensors.{paired[0]}.stereo names its cameras "
                           f"{' and '.join(repr(stereo_name(_stereo_of(paired[1]).pair, s)) for s in STEREO_SIDES)})"
                           if paired else "")
                _raise([InitErrorDetails(type=PydanticCustomError(
                    "sensor_name", "sensor names must be unique (each names its topics, TF frame and ground truth): "
                    "{name} is also the name of sensors.{other}{derived}",
                    {"name": repr(entry.name), "other": other_key if where == key else key, "derived": derived}),
                    loc=(*_loc(where), field), input=entry.name)])
            seen[entry.name] = (key, entry)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        pairs = _folded(self.root, handler(self))
        entries = [{key: value for key, value in item.items() if key != "type"} for _, item in pairs]
        if not self._fits_earlier_form() or (info.context or {}).get("sensor_list"):
            return [{"type": entry.type, **item} for (entry, _), item in zip(pairs, entries, strict=True)]
        by_kind = {kind.type: [item for (entry, _), item in zip(pairs, entries, strict=True)
                               if entry.type == kind.type] for kind in _LEGACY_KEYS.values()}
        return {key: by_kind[kind.type] if kind.many else next(iter(by_kind[kind.type]), None)
                for key, kind in _LEGACY_KEYS.items()}

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        return {"anyOf": [handler(core_schema), handler(EarlierForm.__pydantic_core_schema__)]}

    def _fits_earlier_form(self) -> bool:
        """Whether the earlier form holds these sensors as they are: in its order (the cameras, the IMUs, then at
        most one LiDAR), as every config given in it is."""
        order = list(_LEGACY_KEYS.values())
        if any(kind_of(entry) not in order for entry in self.root):
            return False
        ranks = [order.index(kind_of(entry)) for entry in self.root]
        return ranks == sorted(ranks) and all(kind.many or ranks.count(rank) <= 1 for rank, kind in enumerate(order))

    def keyed(self) -> Iterator[tuple[str, Strict]]:
        """(key under `sensors`, entry) of each sensor, in order: `cameras.0`, `lidar` for a config in the earlier
        form, the list index otherwise, so that messages name the key the user wrote."""
        counts: dict[str, int] = {}
        earlier = self._given_in_earlier_form and self._fits_earlier_form()
        index = -1
        for entry in self.root:
            kind = kind_of(entry)
            if _stereo_of(entry) is None or _stereo_of(entry).side == STEREO_SIDES[0]:  # a pair is one key
                index += 1
                counts[kind.type] = counts.get(kind.type, 0) + 1
            if not earlier:
                yield str(index), entry
            elif kind.many:
                yield f"{kind.legacy_key}.{counts[kind.type] - 1}", entry
            else:
                yield kind.legacy_key, entry

    @property
    def names(self) -> list[str]:
        return [entry.name for entry in self.root]

    def of(self, kind: str) -> list[Any]:
        return [entry for entry in self.root if entry.type == kind]

    def named(self, name: str) -> Strict:
        return next(entry for entry in self.root if entry.name == name)

    def mounts(self) -> list[tuple[str, str, Mount]]:
        """(key, name, mount) of every sensor."""
        return [(key, entry.name, entry.mount) for key, entry in self.keyed()]

    def put(self, sensor: Strict) -> None:
        """Replace the sensor of `sensor`'s name with it, or add it after the last of its kind (with none, after
        the kinds before it in `KINDS`: the earlier form's order)."""
        kind = _kind_of_model(sensor)
        entries, entry = list(self.root), _as_entry(kind, sensor)
        names = [e.name for e in entries]
        if entry.name in names:
            entries[names.index(entry.name)] = entry
        else:
            order = list(KINDS)
            at = max((i + 1 for i, e in enumerate(entries) if order.index(e.type) <= order.index(kind.type)),
                     default=0)
            entries.insert(at, entry)
        self.root = SensorsConfig.model_validate(entries).root

    def _replace(self, kind: str, entries: list[Any]) -> None:
        """Put `entries` in place of the sensors of `kind`: where the first of them was, else after the kinds before
        it in `KINDS` (the earlier form's order)."""
        positions = [i for i, entry in enumerate(self.root) if entry.type == kind]
        rest = [entry for entry in self.root if entry.type != kind]
        order = list(KINDS)
        at = positions[0] if positions else len([e for e in rest if order.index(e.type) < order.index(kind)])
        replaced = SensorsConfig.model_validate(rest[:at] + [_as_entry(KINDS[kind], e) for e in entries] + rest[at:])
        self.root = replaced.root

    @property
    def cameras(self) -> list[CameraEntry]:
        return self.of("camera")

    @cameras.setter
    def cameras(self, cameras: list[CameraConfig]) -> None:
        self._replace("camera", cameras)

    @property
    def imus(self) -> list[ImuEntry]:
        return self.of("imu")

    @imus.setter
    def imus(self, imus: list[ImuConfig]) -> None:
        self._replace("imu", imus)

    @property
    def lidars(self) -> list[LidarEntry]:
        return self.of("lidar")

    @property
    def lidar(self) -> LidarEntry | None:
        """The first LiDAR (a robot of the earlier form has at most one); `lidars` lists them all."""
        return next(iter(self.lidars), None)

    @lidar.setter
    def lidar(self, lidar: LidarConfig | None) -> None:
        self._replace("lidar", [lidar] if lidar is not None else [])


def _stereo_of(entry: Strict) -> StereoSide | None:
    return entry.stereo_side if isinstance(entry, CameraEntry) else None


def _folded(entries: list[Strict], dumped: list[dict]) -> list[tuple[Strict, dict]]:
    """(entry, dump) of each sensor as the config gave it: a stereo pair's two cameras as its one entry."""
    folded = []
    for entry, item in zip(entries, dumped, strict=True):
        side = _stereo_of(entry)
        if side is None:
            folded.append((entry, item))
        elif side.side == STEREO_SIDES[0]:
            folded.append((entry, {**item, "name": side.pair, "stereo": {"baseline": side.baseline}}))
    return folded


def _kind_of_model(value: Any) -> SensorKind | None:
    return next((kind for kind in KINDS.values() if isinstance(value, kind.entry.__mro__[1])), None)


def _loc(key: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in key.split("."))

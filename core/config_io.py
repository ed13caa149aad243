"""Loading configs from YAML: overrides, clear errors with file/key/line, input paths resolved and checked."""

from __future__ import annotations

import copy
import difflib
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, RootModel, ValidationError

from core.config import NOT_AVAILABLE, ExperimentConfig, Strict, input_paths, resolve_input_paths
from core.config.sensor_kinds import LIST_CONTEXT
from core.errors import ConfigError
from core.yaml_io import read_yaml

M = TypeVar("M", bound=BaseModel)


def parse_override(text: str) -> tuple[list[str], Any]:
    """'a.b.c=value' -> (['a','b','c'], value parsed as a YAML scalar/list)."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} must look like key.path=value", field="--set")
    key, raw = text.split("=", 1)
    parts = key.strip().split(".")
    if not all(parts):
        raise ConfigError(f"override {text!r} has an empty key", field="--set")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise ConfigError(f"override value {raw!r} is not valid YAML: {exc}", field=key) from exc
    return parts, value


def set_path(data: dict, parts: list[str], value: Any, label: str = "--set") -> None:
    """Set data[a][b][c] = value, creating mappings; list items by integer index."""
    node: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        key_path = ".".join(parts[: i + 1])
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"index {part!r} out of range (list has {len(node)} items)", field=key_path)
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise ConfigError(f"cannot set a key inside a {type(node).__name__} value", label, key_path)


def apply_overrides(data: dict, overrides: list[str] | tuple[str, ...]) -> dict:
    result = copy.deepcopy(data)
    for text in overrides:
        parts, value = parse_override(text)
        set_path(result, parts, value)
    return result


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types inside Optional/Union/list/dict/Annotated annotations."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _forms(annotation: Any) -> list[Any]:
    """A root model stands for its root's type and for the other forms it reads (`input_forms`: the sensors'
    earlier form)."""
    if isinstance(annotation, type) and issubclass(annotation, RootModel):
        root = annotation.model_fields["root"].annotation
        return [*_unwrap(root), *getattr(annotation, "input_forms", ())]
    return [annotation]


def _models_at(model: type[BaseModel], loc: tuple) -> list[type[BaseModel]]:
    """The (nested) models a key path inside `model` can point to."""
    candidates: list[Any] = [model]
    for part in loc:
        nxt: list[Any] = []
        for cand in [form for given in candidates for form in _forms(given)]:
            origin = typing.get_origin(cand)
            if isinstance(cand, type) and issubclass(cand, BaseModel) and isinstance(part, str):
                if part in cand.model_fields:
                    nxt += _unwrap(cand.model_fields[part].annotation)
            elif origin in (list, tuple) and isinstance(part, int):
                nxt += [t for a in typing.get_args(cand) if a is not Ellipsis for t in _unwrap(a)]
        candidates = nxt
    return [c for cand in candidates for c in _forms(cand) if isinstance(c, type) and issubclass(c, BaseModel)]


def _unknown_key_message(model: type[BaseModel], loc: tuple) -> str:
    """Why a key is refused: not available in this version, or unknown with a did-you-mean hint."""
    parents = _models_at(model, loc[:-1])
    for parent in parents:
        reason = NOT_AVAILABLE.get(parent, {}).get(str(loc[-1]))
        if reason:
            return reason
    known = sorted({k for parent in parents for k in parent.model_fields})
    close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"unknown key{hint} Expected one of: {', '.join(known)}"


def format_validation_error(exc: ValidationError, model: type[BaseModel], file: Path | str,
                            lines: dict[tuple, int]) -> ConfigError:
    """One paragraph per problem: file, key path, line, what was expected and what was found."""
    messages = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        key = ".".join(str(p) for p in loc)
        line = lines.get(tuple(str(p) for p in loc)) if loc else None
        at = f" (line {line})" if line else ""
        if err["type"] == "extra_forbidden":
            messages.append(f"{key}{at}: {_unknown_key_message(model, loc)}.")
        else:
            msg = err["msg"].removeprefix("Value error, ")
            got = err.get("input")
            # Checks that quote the value themselves need no "(got ...)" repeating it.
            quoted = isinstance(got, (dict, list)) or got is None or repr(got) in msg
            shown = "" if quoted else f" (got {got!r})"
            # Model-level checks name their own key paths in the message.
            messages.append(f"{key}{at}: {msg}{shown}." if key else f"{msg}{shown}.")
    error = ConfigError(" ".join(messages), file)
    error.key_path = ".".join(str(p) for p in exc.errors()[0]["loc"]) if exc.errors() else ""
    return error


def validate_model(model: type[M], data: dict, file: Path | str, lines: dict[tuple, int] | None = None) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise format_validation_error(exc, model, file, lines or {}) from None


def check_input_paths(config: Strict, file: Path | str) -> None:
    """Every input path of a config exists and is a file or a folder; the error names the first missing key and
    lists any others, or the key of a FIFO, device or socket (which would block or never end when read)."""
    paths = input_paths(config).items()
    missing = [(key, path) for key, path in paths if not path.exists()]
    special = [(key, path) for key, path in paths if path.exists() and not (path.is_file() or path.is_dir())]
    if special:
        key, path = special[0]
        raise ConfigError(f"{path} is not a regular file or folder (a FIFO, device or socket); give a file or a "
                          "folder", file, key)
    if missing:
        key, path = missing[0]
        others = "".join(f"; also missing: {k} = {p}" for k, p in missing[1:])
        raise ConfigError(f"path does not exist: {path} (relative paths are read from the config's folder){others}",
                          file, key)


# An experiment's keys: a file with a `base` and none of them is a batch (pipeline.batch_config), and
# `grade generate` on it says to run it with `grade batch`.
EXPERIMENT_KEYS = set(ExperimentConfig.model_fields) - {"output_dir"}


def load_experiment(path: str | Path, overrides: list[str] | tuple[str, ...] = (),
                    check_paths: bool = True) -> ExperimentConfig:
    """Read, override, validate and resolve an experiment config."""
    path = Path(path)
    data, lines = read_yaml(path)
    if "base" in data and not EXPERIMENT_KEYS & set(data):
        raise ConfigError("this is a batch config (a base experiment crossed with seeds and variants), not one "
                          f"experiment: run it with `grade batch {path}`", path, "base")
    data = apply_overrides(data, overrides)
    config = resolve_input_paths(validate_model(ExperimentConfig, data, path, lines), path.parent.resolve())
    if check_paths:
        check_input_paths(config, path)
    return config


def dump_yaml(model: BaseModel) -> str:
    """A resolved config as YAML, every default included, its sensors as the typed list."""
    return yaml.safe_dump(model.model_dump(mode="json", context=LIST_CONTEXT), sort_keys=False, default_flow_style=None, width=100)

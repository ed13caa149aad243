"""Reading YAML documents (configs, batch files, class maps, category maps) safely: duplicate keys and alias
bombs refused, errors as ConfigError naming the file and the line, and each key path's line kept so that
later validation errors can point at it."""

from __future__ import annotations

from pathlib import Path

import yaml

from core.errors import ConfigError

# Most values a config may hold once YAML aliases (*name) are expanded: a few hundred-byte file of nested
# aliases (an "alias bomb") otherwise expands to billions of values.
MAX_YAML_VALUES = 100_000


def _expanded_size(node: yaml.Node, sizes: dict[int, int]) -> int:
    """How many values `node` stands for with every alias expanded (memoised: aliases share node objects)."""
    if id(node) not in sizes:
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        sizes[id(node)] = 1 + sum(_expanded_size(child, sizes) for child in children)
    return sizes[id(node)]


def _check_duplicate_keys(node: yaml.Node, path: Path, seen: set[int]) -> None:
    """ConfigError on a mapping that repeats a key (YAML loaders keep the last one silently)."""
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict[str, int] = {}
        for key_node, value_node in node.value:
            key, line = str(key_node.value), key_node.start_mark.line + 1
            if isinstance(key_node, yaml.ScalarNode) and key in first:
                raise ConfigError(f"duplicate key {key!r} at line {line} (first at line {first[key]}); "
                                  "YAML would silently keep only the last one", path, key)
            first.setdefault(key, line)
            _check_duplicate_keys(value_node, path, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _check_duplicate_keys(item, path, seen)


def _line_map(node: yaml.Node, prefix: tuple = (), seen: set[int] | None = None) -> dict[tuple, int]:
    """Key path -> 1-based line number, so errors can point into the file. An aliased node is walked once,
    under the first key path that reaches it."""
    seen = set() if seen is None else seen
    lines = {prefix: node.start_mark.line + 1}
    if id(node) in seen:
        return lines
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = (*prefix, str(key_node.value))
            lines.update(_line_map(value_node, key, seen))
            lines[key] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.update(_line_map(item, (*prefix, str(i)), seen))
    return lines


def read_yaml(path: str | Path) -> tuple[dict, dict[tuple, int]]:
    """Parse a YAML mapping; returns the data and a key-path -> line map."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError("is a folder, not a config file", path)
    if not path.is_file():
        raise ConfigError("file not found", path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not a UTF-8 text file (byte {exc.start} cannot be decoded)", path) from exc
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            if _expanded_size(node, {}) > MAX_YAML_VALUES:
                raise ConfigError(f"expands to more than {MAX_YAML_VALUES:,} values through YAML aliases (*name); "
                                  "a config this large is refused", path)
            _check_duplicate_keys(node, path, set())
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"not valid YAML{where}: {getattr(exc, 'problem', exc)}", path) from exc
    if data is None:
        data, node = {}, None
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a mapping of keys, got {type(data).__name__}", path)
    return data, (_line_map(node) if node is not None else {})

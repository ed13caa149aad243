"""Reading YAML documents (configs, batch files, class maps, category maps) safely and within bounds: the file's
size is checked before it is read, its nesting depth and its values (YAML aliases counted expanded, cycles
refused) while it is parsed, so that no document, however hostile, costs more than a moment to refuse; duplicate
keys refused; errors as ConfigError naming the file and the line; and each key path's line kept so that later
validation errors can point at it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import yaml
from yaml.composer import Composer
from yaml.events import AliasEvent, ScalarEvent

from core.errors import ConfigError
from core.rundir import decode_utf8

# Largest file read: configs are a few kB (the largest shipped one ~3 kB); a larger one is refused unread, as
# parsing a 10 MB one takes more than a GB and a minute.
MAX_YAML_BYTES = 1_000_000
# Most values a config may hold once YAML aliases (*name) are expanded: a few hundred-byte file of nested
# aliases (an "alias bomb") otherwise expands to billions of values.
MAX_YAML_VALUES = 100_000
# Deepest nesting of lists and mappings, aliases expanded: configs nest under 10 levels; thousands of levels
# would exhaust Python's recursion in the composer and in every walk over the data after it.
MAX_YAML_DEPTH = 50

# The scanner and parser are libyaml's (C) where PyYAML has it, as its wheels do: ~25x faster than PyYAML's own,
# they refuse a megabyte of hostile YAML well under a second. The composer is always PyYAML's Python one, put
# first, as libyaml's cannot be bounded while it runs.
_BASES: tuple[type, ...] = (Composer, yaml.CSafeLoader) if yaml.__with_libyaml__ else (yaml.SafeLoader,)


class _BoundedLoader(*_BASES):
    """A safe loader whose composer counts as it goes, and refuses a document nested deeper than MAX_YAML_DEPTH or
    holding more than MAX_YAML_VALUES values, aliases counted expanded, or an alias inside the node it names (a
    cycle, which would expand forever)."""

    def __init__(self, text: str, path: Path):
        _BASES[-1].__init__(self, text)
        Composer.__init__(self)  # CSafeLoader's __init__ leaves the Python composer's state unset
        self.path = path
        self.values = 0  # values composed so far
        self.depth = 0  # levels above the node being composed
        self.deepest = 0  # deepest level reached in the anchored node being composed (for `reach`)
        # anchor -> (values, levels) of its complete node, which an alias to it adds where it stands
        self.reach: dict[str, tuple[int, int]] = {}

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        event = self.peek_event()
        line = event.start_mark.line + 1
        if isinstance(event, AliasEvent):
            if event.anchor in self.anchors and event.anchor not in self.reach:
                raise ConfigError(f"the alias *{event.anchor} at line {line} lies inside the node it names (a "
                                  "cycle, which would expand forever)", self.path)
            node = super().compose_node(parent, index)  # the named node; ComposerError for an undefined alias
            self._add(*self.reach[event.anchor], line)
            return node
        values, deepest = self.values, self.deepest
        self.deepest = self.depth
        self._add(1, 0 if isinstance(event, ScalarEvent) else 1, line)  # levels: of lists and mappings
        self.depth += 1
        node = super().compose_node(parent, index)
        self.depth -= 1
        if event.anchor is not None:
            self.reach[event.anchor] = (self.values - values, self.deepest - self.depth)
        self.deepest = max(self.deepest, deepest)
        return node

    def _add(self, values: int, levels: int, line: int) -> None:
        """Count `values` more values reaching `levels` below the current level, refusing either over its cap."""
        self.values += values
        self.deepest = max(self.deepest, self.depth + levels)
        if self.deepest > MAX_YAML_DEPTH:
            raise ConfigError(f"nested deeper than {MAX_YAML_DEPTH} levels of lists and mappings at line {line}, "
                              "YAML aliases (*name) counted expanded; a config this deep is refused", self.path)
        if self.values > MAX_YAML_VALUES:
            raise ConfigError(f"holds more than {MAX_YAML_VALUES:,} values by line {line}, YAML aliases (*name) "
                              "counted expanded; a config this large is refused", self.path)


def _read_text(path: Path) -> str:
    """The file's text, refused unless it is a regular file of at most MAX_YAML_BYTES of UTF-8."""
    try:
        # O_NONBLOCK: opening a FIFO does not wait for a writer, so that it can be refused. Closed by the `with`
        # below, once the errors of opening are told apart.
        file = open(path, "rb", opener=lambda name, flags: os.open(name, flags | os.O_NONBLOCK))  # noqa: SIM115
    except (FileNotFoundError, NotADirectoryError):
        raise ConfigError("file not found", path) from None
    except IsADirectoryError:
        raise ConfigError("is a folder, not a config file", path) from None
    with file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError("is not a regular file (a FIFO, device or socket); a config must be a file", path)
        data = file.read(MAX_YAML_BYTES + 1)  # +1: a file that grew since fstat is still found too large
    if len(data) > MAX_YAML_BYTES or info.st_size > MAX_YAML_BYTES:
        raise ConfigError(f"is larger than the {MAX_YAML_BYTES:,} bytes a config may be ({info.st_size:,} bytes)",
                          path)
    return decode_utf8(data, path)


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
    loader = _BoundedLoader(_read_text(path), path)
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_duplicate_keys(node, path, set())
        data = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"not valid YAML{where}: {getattr(exc, 'problem', exc)}", path) from exc
    finally:
        loader.dispose()
    if data is None:
        data, node = {}, None
    if not isinstance(data, dict):
        raise ConfigError(f"the top level must be a mapping of keys, got {type(data).__name__}", path)
    return data, (_line_map(node) if node is not None else {})

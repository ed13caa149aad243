"""The global semantic class map (`classes.yaml` when overridden): one id per class, the same in every
run and environment, so recordings of different houses merge into one training set.

Default classes: the 40 NYU Depth v2 classes (NYU40, ids 1-40, the labels 3D-Front/furniture scenes are
usually evaluated with) and GRADE's extras from 41 (robot, flying_object, animal, world); 0 is unlabelled.
NYU40 already has `clothes` (21) and `person` (31).

An asset's label (a 3D-FUTURE category such as "dining_chair", a GSO model name, "person") is resolved to a
class, first match wins: the label is a class name; the `aliases` table (label -> class); the keyword
rules (a keyword equal to one of the label's words, "_"-separated, or to a run of them: "pendant_lamp" ->
lamp, "night_stand" -> night_stand); else the fallback of the asset's kind (environment: otherfurniture,
human: person, object: flying_object, animal: animal; unlabelled, id 0, where a user map has no fallback). Matching is case-insensitive on the snake-cased label.

A user file replaces `classes` (then every alias, keyword and fallback must name one of its classes, or be
dropped when it names a default class the file leaves out) and adds to `aliases` (its entries win):

    classes: {person: 1, chair: 2, table: 3, other: 4}
    aliases: {sofa: chair}
    fallback: {environment: other, human: person, object: other}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import InputError
from core.rundir import atomic_write_text
from core.yaml_io import read_yaml

CLASS_MAP_FILE = "classes.yaml"  # the conventional name of a user's override file
UNLABELLED_ID = 0
Kind = Literal["environment", "human", "object", "animal"]

NYU40 = (
    "wall", "floor", "cabinet", "bed", "chair", "sofa", "table", "door", "window", "bookshelf", "picture",
    "counter", "blinds", "desk", "shelves", "curtain", "dresser", "pillow", "mirror", "floor_mat", "clothes",
    "ceiling", "books", "refrigerator", "television", "paper", "towel", "shower_curtain", "box", "whiteboard",
    "person", "night_stand", "toilet", "sink", "lamp", "bathtub", "bag", "otherstructure", "otherfurniture",
    "otherprop",
)
GRADE_EXTRAS = ("robot", "flying_object", "animal", "world")
DEFAULT_CLASSES = {name: i for i, name in enumerate((*NYU40, *GRADE_EXTRAS), start=1)}

# Labels that are not class names but name one outright (3D-Front architecture, the humans' label).
DEFAULT_ALIASES = {
    "human": "person", "slab": "otherstructure", "baseboard": "otherstructure", "opening": "otherstructure",
    "architecture": "otherstructure", "others": "otherfurniture", "ground": "floor", "terrain": "world",
    "sky": "world", "rock": "otherstructure", "tree": "otherprop",
}
# (class, keywords), in priority order: "bed_end_stool" is a chair before a bed, "dressing_table" a dresser,
# "sideboard_side_cabinet_console_table" a cabinet.
KEYWORD_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("night_stand", ("nightstand", "night_stand", "bedside_table")),
    ("lamp", ("lamp", "light", "chandelier", "lantern", "sconce")),
    ("bookshelf", ("bookcase", "bookshelf", "bookshelves")),
    ("dresser", ("dresser", "dressing_table", "dressing")),
    ("chair", ("chair", "armchair", "stool", "footstool", "barstool", "bench")),
    ("sofa", ("sofa", "couch", "loveseat", "chaise")),
    ("bed", ("bed", "crib", "mattress")),
    ("desk", ("desk",)),
    ("cabinet", ("cabinet", "tv_stand", "wardrobe", "sideboard", "armoire", "drawer", "chest", "cupboard", "closet")),
    ("table", ("table", "tea_table", "coffee_table")),
    ("shelves", ("shelf", "shelves", "rack", "stand")),
    ("counter", ("counter", "countertop", "island")),
    ("refrigerator", ("refrigerator", "fridge")),
    ("television", ("tv", "television", "monitor", "screen")),
    ("toilet", ("toilet",)),
    ("sink", ("sink", "basin")),
    ("bathtub", ("bathtub", "tub")),
    ("shower_curtain", ("shower_curtain",)),
    ("curtain", ("curtain", "drape")),
    ("blinds", ("blind", "blinds")),
    ("mirror", ("mirror",)),
    ("pillow", ("pillow", "cushion")),
    ("floor_mat", ("rug", "carpet", "mat")),
    ("picture", ("picture", "painting", "poster", "photo", "artwork")),
    ("whiteboard", ("whiteboard", "blackboard")),
    ("books", ("book", "books", "magazine")),
    ("paper", ("paper", "papers", "document")),
    ("towel", ("towel",)),
    ("box", ("box", "carton", "crate", "case")),
    ("bag", ("bag", "backpack", "handbag", "suitcase", "purse")),
    ("clothes", ("clothes", "garment", "shirt", "tshirt", "pants", "trousers", "skirt", "dress", "jacket")),
    ("person", ("person", "people", "man", "woman", "pedestrian", "child")),
    ("animal", ("animal", "zebra", "horse", "dog", "cat", "cow", "sheep", "bird", "elephant", "giraffe", "deer")),
    ("robot", ("robot", "tiago", "uav", "drone")),
    ("otherprop", ("plant", "vase", "flower", "flowers", "decoration", "ornament", "sculpture")),
    ("door", ("door", "doorway", "gate")),
    ("window", ("window",)),
    ("ceiling", ("ceiling",)),
    ("floor", ("floor", "flooring")),
    ("wall", ("wall",)),
)
DEFAULT_FALLBACK: dict[str, str] = {"environment": "otherfurniture", "human": "person", "object": "flying_object",
                                    "animal": "animal"}


def snake(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


class ClassMap(BaseModel):
    """Class name -> id (ids unique, >= 1), label aliases, keyword rules and per-kind fallbacks."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    classes: dict[str, int] = Field(default_factory=lambda: dict(DEFAULT_CLASSES))
    aliases: dict[str, str] = Field(default_factory=lambda: dict(DEFAULT_ALIASES))
    keywords: tuple[tuple[str, tuple[str, ...]], ...] = KEYWORD_RULES
    fallback: dict[Kind, str] = Field(default_factory=lambda: dict(DEFAULT_FALLBACK))

    @field_validator("classes")
    @classmethod
    def _ids(cls, classes: dict[str, int]) -> dict[str, int]:
        if not classes:
            raise ValueError("needs at least one class")
        for name, value in classes.items():
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 65535:
                raise ValueError(f"class {name!r}: ids are integers in 1..65535 (0 is unlabelled), got {value!r}")
        if len(set(classes.values())) != len(classes):
            raise ValueError("two classes share an id")
        return {snake(name): value for name, value in classes.items()}

    @model_validator(mode="after")
    def _targets(self) -> ClassMap:
        for label, target in self.aliases.items():
            if snake(target) not in self.classes:
                raise ValueError(f"alias {label!r} names {target!r}, which is not a class")
        for kind, target in self.fallback.items():
            if snake(target) not in self.classes:
                raise ValueError(f"fallback for {kind} names {target!r}, which is not a class")
        return self

    @property
    def names(self) -> dict[int, str]:
        return {value: name for name, value in self.classes.items()}

    def resolve(self, label: str | None, kind: Kind) -> str | None:
        """The class of an asset label (module docstring for the order of the rules); None (unlabelled) when
        nothing matches and the map has no fallback for `kind`."""
        key = snake(label or "")
        if key in self.classes:
            return key
        aliases = {snake(k): snake(v) for k, v in self.aliases.items()}
        if key in aliases:
            return aliases[key]
        padded = f"_{key}_"
        for target, words in self.keywords:
            if target in self.classes and any(f"_{word}_" in padded for word in words):
                return target
        fallback = self.fallback.get(kind)
        return snake(fallback) if fallback is not None else None

    def id_of(self, label: str | None, kind: Kind) -> int:
        name = self.resolve(label, kind)
        return UNLABELLED_ID if name is None else self.classes[name]


DEFAULT_CLASS_MAP = ClassMap()


def read_class_map(path: str | Path | None) -> ClassMap:
    """The default map, or the default overridden by the YAML file at `path` (module docstring);
    InputError naming the file and field on a bad file."""
    if path is None:
        return DEFAULT_CLASS_MAP
    path = Path(path)
    data, _ = read_yaml(path)
    if not set(data) <= {"classes", "aliases", "fallback"}:
        raise InputError("expected a mapping with keys classes, aliases and/or fallback", path)
    classes = data.get("classes") or dict(DEFAULT_CLASSES)
    if not isinstance(classes, Mapping):
        raise InputError("expected a mapping {class name: id}", path, "classes")
    kept = {snake(str(name)) for name in classes}
    aliases = {k: v for k, v in DEFAULT_ALIASES.items() if v in kept}
    aliases |= data.get("aliases") or {}
    fallback = {k: v for k, v in DEFAULT_FALLBACK.items() if v in kept} | (data.get("fallback") or {})
    try:
        return ClassMap(classes=dict(classes), aliases=aliases, fallback=fallback)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], path, ".".join(str(p) for p in err["loc"]) or None) from None


def write_class_map(path: str | Path, class_map: ClassMap) -> Path:
    """The map as a YAML file `read_class_map` reads back (classes, aliases and fallback)."""
    data = {"classes": class_map.classes, "aliases": class_map.aliases, "fallback": dict(class_map.fallback)}
    return atomic_write_text(path, yaml.safe_dump(data, sort_keys=False))

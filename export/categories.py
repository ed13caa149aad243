"""Which category an exported instance belongs to: `--categories coco | nyu40 | FILE`.

- coco (default): COCO's 80 detection categories with COCO's own ids (person = 1), so detectors pretrained
  on COCO line up. An instance gets the COCO category of its semantic class (sofa -> couch, table ->
  dining table) or, for broad classes (animal, flying_object, otherprop, ...), of its asset label's words
  (a "zebra" -> zebra, "plant" -> potted plant, "bottle" -> bottle);
  instances with no COCO counterpart (walls, floors, most flying objects) are left out.
- nyu40: the global class map (core.formats.class_map: NYU40 + GRADE's extras) with its ids, every class.
- FILE: a YAML list of categories, each naming the semantic classes (class-map names) it gathers:

      categories:
        - {id: 1, name: person, classes: [person]}
        - {id: 2, name: furniture, classes: [chair, sofa, table, bed]}

The person category carries COCO's 17 keypoints and skeleton in every choice. A FILE naming a class that no
exported recording's class map defines is refused (a typo would otherwise export no annotations for it), and a
FILE category without any annotation in the export gets a warning.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from core.config_io import validate_model
from core.errors import InputError
from core.formats.class_map import DEFAULT_CLASS_MAP, snake
from core.formats.instances import InstanceEntry
from core.progress import get_logger
from core.yaml_io import read_yaml

log = get_logger("export.categories")

CHOICES = ("coco", "nyu40")
PERSON_CLASS = "person"

# COCO 2017 detection categories: (id, name, supercategory).
COCO_CATEGORIES = (
    (1, "person", "person"), (2, "bicycle", "vehicle"), (3, "car", "vehicle"), (4, "motorcycle", "vehicle"),
    (5, "airplane", "vehicle"), (6, "bus", "vehicle"), (7, "train", "vehicle"), (8, "truck", "vehicle"),
    (9, "boat", "vehicle"), (10, "traffic light", "outdoor"), (11, "fire hydrant", "outdoor"),
    (13, "stop sign", "outdoor"), (14, "parking meter", "outdoor"), (15, "bench", "outdoor"),
    (16, "bird", "animal"), (17, "cat", "animal"), (18, "dog", "animal"), (19, "horse", "animal"),
    (20, "sheep", "animal"), (21, "cow", "animal"), (22, "elephant", "animal"), (23, "bear", "animal"),
    (24, "zebra", "animal"), (25, "giraffe", "animal"), (27, "backpack", "accessory"), (28, "umbrella", "accessory"),
    (31, "handbag", "accessory"), (32, "tie", "accessory"), (33, "suitcase", "accessory"),
    (34, "frisbee", "sports"), (35, "skis", "sports"), (36, "snowboard", "sports"), (37, "sports ball", "sports"),
    (38, "kite", "sports"), (39, "baseball bat", "sports"), (40, "baseball glove", "sports"),
    (41, "skateboard", "sports"), (42, "surfboard", "sports"), (43, "tennis racket", "sports"),
    (44, "bottle", "kitchen"), (46, "wine glass", "kitchen"), (47, "cup", "kitchen"), (48, "fork", "kitchen"),
    (49, "knife", "kitchen"), (50, "spoon", "kitchen"), (51, "bowl", "kitchen"), (52, "banana", "food"),
    (53, "apple", "food"), (54, "sandwich", "food"), (55, "orange", "food"), (56, "broccoli", "food"),
    (57, "carrot", "food"), (58, "hot dog", "food"), (59, "pizza", "food"), (60, "donut", "food"),
    (61, "cake", "food"), (62, "chair", "furniture"), (63, "couch", "furniture"), (64, "potted plant", "furniture"),
    (65, "bed", "furniture"), (67, "dining table", "furniture"), (70, "toilet", "furniture"),
    (72, "tv", "electronic"), (73, "laptop", "electronic"), (74, "mouse", "electronic"), (75, "remote", "electronic"),
    (76, "keyboard", "electronic"), (77, "cell phone", "electronic"), (78, "microwave", "appliance"),
    (79, "oven", "appliance"), (80, "toaster", "appliance"), (81, "sink", "appliance"),
    (82, "refrigerator", "appliance"), (84, "book", "indoor"), (85, "clock", "indoor"), (86, "vase", "indoor"),
    (87, "scissors", "indoor"), (88, "teddy bear", "indoor"), (89, "hair drier", "indoor"),
    (90, "toothbrush", "indoor"),
)
# Semantic class -> COCO name where they differ or the class has one.
CLASS_TO_COCO = {
    "person": "person", "chair": "chair", "sofa": "couch", "bed": "bed", "table": "dining table",
    "desk": "dining table", "toilet": "toilet", "television": "tv", "refrigerator": "refrigerator",
    "books": "book", "sink": "sink", "bag": "handbag",
}
# Label words that name a COCO category other than by its own name.
LABEL_WORDS_TO_COCO = {
    "plant": "potted plant", "mug": "cup", "ball": "sports ball", "phone": "cell phone", "tv": "tv",
}
# Classes too broad to name a COCO category: their instances' label words decide instead.
GENERIC_CLASSES = frozenset({"animal", "flying_object", "otherprop", "otherfurniture", "otherstructure", "box"})

# COCO person keypoints, in COCO's order, and its skeleton (1-based keypoint indices, as in the COCO files).
COCO_KEYPOINTS = (
    "nose", "left_eye", "right_eye", "left_ear", "right_ear", "left_shoulder", "right_shoulder", "left_elbow",
    "right_elbow", "left_wrist", "right_wrist", "left_hip", "right_hip", "left_knee", "right_knee", "left_ankle",
    "right_ankle",
)
COCO_SKELETON = (
    (16, 14), (14, 12), (17, 15), (15, 13), (12, 13), (6, 12), (7, 13), (6, 7), (6, 8), (7, 9), (8, 10), (9, 11),
    (2, 3), (1, 2), (1, 3), (2, 4), (3, 5), (4, 6), (5, 7),
)


@dataclass(frozen=True)
class Category:
    id: int
    name: str
    supercategory: str
    classes: frozenset[str] = frozenset()  # semantic classes gathered (FILE and nyu40)

    @property
    def is_person(self) -> bool:
        return self.name == PERSON_CLASS or PERSON_CLASS in self.classes

    def coco(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"id": self.id, "name": self.name, "supercategory": self.supercategory}
        if self.is_person:
            entry |= {"keypoints": list(COCO_KEYPOINTS), "skeleton": [list(edge) for edge in COCO_SKELETON]}
        return entry


class _FileCategory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int
    name: str
    supercategory: str = "object"
    classes: list[str]

    @field_validator("id")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError("category ids start at 1")
        return value


class _CategoryFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    categories: list[_FileCategory]


class Categories:
    """The categories of one export and the rule that assigns an instance to one of them (or none)."""

    def __init__(self, choice: str, categories: list[Category]):
        self.choice, self.categories = choice, categories
        self._by_name = {c.name: c for c in categories}
        self._by_class = {cls: c for c in categories for cls in c.classes}

    @classmethod
    def load(cls, choice: str) -> Categories:
        """`coco`, `nyu40` or a YAML file (module docstring)."""
        if choice == "coco":
            return cls(choice, [Category(i, name, sup) for i, name, sup in COCO_CATEGORIES])
        if choice == "nyu40":
            return cls(choice, [Category(i, name, "nyu40" if i <= 40 else "grade", frozenset({name}))
                                for name, i in DEFAULT_CLASS_MAP.classes.items()])
        return cls(str(choice), _read_file(Path(choice)))

    def of(self, entry: InstanceEntry) -> Category | None:
        """The category of an instance (module docstring), None when it has none."""
        if self.choice != "coco":
            return self._by_class.get(entry.semantic_class or "")
        if entry.semantic_class in CLASS_TO_COCO:
            return self._by_name[CLASS_TO_COCO[entry.semantic_class]]
        if entry.semantic_class not in GENERIC_CLASSES and entry.semantic_class is not None:
            return None
        for word in _words(entry.label):
            name = LABEL_WORDS_TO_COCO.get(word, word.replace("_", " "))
            if name in self._by_name:
                return self._by_name[name]
        return None

    def coco(self) -> list[dict[str, Any]]:
        return [c.coco() for c in self.categories]

    @property
    def from_file(self) -> bool:
        """The categories of a YAML file (the user's own), not the built-in coco or nyu40."""
        return self.choice not in CHOICES

    def check_classes(self, known: Collection[str]) -> None:
        """A FILE's categories: InputError naming the first class that is not in `known` (the classes the
        exported recordings define), listing them; coco and nyu40 are not checked (they name every class)."""
        if not self.from_file:
            return
        for index, category in enumerate(self.categories):
            unknown = sorted(category.classes - set(known))
            if unknown:
                raise InputError(f"category {category.name!r} names {', '.join(repr(c) for c in unknown)}, which no "
                                 "exported recording's class map defines, so it would get no annotations; the "
                                 f"recordings define: {', '.join(sorted(known)) or 'no classes'}", self.choice,
                                 f"categories[{index}].classes")

    def warn_unannotated(self, counts: Mapping[int, int]) -> None:
        """A FILE's categories: one warning line naming those with no annotation (`counts`: annotations by
        category id) in the export."""
        empty = [c.name for c in self.categories if not counts.get(c.id)]
        if self.from_file and empty:
            log.warning("no annotations in this export for %s %s of %s (their classes are defined, but no kept "
                        "instance of them is in view)", "category" if len(empty) == 1 else "categories",
                        ", ".join(repr(name) for name in empty), self.choice)


def _words(label: str | None) -> list[str]:
    """The label's words and its runs of two words ("potted_plant", "teddy_bear"), longest first."""
    words = [w for w in re.split("_", snake(label or "")) if w]
    pairs = [f"{a}_{b}" for a, b in pairwise(words)]
    return pairs + words


def _read_file(path: Path) -> list[Category]:
    if not path.is_file():
        raise InputError("categories file not found; --categories takes coco, nyu40 or a YAML file", path)
    data, lines = read_yaml(path)
    parsed = validate_model(_CategoryFile, data, path, lines)
    ids = [c.id for c in parsed.categories]
    if len(set(ids)) != len(ids) or not ids:
        raise InputError("needs at least one category, with unique ids", path, "categories")
    seen: dict[str, str] = {}
    for category in parsed.categories:
        for name in category.classes:
            if snake(name) in seen:
                raise InputError(f"class {name!r} is in two categories ({seen[snake(name)]}, {category.name})",
                                 path, "categories")
            seen[snake(name)] = category.name
    return [Category(c.id, c.name, c.supercategory, frozenset(snake(n) for n in c.classes))
            for c in parsed.categories]

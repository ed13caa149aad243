"""`gt/<camera>/instances.json` (schema "grade.instances/1"): what the ids in a camera's images stand for.

`instances` maps each instance id (the value of a pixel in instance/NNNNNN.png, a JSON object key)
to its prim path in scene.usda, semantic class and id (None / 0: unlabelled; from the global class map,
core.formats.class_map), asset id, kind (environment, human, object, animal; a multi-robot run's robots are
objects of class robot, asset id and label their robot kind) and the asset's own label that the
class map resolved; `semantic_classes` maps each class present to its global semantic id.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from core.formats.json_model import JsonDocument, read_json_model, write_json_model

INSTANCES_FILE = "instances.json"


class InstanceEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prim_path: str
    semantic_class: str | None
    semantic_id: int
    asset_id: str
    kind: Literal["environment", "human", "object", "animal"]
    label: str | None = None  # the asset's own label (a 3D-FUTURE category, a model name) behind semantic_class


class Instances(JsonDocument):
    """Contents of instances.json, with the look-ups a viewer needs."""

    KIND, MAJOR = "instances", 1

    instances: dict[int, InstanceEntry]
    semantic_classes: dict[str, int]

    def is_environment(self, instance_id: int) -> bool:
        entry = self.instances.get(instance_id)
        return entry is not None and entry.kind == "environment"

    def label(self, instance_id: int, semantic_id: int) -> str:
        """The instance's class name, else its semantic id's, else "class <id>"."""
        entry = self.instances.get(instance_id)
        if entry is not None and entry.semantic_class:
            return entry.semantic_class
        names = {value: name for name, value in self.semantic_classes.items()}
        return names.get(semantic_id) or f"class {semantic_id}"


def instances_document(instances: Mapping[int, InstanceEntry], classes: Mapping[str, int]) -> Instances:
    """The document with instances sorted by id and classes by semantic id (stable files)."""
    return Instances(instances=dict(sorted(instances.items())),
                     semantic_classes=dict(sorted(classes.items(), key=lambda kv: kv[1])))


def write_instances(path: Path, document: Instances) -> Path:
    return write_json_model(path, document)


def read_instances(path: Path) -> Instances:
    """instances.json; InputError naming the file and field when it is missing, newer or invalid."""
    return read_json_model(path, Instances, INSTANCES_FILE)

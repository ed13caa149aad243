"""`export.json` (schema "grade.export/1"): what an export folder (`grade export FORMAT RUN... --out OUT`) holds.

Written first with `complete: false`, rewritten with `complete: true` when every file is in place. A rerun
with the same format, options and sequences resumes (files already written are kept); anything else is
refused, so one folder never mixes two exports. Each sequence names the run folder it came from, relative to
the export folder; `card` (written with `complete: true`, the same facts as DATASET.md: core.formats.dataset_card)
traces the export back to its recordings, their asset packages and the licences of their sources.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from core.formats.dataset_card import DatasetCard
from core.formats.json_model import JsonDocument, read_json_model, write_json_model

EXPORT_FILE = "export.json"


class ExportedSequence(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str  # unique within the export: the run folder's name, suffixed _2, _3, ... on a clash
    run: str  # the run folder, relative to the export folder
    cameras: list[str]
    split: str | None = None  # train / val / test, for formats that split by sequence


class ExportDocument(JsonDocument):
    KIND, MAJOR = "export", 1

    format: str
    options: dict[str, Any]
    sequences: list[ExportedSequence]
    complete: bool = False
    dropped_frames: list[str] = []  # "<sequence>/<camera>/<frame>: reason", frames left out by the filters
    counts: dict[str, int] = {}  # images, annotations, ... as the format reports them
    card: DatasetCard | None = None  # the dataset card, once complete

    def same_job(self, other: ExportDocument) -> bool:
        """Whether `other` asks for the same export (format, options, sequences): then a rerun resumes."""
        keys = {"format", "options", "sequences"}
        return self.model_dump(mode="json", include=keys) == other.model_dump(mode="json", include=keys)


def write_export_document(folder: Path, document: ExportDocument) -> Path:
    return write_json_model(Path(folder) / EXPORT_FILE, document)


def read_export_document(folder: Path) -> ExportDocument:
    return read_json_model(Path(folder) / EXPORT_FILE, ExportDocument)

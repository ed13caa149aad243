"""`batch.json` (schema "grade.batch/1"): the jobs of a `grade batch` output folder and how each went, written
by the driver after every change (atomically) and read by `grade batch status`.

    jobs.<name>   run (the run folder), config (the job's experiment YAML), status (pending, running, done,
                  failed), attempts, log (the job's log file), error (the last failure's summary)

The run folders are the truth for what is finished (their MANIFEST.json); batch.json adds what the driver knows
about attempts and failures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from core.formats.versions import read_document, schema_tag
from core.rundir import atomic_write_json

BATCH_KIND, BATCH_MAJOR = "batch", 1
BATCH_SCHEMA = schema_tag(BATCH_KIND, BATCH_MAJOR)
BATCH_FILE = "batch.json"
Status = Literal["pending", "running", "done", "failed"]


class JobState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str
    config: str
    status: Status = "pending"
    attempts: int = 0
    log: str
    error: str | None = None


class BatchState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_: str = Field(BATCH_SCHEMA, alias="schema")
    executor: str
    jobs: dict[str, JobState]


def write_batch_state(folder: Path, state: BatchState) -> Path:
    return atomic_write_json(Path(folder) / BATCH_FILE, state.model_dump(mode="json", by_alias=True))


def read_batch_state(folder: Path) -> BatchState:
    return read_document(Path(folder) / BATCH_FILE, BatchState, BATCH_KIND, BATCH_MAJOR, BATCH_FILE)

"""`batch.json` (schema "grade.batch/1"): the jobs of a `grade batch` output folder and how each went, written
by the driver after every change (atomically) and read by `grade batch status`.

    jobs.<name>   run (the run folder), config (the job's experiment YAML), status (pending, running, done,
                  failed), attempts, log (the job's log file), error (the last failure's summary), node (where
                  its last finished attempt ran: host, the machine's name, and id, the executor's name for the
                  node when it has one: a Ray node id, a SLURM node name; null until an attempt has finished)

The run folders are the truth for what is finished (their MANIFEST.json); batch.json adds what the driver knows
about attempts and failures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from core.formats.json_model import JsonDocument, read_json_model, write_json_model

BATCH_FILE = "batch.json"
Status = Literal["pending", "running", "done", "failed"]


class JobNode(BaseModel):
    """Where an attempt ran: the machine's host name and, on Ray or SLURM, that executor's name for its node
    (several Ray nodes can share a machine)."""

    model_config = ConfigDict(extra="forbid")

    host: str
    id: str | None = None

    def label(self) -> str:
        return self.host if self.id in (None, self.host) else f"{self.host} (node {self.id})"


class JobState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str
    config: str
    status: Status = "pending"
    attempts: int = 0
    log: str
    error: str | None = None
    node: JobNode | None = None


class BatchState(JsonDocument):
    KIND, MAJOR = "batch", 1

    executor: str
    jobs: dict[str, JobState]


def write_batch_state(folder: Path, state: BatchState) -> Path:
    return write_json_model(Path(folder) / BATCH_FILE, state)


def read_batch_state(folder: Path) -> BatchState:
    return read_json_model(Path(folder) / BATCH_FILE, BatchState)

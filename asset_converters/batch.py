"""Converting many inputs: skip what is already converted from identical inputs, continue past
bad files, end with a summary (and a non-zero exit from the CLI when anything failed)."""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from asset_converters.package import CONVERTER_VERSION
from core.errors import GradeError
from core.formats.manifest import StageStatus, stage_status
from core.outputs import check_output_folder, package_lock
from core.progress import get_logger, make_progress
from core.rundir import content_hash

log = get_logger("convert")


@dataclass
class Job:
    """One package to build: `run(out, input_hash)` writes it atomically."""

    source: Path
    out: Path
    input_hash: str
    run: Callable[[Path, str], Path]


@dataclass
class BatchResult:
    converted: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)


def hash_inputs(converter: str, files: list[Path], options: dict) -> str:
    """Content address of a conversion: converter name and version, input file contents, options."""
    existing = sorted({f for f in files if f.is_file()})
    return content_hash(converter, CONVERTER_VERSION, options, [f.name for f in existing], *existing)


def run_jobs(jobs: list[Job], description: str) -> BatchResult:
    result = BatchResult()
    with make_progress() as progress:
        task = progress.add_task(description, total=len(jobs))
        for job in jobs:
            try:
                # Jobs sharing the folder (a batch's asset cache) take turns per package: one converts it, the
                # others then find it complete.
                with package_lock(job.out):
                    if stage_status(job.out, job.input_hash) is StageStatus.COMPLETE:
                        result.skipped.append(job.out)
                    else:
                        check_output_folder(job.out, "package folder")  # never replace a folder that is not ours
                        job.run(job.out, job.input_hash)
                        result.converted.append(job.out)
            except GradeError as exc:
                result.failed.append((job.source, str(exc)))
                log.error("%s", exc)
            except OSError as exc:  # disk full, read-only, permissions: the OS reason, no traceback
                message = f"{exc.filename or job.out}: {exc.strerror or exc}"
                result.failed.append((job.source, message))
                log.error("%s: %s", job.source, message)
            except Exception as exc:  # a converter bug must not stop the rest of the batch
                result.failed.append((job.source, f"{type(exc).__name__}: {exc}"))
                log.error("%s: unexpected error\n%s", job.source, traceback.format_exc())
            progress.advance(task)
    return result

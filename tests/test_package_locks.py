"""Jobs sharing an asset cache: each package has a lock of its own, so two processes convert different packages at
the same time, never the same package twice, and the package's lock holder clears only that package's stale
partial builds."""

from __future__ import annotations

import json
import multiprocessing
from multiprocessing.synchronize import Barrier
from pathlib import Path

from asset_converters.batch import Job, run_jobs
from core.formats.manifest import StageStatus, stage_status, write_manifest
from core.outputs import package_lock
from core.rundir import atomic_directory

# Only bounds the wait of a failing run: a passing one meets at the barrier as soon as both builds have started.
BARRIER_TIMEOUT_S = 60


def _build(log: Path, together: Barrier):
    def run(out: Path, input_hash: str) -> Path:
        with atomic_directory(out) as tmp:
            # Both builds must be inside their package locks at once to pass: a lock over the whole cache (or a
            # package built twice, a third wait) leaves a build waiting here alone until the barrier breaks.
            together.wait(BARRIER_TIMEOUT_S)
            (tmp / "asset.txt").write_text(out.name)
            write_manifest(tmp, "convert", input_hash)
        with log.open("a") as handle:  # one short line per write: appends do not interleave
            handle.write(json.dumps({"package": out.name}) + "\n")
        return out
    return run


def _convert(cache: Path, names: list[str], log: Path, together: Barrier) -> None:
    jobs = [Job(cache / name, cache / name, f"hash-{name}", _build(log, together)) for name in names]
    result = run_jobs(jobs, "test")
    assert not result.failed, result.failed


def test_two_processes_convert_different_packages_at_once_and_each_package_once(tmp_path):
    cache, log = tmp_path / "assets", tmp_path / "builds.jsonl"
    context = multiprocessing.get_context("fork")
    together = context.Barrier(2)
    workers = [context.Process(target=_convert, args=(cache, order, log, together))
               for order in (["a", "b"], ["b", "a"])]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
        assert worker.exitcode == 0  # every build met the other at the barrier: the two ran at the same time
    builds = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(b["package"] for b in builds) == ["a", "b"]  # each converted once
    for name in ("a", "b"):
        assert stage_status(cache / name, f"hash-{name}") is StageStatus.COMPLETE
        assert (cache / name / "asset.txt").read_text() == name


def test_the_lock_holder_clears_its_own_stale_partial_builds_only(tmp_path):
    cache = tmp_path / "assets"
    mine, other = cache / ".a.x1y2z3w4.partial", cache / ".a.v2.abcd1234.partial"  # the second is package "a.v2"'s
    foreign = cache / ".a.notours.partial"  # not a name atomic_directory makes
    for folder in (mine, other, foreign):
        folder.mkdir(parents=True)
    with package_lock(cache / "a"):
        assert not mine.exists()
        assert other.exists() and foreign.exists()

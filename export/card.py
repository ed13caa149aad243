"""The dataset card of an export or a batch (core.formats.dataset_card): its facts gathered from the
recordings' run.json, manifests and configs, and the licences of the asset packages each run recorded.

The licences come from the converters (asset_converters.licences, written into each package's meta.json) through
run.json `assets`; a run recorded before GRADE kept them, or a package converted before GRADE recorded them,
shows as unknown with the reason and what to do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asset_converters.licences import user_file
from core.config.sensor_kinds import KINDS
from core.config.sensors import Mount as MountConfig
from core.formats.asset_meta import Licence
from core.formats.dataset_card import AssetUse, CameraCard, DatasetCard, Mount, RunCard, SensorCard
from core.formats.manifest import read_manifest
from core.formats.run_info import RUN_FILE, package_versions
from core.recording import Recording
from core.rundir import content_hash
from export.categories import Categories

# Where a run was written is no part of what it is: two copies of one run have one config hash.
_LOCATION_KEYS = ("output_dir", "assets_dir")


@dataclass(frozen=True)
class CardRun:
    """One recording on the card, with its name there, the cameras it contributes and its split."""

    name: str
    recording: Recording
    cameras: list[str]
    split: str | None = None


def relative_path(path: Path, folder: Path) -> str:
    """`path` relative to `folder` (POSIX separators): the card never names an absolute run path."""
    return Path(os.path.relpath(path.resolve(), folder.resolve())).as_posix()


def _mount(mount: MountConfig) -> Mount:
    return Mount(link=mount.link, translation=mount.translation, rpy_deg=mount.rpy_deg)


def run_card(run: CardRun, folder: Path) -> RunCard:
    recording, info = run.recording, run.recording.info
    sensors = recording.experiment_config().robot.sensors
    cameras = []
    for name in run.cameras:
        config, first = recording.camera_config(name), recording.camera(name)[0]
        K = first.K
        cameras.append(CameraCard(name=name, width=first.width, height=first.height, rate_hz=config.rate_hz,
                                  intrinsics=(float(K[0, 0]), float(K[1, 1]), float(K[0, 2]), float(K[1, 2])),
                                  mount=_mount(config.mount)))
    others = [SensorCard(name=sensor.name, kind=sensor.type,
                         rate_hz=None if KINDS[sensor.type].every_step else sensor.rate_hz, mount=_mount(sensor.mount))
              for sensor in sensors.root if sensor.type != "camera"]
    assets = None if info.assets is None else [
        AssetUse(package=a.package, id=a.id, kind=a.kind, dataset=a.dataset, hash=a.hash,
                 licences=None if a.licences is None else [licence.source for licence in a.licences])
        for a in info.assets]
    config = {key: value for key, value in info.config.items() if key not in _LOCATION_KEYS}
    return RunCard(name=run.name, path=relative_path(recording.path, folder), robot=recording.robot_name,
                   grade_version=info.versions.get("grade", "unknown"), config_hash=content_hash(config),
                   record_hash=read_manifest(recording.path).input_hash, master_seed=info.master_seed,
                   derived_seeds=info.derived_seeds, split=run.split, cameras=cameras, sensors=others,
                   frames=info.frame_counts, sim_time=(info.sim_time_start, info.sim_time_end or info.sim_time_start),
                   assets=assets)


def licences(runs: list[CardRun]) -> tuple[list[Licence], list[str]]:
    """Every distinct licence the runs' packages (and sky images) carry, by source in order of appearance, and
    why any is unknown."""
    found: dict[str, Licence] = {}
    unknown: list[str] = []
    for run in runs:
        sky = run.recording.experiment_config().render.environment
        if sky is not None:  # the image rays that hit nothing see: in every RGB frame, a file of the user's
            licence = user_file(f"sky image {Path(sky).name}")
            found.setdefault(licence.source, licence)
        records = run.recording.info.assets
        if records is None:
            unknown.append(f"run {run.name}: recorded before GRADE kept the asset packages a run uses ({RUN_FILE} has "
                           "no `assets`); record it again to list them")
            continue
        for record in records:
            if record.licences is None:
                unknown.append(f"run {run.name}, package {record.package} ({record.dataset}): converted before GRADE "
                               "recorded licences in the package's metadata; convert it again to record them")
            for licence in record.licences or []:
                found.setdefault(licence.source, licence)
    return list(found.values()), unknown


def dataset_card(folder: Path, title: str, fmt: str | None, options: dict[str, Any], runs: list[CardRun],
                 categories: Categories | None = None) -> DatasetCard:
    """The card for `runs` written into `folder`, without counts (the caller adds them when the data is
    written). The classes are the export's label categories, else the recordings' semantic classes."""
    if categories is not None:
        classes = {c.id: c.name for c in categories.categories}
        classes_from = f"The export's label categories (`--categories {categories.choice}`)"
    else:
        classes = {i: name for run in runs for camera in run.cameras
                   for name, i in run.recording.camera(camera).instances.semantic_classes.items()}
        classes_from = ("The recordings' semantic classes present in the scenes (the ids of the semantic images, as "
                        "each camera's instances.json lists them)")
    splits: dict[str, list[str]] = {}
    for run in runs:
        if run.split is not None:
            splits.setdefault(run.split, []).append(run.name)
    found, unknown = licences(runs)
    return DatasetCard(title=title, grade_version=package_versions(("grade",))["grade"], format=fmt,
                       options=options, runs=[run_card(run, folder) for run in runs], classes=classes,
                       classes_from=classes_from, counts={}, splits=dict(sorted(splits.items())), licences=found,
                       unknown=unknown)


def batch_card(folder: Path, runs: list[Path], exports: dict[str, Path]) -> DatasetCard:
    """The card of a batch folder: every run (all its cameras), the samples it recorded per stream, and where
    each export of the runs is (`exports`: format -> folder; each export folder has a card of its own)."""
    entries = []
    for path in runs:
        recording = Recording.open(path)
        entries.append(CardRun(path.name, recording, recording.cameras))
    card = dataset_card(folder, f"GRADE batch {folder.resolve().name}", None,
                        {"exports": {fmt: relative_path(path, folder) for fmt, path in exports.items()}}, entries)
    counts = {"recordings": len(entries)}
    for entry in entries:
        for stream, samples in sorted(entry.recording.info.frame_counts.items()):
            counts[f"{stream} samples"] = counts.get(f"{stream} samples", 0) + samples
    return card.model_copy(update={"counts": counts})

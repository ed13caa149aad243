"""`DATASET.md` (schema "grade.dataset_card/1"): the dataset card of an export folder or a batch folder.

What made the data (GRADE's version, each run's config and record hashes, seeds, asset packages and their
hashes), the sensors and their calibration, the class map, the counts and splits, and the licence of every
source the data derives from with the obligations it states. Paths are relative to the card's folder.

The file is Markdown for people, opened by a YAML front matter block (between `---` lines, as Hugging Face's
dataset cards) that holds the whole `DatasetCard`, so tools read the facts back with `read_dataset_card`; an
export's `export.json` carries the same card (core.formats.export). The card holds no wall-clock time: the
same export gives the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from core.errors import InputError
from core.formats.asset_meta import Kind, Licence
from core.formats.json_model import JsonDocument
from core.formats.versions import SCHEMA_FIELD, check_schema, validate
from core.rundir import atomic_write_text, read_utf8

CARD_FILE = "DATASET.md"
FRONT_MATTER = "---"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Mount(_Model):
    link: str
    translation: tuple[float, float, float]  # m, in the link's frame
    rpy_deg: tuple[float, float, float]


class CameraCard(_Model):
    name: str
    width: int
    height: int
    rate_hz: float
    intrinsics: tuple[float, float, float, float]  # fx, fy, cx, cy in pixels (pinhole, no distortion)
    mount: Mount


class SensorCard(_Model):
    """An IMU, LiDAR or event camera: its rate and where it sits."""

    name: str
    kind: str  # imu | lidar | event
    rate_hz: float | None  # None: event-driven (an event camera samples when its light changes)
    mount: Mount


class AssetUse(_Model):
    package: str
    id: str
    kind: Kind
    dataset: str
    hash: str  # of the package's MANIFEST.json, as run.json `asset_hashes`
    licences: list[str] | None  # the `source` of each of the card's `licences`; None: unknown (see `unknown`)


class RunCard(_Model):
    name: str  # the sequence's name in the export (the run folder's, suffixed on a clash)
    path: str  # the run folder, relative to the card's folder
    robot: str
    grade_version: str  # the GRADE that recorded it
    config_hash: str  # of run.json's config, without where it was written (output_dir, assets_dir)
    record_hash: str  # the recording's input hash (MANIFEST.json): config, class map, scene and assets
    master_seed: int
    derived_seeds: dict[str, int]
    split: str | None = None
    cameras: list[CameraCard]  # the cameras in the export
    sensors: list[SensorCard]
    frames: dict[str, int]  # samples per stream, as run.json `frame_counts`
    sim_time: tuple[float, float]  # first and last simulation time, s
    assets: list[AssetUse] | None  # None: the run predates GRADE's record of its packages


class DatasetCard(JsonDocument):
    KIND, MAJOR = "dataset_card", 1

    title: str
    grade_version: str  # the GRADE that made the card
    format: str | None  # the export's format; None for a batch's card
    options: dict[str, Any]
    runs: list[RunCard]
    classes: dict[int, str]  # id -> name, the labels the data uses
    classes_from: str  # which class map `classes` is
    counts: dict[str, int]
    splits: dict[str, list[str]]  # split -> run names; empty when the export is not split
    licences: list[Licence]  # every distinct licence the data derives from
    unknown: list[str]  # why a source's licence is not known, one line each


def write_dataset_card(folder: str | Path, card: DatasetCard) -> Path:
    """Write `folder/DATASET.md` atomically: the card as YAML front matter, then its Markdown rendering."""
    facts = yaml.safe_dump(json.loads(card.model_dump_json(by_alias=True)), sort_keys=False, allow_unicode=True,
                           default_flow_style=None, width=120)
    return atomic_write_text(Path(folder) / CARD_FILE, f"{FRONT_MATTER}\n{facts}{FRONT_MATTER}\n\n{render(card)}")


def read_dataset_card(folder: str | Path) -> DatasetCard:
    """The card in `folder/DATASET.md`'s front matter; InputError naming the file and field when it is missing or
    invalid."""
    path = Path(folder) / CARD_FILE
    if not path.is_file():
        raise InputError("no dataset card", path)
    text = read_utf8(path)
    head, separator, _ = text.removeprefix(f"{FRONT_MATTER}\n").partition(f"\n{FRONT_MATTER}\n")
    if not text.startswith(f"{FRONT_MATTER}\n") or not separator:
        raise InputError("expected a YAML front matter block between '---' lines at the top", path)
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError as exc:
        raise InputError(f"the front matter is not valid YAML ({exc})", path) from exc
    if not isinstance(data, dict):
        raise InputError("the front matter is not a mapping", path)
    check_schema(data.get(SCHEMA_FIELD), DatasetCard.KIND, DatasetCard.MAJOR, path)
    return validate(DatasetCard, data, path)


# ---------------------------------------------------------------- the Markdown rendering


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _mount(mount: Mount) -> str:
    return f"{mount.link} t={list(mount.translation)} rpy_deg={list(mount.rpy_deg)}"


def _sensors(card: DatasetCard) -> str:
    """The sensors, once per distinct set (runs of one batch usually share theirs)."""
    groups: dict[str, list[RunCard]] = {}
    for run in card.runs:
        key = json.dumps([run.robot, [c.model_dump() for c in run.cameras], [s.model_dump() for s in run.sensors]])
        groups.setdefault(key, []).append(run)
    parts = []
    for runs in groups.values():
        first = runs[0]
        parts.append(f"Runs {', '.join(r.name for r in runs)} (robot {first.robot}):\n\n" + _table(
            ["sensor", "rate (Hz)", "resolution", "fx, fy, cx, cy", "mount"],
            [[c.name, c.rate_hz, f"{c.width}x{c.height}", ", ".join(f"{v:g}" for v in c.intrinsics), _mount(c.mount)]
             for c in first.cameras]
            + [[f"{s.name} ({s.kind})", "events" if s.rate_hz is None else s.rate_hz, "", "", _mount(s.mount)]
               for s in first.sensors]))
    return "\n".join(parts)


def render(card: DatasetCard) -> str:
    """The card for people: each section of the facts as prose and tables."""
    what = f"a `grade export {card.format}`" if card.format else "a `grade batch`"
    out = [f"# {card.title}\n\n",
           (f"Synthetic data made with GRADE {card.grade_version}: {what} of {len(card.runs)} recording(s). The "
            "facts below are also in this file's front matter (and, for an export, in export.json).\n\n"),
           "## Licences\n\n",
           ("The data derives from the sources below; publishing or using it means honouring each one's terms "
            "(the obligations are a summary: the linked terms govern).\n\n")]
    for licence in card.licences:
        link = f" ({licence.url})" if licence.url else ""
        out.append(f"- **{licence.source}**: {licence.name}{link}\n"
                   + "".join(f"  - {obligation}\n" for obligation in licence.obligations))
    out += [f"- unknown: {reason}\n" for reason in card.unknown]
    out += ["\n## Recordings\n\n", _table(
        ["run", "path", "split", "GRADE", "config hash", "record hash", "seed", "simulated (s)"],
        [[r.name, r.path, r.split or "", r.grade_version, r.config_hash[:16], r.record_hash[:16], r.master_seed,
          f"{r.sim_time[0]:g}-{r.sim_time[1]:g}"] for r in card.runs])]
    out += ["\n## Asset packages\n\n", _table(
        ["run", "package", "kind", "dataset", "hash", "licences"],
        [[r.name, a.package, a.kind, a.dataset, a.hash[:16], ", ".join(a.licences) if a.licences is not None
          else "unknown"] for r in card.runs for a in r.assets or []])]
    out += ["\n## Sensors\n\n", _sensors(card)]
    out += [f"\n## Classes\n\n{card.classes_from}.\n\n",
            _table(["id", "name"], [[i, name] for i, name in sorted(card.classes.items())])]
    out += ["\n## Counts and splits\n\n", _table(["what", "count"], list(card.counts.items()))]
    if card.splits:
        out += ["\n", _table(["split", "runs"], [[name, ", ".join(runs)] for name, runs in card.splits.items()])]
    return "".join(out)

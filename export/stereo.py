"""Which of a sequence's cameras go into one exported sequence: the left and right cameras of a `stereo:` camera,
when both are exported, as a stereo sequence (EuRoC cam0/cam1, KITTI image_0/image_1); every other camera alone,
as before stereo pairs."""

from __future__ import annotations

from dataclasses import dataclass

from core.config.sensor_kinds import STEREO_SIDES, stereo_name
from export.common import Sequence


@dataclass(frozen=True)
class CameraUnit:
    name: str  # the camera's, or the stereo pair's (its config entry's name)
    cameras: tuple[str, ...]  # (camera,) or (left, right)
    baseline: float | None = None  # m, for a pair


def camera_units(sequence: Sequence) -> list[CameraUnit]:
    """The sequence's cameras in order, each stereo pair whose both cameras are exported as one unit."""
    units = []
    for name in sequence.cameras:
        side = sequence.recording.camera_config(name).stereo_side
        pair = tuple(stereo_name(side.pair, s) for s in STEREO_SIDES) if side else ()
        if not pair or not set(pair) <= set(sequence.cameras):
            units.append(CameraUnit(name, (name,)))
        elif side.side == STEREO_SIDES[0]:
            units.append(CameraUnit(side.pair, pair, side.baseline))
    return units


def unit_folder(sequence: Sequence, unit: CameraUnit) -> str:
    """The unit's sequence folder: the run's name, with `_<unit>` when the run exports several units."""
    return f"{sequence.name}_{unit.name}" if len(camera_units(sequence)) > 1 else sequence.name

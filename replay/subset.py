"""Which camera frames a subset replay renders (`grade replay RUN --every N | --frames LIST | --sample K`).

Frames are named by their number in the run (frames.jsonl `frame`, the NNNNNN of the file names), per camera:
`every` takes the numbers 0, N, 2N, ...; `frames` the listed numbers, each of which the camera must have;
`sample` K numbers drawn without replacement by a generator named SAMPLE_STREAM under the run's master seed.
Every camera draws from a fresh generator of that name, so cameras with the same frames (a stereo pair) get
the same sample, and the sample does not depend on which cameras are chosen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from core.errors import ConfigError
from core.seeding import generator

SAMPLE_STREAM = "replay/sample"
MAX_FRAME_DIGITS = 12  # frame numbers are NNNNNN in file names; more digits is no frame of any run
RULE_OPTIONS = {"every": "--every", "frames": "--frames", "sample": "--sample"}


@dataclass(frozen=True)
class FrameRule:
    """One subset rule: `every` N, the listed `frames`, or a `sample` of K."""

    kind: Literal["every", "frames", "sample"]
    every: int = 0
    frames: tuple[int, ...] = ()
    sample: int = 0

    @property
    def option(self) -> str:
        return RULE_OPTIONS[self.kind]

    def describe(self) -> dict[str, object]:
        """The rule as run.json's replay_of records it."""
        if self.kind == "every":
            return {"rule": "every", "every": self.every}
        if self.kind == "frames":
            return {"rule": "frames", "frames": list(self.frames)}
        return {"rule": "sample", "sample": self.sample, "stream": SAMPLE_STREAM}


def parse_frames(text: str) -> tuple[int, ...]:
    """'0,10,20' -> (0, 10, 20): frame numbers >= 0, sorted, each once."""
    numbers = []
    for item in text.split(","):
        item = item.strip()
        # ASCII digits only: str.isdigit() also takes superscripts and other scripts' digits, which int()
        # refuses ('²') or reads (Arabic-Indic); the length keeps int() far below its 4300-digit limit.
        if not (item.isascii() and item.isdigit() and len(item) <= MAX_FRAME_DIGITS):
            raise ConfigError(f"expected frame numbers >= 0 separated by commas (e.g. 0,10,20), got {item!r} in "
                              f"{text!r}", field="--frames")
        numbers.append(int(item))
    return tuple(sorted(set(numbers)))


def frame_rule(every: int | None, frames: str | None, sample: int | None) -> FrameRule | None:
    """The rule of the options given (None: no subset, a full replay); ConfigError for several rules or a count
    below 1."""
    given = [option for option, value in (("--every", every), ("--frames", frames), ("--sample", sample))
             if value is not None]
    if len(given) > 1:
        raise ConfigError(f"choose the frames one way: {' or '.join(given)}, not both", field=given[1])
    if every is not None:
        if every < 1:
            raise ConfigError(f"--every takes a frame step of 1 or more, got {every}", field="--every")
        return FrameRule("every", every=every)
    if frames is not None:
        return FrameRule("frames", frames=parse_frames(frames))
    if sample is not None:
        if sample < 1:
            raise ConfigError(f"--sample takes a number of frames of 1 or more, got {sample}", field="--sample")
        return FrameRule("sample", sample=sample)
    return None


def choose_frames(rule: FrameRule, numbers: list[int], master_seed: int, camera: str) -> list[int]:
    """The frame numbers of `numbers` (a camera's, ascending) that `rule` picks, ascending; ConfigError naming
    the camera when it picks none or asks for frames the camera does not have."""
    have = f"camera {camera!r} has {len(numbers)} frames" + (f" ({numbers[0]} to {numbers[-1]})" if numbers else "")
    if rule.kind == "every":
        chosen = [n for n in numbers if n % rule.every == 0]
    elif rule.kind == "frames":
        missing = sorted(set(rule.frames) - set(numbers))
        if missing:
            raise ConfigError(f"no frame {', '.join(map(str, missing[:5]))} in the run: {have}", field="--frames")
        chosen = list(rule.frames)
    else:
        if rule.sample > len(numbers):
            raise ConfigError(f"cannot sample {rule.sample} frames: {have}", field="--sample")
        drawn = generator(master_seed, SAMPLE_STREAM).choice(len(numbers), size=rule.sample, replace=False)
        chosen = [numbers[i] for i in np.sort(drawn)]
    if not chosen:
        raise ConfigError(f"{rule.option} picks no frame: {have}", field=rule.option)
    return chosen

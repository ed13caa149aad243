"""The SLAM-benchmark document (`grade benchmark slam CONFIG`): methods x sequences x repetitions, and loading
it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from core.config import InputPath, PositiveFloat, PositiveInt, Strict, resolve_input_paths
from core.config_io import check_input_paths, validate_model
from core.yaml_io import read_yaml


class SlamSequence(Strict):
    """A sequence of a SLAM benchmark, from one source: an existing recording (`run`), one recorded from an
    experiment config (`experiment`, with `set` overrides, into <output_dir>/sequences/<name>), a teleport
    replay of another sequence with its humans hidden (`without_humans_of`: the same trajectory without the
    people), or another sequence's recording post-processed with the grade-paper preset (`noisy_of`: IMU,
    depth, blur and rolling-shutter noise; the methods get the noisy data)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    run: InputPath | None = None
    experiment: InputPath | None = None
    set: list[str] = Field(default_factory=list, description="key.path=value overrides of `experiment`")
    without_humans_of: str | None = Field(None, description="another sequence's name")
    noisy_of: str | None = Field(None, description="another sequence's name")

    @model_validator(mode="after")
    def _one_source(self) -> SlamSequence:
        given = [k for k in SEQUENCE_SOURCES if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of {', '.join(SEQUENCE_SOURCES)} (got {given or 'none'})")
        if self.set and self.experiment is None:
            raise ValueError("`set` overrides an `experiment`")
        return self

    @property
    def source(self) -> str | None:
        """The sequence this one derives from, if any."""
        return self.without_humans_of or self.noisy_of

    @property
    def noise(self) -> bool:
        return self.noisy_of is not None


SEQUENCE_SOURCES = ("run", "experiment", "without_humans_of", "noisy_of")


class SlamMethod(Strict):
    """A SLAM method: ORB-SLAM3 (pyorbslam3, the `slam` extra) in one of its modes, KISS-ICP on the LiDAR, or
    an external command run on a TUM RGB-D or EuRoC export of the sequence."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9_.-]+$")]
    runner: Literal["orbslam3", "kiss-icp", "external"]
    mode: Literal["rgbd", "mono", "mono_inertial", "stereo"] = "rgbd"
    camera: str | None = Field(None, description="default: the recording's first camera")
    right_camera: str | None = Field(None, description="stereo: the pair's right camera (`camera` is the left); "
                                                       "default: the pair of the recording's `stereo:` camera")
    lidar: str | None = Field(None, description="kiss-icp: default the recording's LiDAR")
    command: str | None = Field(None, description="external: template with {sequence} and {out}")
    trajectory: str | None = Field(None, description="external: the TUM file the command writes into {out}")
    export: Literal["tum", "euroc"] = Field("tum", description="external: the sequence format it reads")
    timeout_s: PositiveFloat = 3600.0

    @model_validator(mode="after")
    def _external(self) -> SlamMethod:
        if self.runner == "external" and (self.command is None or self.trajectory is None):
            raise ValueError("an external method needs `command` and `trajectory`")
        if self.right_camera is not None and (self.mode != "stereo" or self.runner != "orbslam3"):
            raise ValueError("only orbslam3's stereo mode takes `right_camera`")
        return self

    @property
    def sim3(self) -> bool:
        """Monocular methods know the trajectory up to scale: align with Sim(3)."""
        return self.runner == "orbslam3" and self.mode == "mono"


class SlamBenchmarkConfig(Strict):
    """Methods x sequences x repetitions (`grade benchmark slam`); paths relative to the config file."""

    name: str = "slam-benchmark"
    sequences: list[SlamSequence]
    methods: list[SlamMethod]
    repetitions: PositiveInt = 1
    vocabulary: InputPath | None = Field(None, description="ORB vocabulary (ORBvoc.txt); default PYORBSLAM3_VOCAB, "
                                                      "else one built from the first sequence's frames")
    delta_s: PositiveFloat = Field(1.0, description="RPE step, s")
    max_difference: PositiveFloat = Field(0.02, description="association tolerance, s")
    output_dir: Path = Path("runs/slam-benchmark")

    @model_validator(mode="after")
    def _names(self) -> SlamBenchmarkConfig:
        for kind, items in (("sequence", self.sequences), ("method", self.methods)):
            names = [item.name for item in items]
            if len(set(names)) != len(names) or not names:
                raise ValueError(f"{kind} names must be unique and at least one given: {names}")
        known = {s.name for s in self.sequences}
        for sequence in self.sequences:
            if sequence.source is not None and sequence.source not in known - {sequence.name}:
                raise ValueError(f"sequence {sequence.name!r}: {sequence.source!r} names no other sequence")
        return self


def load_slam_benchmark(path: str | Path) -> SlamBenchmarkConfig:
    """A SLAM benchmark config, with the sequences' runs and experiments and the vocabulary made absolute
    against the config's folder and checked to exist (output_dir stays relative to the working folder, as in
    experiments)."""
    path = Path(path)
    data, lines = read_yaml(path)
    config = resolve_input_paths(validate_model(SlamBenchmarkConfig, data, path, lines), path.parent.resolve())
    check_input_paths(config, path)
    return config

"""`grade place ENV --humans DIR ...`: place humans, flying objects and the robot start in one environment."""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from core.config import MAX_SEED, FlyingObjectsConfig, HumansConfig, IntRange, RobotConfig
from core.errors import ConfigError
from core.formats.asset_meta import load_meta
from core.formats.placement import PLACEMENT_FILE
from core.progress import console
from core.robot_catalogue import KINDS

RANGE_PATTERN = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")
HUMAN_DEFAULTS = HumansConfig()


# The --robot choices: the catalogue's built-in robot kinds (a description robot needs a config).
RobotChoice = enum.Enum("RobotChoice", {kind: kind for kind, entry in KINDS.items() if entry.built_in}, type=str)
DEFAULT_ROBOT = RobotChoice(RobotConfig().kind)


def parse_range(text: str, option: str) -> IntRange:
    """'7-40' or '12' -> IntRange, with a ConfigError naming the option."""
    match = RANGE_PATTERN.match(text)
    if not match:
        raise ConfigError(f"expected MIN-MAX or N (e.g. 7-40), got {text!r}", field=option)
    low, high = int(match[1]), int(match[2] if match[2] is not None else match[1])
    try:
        return IntRange(min=low, max=high)
    except ValidationError as exc:
        raise ConfigError(exc.errors()[0]["msg"].removeprefix("Value error, "), field=option) from exc


def place_command(
    environment: Annotated[Path, typer.Argument(metavar="ENVIRONMENT", help="Environment package folder.")],
    humans: Annotated[Path | None, typer.Option("--humans", help="Folder of animated packages (or one).")] = None,
    objects: Annotated[Path | None, typer.Option("--objects", help="Folder of object packages (or one).")] = None,
    count: Annotated[str, typer.Option("--count", help="Human candidates, MIN-MAX or N.")] = (
        f"{HUMAN_DEFAULTS.count.min}-{HUMAN_DEFAULTS.count.max}"),
    flying_count: Annotated[str | None, typer.Option(
        "--flying-count", help="Flying objects, MIN-MAX or N (default: the config's range with --objects, else 0).",
    )] = None,
    seed: Annotated[int, typer.Option("--seed", min=0, max=MAX_SEED, help="Master seed.")] = 0,
    out: Annotated[Path, typer.Option("--out", help="placement.json to write.")] = Path(PLACEMENT_FILE),
    preview: Annotated[Path | None, typer.Option("--preview", help="Top-down PNG (default: OUT with .png).")] = None,
    robot: Annotated[RobotChoice, typer.Option("--robot", help="Robot whose start pose to place.")] = DEFAULT_ROBOT,
    max_tries: Annotated[int, typer.Option("--max-tries", min=1, help="Tries per human.")] = HUMAN_DEFAULTS.max_tries,
    contact_threshold: Annotated[int, typer.Option(
        "--contact-threshold", min=1, help="Accept a human when its trace makes fewer world contacts.",
    )] = HUMAN_DEFAULTS.contact_threshold,
    collision_check: Annotated[bool, typer.Option(
        "--flying-collision-check", help="Redraw flying objects whose motion touches the world.")] = False,
) -> None:
    """Place humans, flying objects and the robot start.

    Humans are placed collision-free (FCL); writes placement.json and a top-down PNG.

    \b
    Example:
      grade place assets/houses/house_0 --humans assets/humans --objects assets/objects --count 5-10
    """
    from placement.place import list_packages, place_scene, write_outputs  # heavy: imported on use

    load_meta(environment, "environment")  # the positional argument first: a wrong path is the likeliest mistake
    human_count = parse_range(count, "--count")
    if flying_count is not None:
        object_count = parse_range(flying_count, "--flying-count")
    else:
        object_count = FlyingObjectsConfig().count if objects else IntRange(min=0, max=0)
    if object_count.max > 0 and objects is None:
        raise ConfigError("flying objects requested but no --objects folder given", field="--flying-count")
    if human_count.max > 0 and humans is None:
        raise ConfigError("humans requested but no --humans folder given", field="--count")
    humans_config = HumansConfig(count=human_count, max_tries=max_tries, contact_threshold=contact_threshold)
    flying_config = FlyingObjectsConfig(count=object_count, collision_check=collision_check)
    scene = place_scene(
        environment, list_packages(humans, "animated") if humans else [],
        list_packages(objects, "object") if objects else [], humans_config, flying_config,
        RobotConfig(kind=robot.value), seed,
    )
    written = write_outputs(scene, out, preview or out.with_suffix(".png"))
    placement = scene.placement
    console.print(f"placed {len(placement.humans)} of {placement.parameters.human_candidates} humans, "
                  f"{len(placement.flying_objects)} flying objects; robot at ({placement.robot.x:.2f}, "
                  f"{placement.robot.y:.2f}, {placement.robot.z:.2f}) -> {written}")

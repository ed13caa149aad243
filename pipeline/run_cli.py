"""`grade demo`, `grade prepare` and `grade generate`: one experiment, from its config to a recorded run."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Annotated, Literal

import typer

from core.config_io import load_experiment
from core.progress import console
from core.stage import output_folder

SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", "-s", metavar="KEY=VALUE", help="Override a key: --set simulation.duration=5 "
                 "(repeatable)."),
]
ForceOption = Annotated[bool, typer.Option("--force", help="Record again even if the run is complete.")]
WaitOption = Annotated[bool, typer.Option("--wait", help="If another process is writing the run folder, wait "
                                                         "for it instead of failing.")]
ConfigArgument = Annotated[Path, typer.Argument(metavar="CONFIG", help="Experiment YAML file.")]
OutOption = Annotated[Path | None, typer.Option("--out", metavar="DIR",
                                                help="Run folder (default: the config's output_dir).")]
RerunOption = Annotated[Literal["spawn", "connect"] | None, typer.Option(
    "--rerun", help="Show the run in the Rerun viewer as it records: spawn a viewer window, or connect to a running "
                    "one (--rerun-address); needs the viz extra. The recorded files are the same.")]
LiveOption = Annotated[Literal["ros1", "ros2"] | None, typer.Option(
    "--live", help="Also publish the run to ROS as it records, taking commands from your own node: ros1 to the "
                   "master at ROS_MASTER_URI; ros2 on DDS (domain ROS_DOMAIN_ID). Sets live.middleware; the "
                   "config's `live` section sets the pacing. The recorded files are the same.")]
RerunAddressOption = Annotated[str | None, typer.Option(
    "--rerun-address", metavar="ADDR", help="With --rerun connect: the viewer's rerun+http://HOST:PORT/proxy, "
                                            "HOST:PORT or PORT (default: 9876, the local viewer's).")]


def demo_config() -> Path:
    """configs/demo.yaml as installed with the package (configs/ is package data), editable or not."""
    return Path(str(files("configs") / "demo.yaml"))


def _prepare_and_report(config_file: Path, out: Path | None, overrides: list[str]) -> None:
    config = load_experiment(config_file, overrides)  # before prepare's imports: a bad config is refused at once
    from pipeline.prepare import prepare

    with output_folder(out or config.output_dir, what="run folder") as folder:
        prepared = prepare(config, folder)
    console.print(f"environment  {prepared.environment}\nhumans       {len(prepared.humans)} packages\n"
                  f"objects      {len(prepared.objects)} packages\nplacement    {prepared.placement} "
                  f"(preview {prepared.placement.with_suffix('.png').name})\nscene        {prepared.scene}")


def prepare_command(config_file: ConfigArgument, out: OutOption = None, set_: SetOption = None) -> None:
    """Convert assets, place them and compose scene.usda.

    Assets are converted once into the cache; humans, objects and the robot start are placed.

    \b
    Example:
      grade prepare configs/paper-indoor.yaml --out runs/indoor-0
    """
    _prepare_and_report(config_file, out, set_ or [])


def _generate_and_report(config_file: Path, out: Path | None, overrides: list[str], force: bool, wait: bool,
                         rerun: str | None, rerun_address: str | None, live_middleware: str | None = None) -> None:
    # The config first, before the recorder's imports (~1.5 s, 180 MB): a bad one is refused at once.
    if live_middleware is not None:
        overrides = [f"live.middleware={live_middleware}", *overrides]
    config = load_experiment(config_file, overrides)
    from pipeline.generate import generate
    from simulation.recording.live_target import live_target

    live = live_target(rerun, rerun_address)
    result = generate(config, out, force=force, wait=wait, live=live)
    info = result.info
    state = "up to date" if result.skipped else info.status
    counts = ", ".join(f"{k} {v}" for k, v in sorted(info.frame_counts.items()) if k.startswith(("camera/", "lidar/")))
    console.print(f"run          {result.run} ({state})\nsimulated    {info.sim_time_end:.2f} s; {counts}\n"
                  f"mission      {info.mission}\nview it with grade view {result.run}")


def generate_command(
    config_file: ConfigArgument,
    out: OutOption = None,
    set_: SetOption = None,
    force: ForceOption = False,
    wait: WaitOption = False,
    rerun: RerunOption = None,
    rerun_address: RerunAddressOption = None,
    live: LiveOption = None,
) -> None:
    """Run one experiment end to end.

    Assets (cached), placement, scene, simulation, ROS bags and ground truth.

    \b
    Examples:
      grade generate configs/demo.yaml --out runs/demo-long --set simulation.duration=60
      grade generate configs/demo-tiago.yaml --set seed=7
      grade generate configs/demo.yaml --rerun connect --rerun-address 127.0.0.1:9876
      grade generate configs/demo-tiago.yaml --live ros1 --set exploration.planner=external
    """
    _generate_and_report(config_file, out, set_ or [], force, wait, rerun, rerun_address, live)


def demo_command(
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Run folder.")] = Path("runs/demo"),
    set_: SetOption = None,
    force: ForceOption = False,
    wait: WaitOption = False,
    rerun: RerunOption = None,
    rerun_address: RerunAddressOption = None,
    live: LiveOption = None,
) -> None:
    """The CPU demo: configs/demo.yaml into runs/demo.

    Procedural assets only: nothing is downloaded.

    \b
    Example:
      grade demo && grade view runs/demo
      grade demo --rerun spawn
    """
    _generate_and_report(demo_config(), out, set_ or [], force, wait, rerun, rerun_address, live)

"""`grade evaluate ...` and `grade benchmark ...`: the evaluation commands, registered in pipeline/cli.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

evaluate_app = typer.Typer(help="Evaluate SLAM trajectories against the ground truth.", no_args_is_help=True)
benchmark_app = typer.Typer(help="Run SLAM methods on sequences and tabulate the results.", no_args_is_help=True)


@evaluate_app.command("slam")
def slam_command(
    gt: Annotated[Path, typer.Option("--gt", help="Ground truth: TUM file, recording folder, ROS 1 .bag or ROS 2 bag.")],
    est: Annotated[Path, typer.Option("--est", help="Estimate: TUM file, recording folder, ROS 1 .bag or ROS 2 bag.")],
    sim3: Annotated[bool, typer.Option("--sim3", help="Align with scale (Sim(3)), for monocular methods.")] = False,
    delta: Annotated[float, typer.Option("--delta", metavar="S",
                                         help="RPE: time between the poses of a pair.")] = 1.0,
    max_diff: Annotated[float, typer.Option("--max-diff", metavar="S", min=0.0,
                                            help="Largest time difference of an associated pose pair.")] = 0.02,
    camera: Annotated[str | None, typer.Option("--camera", metavar="NAME", help="Recordings: the camera, or a "
                                               "LiDAR for its sweep poses (default: the first camera).")] = None,
    gt_topic: Annotated[str | None, typer.Option("--gt-topic", metavar="TOPIC", help="Bag --gt: PoseStamped or "
                                                 "Odometry topic (default: the first PoseStamped topic).")] = None,
    est_topic: Annotated[str | None, typer.Option("--est-topic", metavar="TOPIC", help="Bag --est: as --gt-topic.")]
    = None,
    window: Annotated[tuple[float, float] | None, typer.Option(
        "--window", metavar="START END", help="Experiment window (s) for the missing time (default: the ground "
        "truth's first to last time).")] = None,
    fps: Annotated[float | None, typer.Option("--fps", help="Expected estimate rate for "
                                              "the missing time (default: the ground truth's median rate).")] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Also write DIR/metrics.json, "
                                             "DIR/trajectories.png and DIR/errors.png.")] = None,
) -> None:
    """ATE and RPE of an estimated trajectory against the ground truth (associated by time, aligned SE(3) or
    Sim(3) by Umeyama), and GRADE's missing time: the seconds of the experiment window without estimates."""
    from core.formats.slam_metrics import write_slam_metrics
    from core.outputs import output_lock
    from evaluation.metrics import ate, evaluate_slam
    from evaluation.plots import ERRORS_FILE, TRAJECTORIES_FILE, plot_errors, plot_trajectories
    from evaluation.trajectory import load_trajectory

    reference = load_trajectory(gt, camera=camera, topic=gt_topic)
    estimate = load_trajectory(est, camera=camera, topic=est_topic)
    metrics = evaluate_slam(reference, estimate, sim3=sim3, delta_s=delta, max_difference=max_diff, window=window,
                            fps=fps)
    rows = [("pairs", f"{metrics.pairs}"), ("alignment", f"{metrics.alignment} (scale {metrics.scale:.6g})")]
    rows += [(f"ATE {name} (m)", f"{getattr(metrics.ate, name):.6f}") for name in ("rmse", "mean", "median", "std",
                                                                                  "min", "max")]
    if metrics.rpe is None:
        rows.append((f"RPE ({delta:g} s)", "no pose pairs that far apart"))
    else:
        rows += [(f"RPE {delta:g} s rmse (m)", f"{metrics.rpe.translation.rmse:.6f}"),
                 (f"RPE {delta:g} s rmse (deg)", f"{metrics.rpe.rotation.rmse:.6f}")]
    span = metrics.window[1] - metrics.window[0]
    rows += [("missing time (s)", f"{metrics.missing_time_s:.3f} of {span:.3f} at {metrics.fps:.4g} fps"),
             ("tracked", f"{100 * metrics.tracked_fraction:.1f} %")]
    width = max(len(name) for name, _ in rows)
    typer.echo("\n".join(f"{name:<{width}}  {value}" for name, value in rows))
    if out is not None:
        absolute = ate(reference, estimate, sim3, max_diff)
        with output_lock(out, what="evaluation folder") as folder:
            written = [write_slam_metrics(folder, metrics),
                       plot_trajectories(folder / TRAJECTORIES_FILE, reference, absolute.aligned,
                                         f"{est.name} (aligned, {metrics.alignment}) vs {gt.name}"),
                       plot_errors(folder / ERRORS_FILE, absolute.times, absolute.errors,
                                   f"ATE ({metrics.alignment}), RMSE {metrics.ate.rmse:.4f} m")]
        for path in written:
            typer.echo(str(path))

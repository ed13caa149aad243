"""`grade evaluate ...` and `grade benchmark ...`: the evaluation commands, registered in pipeline/cli.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, get_args

import typer

from core.cli_values import finite

evaluate_app = typer.Typer(help="Evaluate SLAM trajectories against the ground truth.", no_args_is_help=True)
benchmark_app = typer.Typer(help="Run SLAM methods on sequences and tabulate the results.", no_args_is_help=True)


@evaluate_app.command("slam")
def slam_command(
    gt: Annotated[Path, typer.Option("--gt", help="Ground truth: TUM file, recording folder, ROS 1 .bag or ROS 2 bag.")],
    est: Annotated[Path, typer.Option("--est", help="Estimate: TUM file, recording folder, ROS 1 .bag or ROS 2 bag.")],
    sim3: Annotated[bool, typer.Option("--sim3", help="Align with scale (Sim(3)), for monocular methods.")] = False,
    delta: Annotated[float, typer.Option("--delta", metavar="S", min=0.0, callback=finite,
                                         help="RPE: time between the poses of a pair.")] = 1.0,
    max_diff: Annotated[float, typer.Option("--max-diff", metavar="S", min=0.0, callback=finite,
                                            help="Largest time difference of an associated pose pair.")] = 0.02,
    camera: Annotated[str | None, typer.Option("--camera", metavar="NAME", help="Recordings: the camera, or a "
                                               "LiDAR for its sweep poses (default: the first camera).")] = None,
    gt_topic: Annotated[str | None, typer.Option("--gt-topic", metavar="TOPIC", help="Bag --gt: PoseStamped or "
                                                 "Odometry topic (default: the first PoseStamped topic).")] = None,
    est_topic: Annotated[str | None, typer.Option("--est-topic", metavar="TOPIC", help="Bag --est: as --gt-topic.")]
    = None,
    window: Annotated[tuple[float, float] | None, typer.Option(
        "--window", metavar="START END", callback=finite, help="Experiment window (s) for the missing time (default: the ground "
        "truth's first to last time).")] = None,
    fps: Annotated[float | None, typer.Option("--fps", min=0.0, callback=finite, help="Expected estimate rate for "
                                              "the missing time (default: the ground truth's median rate).")] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Also write DIR/metrics.json, "
                                             "DIR/trajectories.png and DIR/errors.png.")] = None,
    robot: Annotated[str | None, typer.Option("--robot", metavar="NAME", help="Multi-robot recordings: the "
                                              "robot whose camera poses are compared (default: the first).")] = None,
) -> None:
    """ATE, RPE and missing time of an estimate against the ground truth.

    Poses are associated by time and aligned SE(3) (or Sim(3) with --sim3) by Umeyama; the missing time is
    GRADE's: the seconds of the experiment window without estimates.

    \b
    Examples:
      grade evaluate slam --gt runs/demo --est slam/demo/trajectory.tum --out slam/demo
      grade evaluate slam --gt recorded.bag --est estimate.tum --sim3
    """
    from core.stage import output_folder
    from evaluation.metrics import slam_evaluation
    from evaluation.plots import write_evaluation
    from evaluation.trajectory import load_trajectory

    reference = load_trajectory(gt, camera=camera, topic=gt_topic, robot=robot)
    estimate = load_trajectory(est, camera=camera, topic=est_topic, robot=robot)
    metrics, absolute = slam_evaluation(reference, estimate, sim3=sim3, delta_s=delta, max_difference=max_diff,
                                        window=window, fps=fps)
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
        # Folder inputs (a recording, a ROS 2 bag) may not lie in DIR either way; a trajectory or bag file in DIR
        # is the benchmark's layout (metrics beside the estimate), and as DIR held it, a failure discards nothing.
        with output_folder(out, what="evaluation folder", inputs=[p for p in (gt, est) if p.is_dir()],
                           discard_failed=True) as folder:
            written = write_evaluation(folder, reference, metrics, absolute, f"{est.name} vs {gt.name}")
        for path in written:
            typer.echo(str(path))


# subprocess's wait turns the timeout into C milliseconds, which overflow near 1e300 s; 1e7 s is 116 days.
MAX_TIMEOUT_S = 1e7
SlamMethod = Literal["orbslam3", "kiss-icp", "external"]
SLAM_METHODS = get_args(SlamMethod)
# evaluation/orbslam.py's MODES (tests/test_cli.py checks they agree).
OrbslamMode = Literal["rgbd", "mono", "mono_inertial", "stereo"]


@benchmark_app.command("run")
def run_command(
    method: Annotated[SlamMethod, typer.Argument(metavar="orbslam3|kiss-icp|external", help="The SLAM method.")],
    run: Annotated[Path, typer.Argument(metavar="RUN", help="Recording folder; for external, the sequence folder "
                                        "the command reads (a `grade export tum|euroc` sequence).")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Output folder: trajectory.tum (or the "
                                      "external command's trajectory and its output, method.log) and runner.json.")],
    mode: Annotated[OrbslamMode, typer.Option("--mode", help="orbslam3: the sensor setup.")] = "rgbd",
    right_camera: Annotated[str | None, typer.Option("--right-camera", metavar="NAME", help="orbslam3 stereo: "
                                                     "the pair's right camera (--camera is the left).")] = None,
    camera: Annotated[str | None, typer.Option("--camera", metavar="NAME", help="orbslam3: the camera (default: "
                                               "the first recorded camera of the run's config).")] = None,
    vocabulary: Annotated[Path | None, typer.Option("--vocabulary", metavar="FILE", help="orbslam3: DBoW2 text "
                                                    "vocabulary (default: $PYORBSLAM3_VOCAB, else pyorbslam3's "
                                                    "downloaded ORBvoc.txt).")] = None,
    build_vocabulary: Annotated[bool, typer.Option("--build-vocabulary", help="orbslam3: build a small "
                                                   "vocabulary from the run's own frames into DIR.")] = False,
    processed: Annotated[bool, typer.Option("--processed", help="orbslam3: feed `grade postprocess` outputs "
                                            "(rgb_blur, depth_noisy, the noisy IMU).")] = False,
    lidar: Annotated[str | None, typer.Option("--lidar", metavar="NAME", help="kiss-icp: the LiDAR (default: "
                                              "the run's LiDAR).")] = None,
    command: Annotated[str | None, typer.Option("--command", metavar="TEMPLATE", help="external: the command, "
                                                "with {sequence} and {out} placeholders.")] = None,
    trajectory: Annotated[str, typer.Option("--trajectory", metavar="NAME", help="external: the TUM file the "
                                            "command writes in DIR.")] = "trajectory.tum",
    timeout: Annotated[float, typer.Option("--timeout", metavar="S", min=0.0, max=MAX_TIMEOUT_S, callback=finite, help="external: seconds before "
                                           "the command is stopped.")] = 3600.0,
) -> None:
    """Run one SLAM method on a recording (or sequence): its trajectory (TUM) and runner.json.

    \b
    Examples:
      grade benchmark run orbslam3 runs/demo --out slam/demo --mode rgbd
      grade benchmark run kiss-icp runs/demo-tiago --out slam/tiago
    """
    from core.errors import ConfigError
    from core.stage import output_folder

    if vocabulary is not None and build_vocabulary:
        raise ConfigError("give --vocabulary FILE or --build-vocabulary, not both", None, "--vocabulary")
    if method == "external" and command is None:
        raise ConfigError("the external method needs --command TEMPLATE (with {sequence} and {out})", None,
                          "--command")
    with output_folder(out, what="SLAM run folder", inputs=[run], discard_failed=True) as folder:
        if method == "orbslam3":
            from evaluation.orbslam import VOCABULARY_FILE, run_orbslam3

            result = run_orbslam3(run, folder, mode, camera, vocabulary, processed, right_camera, build_vocabulary)
            if build_vocabulary:
                typer.echo(f"vocabulary  {folder / VOCABULARY_FILE} (built from the run's frames)")
        elif method == "kiss-icp":
            from evaluation.lidar_odometry import run_kiss_icp

            result = run_kiss_icp(run, folder, lidar)
        else:
            from evaluation.external import run_external

            result = run_external(command, run, folder, trajectory, timeout)
    typer.echo(f"frames      {result.frames}\ntracked     {result.tracked} "
               f"({100 * result.tracked / max(result.frames, 1):.1f} %)\nfps         {result.fps:.1f}\n"
               f"trajectory  {result.trajectory}")

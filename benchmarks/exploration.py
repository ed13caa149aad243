"""Exploration of the demo flat and the 3D-Front sample house by the UAV and the TIAGo++ Omni, frontier planner
against tour planner: coverage over time, path, speed, collisions, replans, planning CPU time, on one seed's
scene or the distribution over many.

Run: .venv/bin/python benchmarks/exploration.py [--budget 120] [--scenes flat,house] [--robots uav,lightweight]
     (robots: uav, uav4 (the UAV with depth cameras to its left, back and right as well, all four mapping:
     exploration.cameras), lightweight, physical, and the description robots husky (the Clearpath Husky URDF of
     ../shared/realdata, differential) and quadrotor (an MJCF quadrotor this script writes, floating))
     [--planners frontier,tour] [--seed 42 | --seeds A-B] [--results FILE.jsonl] [--humans MIN,MAX]
     [--objects MIN,MAX] [--resolution 0.1] [--uav-speed M/S] [--cache DIR] [--contacts] [--smoke]
     .venv/bin/python benchmarks/exploration.py --demo [--planners frontier,tour]

--seeds A-B (or A,B,...): each seed's flat (its rooms, furniture, people and objects), then the distribution per
robot and planner: the coverage at the budget (min, median, share of seeds at 0.9 or more) and the contacts.
--results FILE: each run's row is added to FILE (JSON lines) as it ends, and runs already there (same scene,
robot, planner, seed and budget) are not run again: a long sweep is split into several calls. --contacts: each
contact the robot caused, as it ends its run: its simulation time span and physics steps, what it touched, the
contact point's bearing off the robot's heading (its camera's field of view: 100 deg; a UAV's X frame is touched
at its arm tips, +-45 deg) and, for a person or object, its centre's, and the velocity the robot commands into it
against the one the other body comes on with (negative: it moves away); who moved into whom.
--smoke: the UAV in
the flat with 1 human and 1 flying object, each planner for 1 simulated second; with --demo, 0.25 s of the demo
with a 96x72 camera (the figures mean nothing). --cache: the asset cache to convert into (default: a temporary
folder; --demo converts into its own).

--demo records configs/demo.yaml as `make demo` does (its 640x480 camera, 25 s) with each planner and prints
the rooms the robot flew through (simulation.exploration.metrics.rooms on the flat's ground-truth map), its
path, and the CPU seconds spent planning against the whole process's CPU seconds (all threads).

Prepares configs/demo.yaml (its humans and flying objects unless overridden; the house: the real 3D-Front sample
house from ../shared/realdata, converted with its lights, no humans or flying objects) once per scene and
robot kind in a temporary folder, then runs each robot's mission as `grade generate` does (the bootstrap, then
its planner; simulation.mission) with a 64x48, 100 deg depth camera (the UAV's on camera_link, the TIAGo's on its
head tilted 25 deg down) until its exploration is done or the budget (simulated seconds) runs out. Coverage is
what run.json reports as `mission.reachable_floor_coverage` (simulation.exploration.metrics.FloorCoverage): the
fraction of the flat's free floor reachable by a disc of the robot's radius from where it starts exploring
(ground truth from the environment package's occupancy.npz, which the robot never reads; for the UAV, free where
nothing stands in the slab it flies in: it flies over tables) that the robot's own map knows, at 15, 30, 60 and
120 s (the last value once exploration ended). Floor: the area of that reachable floor; path: the robot's
horizontal path length; speed: path / time explored; coll.: physics steps in a contact of the robot with the
environment, a person or a flying object while the velocity it commands has a component along the contact normal
faster than what it touches comes on there, or moves off (MuJoCo; simulation.exploration.metrics.robot_contacts);
pushed: other steps in contact (a person or object walked or flew into it, dragged it or pressed it against a
wall); replans: planning rounds; plan CPU: process CPU seconds spent planning per simulated second (wall-clock
measure, so it varies from run to run; everything else is deterministic).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from core.assets.layout import OCCUPANCY_FILE
from core.config import ExperimentConfig
from core.config_io import load_experiment
from core.formats.occupancy import read_occupancy
from core.formats.states import STATES_FILE, load_robot_path
from core.geometry import yaw_of
from pipeline.generate import generate
from pipeline.prepare import prepare
from simulation.embedded import EmbeddedWorld
from simulation.exploration import Explorer
from simulation.exploration.metrics import Contact, MoverVelocities, RobotMotion, contact_points, rooms, rooms_visited
from simulation.mission import RobotMission

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINTS = (15.0, 30.0, 60.0, 120.0)  # s
CAMERA = ["robot.sensors.imus=[]", "robot.sensors.cameras.0.width=64", "robot.sensors.cameras.0.height=48",
          "robot.sensors.cameras.0.fov_deg=100", "robot.sensors.cameras.0.outputs=[depth]"]
HUSKY = ROOT.parent / "shared" / "realdata" / "robots" / "husky" / "husky.urdf"
# An MJCF quadrotor of its own mass and inertia (a 2 kg, 0.5 m frame), flown by the UAV's controller and limits.
QUADROTOR = """<mujoco model="quadrotor"><worldbody><body name="base_link"><freejoint/>
  <inertial pos="0 0 0" mass="2.0" diaginertia="0.03 0.03 0.05"/>
  <geom name="frame" type="box" size="0.22 0.22 0.05" mass="0" rgba="0.2 0.3 0.8 1"/>
  <body name="camera_mount" pos="0.12 0 -0.02"/></body></worldbody></mujoco>"""
TIAGO_CAMERA = ["robot.sensors.cameras.0.mount.link=head_2_link", "robot.sensors.cameras.0.mount.rpy_deg=[0,25,0]"]
# Four depth cameras at right angles on the UAV's camera link: the first as every robot's, the others mapping too.
FRONT_CAMERA = "{name: camera, mount: {link: camera_link, translation: [0.1, 0, 0]}}"
SIDE_CAMERAS = ", ".join(f"{{name: {name}, mount: {{link: camera_link, translation: {xy}, rpy_deg: [0, 0, {yaw}]}}, "
                         "width: 64, height: 48, fov_deg: 100, outputs: [depth]}"
                         for name, xy, yaw in (("left", [0, 0.1, 0], 90), ("back", [-0.1, 0, 0], 180),
                                               ("right", [0, -0.1, 0], -90)))
ROBOTS = {  # name -> overrides
    "uav": ["robot.kind=uav"],
    "uav4": ["robot.kind=uav", f"robot.sensors.cameras=[{FRONT_CAMERA}, {SIDE_CAMERAS}]",
             "exploration.cameras=[camera, left, back, right]"],
    "lightweight": ["robot.kind=tiago_omni", "robot.tiago.model=lightweight", *TIAGO_CAMERA],
    "physical": ["robot.kind=tiago_omni", "robot.tiago.model=physical", *TIAGO_CAMERA],
    "husky": ["robot.kind=custom", f"robot.description={HUSKY}", "robot.drive=differential",
              "robot.sensors.cameras.0.mount.link=top_plate_link",
              "robot.sensors.cameras.0.mount.translation=[0.3,0,0.45]", "robot.sensors.cameras.0.mount.rpy_deg=[0,25,0]"],
    "quadrotor": ["robot.kind=custom", "robot.description=QUADROTOR", "robot.drive=floating",
                  "robot.sensors.cameras.0.mount.link=camera_mount"],
}
HOUSE = ROOT.parent / "shared" / "realdata" / "front3d" / "0a17c68b-b74d-4d81-afe4-bc2ed405f0ec.json"
SMOKE = {"robots": "uav", "budget": 1.0, "humans": [1, 1], "objects": [1, 1], "contacts": True}
SMOKE_DEMO = ["simulation.duration=0.25", "simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}",
              "flying_objects.count={min: 1, max: 1}", "robot.sensors.cameras.0.width=96",
              "robot.sensors.cameras.0.height=72"]
SCENES = {"flat": [], "house": ["environment.source=front3d", f"environment.path={HOUSE}",
                                "humans.count={min: 0, max: 0}", "flying_objects.count={min: 0, max: 0}"]}


def experiment(scene: str, name: str, planner: str, args: argparse.Namespace, work: Path) -> ExperimentConfig:
    """configs/demo.yaml as `scene`, robot `name` and `planner` explore it for `args.budget` s (`simulation.duration`)."""
    if name == "husky" and not HUSKY.is_file():
        raise SystemExit(f"the Husky URDF is not at {HUSKY}; leave out --robots husky")
    quadrotor = work / "quadrotor.xml"
    quadrotor.write_text(QUADROTOR)
    overrides = [o.replace("QUADROTOR", str(quadrotor)) for o in ROBOTS[name]]
    overrides = SCENES[scene] + overrides + CAMERA + [
        f"seed={args.seed}", f"assets_dir={args.cache or work / 'assets'}",
        f"exploration.map_resolution={args.resolution}",
        f"exploration.planner={planner}", f"simulation.duration={args.budget}"]
    if args.humans:
        overrides += [f"humans.count.min={args.humans[0]}", f"humans.count.max={args.humans[1]}"]
    if args.objects:
        overrides += [f"flying_objects.count.min={args.objects[0]}", f"flying_objects.count.max={args.objects[1]}"]
    if args.uav_speed is not None:
        overrides += [f"robot.uav.max_speed={args.uav_speed}"]
    return load_experiment(ROOT / "configs" / "demo.yaml", overrides)


def run(scene: str, name: str, planner: str, args: argparse.Namespace, work: Path) -> dict:
    """One robot's mission as a run makes it (bootstrap, then the planner) until its exploration ends: its
    reachable-floor coverage is the one run.json reports (simulation.mission)."""
    config = experiment(scene, name, planner, args, work)
    prepared = prepare(config, work / scene / name)
    world = EmbeddedWorld(config, prepared.scene)
    robot = world.robot()
    end = world.time + config.simulation.bootstrap + config.simulation.duration
    mission = RobotMission(robot, config, prepared.environment, world.time + config.simulation.bootstrap, end)
    contacts, path, last = [0, 0], [0.0], [robot.pose()[:2, 3].copy()]
    movers, events = MoverVelocities(world.physics), []
    while mission.tick() and mission.result.exploration is None:
        world.step()
        pose = robot.pose()
        # Steps in contact the robot caused (its command moved it towards what it touches faster than that came
        # on) and other steps in contact (a person or object walked or flew into it).
        points = contact_points(world.physics, RobotMotion.of(robot), movers.step())
        caused = [c for c in points if c.caused]
        if caused:
            contacts[0] += 1
            if args.contacts:
                note_contact(events, world.time, world.timestep, pose, max(caused, key=lambda c: c.own - c.theirs))
        elif points:
            contacts[1] += 1
        path[0] += float(np.linalg.norm(pose[:2, 3] - last[0]))
        last[0] = pose[:2, 3].copy()
    result, floor = mission.result.exploration, mission.result.floor
    began = floor.history[0][0]
    at = [max([c for t, c in floor.history if t - began <= checkpoint + 1e-9], default=0.0)
          for checkpoint in CHECKPOINTS]
    seconds = max(result.time, 1e-9)
    return {"scene": scene, "robot": name, "planner": planner, "seed": args.seed, "budget": args.budget,
            "floor": floor.area,
            "coverage": at, "history": floor.history, "path": path[0], "speed": path[0] / seconds,
            "collisions": contacts[0], "pushed": contacts[1], "replans": result.replans,
            "plan_cpu": result.planning_time / seconds, "end": f"{result.reason} {result.time:.0f}s",
            **({"contact_events": events} if args.contacts else {})}


def note_contact(events: list[dict], time: float, step: float, pose: np.ndarray, contact: Contact) -> None:
    """Add a physics step at simulation `time` in a contact the robot caused to `events`: the step right after an
    event's last one, with the same body, extends it. An event keeps its first step's bearing of the contact
    point off the robot's heading and both sides' velocities into it."""
    last = events[-1] if events else None
    if last is not None and last["body"] == contact.body and time - last["end"] <= 1.5 * step:
        last["end"], last["steps"] = time, last["steps"] + 1
        return
    events.append({"start": time, "end": time, "steps": 1, "body": contact.body,
                   "bearing_deg": bearing_deg(pose, contact.point),
                   "origin_deg": None if contact.origin is None else bearing_deg(pose, contact.origin),
                   "own": contact.own, "theirs": contact.theirs})


def bearing_deg(pose: np.ndarray, point: np.ndarray) -> float:
    """The bearing (deg, (-180, 180]) of `point` off the heading of the robot at `pose`, in the ground plane."""
    offset = point[:2] - pose[:2, 3]
    bearing = math.atan2(offset[1], offset[0]) - yaw_of(pose)
    return math.degrees(math.remainder(bearing, 2 * math.pi))


def contact_lines(row: dict) -> list[str]:
    """A run's contacts the robot caused, one line each (--contacts)."""
    return [f"  {e['start']:.3f}-{e['end']:.3f} s, {e['steps']} steps: {e['body']}, touched {e['bearing_deg']:+.0f} deg "
            "off its heading" + ("" if e.get("origin_deg") is None else f", its centre at {e['origin_deg']:+.0f} deg")
            + f"; it commands {e['own']:.2f} m/s into it, that comes on at {e['theirs']:+.2f} m/s"
            for e in row.get("contact_events", [])]


def demo(planner: str, work: Path, overrides: list[str] | None = None) -> str:
    """One `make demo` recording with `planner`: rooms visited, path, planning's share of the CPU (the
    explorers' own `planning_time`; the run makes them, so they are collected as they are made)."""
    explorers: list[Explorer] = []
    made = Explorer.__init__

    def collect(self, *args, **kwargs) -> None:
        made(self, *args, **kwargs)
        explorers.append(self)

    config = load_experiment(ROOT / "configs" / "demo.yaml", [*(overrides or []), f"exploration.planner={planner}"])
    Explorer.__init__ = collect
    try:
        began = time.process_time()
        result = generate(config, work / planner, cache=work / "assets")
        cpu = time.process_time() - began
    finally:
        Explorer.__init__ = made
    spent = sum(explorer.planning_time for explorer in explorers)
    trail = load_robot_path(result.run / STATES_FILE)
    xy, times = trail.position[:, :2], trail.time
    package = next((work / "assets").glob(f"**/environment/**/{OCCUPANCY_FILE}")).parent
    occupancy = read_occupancy(package / OCCUPANCY_FILE)
    labels = rooms(occupancy.grid, occupancy.resolution)
    visited = rooms_visited(labels, occupancy.origin, occupancy.resolution, xy)
    path = float(np.linalg.norm(np.diff(xy, axis=0), axis=1).sum())
    return (f"{planner:<9} {len(set(visited))} of {labels.max()} rooms (in order {visited}), path {path:.1f} m "
            f"in {times[-1] - times[0]:.0f} s, planning {spent:.2f} CPU s of {cpu:.1f} "
            f"({100 * spent / cpu:.1f}%)")


def seeds(text: str) -> list[int]:
    """`A-B` (inclusive) or `A,B,...`."""
    if "-" in text:
        first, last = (int(v) for v in text.split("-"))
        return list(range(first, last + 1))
    return [int(v) for v in text.split(",")]


def key(row: dict) -> tuple:
    return row["scene"], row["robot"], row["planner"], row["seed"], row["budget"]


def table(rows: list[dict]) -> str:
    """One line per run."""
    header = (f"{'scene':<6} {'robot':<12} {'planner':<9} {'seed':>4} {'floor m2':>8}"
              + "".join(f" {f'{c:.0f} s':>6}" for c in CHECKPOINTS)
              + f" {'path m':>7} {'m/s':>5} {'coll.':>5} {'pushed':>6} {'replans':>7} {'plan CPU':>8}  end")
    lines = [header]
    for r in rows:
        lines.append(f"{r['scene']:<6} {r['robot']:<12} {r['planner']:<9} {r['seed']:4d} {r['floor']:8.1f}"
                     + "".join(f" {c:6.3f}" for c in r["coverage"])
                     + f" {r['path']:7.1f} {r['speed']:5.2f} {r['collisions']:5d} {r['pushed']:6d} {r['replans']:7d}"
                     + f" {r['plan_cpu']:8.3f}  {r['end']}")
    return "\n".join(lines)


def distribution(rows: list[dict]) -> str:
    """Per scene, robot and planner over its seeds: the coverage at the budget (min, median, share of seeds at
    0.9 or more), steps in contacts the robot caused (in all, and the seeds with any) and steps in which only a
    person or object moved into it."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["scene"], r["robot"], r["planner"], r["budget"]), []).append(r)
    header = (f"{'scene':<6} {'robot':<12} {'planner':<9} {'budget':>6} {'seeds':>5} {'min':>6} {'median':>6} "
              f"{'>=0.9':>6} {'coll.':>5} {'seeds w/ coll.':>14} {'pushed':>6}")
    lines = [header]
    for (scene, robot, planner, budget), group in groups.items():
        final = np.array([r["coverage"][-1] for r in group])
        collided = sum(r["collisions"] > 0 for r in group)
        lines.append(f"{scene:<6} {robot:<12} {planner:<9} {budget:6.0f} {len(group):5d} {final.min():6.3f} "
                     f"{np.median(final):6.3f} {np.mean(final >= 0.9):6.2f} {sum(r['collisions'] for r in group):5d} "
                     f"{collided:14d} {sum(r['pushed'] for r in group):6d}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--budget", type=float, default=120.0, help="simulated seconds per robot and planner")
    parser.add_argument("--scenes", default="flat", help="flat (the demo's), house (the 3D-Front sample)")
    parser.add_argument("--robots", default="uav,lightweight")
    parser.add_argument("--planners", default="frontier,tour")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--seeds", type=seeds, default=None, help="A-B or A,B,...: each seed's scene (not --seed)")
    parser.add_argument("--results", type=Path, default=None,
                        help="JSON lines: each run's row is added; runs already there are not run again")
    parser.add_argument("--humans", type=lambda s: [int(v) for v in s.split(",")], default=None)
    parser.add_argument("--objects", type=lambda s: [int(v) for v in s.split(",")], default=None)
    parser.add_argument("--resolution", type=float, default=0.1, help="map resolution, m")
    parser.add_argument("--uav-speed", type=float, default=None, help="robot.uav.max_speed (default: the config's)")
    parser.add_argument("--demo", action="store_true", help="record configs/demo.yaml with each planner instead")
    parser.add_argument("--cache", type=Path, default=None, help="asset cache (default: a temporary folder)")
    parser.add_argument("--contacts", action="store_true",
                        help="list each contact the robot caused: when, what, where, both sides' velocities")
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    if args.demo:
        with tempfile.TemporaryDirectory() as folder:
            lines = [demo(planner, Path(folder), SMOKE_DEMO if args.smoke else None)
                     for planner in args.planners.split(",")]
        print("\nconfigs/demo.yaml\n" + "\n".join(lines))
        return
    done = {}
    if args.results is not None and args.results.is_file():
        done = {key(row): row for row in map(json.loads, args.results.read_text().splitlines())}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for seed in args.seeds or [args.seed]:
            args.seed = seed
            for scene in args.scenes.split(","):
                if scene == "house" and not HOUSE.is_file():
                    raise SystemExit(f"the 3D-Front sample house is not at {HOUSE}; leave out --scenes house")
                for name in args.robots.split(","):
                    for planner in args.planners.split(","):
                        row = done.get((scene, name, planner, seed, args.budget))
                        if row is None:
                            row = run(scene, name, planner, args, Path(folder))
                            row = {k: v for k, v in row.items() if k != "history"}
                            if args.results is not None:
                                with args.results.open("a") as file:
                                    file.write(json.dumps(row) + "\n")
                        rows.append(row)
                        print(f"done {scene} {name} {planner} seed {seed}: {row['coverage'][-1]:.3f}, "
                              f"{row['collisions']} steps in contact, {row['end']}", *contact_lines(row),
                              sep="\n", flush=True)
    rows.sort(key=key)
    print(f"\nbudget {args.budget:.0f} s; coverage of the reachable floor at 15, 30, 60, 120 s (the last value once "
          f"exploration ended); coll.: physics steps in a contact the robot caused; pushed: steps in which only a "
          f"person or object moved into it\n{table(rows)}")
    if len(args.seeds or []) > 1:
        print(f"\ncoverage at the budget over seeds {', '.join(str(s) for s in args.seeds)}\n{distribution(rows)}")


if __name__ == "__main__":
    main()

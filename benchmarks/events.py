"""The event camera's cost (simulation.sensors.event_camera, after ESIM) per simulated second, on a moving synthetic
scene: a smooth random texture (linear intensity 0.02..1) sliding past a DAVIS346-sized sensor at --speed px/s
while it turns at --spin deg/s, rendered by OpenCV's bilinear warp (a stand-in for the renderer: its cost is printed
apart). Prints renders per simulated second (the adaptive rate), events per simulated second, the simulator's CPU
seconds per simulated second (without the renders), and the CPU seconds to write them to events.h5 and as 30 Hz
dvs_msgs/EventArray packets to a ROS 2 MCAP bag.

The renderer is the expensive part of a real run: one render of the demo's camera costs tens of milliseconds, so
the renders per simulated second times that cost is what an event camera adds to a run.

`--demo` measures that in a real run instead: configs/demo.yaml (the UAV's tour, --seconds after its bootstrap)
recorded as it is and with a DAVIS346-sized event camera (`type: event`, 346x260, 90 deg, beside the camera),
each after a warm-up run that converts and places the assets; it prints both runs' CPU seconds (all threads) per
simulated second, what the event camera adds, and its renders and events per simulated second.

    .venv/bin/python benchmarks/events.py [--seconds 1] [--speed 200] [--spin 20] [--threshold 0.2] [--smoke]
    .venv/bin/python benchmarks/events.py --demo [--seconds 1] [--cache DIR] [--out DIR] [--smoke]

--smoke: 64x48 for 0.05 s (the figures mean nothing); with --demo, 0.25 s of the demo at 64x48.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from core.config.event_camera import EventCameraConfig
from core.config_io import load_experiment
from core.formats.bags.writer import BagWriter
from core.formats.events import write_events
from core.recording import Recording
from core.seeding import generator
from pipeline.generate import generate
from simulation.sensors.event_camera import EventSimulator

ROOT = Path(__file__).resolve().parents[1]
TEXTURE_PX = 2048
TEXTURE_BLUR_PX = 6.0
PACKET_S = 1 / 30
# --demo --smoke: the demo at its smallest, as benchmarks/generate.py's smoke run (the tests' tiny run's assets)
SMOKE_DEMO = ["simulation.bootstrap=0.25", "humans.count={min: 1, max: 1}", "flying_objects.count={min: 1, max: 1}",
              "robot.sensors.cameras.0.width=96", "robot.sensors.cameras.0.height=72"]


class SlidingTexture:
    """The scene: a texture seen through a window that slides and turns; render(t) counts its CPU time."""

    def __init__(self, width: int, height: int, speed: float, spin_deg: float, seed: int):
        noise = generator(seed, "benchmarks/events/texture").random((TEXTURE_PX, TEXTURE_PX), dtype=np.float32)
        smooth = cv2.GaussianBlur(noise, (0, 0), TEXTURE_BLUR_PX)
        smooth = (smooth - smooth.min()) / (smooth.max() - smooth.min())
        self.texture = (0.02 + 0.98 * smooth).astype(np.float32)
        self.width, self.height, self.speed, self.spin = width, height, speed, spin_deg
        self.cpu_s = 0.0
        self.count = 0

    def render(self, t: float) -> np.ndarray:
        start = time.process_time()
        centre = (TEXTURE_PX / 2 + self.speed * t, TEXTURE_PX / 2)
        matrix = cv2.getRotationMatrix2D(centre, self.spin * t, 1.0)
        matrix[:, 2] += (self.width / 2 - centre[0], self.height / 2 - centre[1])
        image = cv2.warpAffine(self.texture, matrix, (self.width, self.height), flags=cv2.INTER_LINEAR)
        self.cpu_s += time.process_time() - start
        self.count += 1
        return image


def cpu_seconds() -> float:
    """CPU seconds of this process so far, every thread's."""
    times = os.times()
    return times.user + times.system


def demo(seconds: float, out: Path, cache: Path | None, smoke: bool) -> None:
    """`--demo` (module docstring)."""
    cache = cache or out / "assets"
    size = {"width": 64, "height": 48} if smoke else {"width": 346, "height": 260}
    base = [f"simulation.duration={seconds}", *(SMOKE_DEMO if smoke else [])]
    plain = load_experiment(ROOT / "configs" / "demo.yaml", base)
    sensors = [{"type": sensor.type, **sensor.model_dump(mode="json")} for sensor in plain.robot.sensors.root]
    dvs = {"type": "event", "name": "dvs", "mount": sensors[0]["mount"], "fov_deg": 90, **size}
    with_events = load_experiment(ROOT / "configs" / "demo.yaml",
                                  [*base, f"robot.sensors={json.dumps([*sensors, dvs])}"])
    shutil.rmtree(out / "runs", ignore_errors=True)
    generate(plain, out / "runs" / "warm", cache=cache)  # converts and places, shared by both: not compared
    cpu = {}
    for name, config in (("demo", plain), ("demo + event camera", with_events)):
        start = cpu_seconds()
        result = generate(config, out / "runs" / name.replace(" ", "-").replace("+", "plus"), cache=cache)
        cpu[name] = (cpu_seconds() - start) / result.info.sim_time_end
        print(f"{name:<20} {cpu[name]:6.2f} CPU s per simulated s", flush=True)
    info = result.info
    simulated = info.sim_time_end
    events = Recording.open(result.run).events("dvs").events
    print(f"event camera {size['width']}x{size['height']} on the demo ({simulated:g} simulated s, bootstrap "
          f"included; load {os.getloadavg()[0]:.2f}): adds {cpu['demo + event camera'] - cpu['demo']:.2f} CPU s per "
          f"simulated s; renders per simulated s {info.frame_counts['event/dvs'] / simulated:.0f}, events per "
          f"simulated s {len(events) / simulated:,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="simulated seconds")
    parser.add_argument("--speed", type=float, default=200.0, help="texture speed in px/s")
    parser.add_argument("--spin", type=float, default=20.0, help="rotation in deg/s")
    parser.add_argument("--threshold", type=float, default=0.2, help="C+ and C-")
    parser.add_argument("--width", type=int, default=346)
    parser.add_argument("--height", type=int, default=260)
    parser.add_argument("--smoke", action="store_true", help="the smallest run (meaningless figures)")
    parser.add_argument("--demo", action="store_true", help="the cost of an event camera in a run of the demo")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "events", help="--demo's runs")
    parser.add_argument("--cache", type=Path, default=None, help="--demo's asset cache (default: under --out)")
    args = parser.parse_args()
    if args.demo:
        demo(0.25 if args.smoke else args.seconds, args.out, args.cache, args.smoke)
        return
    if args.smoke:
        args.seconds, args.width, args.height = 0.05, 64, 48
    config = EventCameraConfig(name="dvs", width=args.width, height=args.height, positive_threshold=args.threshold,
                               negative_threshold=args.threshold, noise_rate_hz=0.1, refractory_s=1e-4)
    scene = SlidingTexture(args.width, args.height, args.speed, args.spin, seed=1)
    simulator = EventSimulator(config, generator(1, "benchmarks/events/dvs"))
    batches = [simulator.add_sample(0.0, scene.render(0.0))]
    first_render_s = scene.cpu_s
    start = time.process_time()
    t = 0.0
    while t < args.seconds:
        t = min(simulator.next_sample_time(), args.seconds)
        batches.append(simulator.add_sample(t, scene.render(t)))
    simulate_s = time.process_time() - start - (scene.cpu_s - first_render_s)
    events = np.concatenate(batches)

    with tempfile.TemporaryDirectory() as folder:
        start = time.process_time()
        write_events(Path(folder) / "events.h5", events, args.width, args.height, args.seconds)
        h5_s = time.process_time() - start
        start = time.process_time()
        edges = np.searchsorted(events["t"], np.arange(1, int(np.ceil(args.seconds / PACKET_S)) + 1) * PACKET_S * 1e9,
                                side="right")
        with BagWriter(Path(folder), "events", ["ros2"]) as bag:
            for index, (first, last) in enumerate(zip(np.r_[0, edges[:-1]], edges)):
                bag.events("/dvs/events", (index + 1) * PACKET_S, "dvs", events[first:last], args.width, args.height)
        bag_s = time.process_time() - start

    per_s = 1.0 / args.seconds
    print(f"{args.width}x{args.height}, texture at {args.speed:g} px/s turning {args.spin:g} deg/s, "
          f"C = {args.threshold:g}, {args.seconds:g} simulated s; load {os.getloadavg()[0]:.2f}")
    print(f"renders per simulated s : {(scene.count - 1) * per_s:.0f} "
          f"(stand-in renderer {scene.cpu_s / scene.count * 1e3:.2f} ms CPU each)")
    print(f"events per simulated s  : {len(events) * per_s:,.0f}")
    print(f"CPU s per simulated s   : simulator {simulate_s * per_s:.3f}, events.h5 {h5_s * per_s:.3f}, "
          f"EventArray bag {bag_s * per_s:.3f}")


if __name__ == "__main__":
    main()

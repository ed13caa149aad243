"""Frames per second and physics real-time factor of the embedded world on the demo scene, side by side
with MuJoCo's own renderer.

The demo config with 10 humans is prepared (converted, placed, composed; cached under --out) once for
the UAV and once for the TIAGo++ Omni physical model. Then:
- rendering: the robot's camera renders the full ground-truth set (RGB lit by the one light nearest the
  camera, with hard shadows, auto exposure and the filmic curve; depth; instance; semantic; tight/loose 2D
  boxes with occlusion ratios and 3D boxes) at 640x480 and 1920x1080, the robot moving and the humans
  deforming between frames (one 30 Hz frame of physics, not timed);
- MuJoCo: the same render scene as a MuJoCo model (`MujocoView`: the same meshes as mesh geoms, the same
  light casting shadows, the same camera pose, intrinsics and clipping range) rendered by `mujoco.Renderer`
  (OpenGL through MUJOCO_GL, default EGL, which is Mesa's llvmpipe on a machine without a GPU) as RGB +
  depth + segmentation at the same resolution, in the same process, frame by frame alternating with ours
  so that both see the same load; the ratio is MuJoCo's mean time per set over ours. Its depth and
  segmentation are checked against ours (share of pixels whose depth agrees within DEPTH_AGREEMENT and
  whose MuJoCo geom is our instance), which shows that both rendered the same scene from the same view;
- physics: simulated seconds per wall-clock second of `world.step` at 240 Hz while the robot drives,
  humans' capsules and flying objects following their schedules.
Frame times vary a lot when other processes share the cores, so the median beside the mean, the CPU
seconds per frame over all threads (our tile workers and llvmpipe's threads run in parallel) and the load
average (1 min) before and after each measurement are printed too.

    .venv/bin/python benchmarks/backend.py [--frames 10] [--seconds 5] [--out runs/bench/world] [--cache DIR]
                                           [--no-mujoco] [--smoke]

--smoke: every step at the smallest size, for the UAV alone (1 human, 64x48 and 96x54, 1 frame, 0.05 s of physics):
the figures mean nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os

os.environ.setdefault("MUJOCO_GL", "egl")  # before anything imports mujoco: offscreen OpenGL without a display

import time
from dataclasses import dataclass, field
from pathlib import Path

import mujoco
import numpy as np

from core.config_io import load_experiment
from pipeline.prepare import prepare
from simulation.embedded import EmbeddedWorld
from simulation.render import MeshState

ROOT = Path(__file__).resolve().parents[1]
HUMANS = 10
RESOLUTIONS = ((640, 480), (1920, 1080))
# --smoke: one human and one flying object (the tests' tiny run's assets), tiny cameras
SMOKE_HUMANS, SMOKE_RESOLUTIONS = 1, ((64, 48), (96, 54))
SMOKE_OVERRIDES = ["flying_objects.count={min: 1, max: 1}"]
PHYSICS_HZ = 240
DEPTH_AGREEMENT = 0.01  # metres: pixels whose depths differ by less agree
# Columns: OpenGL camera axes (x right, y up, looking along -z) in the ROS optical frame (x right, y down, z ahead).
OPTICAL_TO_OPENGL = np.diag([1.0, -1.0, -1.0])
MUJOCO_SPOT_CUTOFF_DEG = 80.0  # MuJoCo's lights are spots: a wide cone lights most of what our point light does
FRAME_STEPS = 8  # physics steps between 30 Hz frames
ROBOTS = {
    "uav": {
        "overrides": ["robot.kind=uav"],
        "camera_link": "camera_link",
        "command": np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.2]),  # forward 0.3 m/s, yawing 0.2 rad/s
    },
    "tiago_omni (physical)": {
        "overrides": ["robot.kind=tiago_omni", "robot.tiago.model=physical",
                      "robot.sensors.imus.0.mount.link=base_link", "robot.sensors.imus.1.mount.link=head_2_link"],
        "camera_link": "head_2_link",
        "command": np.array([0.3, 0.0, 0.2]),  # vx 0.3 m/s, yaw rate 0.2 rad/s
    },
}


def config_for(robot: str, width: int, height: int, humans: int = HUMANS, extra: tuple[str, ...] = ()):
    overrides = [f"humans.count.min={humans}", f"humans.count.max={humans}", f"simulation.physics_hz={PHYSICS_HZ}",
                 f"robot.sensors.cameras.0.width={width}", f"robot.sensors.cameras.0.height={height}",
                 "robot.sensors.cameras.0.outputs=[rgb,depth,instance,semantic,boxes2d,boxes3d]",
                 *ROBOTS[robot]["overrides"],
                 f"robot.sensors.cameras.0.mount.link={ROBOTS[robot]['camera_link']}", *extra]
    return load_experiment(ROOT / "configs" / "demo.yaml", overrides)


class MujocoView:
    """The world's render scene as a MuJoCo model rendered by `mujoco.Renderer` (OpenGL: MUJOCO_GL, EGL with
    llvmpipe here): every render mesh as a visual-only mesh geom (static meshes in the world frame, each
    dynamic mesh on a mocap body), base colours as geom colours (textures left out: less work for MuJoCo),
    the ray caster's lights as MuJoCo lights casting shadows, and one camera with our intrinsics and clipping
    range. Deforming meshes (the humans) get this frame's vertices re-uploaded to the GPU context (normals
    left as compiled: again less work for MuJoCo). A set is RGB + depth + segmentation from one scene update."""

    def __init__(self, world: EmbeddedWorld, camera_name: str):
        scene, camera = world.render_scene, world.robot().camera(camera_name).camera
        spec = mujoco.MjSpec()
        spec.visual.global_.offwidth, spec.visual.global_.offheight = camera.width, camera.height
        headlight = spec.visual.headlight  # MuJoCo's ambient term: the headlight without its own light
        headlight.ambient, headlight.diffuse, headlight.specular = scene.ambient.tolist(), [0, 0, 0], [0, 0, 0]
        bounds = np.concatenate([m.vertices for m in scene.static_table.meshes])
        extent = float(np.linalg.norm(bounds.max(axis=0) - bounds.min(axis=0)))
        spec.stat.extent = extent  # MuJoCo's clipping planes and shadow range are fractions of it
        spec.visual.map.znear, spec.visual.map.zfar = camera.near / extent, camera.far / extent
        self._instances = {}  # geom name -> instance id
        for k, mesh in enumerate(scene.static_table.meshes):
            world = mesh.vertices @ mesh.pose[:3, :3].T + mesh.pose[:3, 3]
            self._add_geom(spec, spec.worldbody, f"static{k}", world, mesh)
        self.dynamic = {}  # mesh name -> (mocap id, mesh id or None for rigid meshes)
        for k, mesh in enumerate(scene.dynamic_table.meshes):
            body = spec.worldbody.add_body(name=f"dynamic{k}", mocap=True)
            self._add_geom(spec, body, f"dynamic{k}", mesh.vertices, mesh)
            self.dynamic[mesh.name] = k
        self.rest_poses = [mesh.pose for mesh in scene.dynamic_table.meshes]
        for light in scene.lights:
            spec.worldbody.add_light(pos=list(light.position), dir=[0, 0, -1], castshadow=True,
                                     cutoff=MUJOCO_SPOT_CUTOFF_DEG, exponent=0, diffuse=list(light.color))
        spec.worldbody.add_camera(name="view", fovy=float(np.degrees(2 * np.arctan(camera.height / 2 / camera.fy))))
        self.model = model = spec.compile()
        self.instance_of_geom = np.array([self._instances[model.geom(g).name] for g in range(model.ngeom)])
        self.data = mujoco.MjData(model)
        self.renderer = mujoco.Renderer(model, camera.height, camera.width)
        self.deforming = {}  # mesh name -> (MuJoCo mesh id, its vertex frame in the mesh's local frame)
        for mesh in scene.dynamic_table.meshes:
            index = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_MESH, f"dynamic{self.dynamic[mesh.name]}")
            if model.mesh_vertnum[index] != len(mesh.vertices):
                raise RuntimeError(f"MuJoCo merged vertices of {mesh.name}: cannot upload its deformed vertices")
            rotation = np.zeros(9)
            mujoco.mju_quat2Mat(rotation, model.mesh_quat[index])
            self.deforming[mesh.name] = (index, model.mesh_pos[index].copy(), rotation.reshape(3, 3))

    def _add_geom(self, spec, body, name: str, vertices: np.ndarray, mesh) -> None:
        spec.add_mesh(name=name, uservert=np.asarray(vertices, np.float32).ravel().tolist(),
                      userface=np.asarray(mesh.faces).ravel().tolist(),
                      inertia=mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL)
        body.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=name, contype=0, conaffinity=0,
                      rgba=[*mesh.material.base_color, 1.0])
        self._instances[name] = mesh.instance_id

    def render(self, states: dict[str, MeshState], pose: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """RGB, depth (m, to the image plane) and segmentation (geom ids, -1 none) from `pose` (world <- optical)."""
        model, data = self.model, self.data
        for name, state in states.items():
            k = self.dynamic[name]
            placed = self.rest_poses[k] if state.pose is None else state.pose
            data.mocap_pos[k] = placed[:3, 3]
            mujoco.mju_mat2Quat(data.mocap_quat[k], placed[:3, :3].ravel())
            if state.vertices is not None:
                mesh, origin, rotation = self.deforming[name]
                first, count = model.mesh_vertadr[mesh], model.mesh_vertnum[mesh]
                model.mesh_vert[first:first + count] = (state.vertices - origin) @ rotation  # as MuJoCo compiles them
                mujoco.mjr_uploadMesh(model, self.renderer._mjr_context, mesh)
        mujoco.mj_kinematics(model, data)
        mujoco.mj_camlight(model, data)  # the lights' world poses
        data.cam_xpos[0] = pose[:3, 3]
        data.cam_xmat[0] = (pose[:3, :3] @ OPTICAL_TO_OPENGL).ravel()
        renderer = self.renderer
        renderer.update_scene(data, camera=0)
        rgb = renderer.render().copy()
        renderer.enable_depth_rendering()
        depth = renderer.render().copy()
        renderer.disable_depth_rendering()
        renderer.enable_segmentation_rendering()
        segmentation = renderer.render()[..., 0].copy()
        renderer.disable_segmentation_rendering()
        return rgb, depth, segmentation


def keep_nearest_light(world: EmbeddedWorld) -> None:
    eye = world.robot().camera_pose("camera")[:3, 3]
    lights = world.render_scene.lights
    world.render_scene.lights = [min(lights, key=lambda light: np.linalg.norm(np.asarray(light.position) - eye))]


@dataclass
class Timings:
    """Wall seconds of each frame and the total CPU seconds (all threads) of one renderer."""

    seconds: list[float] = field(default_factory=list)
    cpu: float = 0.0

    def time(self, render, *args):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = render(*args)
        self.seconds.append(time.perf_counter() - started)
        self.cpu += time.process_time() - cpu_started
        return result

    def summary(self) -> str:
        mean, median = np.mean(self.seconds), np.median(self.seconds)
        return (f"{1 / mean:6.2f} fps ({mean * 1000:.0f} ms/frame, median {median * 1000:.0f} ms = {1 / median:.2f} "
                f"fps, {self.cpu / len(self.seconds) * 1000:.0f} ms CPU)")


def agreement(frame, mujoco_frame: tuple[np.ndarray, np.ndarray, np.ndarray], view: MujocoView) -> tuple[float, float]:
    """Shares of pixels where MuJoCo's depth is ours within DEPTH_AGREEMENT (of the pixels both hit) and where
    its segmentation names our instance."""
    _, depth, segmentation = mujoco_frame
    both = (frame.depth > 0) & (segmentation >= 0)
    close = np.abs(depth[both] - frame.depth[both]) < DEPTH_AGREEMENT
    instance = view.instance_of_geom[np.maximum(segmentation, 0)] * (segmentation >= 0)
    return float(close.mean()) if both.any() else 0.0, float((instance == frame.instance).mean())


def measure_render(world: EmbeddedWorld, robot: str, frames: int, view: MujocoView | None):
    """Our and MuJoCo's timings of each rendered frame after one warm-up frame each, alternating frame by
    frame, our last frame and the agreement of MuJoCo's last set with it."""
    world.robot().set_command(ROBOTS[robot]["command"])
    ours, theirs = Timings(), Timings()
    mujoco_render = None
    if view is not None:
        def mujoco_render():
            return view.render(world.scene.states(world.time), world.robot().camera_pose("camera"))
        mujoco_render()
    world.robot().render("camera")
    for _ in range(frames):
        world.step(FRAME_STEPS)
        frame = ours.time(world.robot().render, "camera")
        if view is not None:
            mujoco_frame = theirs.time(mujoco_render)
    return ours, theirs, frame, agreement(frame, mujoco_frame, view) if view is not None else None


def measure_physics(world: EmbeddedWorld, robot: str, seconds: float) -> float:
    world.robot().set_command(ROBOTS[robot]["command"])
    steps = round(seconds * PHYSICS_HZ)
    started = time.perf_counter()
    world.step(steps)
    return steps * world.timestep / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=10, help="frames at 640x480 (a quarter of them at 1080p)")
    parser.add_argument("--seconds", type=float, default=5.0, help="simulated seconds per physics measurement")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "world")
    parser.add_argument("--cache", type=Path, default=None, help="asset cache (default: --out/assets)")
    parser.add_argument("--no-mujoco", action="store_true", help="leave MuJoCo's renderer out")
    parser.add_argument("--smoke", action="store_true", help="every step at the smallest size (meaningless figures)")
    args = parser.parse_args()
    humans, resolutions, extra, robots = HUMANS, RESOLUTIONS, (), list(ROBOTS)
    if args.smoke:
        humans, resolutions, extra, robots = SMOKE_HUMANS, SMOKE_RESOLUTIONS, tuple(SMOKE_OVERRIDES), robots[:1]
        args.frames, args.seconds = 1, 0.05
    if not args.no_mujoco and importlib.util.find_spec("OpenGL") is None:
        raise SystemExit("MuJoCo's renderer needs PyOpenGL (the dev extra installs it); or leave it out: --no-mujoco")
    print(f"MuJoCo {mujoco.__version__}, MUJOCO_GL={os.environ['MUJOCO_GL']}; {os.cpu_count()} cores")
    ratios = []
    for robot in robots:
        prepared = prepare(config_for(robot, *resolutions[0], humans, extra), args.out / robot.split()[0],
                           cache=args.cache or args.out / "assets")
        print(f"== {robot}: {prepared.scene}")
        for width, height in resolutions:
            started = time.perf_counter()
            world = EmbeddedWorld(config_for(robot, width, height, humans, extra), prepared.scene)
            keep_nearest_light(world)
            loaded = time.perf_counter() - started
            view = None if args.no_mujoco else MujocoView(world, "camera")
            table = world.render_scene
            frames = args.frames if width == resolutions[0][0] else max(1, args.frames // 4)
            load_before = os.getloadavg()[0]
            ours, theirs, frame, agree = measure_render(world, robot, frames, view)
            persons = sum(world.instances()[int(i)].kind == "human" for i in frame.instance_ids)
            print(f"{width}x{height}: ours {ours.summary()} over {frames} frames; load "
                  f"{load_before:.2f} -> {os.getloadavg()[0]:.2f}; {len(world.scene.humans)} humans, "
                  f"{len(world.scene.objects)} flying objects, {len(world.instances())} instances, "
                  f"{len(table.table.faces)} triangles, {len(table.lights)} shadowed light; {len(frame.instance_ids)} "
                  f"boxes ({persons} persons) in the last frame; scene loaded in {loaded:.2f} s")
            if view is not None:
                ratio = np.mean(theirs.seconds) / np.mean(ours.seconds)
                cpu_ratio = theirs.cpu / ours.cpu
                ratios.append((robot, width, height, ratio, cpu_ratio))
                print(f"{width}x{height}: MuJoCo RGB + depth + segmentation {theirs.summary()}; ratio ours/MuJoCo "
                      f"{ratio:.2f}x by wall time, {cpu_ratio:.2f}x by CPU time; MuJoCo's depth agrees with ours on "
                      f"{agree[0]:.1%} of pixels, its segmentation on {agree[1]:.1%}")
        world = EmbeddedWorld(config_for(robot, *resolutions[0], humans, extra), prepared.scene)
        print(f"physics at {PHYSICS_HZ} Hz: real-time factor {measure_physics(world, robot, args.seconds):.1f}x "
              f"({args.seconds:g} s simulated, {world.physics.model.ngeom} geoms)")
    if ratios:
        print("speed ratio against MuJoCo's renderer (mean time per set, theirs / ours; target >= 2 at 640x480):")
        for robot, width, height, ratio, cpu_ratio in ratios:
            print(f"  {robot:<24}{width}x{height:<6}{ratio:6.2f}x wall {cpu_ratio:6.2f}x CPU")
    print("load average (1, 5, 15 min): " + ", ".join(f"{v:.2f}" for v in os.getloadavg()))


if __name__ == "__main__":
    main()

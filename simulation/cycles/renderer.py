"""Photoreal RGB of a RenderScene with Blender Cycles on the CPU: path tracing, OpenImageDenoise, motion blur.

The Blender scene is built once (scene.py) and posed per frame; each frame renders the Combined pass to a
32-bit OpenEXR scratch file (scene-linear, before any view transform), read back and exposed like the ray
caster's colour: the same linear units (scene.py calibrates the lights), the same exposure and tone curve
(simulation.render.exposure) and the same sRGB encoding. Cycles adds what the ray caster leaves out
(indirect light, soft shadows of the lights' radii, glossy reflections), so it has no ambient term.
Ground truth (depth, ids, boxes, flow) stays the ray caster's; `passes` renders Cycles' own depth and
object-index passes, which only serve to check that both renderers see the same scene through the same
pixels.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.config import CyclesConfig, RenderConfig
from core.errors import ConfigError, InputError
from core.progress import subtask
from core.seeding import derived_seed
from simulation.cycles.blender import bpy, bpy_missing, captured, image_pixels, open_session, tail
from simulation.cycles.camera import BlenderCamera, blender_pose
from simulation.cycles.scene import SHUTTER_CLOSE, SHUTTER_OPEN, BlenderScene
from simulation.render import Camera, MeshState, RenderScene, kernels
from simulation.render.exposure import LOG_FLOOR, Exposure
from simulation.render.raycast import RAY_THREADS
from simulation.render.shading import ENCODE_LUT

MAX_SAMPLES = 1 << 16
# Blender's narrowest pixel filter: every sample goes through (almost exactly) the pixel centre, as the ray
# caster's one ray per pixel does.
CENTRE_FILTER_WIDTH = 0.01
_SAMPLE = re.compile(r"Sample (\d+)/(\d+)")
_FRAME_FILE = "frame.exr"
_AS_SHADED = Exposure()  # fixed exposure at ev 0, clipped
_SEED_RANGE = 2**31  # Cycles' seed is a signed 32-bit integer


_DEFAULTS = CyclesConfig()  # the config holds every default; the settings take them from it
_PREFILTERS = {"none": "NONE", "fast": "FAST", "accurate": "ACCURATE"}  # ours -> Blender's denoising_prefilter


@dataclass(frozen=True)
class CyclesSettings:
    """How Cycles renders (render.cycles in the config; core.config.CyclesConfig describes each field)."""

    samples: int = _DEFAULTS.samples
    adaptive_threshold: float = _DEFAULTS.adaptive_threshold
    adaptive_min_samples: int = _DEFAULTS.adaptive_min_samples
    denoise: bool = _DEFAULTS.denoise
    denoise_prefilter: str = _DEFAULTS.denoise_prefilter
    motion_blur: float = _DEFAULTS.motion_blur
    max_bounces: int = _DEFAULTS.max_bounces
    diffuse_bounces: int = _DEFAULTS.diffuse_bounces
    glossy_bounces: int = _DEFAULTS.glossy_bounces
    light_tree: bool = _DEFAULTS.light_tree
    threads: int = RAY_THREADS
    seed: int = 0  # Cycles' sampling pattern

    def __post_init__(self) -> None:
        if not 1 <= self.samples <= MAX_SAMPLES:
            raise InputError(f"must be in [1, {MAX_SAMPLES}], got {self.samples}", "cycles", "samples")
        if min(self.max_bounces, self.diffuse_bounces, self.glossy_bounces, self.adaptive_min_samples) < 0 or \
                self.threads < 1:
            raise InputError("bounces and adaptive_min_samples must be >= 0 and threads >= 1", "cycles", "settings")
        if not self.motion_blur >= 0 or not 0 <= self.adaptive_threshold <= 1:
            raise InputError("motion_blur must be >= 0 and adaptive_threshold in [0, 1]", "cycles", "settings")
        if self.denoise_prefilter not in _PREFILTERS:
            raise InputError(f"must be one of {sorted(_PREFILTERS)}, got {self.denoise_prefilter!r}", "cycles",
                             "denoise_prefilter")

    @classmethod
    def of(cls, config: CyclesConfig, threads: int, seed: int) -> CyclesSettings:
        """The settings of render.cycles (every field of it) on `threads` with sampling pattern `seed`."""
        return cls(**config.model_dump(), threads=threads, seed=seed)


def expose(linear: np.ndarray, exposure: Exposure) -> np.ndarray:
    """uint8 sRGB (H, W, 3) of linear colour (H, W, 3) through `exposure`, as the ray caster encodes."""
    height, width = linear.shape[:2]
    rows = np.ascontiguousarray(linear.reshape(-1, 3).T, dtype=np.float32)
    if exposure.metered:
        scale = exposure.auto_scale(kernels.log_luminance_sum(rows, LOG_FLOOR), rows.shape[1])
    else:
        scale = exposure.fixed_scale()
    return kernels.tone_encode(rows, scale, exposure.filmic, ENCODE_LUT).reshape(height, width, 3)


class CyclesRenderer:
    """Cycles renders of one RenderScene (bpy holds one scene per process: a newer renderer replaces it)."""

    def __init__(self, scene: RenderScene, settings: CyclesSettings = CyclesSettings()):
        missing = bpy_missing()
        if missing is not None:
            raise InputError(missing, "render", "rgb")
        self._render_scene = scene
        self._session = open_session()
        bpy().context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"  # motion over the shutter
        self._blender = BlenderScene(scene)
        self._scratch = tempfile.TemporaryDirectory(prefix="grade-cycles-")  # removed with the renderer
        self.frames = 0  # rendered so far
        self.configure(settings)

    def configure(self, settings: CyclesSettings) -> None:
        """Renders with `settings` from now on (the scene stays as built)."""
        self.settings, scene = settings, self._blender.scene
        scene.render.engine = "CYCLES"
        cycles = scene.cycles
        cycles.device = "CPU"
        cycles.samples = settings.samples
        cycles.use_adaptive_sampling = settings.adaptive_threshold > 0
        cycles.adaptive_threshold = settings.adaptive_threshold
        cycles.adaptive_min_samples = settings.adaptive_min_samples
        cycles.max_bounces = settings.max_bounces
        cycles.diffuse_bounces = settings.diffuse_bounces
        cycles.glossy_bounces = settings.glossy_bounces
        cycles.use_light_tree = settings.light_tree
        cycles.seed = settings.seed
        cycles.use_denoising = settings.denoise
        cycles.denoiser = "OPENIMAGEDENOISE"
        cycles.denoising_input_passes = "RGB_ALBEDO_NORMAL"
        cycles.denoising_prefilter = _PREFILTERS[settings.denoise_prefilter]
        scene.render.threads_mode = "FIXED"
        scene.render.threads = settings.threads
        scene.render.film_transparent = False
        scene.render.use_persistent_data = True  # frames after the first re-sync only what moved
        scene.render.use_motion_blur = settings.motion_blur > 0
        scene.render.motion_blur_position = "START"
        scene.render.motion_blur_shutter = SHUTTER_CLOSE - SHUTTER_OPEN
        scene.frame_current = SHUTTER_OPEN
        scene.view_settings.view_transform = "Standard"  # EXR files hold scene-linear values in any case
        image = scene.render.image_settings
        image.file_format = "OPEN_EXR"
        image.color_depth = "32"
        image.color_mode = "RGB"
        image.exr_codec = "NONE"  # the file is read back at once: compressing it only costs time
        scene.render.filepath = str(Path(self._scratch.name) / _FRAME_FILE)

    def render_linear(self, camera: Camera, pose: np.ndarray, states: Mapping[str, MeshState] | None = None,
                      close: tuple[np.ndarray, Mapping[str, MeshState]] | None = None) -> np.ndarray:
        """Scene-linear colour (H, W, 3) float32 seen from `pose` (world<-camera, optical frame) with the dynamic
        meshes in `states`. With motion blur, `close` is the camera pose and states at the shutter's close
        (motion_blur seconds later); without it the frame is sharp."""
        self._session.check()
        blender = self._blender
        blender.set_lights(self._render_scene.lights)
        if self.settings.motion_blur > 0 and close is not None:
            close = (blender_pose(close[0]), close[1])
        else:
            close = None
        BlenderCamera.of(camera).apply(blender.scene, blender.camera.data)
        blender.pose(blender_pose(pose), states or {}, close)
        with subtask(f"cycles frame {self.frames}", self.settings.samples) as advance:
            self._render(advance)
        self.frames += 1
        return image_pixels(blender.scene.render.filepath)[..., :3]

    def render(self, camera: Camera, pose: np.ndarray, states: Mapping[str, MeshState] | None = None,
               exposure: Exposure = _AS_SHADED,
               close: tuple[np.ndarray, Mapping[str, MeshState]] | None = None) -> np.ndarray:
        """uint8 sRGB (H, W, 3): `render_linear` through the camera's `exposure`."""
        return expose(self.render_linear(camera, pose, states, close), exposure)

    def _render(self, advance=None) -> None:
        """Renders the scene into the scratch file, Blender's output kept off stdout, reporting samples."""
        handlers = bpy().app.handlers.render_stats

        def on_stats(stats: str) -> None:
            found = _SAMPLE.search(stats)
            if found and advance is not None:
                advance(int(found.group(1)))

        handlers.append(on_stats)
        try:
            with captured() as output:
                try:
                    bpy().ops.render.render(write_still=True)
                except RuntimeError as exc:
                    error = exc
                else:
                    error = None
        finally:
            handlers.remove(on_stats)
        if error is not None:
            raise RuntimeError(f"Cycles failed to render: {error}; Blender said: {tail(output[0])}") from error

    def passes(self, camera: Camera, pose: np.ndarray,
               states: Mapping[str, MeshState] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Cycles' depth (H, W) float32, distance along the optical axis, and object-index pass (H, W) int
        (our instance ids; 0 where nothing is hit), one sample per pixel through its centre."""
        self._session.check()
        scene = self._blender.scene
        BlenderCamera.of(camera).apply(scene, self._blender.camera.data)
        self._blender.pose(blender_pose(pose), states or {})
        cycles, layer = scene.cycles, scene.view_layers[0]
        saved = (cycles.samples, cycles.use_denoising, cycles.filter_width, scene.render.use_motion_blur)
        cycles.samples, cycles.use_denoising, cycles.filter_width = 1, False, CENTRE_FILTER_WIDTH
        scene.render.use_motion_blur = False
        layer.use_pass_z = layer.use_pass_object_index = True
        scene.use_nodes = True
        tree = scene.node_tree
        try:
            images = []
            for output in ("Depth", "IndexOB"):
                tree.nodes.clear()
                layers, composite = tree.nodes.new("CompositorNodeRLayers"), tree.nodes.new("CompositorNodeComposite")
                tree.links.new(layers.outputs[output], composite.inputs["Image"])
                self._render()
                images.append(image_pixels(scene.render.filepath)[..., 0])
        finally:
            tree.nodes.clear()
            scene.use_nodes = False
            layer.use_pass_z = layer.use_pass_object_index = False
            cycles.samples, cycles.use_denoising, cycles.filter_width, scene.render.use_motion_blur = saved
        depth, index = images
        return depth, np.rint(index).astype(np.int64)


def renderer_for(config: RenderConfig, scene: RenderScene, seed: int) -> CyclesRenderer | None:
    """The Cycles renderer of a run's `render` config (render.rgb: cycles), or None when the ray caster
    makes the RGB; ConfigError naming render.rgb where bpy is not installed."""
    if config.rgb != "cycles":
        return None
    missing = bpy_missing()
    if missing is not None:
        raise ConfigError(f"render.rgb is cycles, but {missing}", field="render.rgb")
    settings = CyclesSettings.of(config.cycles, RAY_THREADS, derived_seed(seed, "render/cycles") % _SEED_RANGE)
    return CyclesRenderer(scene, settings)

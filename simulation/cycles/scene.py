"""A RenderScene (what the embedded backend loaded: meshes, materials, lights, background) as a Blender scene,
built once and posed per frame.

- Meshes: one Blender object per render mesh, its pass index the instance id (Cycles' object-index pass
  then matches our instance image). Static meshes keep their pose; dynamic meshes take each frame's
  `MeshState` (vertices and pose).
- Materials: Principled BSDF with the base colour or the texture (sRGB, repeat, bilinear or nearest as the
  ray caster samples it) through the mesh's UVs, its roughness and metallic; one per distinct material.
- Lights: each point light as a Blender point light of the same position, colour and radius. Its power
  makes Cycles' direct light on a white Lambertian surface equal the ray caster's: the ray caster gives such
  a surface `intensity` / d^2 (display units) at d metres; Cycles gives P / (4 pi^2 d^2) for a point light of
  P watts, so P = 4 pi^2 x intensity. A directional light (the sun) becomes a Blender sun of zero angular
  size (hard shadows, as the ray caster's): the ray caster gives the white surface facing it `intensity`,
  Cycles S / pi for a sun of strength S W/m^2, so S = pi x intensity; the sun shines along its -Z axis.
- World: the background colour, or the environment image (equirectangular, the same directions as the
  ray caster's background.py: Blender's equirectangular mapping puts +X at the centre column, +Y at the
  quarter column and +Z at the top row too), lighting the scene through its openings as well.
- Motion blur: the shutter runs from Blender frame 0 to 1; moving objects and the camera get a linear key
  at each end, deforming meshes a shape key blending from the open to the close vertices.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from simulation.cycles.blender import bpy
from simulation.render import DirectionalLight, MeshState, RenderLight, RenderMaterial, RenderMesh, RenderScene

WATTS_PER_INTENSITY = 4.0 * math.pi**2  # Blender point-light power per unit of ray-cast intensity (docstring)
SUN_STRENGTH_PER_INTENSITY = math.pi  # Blender sun strength (W/m^2) per unit of ray-cast intensity (docstring)
MAX_PASS_INDEX = 32767  # Blender's object pass index is a short
SHUTTER_OPEN, SHUTTER_CLOSE = 0, 1  # Blender frames of the shutter's ends
_FILTERS = {"bilinear": "Linear", "nearest": "Closest"}
_LINEAR = "Linear Rec.709"
_SRGB = "sRGB"


@dataclass
class _Dynamic:
    mesh: RenderMesh
    obj: object  # bpy Object
    close_key: object | None = None  # the shape key of the shutter's close, made on first motion blur
    at_rest: bool = False  # holds its rest vertices: a rigid mesh's are sent to Blender once
    placed: np.ndarray | None = None  # the pose it was last given


def _matrix(pose: np.ndarray):
    from mathutils import Matrix  # Blender's own maths module, there once bpy is imported

    return Matrix(np.asarray(pose, dtype=np.float64).tolist())


def _rgba(color: Sequence[float]) -> tuple[float, float, float, float]:
    return (float(color[0]), float(color[1]), float(color[2]), 1.0)


def _image(name: str, rows: np.ndarray, colorspace: str):
    """A Blender image from (H, W, 3) rows from the top, values in [0, 1] for sRGB bytes or linear floats."""
    height, width = rows.shape[:2]
    image = bpy().data.images.new(name, width, height, alpha=False, float_buffer=colorspace == _LINEAR)
    image.colorspace_settings.name = colorspace
    rgba = np.ones((height, width, 4), np.float32)
    rgba[..., :3] = rows[::-1]
    image.pixels.foreach_set(rgba.ravel())
    image.pack()  # keeps the pixels with the image: Cycles reads them from Blender, not from a file
    return image


class BlenderScene:
    """The Blender objects of a render scene (module docstring)."""

    def __init__(self, scene: RenderScene):
        data = bpy().data
        self.scene = bpy().context.scene
        self._images: dict[tuple, object] = {}
        self._materials: dict[tuple, object] = {}
        static = scene.static_table.meshes if scene.static_table is not None else []
        dynamic = scene.dynamic_table.meshes if scene.dynamic_table is not None else []
        for mesh in static:
            self._object(mesh).matrix_world = _matrix(mesh.pose)
        self._dynamic = {mesh.name: _Dynamic(mesh, self._object(mesh)) for mesh in dynamic}
        self._lights = []
        self._keyed = False  # poses are keyframes over the shutter (motion blur), set on first use
        self.set_lights(scene.lights)
        self._world(scene)
        camera = data.cameras.new("camera")
        self.camera = data.objects.new("camera", camera)
        self.camera.rotation_mode = "QUATERNION"
        self.scene.collection.objects.link(self.camera)
        self.scene.camera = self.camera

    # ------------------------------------------------------------ building

    def _object(self, mesh: RenderMesh):
        data = bpy().data
        faces = np.asarray(mesh.faces, dtype=np.int32)
        blender_mesh = data.meshes.new(mesh.name)
        blender_mesh.vertices.add(len(mesh.vertices))
        blender_mesh.vertices.foreach_set("co", np.asarray(mesh.vertices, np.float32).ravel())
        blender_mesh.loops.add(faces.size)
        blender_mesh.loops.foreach_set("vertex_index", faces.ravel())
        blender_mesh.polygons.add(len(faces))
        blender_mesh.polygons.foreach_set("loop_start", np.arange(0, faces.size, 3, dtype=np.int32))
        blender_mesh.polygons.foreach_set("use_smooth", np.full(len(faces), mesh.smooth))
        if mesh.uvs is not None:
            uv_layer = blender_mesh.uv_layers.new(name="uv")
            uv_layer.data.foreach_set("uv", np.asarray(mesh.uvs, np.float32)[faces.ravel()].ravel())
        blender_mesh.update()
        blender_mesh.materials.append(self._material(mesh.material))
        obj = data.objects.new(mesh.name, blender_mesh)
        obj.rotation_mode = "QUATERNION"
        obj.pass_index = mesh.instance_id if mesh.instance_id <= MAX_PASS_INDEX else 0
        self.scene.collection.objects.link(obj)
        return obj

    def _texture(self, material: RenderMaterial):
        image = material.texture  # materials sharing an image hold views of it, not the array itself
        key = (image.__array_interface__["data"][0], image.shape, image.strides)
        if key not in self._images:
            self._images[key] = _image(f"texture{len(self._images)}", image.astype(np.float32) / 255.0, _SRGB)
        return self._images[key]

    def _material(self, material: RenderMaterial):
        texture = None if material.texture is None else self._texture(material)
        key = (tuple(material.base_color), id(texture), material.roughness, material.metallic,
               material.texture_filter)
        if key in self._materials:
            return self._materials[key]
        made = bpy().data.materials.new(f"material{len(self._materials)}")
        made.use_nodes = True
        nodes = made.node_tree.nodes
        bsdf = nodes["Principled BSDF"]
        bsdf.inputs["Base Color"].default_value = _rgba(material.base_color)
        bsdf.inputs["Roughness"].default_value = material.roughness
        bsdf.inputs["Metallic"].default_value = material.metallic
        if texture is not None:
            node = nodes.new("ShaderNodeTexImage")
            node.image = texture
            node.interpolation = _FILTERS[material.texture_filter]
            node.extension = "REPEAT"
            made.node_tree.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
        self._materials[key] = made
        return made

    def _world(self, scene: RenderScene) -> None:
        world = bpy().data.worlds.new("world")
        world.use_nodes = True
        background = world.node_tree.nodes["Background"]
        background.inputs["Strength"].default_value = 1.0
        environment = scene.environment
        if environment is None:
            background.inputs["Color"].default_value = _rgba(scene.background)
        else:
            node = world.node_tree.nodes.new("ShaderNodeTexEnvironment")
            rows = environment.texels[:, :, :-1].transpose(1, 2, 0)  # drop the repeated first column
            node.image = _image("environment", rows, _LINEAR)
            node.projection = "EQUIRECTANGULAR"
            world.node_tree.links.new(node.outputs["Color"], background.inputs["Color"])
        self.scene.world = world

    # ------------------------------------------------------------ per frame

    def set_lights(self, lights: Sequence[RenderLight]) -> None:
        """The lights as they are now (randomization changes their intensity and colour between frames)."""
        data = bpy().data
        kinds = ["SUN" if isinstance(light, DirectionalLight) else "POINT" for light in lights]
        while self._lights and [o.data.type for o in self._lights] != kinds[:len(self._lights)]:
            self._remove_light()  # a light changed kind: rebuild from there
        while len(self._lights) > len(lights):
            self._remove_light()
        while len(self._lights) < len(lights):
            light = data.lights.new(f"light{len(self._lights)}", kinds[len(self._lights)])
            obj = data.objects.new(light.name, light)
            self.scene.collection.objects.link(obj)
            self._lights.append(obj)
        for obj, light in zip(self._lights, lights):
            obj.data.color = tuple(light.color)
            if isinstance(light, DirectionalLight):
                obj.data.energy = SUN_STRENGTH_PER_INTENSITY * light.intensity
                obj.data.angle = 0.0
                obj.rotation_mode = "QUATERNION"
                obj.rotation_quaternion = _z_towards(light.direction)
            else:
                obj.location = tuple(light.position)
                obj.data.energy = WATTS_PER_INTENSITY * light.intensity
                obj.data.shadow_soft_size = light.radius

    def _remove_light(self) -> None:
        obj = self._lights.pop()
        light = obj.data
        bpy().data.objects.remove(obj)
        bpy().data.lights.remove(light)

    def pose(self, camera_pose: np.ndarray, states: Mapping[str, MeshState],
             close: tuple[np.ndarray, Mapping[str, MeshState]] | None = None) -> None:
        """Places the camera (Blender's world matrix) and the dynamic meshes at the shutter's opening, and
        with `close` (the camera and states at its closing) keys the motion over the exposure. Once keyed, a
        scene stays keyed (a sharp frame then keys no motion)."""
        self._keyed = self._keyed or close is not None
        for name, dynamic in self._dynamic.items():
            state = states.get(name, MeshState())
            vertices = dynamic.mesh.vertices if state.vertices is None else state.vertices
            pose = dynamic.mesh.pose if state.pose is None else state.pose
            if not self._keyed:
                self._move(dynamic, state.vertices, vertices, pose)
                continue
            after = close[1].get(name, MeshState()) if close is not None else MeshState()
            self._key_vertices(dynamic, vertices, vertices if after.vertices is None else after.vertices)
            self._key_pose(dynamic.obj, pose, pose if after.pose is None else after.pose)
        if not self._keyed:
            self.camera.matrix_world = _matrix(camera_pose)
        else:
            self._key_pose(self.camera, camera_pose, camera_pose if close is None else close[0])

    def _move(self, dynamic: _Dynamic, posed: np.ndarray | None, vertices: np.ndarray, pose: np.ndarray) -> None:
        """Gives Blender only what changed: Cycles re-syncs every mesh whose vertices or matrix were touched, and
        rebuilds the BVH of one whose vertices were."""
        if posed is not None or not dynamic.at_rest:
            self._set_vertices(dynamic, vertices)
            dynamic.at_rest = posed is None
        if dynamic.placed is None or not np.array_equal(dynamic.placed, pose):
            dynamic.obj.matrix_world = _matrix(pose)
            dynamic.placed = np.array(pose, dtype=np.float64)

    @staticmethod
    def _set_vertices(dynamic: _Dynamic, vertices: np.ndarray) -> None:
        mesh = dynamic.obj.data
        mesh.vertices.foreach_set("co", np.asarray(vertices, np.float32).ravel())
        mesh.update()

    def _key_vertices(self, dynamic: _Dynamic, opening: np.ndarray, closing: np.ndarray) -> None:
        obj = dynamic.obj
        if dynamic.close_key is None:
            obj.shape_key_add(name="open", from_mix=False)
            key = dynamic.close_key = obj.shape_key_add(name="close", from_mix=False)
            for frame, value in ((SHUTTER_OPEN, 0.0), (SHUTTER_CLOSE, 1.0)):
                key.value = value
                key.keyframe_insert("value", frame=frame)
        self._set_vertices(dynamic, opening)
        blocks = obj.data.shape_keys.key_blocks
        blocks["open"].data.foreach_set("co", np.asarray(opening, np.float32).ravel())
        dynamic.close_key.data.foreach_set("co", np.asarray(closing, np.float32).ravel())
        obj.data.update()

    @staticmethod
    def _key_pose(obj, opening: np.ndarray, closing: np.ndarray) -> None:
        obj.matrix_world = _matrix(opening)
        first = obj.rotation_quaternion.copy()
        obj.keyframe_insert("location", frame=SHUTTER_OPEN)
        obj.keyframe_insert("rotation_quaternion", frame=SHUTTER_OPEN)
        obj.matrix_world = _matrix(closing)
        if first.dot(obj.rotation_quaternion) < 0:  # q and -q are one rotation: interpolate the short way
            obj.rotation_quaternion = -obj.rotation_quaternion
        obj.keyframe_insert("location", frame=SHUTTER_CLOSE)
        obj.keyframe_insert("rotation_quaternion", frame=SHUTTER_CLOSE)


def _z_towards(direction: Sequence[float]) -> tuple[float, float, float, float]:
    """The rotation (w, x, y, z) turning +Z onto the unit `direction`."""
    rotation, _ = Rotation.align_vectors([direction], [[0.0, 0.0, 1.0]])
    x, y, z, w = rotation.as_quat()
    return (w, x, y, z)

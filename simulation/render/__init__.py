"""Ray-cast renderer of the embedded backend (Intel Embree through embreex).

Public surface: cameras, the render scene (meshes, materials, lights, background and environment image,
per-frame mesh states), exposure, `render` and the frame it returns, and the replicator-compatible box dtypes.
"""

from simulation.render.annotations import BOX_2D_DTYPE, BOX_3D_DTYPE
from simulation.render.background import EnvironmentMap, load_environment
from simulation.render.camera import Camera, CameraParams, look_at
from simulation.render.exposure import Exposure
from simulation.render.renderer import DepthImage, Frame, RenderOptions, render_frame
from simulation.render.scene import (
    DirectionalLight,
    MeshState,
    PointLight,
    RenderLight,
    RenderMaterial,
    RenderMesh,
    RenderScene,
    light_from_part,
    material_from_part,
    mesh_from_part,
)
from simulation.render.shading import load_texture
from simulation.render.tiles import NO_HIT_DEPTH

__all__ = [
    "BOX_2D_DTYPE", "BOX_3D_DTYPE", "NO_HIT_DEPTH", "Camera", "CameraParams", "DepthImage", "DirectionalLight",
    "EnvironmentMap",
    "Exposure", "Frame", "MeshState", "PointLight", "RenderLight", "RenderMaterial", "RenderMesh", "RenderOptions",
    "RenderScene", "light_from_part", "load_environment", "load_texture", "look_at", "material_from_part",
    "mesh_from_part", "render_frame",
]

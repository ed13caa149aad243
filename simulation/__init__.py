"""Simulation backends (DESIGN.md §5). The package root re-exports the ray-cast renderer (simulation.render)."""

from simulation.render import (
    BOX_2D_DTYPE,
    BOX_3D_DTYPE,
    NO_HIT_DEPTH,
    Camera,
    CameraParams,
    Frame,
    MeshState,
    PointLight,
    RenderMaterial,
    RenderMesh,
    RenderOptions,
    RenderScene,
    look_at,
    render_frame,
)

__all__ = [
    "BOX_2D_DTYPE", "BOX_3D_DTYPE", "NO_HIT_DEPTH", "Camera", "CameraParams", "Frame", "MeshState", "PointLight",
    "RenderMaterial", "RenderMesh", "RenderOptions", "RenderScene", "look_at", "render_frame",
]

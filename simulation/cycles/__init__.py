"""Photoreal RGB with Blender Cycles (the optional `cycles` extra: bpy, Blender as a Python module).

Public surface: `CyclesRenderer` (built once from a RenderScene, posed per frame), its `CyclesSettings`,
`renderer_for` (the renderer a run's render config asks for), `expose` (linear colour to 8-bit sRGB as the
ray caster does), and `bpy_missing`, which says why Cycles cannot run here without importing bpy. bpy itself is imported
only when a renderer is made.
"""

from simulation.cycles.blender import bpy_missing
from simulation.cycles.renderer import CyclesRenderer, CyclesSettings, expose, renderer_for

__all__ = ["CyclesRenderer", "CyclesSettings", "bpy_missing", "expose", "renderer_for"]

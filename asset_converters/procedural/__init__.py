"""Procedural demo assets, deterministic from a seed, so `grade demo` needs no dataset download.

A furnished multi-room house, skinned humanoids playing walk/idle/wave motions and textured
household objects, written as ordinary asset packages; outdoors, a terrain with rocks, trees and a sun,
and striped quadrupeds (outdoor.py).
"""

from asset_converters.procedural.demo import DemoAssets, build_demo_assets, build_human, demo_jobs
from asset_converters.procedural.environment import build_environment
from asset_converters.procedural.objects import build_object

__all__ = ["DemoAssets", "build_demo_assets", "build_environment", "build_human", "build_object", "demo_jobs"]

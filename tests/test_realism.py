"""benchmarks/realism.py's comparison at the reference's resolution: the smaller camera sees each 2x2 block of
the frame's pixels through the block's centre, and downsampling averages light, not sRGB codes."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np

from simulation.render import Camera
from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("realism", ROOT / "benchmarks" / "realism.py")
realism = sys.modules["realism"] = importlib.util.module_from_spec(_spec)  # its dataclasses look it up there
_spec.loader.exec_module(realism)


def test_the_reference_camera_looks_through_the_centres_of_the_frames_2x2_blocks():
    frame = Camera(640, 480, 300.0, 310.0, 322.7, 236.1)  # off-centre principal point, non-square pixels
    small = realism.scaled(frame, 2)
    assert (small.width, small.height) == (320, 240)
    u, v = np.arange(320), np.arange(240)
    block_u, block_v = 2 * u + 0.5, 2 * v + 0.5  # between the block's two pixel centres
    assert np.allclose((u - small.cx) / small.fx, (block_u - frame.cx) / frame.fx)
    assert np.allclose((v - small.cy) / small.fy, (block_v - frame.cy) / frame.fy)


def test_downsampling_averages_linear_light():
    rgb = np.zeros((4, 4, 3), np.uint8)
    rgb[0::2, 0::2] = 255  # each 2x2 block: one white pixel, three black
    rgb[2:, 2:] = 255  # the last block all white
    small = realism.downsampled(rgb, 2)
    quarter = 1.055 * 0.25 ** (1 / 2.4) - 0.055  # sRGB of a quarter of white's light
    assert small.shape == (2, 2, 3)
    assert np.abs(small[0, 0] - quarter).max() <= 1 / 255 and np.all(small[1, 1] == 1.0)

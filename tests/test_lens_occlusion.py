"""Occlusion ratios through a lens (simulation/render/lens_coverage.py) against brute-force ray casting.

The truth is independent of the renderer: each pixel's ray of an ideal 180-degree equidistant lens comes from the
model's closed form (theta = radius / f, no inverse needed), in float64, and is intersected with every triangle
of the scene by a numpy Moller-Trumbore test. A box 80 degrees off the axis, reaching behind the image plane (z < 0,
where a pinhole rasteriser cannot go), is partly hidden behind a nearer box; its ratio must be
1 - visible / (pixels its rays hit alone), with both counts exactly the brute force's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh

from core.config.lens import Lens
from simulation.render import Camera, RenderMesh, RenderOptions, RenderScene, render_frame

IDEAL_FISHEYE = Lens("equidistant", (0.0, 0.0, 0.0, 0.0))
CAMERA = Camera.from_fov(160, 120, 180.0, 0.05, 50.0, IDEAL_FISHEYE)
TARGET, OCCLUDER, WALL = 3, 7, 9


def box(name: str, instance_id: int, extents: tuple[float, float, float], centre: np.ndarray,
        yaw_deg: float) -> RenderMesh:
    mesh = trimesh.creation.box(extents=extents)
    pose = trimesh.transformations.rotation_matrix(math.radians(yaw_deg), [0.3, 1.0, 0.2])
    pose[:3, 3] = centre
    return RenderMesh(name, mesh.vertices, mesh.faces, instance_id, instance_id, pose=pose)


def world_triangles(mesh: RenderMesh) -> np.ndarray:
    """(T, 3, 3) float64 triangles of `mesh` in the world (= optical) frame."""
    vertices = mesh.vertices @ mesh.pose[:3, :3].T + mesh.pose[:3, 3]
    return vertices[mesh.faces]


def fisheye_rays(camera: Camera) -> np.ndarray:
    """(H * W, 3) unit rays of the pixel centres through the ideal equidistant lens: theta = r / f."""
    v, u = np.mgrid[0:camera.height, 0:camera.width].astype(np.float64)
    x, y = (u - camera.cx) / camera.fx, (v - camera.cy) / camera.fy
    theta, phi = np.hypot(x, y), np.arctan2(y, x)
    return np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], -1).reshape(-1, 3)


def nearest_range(rays: np.ndarray, triangles: np.ndarray, near: float, far: float) -> np.ndarray:
    """(N,) range along each ray (from the origin) of its nearest hit with `triangles` within [near, far], inf if
    none: Moller-Trumbore for every pair."""
    a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    e1, e2 = b - a, c - a
    p = np.cross(rays[:, None, :], e2[None])
    det = (p * e1[None]).sum(-1)
    det = np.where(det == 0, np.nan, det)
    s = -a[None]  # the ray starts at the origin
    bu = (s * p).sum(-1) / det
    q = np.cross(s, e1[None])
    bv = (rays[:, None, :] * q).sum(-1) / det
    t = (e2[None] * q).sum(-1) / det
    hit = (bu >= 0) & (bv >= 0) & (bu + bv <= 1) & (t >= near) & (t <= far)
    return np.where(hit, t, np.inf).min(axis=1)


@pytest.mark.parametrize("target_dynamic", [False, True], ids=["static", "dynamic"])
def test_fisheye_occlusion_ratio_equals_brute_force_ray_casting(target_dynamic):
    angle = math.radians(80.0)
    direction = np.array([math.sin(angle), 0.12, math.cos(angle)])
    target = box("target", TARGET, (0.9, 0.7, 1.1), 3.0 * direction, 23.0)
    # Nearer, across part of the target's left side as the camera sees it.
    occluder = box("occluder", OCCLUDER, (0.3, 0.5, 0.4), 1.6 * direction + np.array([0.0, 0.05, 0.25]), -31.0)
    wall = box("wall", WALL, (8.0, 8.0, 0.2), np.array([0.0, 0.0, 6.0]), 0.0)  # unoccluded, fills the middle
    static = [occluder, wall] + ([] if target_dynamic else [target])
    frame = render_frame(RenderScene(static, [target] if target_dynamic else []), CAMERA, np.eye(4),
                         options=RenderOptions(rgb=False))

    rays = fisheye_rays(CAMERA)
    ranges = {m.instance_id: nearest_range(rays, world_triangles(m), CAMERA.near, CAMERA.far)
              for m in (target, occluder, wall)}
    nearest = np.min(list(ranges.values()), axis=0)
    alone = np.isfinite(ranges[TARGET])
    visible = alone & (ranges[TARGET] == nearest)
    assert visible.sum() > 50 and (alone & ~visible).sum() > 50  # partly hidden, clearly
    behind = alone & (rays[:, 2] < 0)
    assert behind.sum() > 10  # the target reaches past 90 degrees off the axis
    np.testing.assert_array_equal(frame.instance.reshape(-1) == TARGET, visible)  # the renderer sees the same

    ratios = dict(zip(frame.instance_ids.tolist(), frame.boxes_2d_tight["occlusionRatio"].tolist()))
    assert ratios[TARGET] == pytest.approx(1 - visible.sum() / alone.sum(), abs=1e-6)
    assert ratios[OCCLUDER] == 0 and ratios[WALL] == 0
    row = frame.instance_ids.tolist().index(TARGET)
    assert frame.boxes_2d_loose[row]["occlusionRatio"] == frame.boxes_3d[row]["occlusionRatio"] == ratios[TARGET]


def test_occlusion_off_gives_zero_through_a_lens():
    direction = np.array([0.0, 0.0, 1.0])
    scene = RenderScene([box("target", TARGET, (1.0, 1.0, 1.0), 4.0 * direction, 10.0),
                         box("occluder", OCCLUDER, (0.5, 0.5, 0.5), 2.0 * direction + [0.2, 0, 0], 0.0)])
    frame = render_frame(scene, CAMERA, np.eye(4), options=RenderOptions(rgb=False, occlusion=False))
    assert set(frame.instance_ids.tolist()) == {TARGET, OCCLUDER}
    assert np.all(frame.boxes_2d_tight["occlusionRatio"] == 0)

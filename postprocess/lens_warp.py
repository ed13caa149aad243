"""Per-pixel reprojection of a frame seen through a lens other than pinhole (core/config/lens.py) into nearby
camera poses, using the frame's own depth: warp.py's backward warp through the lens's exact model.

Each output pixel q of a camera at pose P has its own ray d (the lens's inverse, unit, made once per camera, as
the renderer's rays); in the frame camera's coordinates it leaves P's centre o along R d (R: frame <- P). Its
point on the frame's depth surface is X = o + s R d, where the frame's depth at X's own pixel is 1 / w:
- radtan, whose depth is z: s = (1 / w - o_z) / d_z;
- equidistant, whose depth is the range along the ray: |o + s d| = 1 / w, the far root (the near one would lie
  behind o for a P inside that sphere, and a ray that misses the sphere has no source).
X is projected through the lens's forward model (cv2.projectPoints' / cv2.fisheye's formulas, the fisheye's on
theta = atan2(r, z) so that it reaches past 90 degrees) to its source pixel p; w starts as the inverse depth at q
and is looked up once more at p (one refinement, as warp.py: exact for rotations and locally fronto-parallel
surfaces). w = 0 (no return) is a point at infinity, in direction R d. A source is not ok when the ray has no
point on the surface ahead of o, lies beyond the lens's reach or falls outside [0, W-1) x [0, H-1); the sample
then keeps the output pixel's own colour or label (warp.py's rule).

Blur averages the poses one by one, each sample refined (warp.average_rows; warp.path_rows' path interpolation is
a pinhole's), labels take the nearest pixel (warp.nearest_rows). The rows are split over the cores; each pixel is
independent, so results do not depend on the thread count.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numba import njit, prange

from core.config.lens import Lens, equidistant_reach, radtan_reach, unproject
from core.jit_cache import flush_stale_caches

RADTAN, EQUIDISTANT = 0, 1
_RAY_CACHE_SIZE = 4


@lru_cache(maxsize=_RAY_CACHE_SIZE)
def _camera_rays(intrinsics: tuple[float, float, float, float], lens: Lens, width: int, height: int) -> np.ndarray:
    """(3, H, W) float64 unit ray of every pixel centre through the lens."""
    v, u = np.mgrid[0:height, 0:width].astype(np.float64)
    rays = unproject(intrinsics, lens, u.reshape(-1), v.reshape(-1)).reshape(3, height, width)
    rays.setflags(write=False)
    return rays


def _lens_terms(lens: Lens) -> tuple[int, np.ndarray, float]:
    """The kernels' model code, coefficients (5,) (equidistant: k1..k4, 0) and reach (radtan: the normalised
    radius, equidistant: theta, up to which the model rises)."""
    if lens.model == "radtan":
        return RADTAN, np.array(lens.coefficients, np.float64), radtan_reach(lens.coefficients)
    return EQUIDISTANT, np.array([*lens.coefficients, 0.0], np.float64), equidistant_reach(lens.coefficients)[0]


def _relative(frame_pose: np.ndarray, poses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The frame camera <- pose rotations (..., 3, 3) and centres (..., 3) of `poses` (..., 4, 4)."""
    relative = np.linalg.inv(np.asarray(frame_pose, np.float64)) @ np.asarray(poses, np.float64)
    return np.ascontiguousarray(relative[..., :3, :3]), np.ascontiguousarray(relative[..., :3, 3])


def _warp_terms(inverse: np.ndarray, K: np.ndarray, lens: Lens, frame_pose: np.ndarray, poses: np.ndarray) -> tuple:
    """The row kernels' arguments after the image and the inverse depth: each pixel's ray, the poses relative to
    the frame's, the lens's terms and the intrinsics."""
    if lens.pinhole:
        raise ValueError("lens_warp is for lenses other than pinhole: warp.py reprojects a pinhole's frames")
    height, width = inverse.shape
    fx, fy, cx, cy = float(K[0, 0]), float(K[1, 1]), float(K[0, 2]), float(K[1, 2])
    rotations, centres = _relative(frame_pose, poses)
    model, coefficients, reach = _lens_terms(lens)
    rays = _camera_rays((fx, fy, cx, cy), lens, width, height)
    return rays, rotations, centres, model, coefficients, reach, fx, fy, cx, cy


def lens_average(rgb: np.ndarray, inverse: np.ndarray, K: np.ndarray, lens: Lens, frame_pose: np.ndarray,
                 poses: np.ndarray) -> np.ndarray:
    """(H, W, 3) uint8: per output pixel, the mean over the S poses of its row (`poses` (R, S, 4, 4), R = H or 1)
    of the frame `rgb` (seen from `frame_pose`) sampled bilinearly at its source, or its own colour where the
    source is not ok; `inverse` (H, W) the frame's inverse depth (warp.inverse_depth)."""
    return _average_rows(np.ascontiguousarray(rgb, np.uint8), inverse, *_warp_terms(inverse, K, lens, frame_pose, poses))


def lens_nearest(label: np.ndarray, inverse: np.ndarray, K: np.ndarray, lens: Lens, frame_pose: np.ndarray,
                 poses: np.ndarray) -> np.ndarray:
    """`label` (H, W) warped to one pose per row (`poses` (R, 4, 4), R = H or 1), nearest pixel; a pixel whose
    source is not ok keeps its own label."""
    return _nearest_rows(np.ascontiguousarray(label), inverse, *_warp_terms(inverse, K, lens, frame_pose, poses))


@njit(cache=True, nogil=True, inline="always")
def _project(x, y, z, model, k, reach, fx, fy, cx, cy):
    """(px, py, ok): the point (x, y, z) through the lens; ok False beyond the model's reach."""
    if model == RADTAN:
        if z <= 0:
            return 0.0, 0.0, False
        a, b = x / z, y / z
        r2 = a * a + b * b
        if r2 >= reach * reach:
            return 0.0, 0.0, False
        radial = 1.0 + r2 * (k[0] + r2 * (k[1] + r2 * k[4]))
        xd = a * radial + 2.0 * k[2] * a * b + k[3] * (r2 + 2.0 * a * a)
        yd = b * radial + k[2] * (r2 + 2.0 * b * b) + 2.0 * k[3] * a * b
        return fx * xd + cx, fy * yd + cy, True
    r = math.sqrt(x * x + y * y)
    theta = math.atan2(r, z)
    if theta >= reach:
        return 0.0, 0.0, False
    t2 = theta * theta
    distorted = theta * (1.0 + t2 * (k[0] + t2 * (k[1] + t2 * (k[2] + t2 * k[3]))))
    scale = distorted / r if r > 0 else 0.0
    return fx * x * scale + cx, fy * y * scale + cy, True


@njit(cache=True, nogil=True, inline="always")
def _source(dx, dy, dz, w, ox, oy, oz, inverse, model, k, reach, fx, fy, cx, cy):
    """(px, py, ok): the source pixel of the ray from (ox, oy, oz) along unit (dx, dy, dz) (frame camera), from
    inverse depth `w` and refined once (module docstring)."""
    height, width = inverse.shape
    px = py = 0.0
    for refine in range(2):
        if model == RADTAN:  # depth z: X w = o w + s w d with s w = (1 - o_z w) / d_z
            if dz <= 0:
                return px, py, False
            along = (1.0 - oz * w) / dz
        else:  # depth the range: |o w + s w d| = 1, the far root
            b = (ox * dx + oy * dy + oz * dz) * w
            c = (ox * ox + oy * oy + oz * oz) * w * w - 1.0
            if b * b - c < 0:
                return px, py, False
            along = -b + math.sqrt(b * b - c)
        if along <= 0:
            return px, py, False
        px, py, ok = _project(ox * w + along * dx, oy * w + along * dy, oz * w + along * dz, model, k, reach, fx,
                              fy, cx, cy)
        if not (ok and 0.0 <= px < width - 1 and 0.0 <= py < height - 1):
            return px, py, False
        if refine == 0:
            w = np.float64(inverse[int(py + 0.5), int(px + 0.5)])
    return px, py, True


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _average_rows(rgb, inverse, rays, rotations, centres, model, k, reach, fx, fy, cx, cy):
    height, width = inverse.shape
    samples = rotations.shape[1]
    out = np.empty((height, width, 3), np.uint8)
    for row in prange(height):
        pose_row = np.int64(row) if rotations.shape[0] > 1 else np.int64(0)  # prange indices are unsigned
        total = np.zeros((width, 3), np.float64)
        for s in range(samples):
            R = rotations[pose_row, s]
            ox, oy, oz = centres[pose_row, s, 0], centres[pose_row, s, 1], centres[pose_row, s, 2]
            for col in range(width):
                lx, ly, lz = rays[0, row, col], rays[1, row, col], rays[2, row, col]
                dx = R[0, 0] * lx + R[0, 1] * ly + R[0, 2] * lz
                dy = R[1, 0] * lx + R[1, 1] * ly + R[1, 2] * lz
                dz = R[2, 0] * lx + R[2, 1] * ly + R[2, 2] * lz
                px, py, ok = _source(dx, dy, dz, np.float64(inverse[row, col]), ox, oy, oz, inverse, model, k, reach,
                                     fx, fy, cx, cy)
                if not ok:
                    for c in range(3):
                        total[col, c] += rgb[row, col, c]
                    continue
                x0, y0 = int(px), int(py)
                tx, ty = px - x0, py - y0
                for c in range(3):
                    total[col, c] += ((1 - ty) * ((1 - tx) * rgb[y0, x0, c] + tx * rgb[y0, x0 + 1, c])
                                      + ty * ((1 - tx) * rgb[y0 + 1, x0, c] + tx * rgb[y0 + 1, x0 + 1, c]))
        for col in range(width):
            for c in range(3):
                out[row, col, c] = np.uint8(min(total[col, c] / samples + 0.5, 255.0))
    return out


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def _nearest_rows(label, inverse, rays, rotations, centres, model, k, reach, fx, fy, cx, cy):
    height, width = inverse.shape
    out = np.empty_like(label)
    for row in prange(height):
        pose_row = np.int64(row) if rotations.shape[0] > 1 else np.int64(0)  # prange indices are unsigned
        R = rotations[pose_row]
        ox, oy, oz = centres[pose_row, 0], centres[pose_row, 1], centres[pose_row, 2]
        for col in range(width):
            lx, ly, lz = rays[0, row, col], rays[1, row, col], rays[2, row, col]
            dx = R[0, 0] * lx + R[0, 1] * ly + R[0, 2] * lz
            dy = R[1, 0] * lx + R[1, 1] * ly + R[1, 2] * lz
            dz = R[2, 0] * lx + R[2, 1] * ly + R[2, 2] * lz
            px, py, ok = _source(dx, dy, dz, np.float64(inverse[row, col]), ox, oy, oz, inverse, model, k, reach, fx,
                                 fy, cx, cy)
            out[row, col] = label[int(py + 0.5), int(px + 0.5)] if ok else label[row, col]
    return out


flush_stale_caches(__name__)  # see core.jit_cache

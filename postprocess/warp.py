"""Per-pixel reprojection of a rendered frame into nearby camera poses, using the frame's own depth.

Conventions: camera poses are 4x4 world <- camera in the ROS optical frame (z forward, x right, y down),
K is the 3x3 pinhole matrix, pixel (col, row) has its centre at integer coordinates, depth is float32
metres along the optical axis with 0 or NaN for no return.

Backward warp. The image a camera at another pose `P` would see is built by gathering: for each output
pixel q, the ray through q from `P` is intersected with the frame's depth surface and the frame is sampled
where that point lies. The ray is parametrised by the frame camera's z, so with `w` the inverse frame depth
of the point (0 for no return: a point at infinity, moved by rotation only), the source pixel is

    p = K [o w + (1 - o_z w) d / d_z]   (x and y; o: P's centre, d: q's ray direction, both in the frame camera)

which is exact as soon as `w` is the inverse depth at p. `w` starts as the frame's inverse depth at q
itself and is refined once with the inverse depth (nearest pixel) where the first estimate landed: exact
for any motion over a locally fronto-parallel surface and for pure rotations (no depth needed), and
close on slanted surfaces. A forward warp (splatting each frame pixel into P) would need a z-buffer and
leave cracks where the surface is magnified; the gather has neither and parallelises over output rows.
Where the frame saw nothing (disocclusions) the gather stretches the neighbouring surface.
Samples whose source leaves the image (or lies behind P) take the output pixel's own frame colour.

`rays` prepares the per-pose terms; `average_rows` (bilinear, averaging several poses per row) and
`nearest_rows` (nearest pixel, one pose per row, for label images) are compiled with numba: `parallel`
splits the rows over the cores (each row is independent, so results do not depend on the thread count);
`cache` keeps the compiled code in __pycache__.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_F0 = np.float32(0)
_F1 = np.float32(1)
_HALF = np.float32(0.5)


def inverse_depth(depth: np.ndarray) -> np.ndarray:
    """(H, W) float32 1/depth (1/m), 0 where `depth` is 0, NaN or not finite (no return: at infinity)."""
    depth = np.asarray(depth, np.float32)
    valid = np.isfinite(depth) & (depth > 0)
    out = np.zeros(depth.shape, np.float32)
    np.divide(np.float32(1), depth, out=out, where=valid)
    return out


def rays(K: np.ndarray, frame_pose: np.ndarray, poses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pose of `poses` (..., 4, 4): the matrix A (..., 3, 3) taking a pixel (col, row, 1) to its ray
    direction in the frame camera, and the pose's centre o (..., 3) in the frame camera (metres), float64."""
    K = np.asarray(K, np.float64)
    relative = np.linalg.inv(np.asarray(frame_pose, np.float64)) @ np.asarray(poses, np.float64)  # frame <- pose
    k_inv = np.array([[1 / K[0, 0], 0, -K[0, 2] / K[0, 0]], [0, 1 / K[1, 1], -K[1, 2] / K[1, 1]], [0, 0, 1]])
    # Analytic inverse: np.linalg.inv's last-bit differences would move identity warps off the pixel centres.
    return np.ascontiguousarray(relative[..., :3, :3] @ k_inv), np.ascontiguousarray(relative[..., :3, 3])


@njit(cache=True, nogil=True, error_model="numpy")
def _ray_slopes(A, row, ax, ay):
    """Fills ax, ay (W,) float32 with the ray direction x/z, y/z through each pixel of `row` for the ray
    matrix `A` (3, 3); NaN where the ray points backwards (z <= 0), which fails every later comparison.
    Branch-free and contiguous, so it compiles to SIMD."""
    bx, by, bz = A[0, 1] * row + A[0, 2], A[1, 1] * row + A[1, 2], A[2, 1] * row + A[2, 2]
    for col in range(len(ax)):
        dz = np.float32(bz + A[2, 0] * col)
        inv_dz = np.float32(1) / dz if dz > 0 else np.float32(np.nan)
        ax[col] = np.float32(bx + A[0, 0] * col) * inv_dz
        ay[col] = np.float32(by + A[1, 0] * col) * inv_dz


@njit(cache=True, nogil=True, inline="always")
def _source(ax, ay, w, ox, oy, oz, inverse, fx, fy, cx, cy):
    """Source pixel (px, py) in the frame of the output pixel whose ray slopes from centre (ox, oy, oz) are
    (ax, ay), starting from inverse depth `w` and refined once (module docstring); ok False when the ray
    points backwards, the point lies behind the camera or the source is outside [0, W-1) x [0, H-1)
    (so the bilinear taps x+1, y+1 exist; an identity warp keeps the last row and column by the
    out-of-image rule)."""
    height, width = inverse.shape
    px = py = _F0
    for refine in range(2):
        s = _F1 - oz * w
        px = fx * (ox * w + s * ax) + cx
        py = fy * (oy * w + s * ay) + cy
        if not (s > _F0 and _F0 <= px < width - 1 and _F0 <= py < height - 1):
            return px, py, False
        if refine == 0:
            w = inverse[int(py + _HALF), int(px + _HALF)]
    return px, py, True


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def average_rows(rgb, inverse, fx, fy, cx, cy, A, o):
    """(H, W, 3) uint8: per output pixel, the mean over the S poses of its row of the bilinear samples of
    `rgb` (H, W, 3) uint8 at the sources (`_source`), or of its own colour where a source is not ok;
    `A` (R, S, 3, 3) and `o` (R, S, 3) hold the poses of each row (R = H) or of all rows (R = 1).
    Rounded to nearest."""
    height, width = inverse.shape
    samples = A.shape[1]
    flat = rgb.reshape(-1)
    stride = 3 * width
    fx, fy, cx, cy = np.float32(fx), np.float32(fy), np.float32(cx), np.float32(cy)
    scale = _F1 / np.float32(samples)
    out = np.empty(height * stride, np.uint8)
    for row in prange(height):
        pose_row = np.int64(row) if A.shape[0] > 1 else np.int64(0)  # prange indices are unsigned
        # Pose by pose over the whole row: the pixels' samples are independent, so they overlap in the
        # pipeline, where pixel by pixel each waited on the previous refinement's depth lookup.
        total = np.zeros(stride, np.float32)
        ax, ay = np.empty(width, np.float32), np.empty(width, np.float32)
        for k in range(samples):
            _ray_slopes(A[pose_row, k], row, ax, ay)
            # Scalars, not a view of `o`: a view per pixel would count references atomically across threads.
            ox, oy, oz = np.float32(o[pose_row, k, 0]), np.float32(o[pose_row, k, 1]), np.float32(o[pose_row, k, 2])
            for col in range(width):
                here, c = row * stride + 3 * col, 3 * col
                px, py, ok = _source(ax[col], ay[col], inverse[row, col], ox, oy, oz, inverse, fx, fy, cx, cy)
                if not ok:
                    total[c] += flat[here]
                    total[c + 1] += flat[here + 1]
                    total[c + 2] += flat[here + 2]
                    continue
                x0, y0 = int(px), int(py)
                tx, ty = px - np.float32(x0), py - np.float32(y0)
                w00, w01 = (_F1 - ty) * (_F1 - tx), (_F1 - ty) * tx
                w10, w11 = ty * (_F1 - tx), ty * tx
                i = y0 * stride + 3 * x0
                j = i + stride
                total[c] += (w00 * flat[i] + w01 * flat[i + 3]) + (w10 * flat[j] + w11 * flat[j + 3])
                total[c + 1] += (w00 * flat[i + 1] + w01 * flat[i + 4]) + (w10 * flat[j + 1] + w11 * flat[j + 4])
                total[c + 2] += (w00 * flat[i + 2] + w01 * flat[i + 5]) + (w10 * flat[j + 2] + w11 * flat[j + 5])
        for c in range(stride):
            out[row * stride + c] = np.uint8(min(total[c] * scale + _HALF, np.float32(255)))
    return out.reshape(height, width, 3)


@njit(cache=True, nogil=True, parallel=True, error_model="numpy")
def nearest_rows(label, inverse, fx, fy, cx, cy, A, o):
    """`label` (H, W) warped by one pose per row (`A` (R, 3, 3), `o` (R, 3), R = H or 1): each output pixel
    takes the label of the nearest pixel to its source, or its own label where the source is not ok."""
    height, width = inverse.shape
    fx, fy, cx, cy = np.float32(fx), np.float32(fy), np.float32(cx), np.float32(cy)
    out = np.empty_like(label)
    for row in prange(height):
        pose_row = np.int64(row) if A.shape[0] > 1 else np.int64(0)  # prange indices are unsigned
        ax, ay = np.empty(width, np.float32), np.empty(width, np.float32)
        _ray_slopes(A[pose_row], row, ax, ay)
        ox, oy, oz = np.float32(o[pose_row, 0]), np.float32(o[pose_row, 1]), np.float32(o[pose_row, 2])
        for col in range(width):
            px, py, ok = _source(ax[col], ay[col], inverse[row, col], ox, oy, oz, inverse, fx, fy, cx, cy)
            out[row, col] = label[int(py + _HALF), int(px + _HALF)] if ok else label[row, col]
    return out

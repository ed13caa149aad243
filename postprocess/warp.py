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

Motion blur averages such warps over the poses of an exposure. `average_rows` does so exactly, pose by
pose (every sample refined); `path_rows`, used for blur, is exact at the ends and interpolated between: over
an exposure a pixel's source moves along a smooth path, so only the first, middle and last poses get the
refined source, the path is the quadratic through those three (which follows the arcs of rotations about
the optical axis), and it is sampled about once per pixel of its length (at most once per pose), weighted
to keep the uniform-in-time mean. Each sample outside the image takes the output pixel's own colour, as in
`average_rows`. Pixels whose path crosses a depth step (the middle source's inverse depth off the mean of
the ends') or whose key sources lie behind the camera fall back to the exact pose-by-pose average.

`rays` prepares the per-pose terms; `average_rows` (bilinear, averaging several poses per row), `path_rows`
(its path approximation) and `nearest_rows` (nearest pixel, one pose per row, for label images) are
compiled with numba: `parallel` splits the rows over the cores (each row is independent, so results do not
depend on the thread count); `cache` keeps the compiled code in __pycache__.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from core.jit_cache import flush_stale_caches

_F0 = np.float32(0)
_F1 = np.float32(1)
_HALF = np.float32(0.5)
PATH_DENSITY = 1.0  # path samples per pixel of path length (path_rows)
SMOOTH_TOLERANCE = 0.02  # relative inverse-depth mismatch at the path middle that makes path_rows go pose by pose


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
    poses = np.asarray(poses, np.float64)
    k_inv = np.array([[1 / K[0, 0], 0, -K[0, 2] / K[0, 0]], [0, 1 / K[1, 1], -K[1, 2] / K[1, 1]], [0, 0, 1]])
    # Analytic inverse: np.linalg.inv's last-bit differences would move identity warps off the pixel centres.
    A, o = _compose_rays(np.linalg.inv(np.asarray(frame_pose, np.float64)), poses.reshape(-1, 4, 4), k_inv)
    return A.reshape(poses.shape[:-2] + (3, 3)), o.reshape(poses.shape[:-2] + (3,))


@njit(cache=True, nogil=True)
def _compose_rays(frame_inv, poses, k_inv):
    """`rays` for poses (N, 4, 4): (frame_inv @ pose)[:3, :3] @ k_inv and (frame_inv @ pose)[:3, 3], as a
    compiled loop (numpy's stacked small products cost more than the arithmetic, and a BLAS call for
    them would leave its threads spinning against the warp kernels' on a small machine)."""
    count = len(poses)
    A, o = np.empty((count, 3, 3)), np.empty((count, 3))
    rotation = np.empty((3, 3))
    for n in range(count):
        for i in range(3):
            for k in range(3):
                rotation[i, k] = (frame_inv[i, 0] * poses[n, 0, k] + frame_inv[i, 1] * poses[n, 1, k]
                                  + frame_inv[i, 2] * poses[n, 2, k])
            o[n, i] = (frame_inv[i, 0] * poses[n, 0, 3] + frame_inv[i, 1] * poses[n, 1, 3]
                       + frame_inv[i, 2] * poses[n, 2, 3] + frame_inv[i, 3])
        for i in range(3):
            for k in range(3):
                A[n, i, k] = rotation[i, 0] * k_inv[0, k] + rotation[i, 1] * k_inv[1, k] + rotation[i, 2] * k_inv[2, k]
    return A, o


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


def path_weights(samples: int) -> np.ndarray:
    """(samples + 1, samples) float32: row n holds the weights of n path samples (n >= 1) placed evenly over
    the exposure, both ends included (n = 1: one at its middle), such that their weighted sum is the mean
    over the `samples` sub-pose instants k / (samples - 1) of the samples' piecewise-linear interpolant
    (hat functions): for n = samples it is the plain mean of the sub-poses."""
    out = np.zeros((samples + 1, samples), np.float64)
    taus = np.arange(samples) / (samples - 1) if samples > 1 else np.zeros(1)
    for n in range(1, samples + 1):
        if n == 1:
            out[1, 0] = 1.0
            continue
        position = taus * (n - 1)
        low = np.minimum(np.floor(position).astype(np.int64), n - 2)
        frac = position - low
        np.add.at(out[n], low, (1 - frac) / samples)
        np.add.at(out[n], low + 1, frac / samples)
    return out.astype(np.float32)


@njit(cache=True, nogil=True, inline="always")
def _path_point(ax, ay, w, ox, oy, oz, inverse, fx, fy, cx, cy):
    """(px, py, w, ok): like `_source`, but the refinement looks the inverse depth up at the nearest pixel
    inside the image, so a source outside the image still gets a position (for the path through it); w is
    the inverse depth of that refinement, ok False only when the ray points backwards or the point lies
    behind the camera."""
    height, width = inverse.shape
    px = py = _F0
    for refine in range(2):
        s = _F1 - oz * w
        px = fx * (ox * w + s * ax) + cx
        py = fy * (oy * w + s * ay) + cy
        if not (s > _F0 and abs(px) < np.float32(1e6) and abs(py) < np.float32(1e6)):
            return px, py, w, False
        if refine == 0:
            x = min(max(px + _HALF, _F0), np.float32(width - 1))
            y = min(max(py + _HALF, _F0), np.float32(height - 1))
            w = inverse[int(y), int(x)]
    return px, py, w, True


@njit(cache=True, nogil=True, inline="always")
def _bilinear(image, stride, px, py, weight):
    """`weight` times the bilinear sample (r, g, b) of `image` (flat float32 RGB, `stride` floats a row) at
    (px, py), both taps x+1 and y+1 inside."""
    x0, y0 = int(px), int(py)
    tx, ty = px - np.float32(x0), py - np.float32(y0)
    wy1 = weight * ty
    wy0 = weight - wy1
    w00, w01 = wy0 - wy0 * tx, wy0 * tx
    w10, w11 = wy1 - wy1 * tx, wy1 * tx
    i = y0 * stride + 3 * x0
    k = i + stride
    return ((w00 * image[i] + w01 * image[i + 3]) + (w10 * image[k] + w11 * image[k + 3]),
            (w00 * image[i + 1] + w01 * image[i + 4]) + (w10 * image[k + 1] + w11 * image[k + 4]),
            (w00 * image[i + 2] + w01 * image[i + 5]) + (w10 * image[k + 2] + w11 * image[k + 5]))


@njit(cache=True, nogil=True, parallel=True, error_model="numpy", fastmath={"contract", "reassoc", "nsz", "arcp"})
def path_rows(image, inverse, fx, fy, cx, cy, A, o, weights, density, tolerance):
    """(H, W, 3) uint8: per output pixel, the mean over the S poses of its row (`A` (R, S, 3, 3), `o` (R, S, 3),
    R = H or 1, as in `average_rows`) of the frame sampled along the pixel's motion path, from `image`
    (H, W, 3) float32 (the frame's colours as floats). Exact at the ends, interpolated between: the refined
    source (`_path_point`) is computed for poses 0, S // 2 and S - 1 only, and the path is the quadratic in
    the pose parameter tau = k / (S - 1) through those three points (the segment for S < 3). It is sampled at
    n = min(S, 1 + ceil(density * L)) instants tau evenly spread over [0, 1], both ends included (n = 1: the
    middle), L the path length in pixels through the three points, so about `density` samples per pixel
    moved; `weights` (`path_weights(S)`) weight them so that n = S is the plain mean of the S poses and
    fewer samples follow the same uniform-in-time average. Each sample is bilinear at its own position, or
    the pixel's own colour where that position is outside [0, W-1) x [0, H-1) (the rule of `average_rows`,
    decided per sample). A pixel is instead averaged pose by pose, exactly as `average_rows` does, when a
    key source points backwards or lies behind its camera, or when its path crosses a depth step: the
    inverse depth looked up at the middle source differs from the mean of those at the ends by more than
    `tolerance` times their sum (a slanted plane, linear in the image, passes). Rounded to nearest.
    Each pixel is independent, so results do not depend on the thread count; `fastmath` allows contraction
    and reassociation only (no NaN or infinity assumptions), fixed at compile time."""
    height, width = inverse.shape
    samples = A.shape[1]
    flat = image.reshape(-1)
    stride = 3 * width
    fx, fy, cx, cy = np.float32(fx), np.float32(fy), np.float32(cx), np.float32(cy)
    density, tolerance = np.float32(density), np.float32(tolerance)
    flat_weights = weights.reshape(-1)
    middle = samples // 2
    quadratic = samples > 2
    tau_m = np.float32(middle / (samples - 1)) if quadratic else _F0
    inv_mm = _F1 / (tau_m * (tau_m - _F1)) if quadratic else _F0
    scale = _F1 / np.float32(samples)
    xmax, ymax = np.float32(width - 1), np.float32(height - 1)
    out = np.empty(height * stride, np.uint8)
    for row in prange(height):
        pose_row = np.int64(row) if A.shape[0] > 1 else np.int64(0)  # prange indices are unsigned
        ax0, ay0 = np.empty(width, np.float32), np.empty(width, np.float32)
        axm, aym = np.empty(width, np.float32), np.empty(width, np.float32)
        ax1, ay1 = np.empty(width, np.float32), np.empty(width, np.float32)
        _ray_slopes(A[pose_row, 0], row, ax0, ay0)
        _ray_slopes(A[pose_row, middle], row, axm, aym)
        _ray_slopes(A[pose_row, samples - 1], row, ax1, ay1)
        # Scalars, not views of `o`: a view per pixel would count references atomically across threads.
        o0x, o0y, o0z = np.float32(o[pose_row, 0, 0]), np.float32(o[pose_row, 0, 1]), np.float32(o[pose_row, 0, 2])
        omx, omy, omz = (np.float32(o[pose_row, middle, 0]), np.float32(o[pose_row, middle, 1]),
                         np.float32(o[pose_row, middle, 2]))
        o1x, o1y, o1z = (np.float32(o[pose_row, samples - 1, 0]), np.float32(o[pose_row, samples - 1, 1]),
                         np.float32(o[pose_row, samples - 1, 2]))
        for col in range(width):
            here = row * stride + 3 * col
            w = inverse[row, col]
            p0x, p0y, w0, ok0 = _path_point(ax0[col], ay0[col], w, o0x, o0y, o0z, inverse, fx, fy, cx, cy)
            pmx, pmy, wm, okm = _path_point(axm[col], aym[col], w, omx, omy, omz, inverse, fx, fy, cx, cy)
            p1x, p1y, w1, ok1 = _path_point(ax1[col], ay1[col], w, o1x, o1y, o1z, inverse, fx, fy, cx, cy)
            smooth = abs(wm - _HALF * (w0 + w1)) <= tolerance * (abs(w0) + abs(w1)) + np.float32(1e-6)
            r = g = b = _F0
            if ok0 and okm and ok1 and smooth:
                dx, dy = p1x - p0x, p1y - p0y
                qx = qy = _F0
                if quadratic:
                    qx = (pmx - p0x - tau_m * dx) * inv_mm
                    qy = (pmy - p0y - tau_m * dy) * inv_mm
                length = (np.sqrt((pmx - p0x) ** 2 + (pmy - p0y) ** 2)
                          + np.sqrt((p1x - pmx) ** 2 + (p1y - pmy) ** 2))
                n = min(samples, 1 + int(np.ceil(length * density)))
                # tau_j = first + j step: n evenly spread instants, both ends included (n = 1: the middle).
                step = _F1 / np.float32(n - 1) if n > 1 else _F0
                first = _F0 if n > 1 else _HALF
                offset = n * samples
                for j in range(n):
                    tau = first + np.float32(j) * step
                    bend = tau * (tau - _F1)
                    px = p0x + tau * dx + qx * bend
                    py = p0y + tau * dy + qy * bend
                    weight = flat_weights[offset + j]
                    if _F0 <= px < xmax and _F0 <= py < ymax:
                        dr, dg, db = _bilinear(flat, stride, px, py, weight)
                    else:
                        dr, dg, db = weight * flat[here], weight * flat[here + 1], weight * flat[here + 2]
                    r += dr
                    g += dg
                    b += db
            else:
                for pose in range(samples):
                    Ak = A[pose_row, pose]
                    dz = np.float32(Ak[2, 1] * row + Ak[2, 2] + Ak[2, 0] * col)
                    inv_dz = _F1 / dz if dz > 0 else np.float32(np.nan)
                    sx = np.float32(Ak[0, 1] * row + Ak[0, 2] + Ak[0, 0] * col) * inv_dz
                    sy = np.float32(Ak[1, 1] * row + Ak[1, 2] + Ak[1, 0] * col) * inv_dz
                    px, py, ok = _source(sx, sy, w, np.float32(o[pose_row, pose, 0]), np.float32(o[pose_row, pose, 1]),
                                         np.float32(o[pose_row, pose, 2]), inverse, fx, fy, cx, cy)
                    if ok:
                        dr, dg, db = _bilinear(flat, stride, px, py, scale)
                    else:
                        dr, dg, db = scale * flat[here], scale * flat[here + 1], scale * flat[here + 2]
                    r += dr
                    g += dg
                    b += db
            out[here] = np.uint8(min(r + _HALF, np.float32(255)))
            out[here + 1] = np.uint8(min(g + _HALF, np.float32(255)))
            out[here + 2] = np.uint8(min(b + _HALF, np.float32(255)))
    return out.reshape(height, width, 3)


flush_stale_caches(__name__)  # see core.jit_cache

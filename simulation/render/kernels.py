"""Compiled per-pixel loops (numba) for the renderer's hottest steps: normals, ground-truth images and their
per-instance stats, metering, tone mapping and sRGB encoding, and the scanline marks of the occlusion
rasteriser (shading is in shade_kernels.py).

Each kernel does in one pass per point what whole-array numpy code did in a dozen passes, in the same
float32/float64 arithmetic and order (numba contracts no multiply-add without fastmath), so frames are the
same bit for bit as with that numpy code except where the specular lobe's exp/log round differently in
the last bit of a float32 (glibc's, see libm_f32.py, against numpy's own), which moves an sRGB level by
one in about one value in a few million. `nogil` lets the renderer's tile workers run them in parallel;
`cache` keeps the compiled code in __pycache__, so only the first process after a change compiles (a few
seconds).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from core.jit_cache import flush_stale_caches
from simulation.render.shading import ENCODE_LEVELS, LUMINANCE_WEIGHTS

_F0 = np.float32(0.0)
_F1 = np.float32(1.0)
_HALF = np.float32(0.5)
_ENCODE_SCALE = np.float32(ENCODE_LEVELS)
_LUMA_R, _LUMA_G, _LUMA_B = (np.float32(w) for w in LUMINANCE_WEIGHTS)
# ACES filmic fit (Narkowicz 2015): x (a x + b) / (x (c x + d) + e) of the input times 0.6.
_FILMIC_INPUT = np.float32(0.6)
_FILMIC_A, _FILMIC_B, _FILMIC_C, _FILMIC_D, _FILMIC_E = (np.float32(k) for k in (2.51, 0.03, 2.43, 0.59, 0.14))


@njit(cache=True, nogil=True)
def surface_normals(geometric_normal, mesh, prim, u, v, smooth, vertex_normals, corners):
    """Unit normals (3, N): the hit faces' `geometric_normal` (N, 3) normalised, or for meshes flagged
    `smooth` (M,) the `vertex_normals` (3, V) interpolated at Embree barycentrics on faces `corners` (3, F)
    (a zero blend keeps the flat normal). `vertex_normals` may be (3, 0) when no mesh is smooth."""
    n = len(mesh)
    out = np.empty((3, n), np.float32)
    any_smooth = vertex_normals.shape[1] > 0
    for i in range(n):
        g0, g1, g2 = geometric_normal[i, 0], geometric_normal[i, 1], geometric_normal[i, 2]
        length = np.sqrt((g0 * g0 + g1 * g1) + g2 * g2)
        out[0, i], out[1, i], out[2, i] = g0 / length, g1 / length, g2 / length
        if not any_smooth or not smooth[mesh[i]]:
            continue
        f = prim[i]
        a, b, c = corners[0, f], corners[1, f], corners[2, f]
        uu, vv = u[i], v[i]
        w = (_F1 - uu) - vv
        b0 = (vertex_normals[0, a] * w + vertex_normals[0, b] * uu) + vertex_normals[0, c] * vv
        b1 = (vertex_normals[1, a] * w + vertex_normals[1, b] * uu) + vertex_normals[1, c] * vv
        b2 = (vertex_normals[2, a] * w + vertex_normals[2, b] * uu) + vertex_normals[2, c] * vv
        norm = np.sqrt((b0 * b0 + b1 * b1) + b2 * b2)
        if norm > _F0:
            out[0, i], out[1, i], out[2, i] = b0 / norm, b1 / norm, b2 / norm
    return out


@njit(cache=True, nogil=True)
def vertex_normals(world, corners):
    """(3, V) float32 unit area-weighted vertex normals of the float64 vertices `world` (3, V) on faces `corners`
    (3, F): each face's cross(b - a, c - a) added at its corners in the order numpy's bincount over
    corners.ravel() adds them (every face's first corner, then the second, then the third), the sums then
    normalised (0 where a sum is 0)."""
    vertex_count, face_count = world.shape[1], corners.shape[1]
    cross = np.empty((3, face_count))
    for f in range(face_count):
        a, b, c = corners[0, f], corners[1, f], corners[2, f]
        e10, e11, e12 = world[0, b] - world[0, a], world[1, b] - world[1, a], world[2, b] - world[2, a]
        e20, e21, e22 = world[0, c] - world[0, a], world[1, c] - world[1, a], world[2, c] - world[2, a]
        cross[0, f] = e11 * e22 - e12 * e21
        cross[1, f] = e12 * e20 - e10 * e22
        cross[2, f] = e10 * e21 - e11 * e20
    summed = np.zeros((3, vertex_count))
    for k in range(3):
        for corner in range(3):
            for f in range(face_count):
                summed[k, corners[corner, f]] += cross[k, f]
    out = np.zeros((3, vertex_count), np.float32)
    for v in range(vertex_count):
        norm = np.sqrt((summed[0, v] * summed[0, v] + summed[1, v] * summed[1, v]) + summed[2, v] * summed[2, v])
        if norm > 0:
            for k in range(3):
                out[k, v] = summed[k, v] / norm
    return out


@njit(cache=True, nogil=True)
def project_meshes(world, vertex_offsets, keep, rotation, offset, fx, fy, cx, cy, near):
    """The vertices of the meshes flagged in `keep` (M,) (mesh m owns vertices vertex_offsets[m] to
    vertex_offsets[m + 1] - 1 of the float32 `world` (V, 3)) in a camera's optical frame, `rotation` (3, 3) times
    each vertex plus `offset`, in camera.linear_map's float64 order (so equal to world_to_camera bit for bit), as
    (3, V) with the other meshes' columns 0; per mesh, the pixel bounds lo, hi (M, 2) of its vertices in front of
    the near plane (px = fx x / z + cx, py likewise; inf and -inf where none) and whether any vertex lies
    behind it (`clipped`)."""
    mesh_count = len(vertex_offsets) - 1
    points = np.zeros((3, world.shape[0]))
    lo, hi = np.full((mesh_count, 2), np.inf), np.full((mesh_count, 2), -np.inf)
    clipped = np.zeros(mesh_count, np.bool_)
    for m in range(mesh_count):
        if not keep[m]:
            continue
        for i in range(vertex_offsets[m], vertex_offsets[m + 1]):
            p0, p1, p2 = np.float64(world[i, 0]), np.float64(world[i, 1]), np.float64(world[i, 2])
            x = ((p0 * rotation[0, 0] + p1 * rotation[0, 1]) + p2 * rotation[0, 2]) + offset[0]
            y = ((p0 * rotation[1, 0] + p1 * rotation[1, 1]) + p2 * rotation[1, 2]) + offset[1]
            z = ((p0 * rotation[2, 0] + p1 * rotation[2, 1]) + p2 * rotation[2, 2]) + offset[2]
            points[0, i], points[1, i], points[2, i] = x, y, z
            if z < near:
                clipped[m] = True
                continue
            px, py = fx * x / z + cx, fy * y / z + cy
            lo[m, 0], lo[m, 1] = min(lo[m, 0], px), min(lo[m, 1], py)
            hi[m, 0], hi[m, 1] = max(hi[m, 0], px), max(hi[m, 1], py)
    return points, lo, hi, clipped


@njit(cache=True, nogil=True)
def fill_truth(instance, semantic, distance, depth, normals_out, rays, complete, mesh, t, offset, dz, normals,
               instance_ids, semantic_ids, no_hit):
    """Writes a tile's ground truth (images flat over its pixels, normals (pixels, 3)) from hits `rays` (all
    in order if `complete`) on `mesh` at `t` along camera rays (`offset`, `dz` per pixel): ids, distance
    from the eye, depth, normals (3, N); pixels without a hit get 0 and `no_hit` distances."""
    if not complete:
        for r in range(len(instance)):
            instance[r], semantic[r], distance[r], depth[r] = 0, 0, no_hit, no_hit
            normals_out[r, 0], normals_out[r, 1], normals_out[r, 2] = _F0, _F0, _F0
    for i in range(len(mesh)):
        r = i if complete else rays[i]
        m = mesh[i]
        instance[r], semantic[r] = instance_ids[m], semantic_ids[m]
        from_eye = offset[r] + t[i]
        distance[r] = from_eye
        depth[r] = from_eye * dz[r]
        normals_out[r, 0], normals_out[r, 1], normals_out[r, 2] = normals[0, i], normals[1, i], normals[2, i]


@njit(cache=True, nogil=True)
def pixel_stats(instance, first_row, far):
    """Pixel count (K,) of each id 0..K-1 in `instance` (rows, W), whose ids are below K = max + 1, and the
    inclusive box of each id but 0: low (K, 2) (x_min, y_min) and high (x_max, y_max), rows counted from
    image row `first_row`; `far` and -1 for ids without pixels."""
    top = 0
    for r in range(instance.shape[0]):
        for c in range(instance.shape[1]):
            top = max(top, np.int64(instance[r, c]))
    counts = np.zeros(top + 1, np.int64)
    low = np.full((top + 1, 2), far, np.int64)
    high = np.full((top + 1, 2), -1, np.int64)
    for r in range(instance.shape[0]):
        row = r + first_row
        for c in range(instance.shape[1]):
            label = instance[r, c]
            counts[label] += 1
            if label == 0:
                continue
            low[label, 0] = min(low[label, 0], c)
            low[label, 1] = min(low[label, 1], row)
            high[label, 0] = max(high[label, 0], c)
            high[label, 1] = max(high[label, 1], row)
    return counts, low, high


@njit(cache=True, nogil=True)
def log_luminance_sum(linear, floor):
    """Sum over the pixels of linear colour (3, N) of log(floor + Rec. 709 luminance), in float64."""
    total = 0.0
    for i in range(linear.shape[1]):
        luminance = (_LUMA_R * linear[0, i] + _LUMA_G * linear[1, i]) + _LUMA_B * linear[2, i]
        total += np.log(floor + max(np.float64(luminance), 0.0))
    return total


@njit(cache=True, nogil=True)
def tone_encode(linear, scale, filmic, lut):
    """uint8 sRGB (N, 3) of linear colour (3, N) times `scale`, through the filmic curve if `filmic`
    (exposure.py), encoded through shading's lookup table `lut` (clipping to [0, 1])."""
    out = np.empty((linear.shape[1], 3), np.uint8)
    for c in range(3):
        if not filmic:
            for i in range(linear.shape[1]):
                out[i, c] = _encode(linear[c, i] * scale, lut)
            continue
        for i in range(linear.shape[1]):
            x = max(linear[c, i] * scale, _F0) * _FILMIC_INPUT
            out[i, c] = _encode((x * (_FILMIC_A * x + _FILMIC_B)) / (x * (_FILMIC_C * x + _FILMIC_D) + _FILMIC_E), lut)
    return out


@njit(cache=True, nogil=True, inline="always")
def _encode(value, lut):
    """shading.linear_to_srgb8 of one float32: clip to [0, 1], then the nearest of the table's levels."""
    clipped = min(max(value, _F0), _F1)
    return lut[np.intp(clipped * _ENCODE_SCALE + _HALF)]


@njit(cache=True, nogil=True)
def coverage_runs(x, y, owner, windows, px, py, start, end, edge_owner, row_start, strides,
                  size):
    """The covered cells (bool, `size`) of windows laid out as coverage.Coverage: +1/-1 marks at the ends of
    each triangle's pixel-centre span per row (corners x, y (3, T), see coverage._spans) and at the outline
    edges' winding steps (start -> end into px, py, see coverage._outline_marks), summed along the rows."""
    runs = np.zeros(size, np.int32)
    for k in range(x.shape[1]):
        w = owner[k]
        xa, ya, xb, yb = _ordered(x[0, k], y[0, k], x[1, k], y[1, k])
        xb, yb, xc, yc = _ordered(xb, yb, x[2, k], y[2, k])
        xa, ya, xb, yb = _ordered(xa, ya, xb, yb)
        first = np.int64(max(np.ceil(ya), np.float64(windows[w, 1])))
        last = np.int64(min(np.floor(yc), np.float64(windows[w, 3])))
        middle = np.int64(min(max(np.ceil(yb), np.float64(first)), np.float64(last + 1)))
        long_slope = _slope(xa, ya, xc, yc)
        _span_marks(runs, w, first, min(last, middle - 1), xa, ya, long_slope, xa, ya, _slope(xa, ya, xb, yb),
                    windows, row_start, strides)
        _span_marks(runs, w, max(first, middle), last, xa, ya, long_slope, xb, yb, _slope(xb, yb, xc, yc),
                    windows, row_start, strides)
    for k in range(len(start)):
        xs, ys, xe, ye = px[start[k]], py[start[k]], px[end[k]], py[end[k]]
        if ys == ye:
            continue
        w = edge_owner[k]
        entering = ye < ys  # for faces of positive area, rows enter through edges running up the image
        x_lo, y_lo, x_hi, y_hi = (xe, ye, xs, ys) if entering else (xs, ys, xe, ye)
        first = np.int64(max(np.ceil(y_lo), np.float64(windows[w, 1])))
        last = np.int64(min(np.ceil(y_hi) - 1, np.float64(windows[w, 3])))
        slope = (x_hi - x_lo) / (y_hi - y_lo)
        for row in range(first, last + 1):
            at = x_lo + (row - y_lo) * slope
            column = np.ceil(at) if entering else np.floor(at) + 1
            column = min(max(column, np.float64(windows[w, 0])), np.float64(windows[w, 2] + 1))
            runs[row_start[w] + row * strides[w] + np.int64(column)] += 1 if entering else -1
    covered = np.empty(size, np.bool_)
    total = 0
    for cell in range(size):
        total += runs[cell]
        covered[cell] = total > 0
    return covered


@njit(cache=True, nogil=True, inline="always")
def _ordered(xa, ya, xb, yb):
    """Corners a, b reordered so that a is not below b (coverage._swap)."""
    if ya > yb:
        return xb, yb, xa, ya
    return xa, ya, xb, yb


@njit(cache=True, nogil=True, inline="always")
def _slope(x_lo, y_lo, x_hi, y_hi):
    return (x_hi - x_lo) / (y_hi - y_lo) if y_hi > y_lo else 0.0


@njit(cache=True, nogil=True, inline="always")
def _span_marks(runs, w, first, last, long_x, long_y, long_slope, short_x, short_y, short_slope, windows,
                row_start, strides):
    """+1 at the first and -1 after the last pixel centre between two edges, on rows first..last."""
    x_min, x_max = np.float64(windows[w, 0]), np.float64(windows[w, 2])
    for row in range(first, last + 1):
        y = np.float64(row)
        long_edge = (y - long_y) * long_slope + long_x
        short_edge = (y - short_y) * short_slope + short_x
        left = np.int64(min(max(np.ceil(min(long_edge, short_edge)), x_min), x_max + 1))
        right = np.int64(min(np.floor(max(long_edge, short_edge)), x_max))
        right = max(right, left - 1)
        base = row_start[w] + row * strides[w]
        runs[base + left] += 1
        runs[base + right + 1] -= 1


flush_stale_caches(__name__)  # see core.jit_cache

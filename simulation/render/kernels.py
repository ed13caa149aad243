"""Compiled per-pixel loops (numba) for the renderer's hottest steps: normals, ground-truth images and their
per-instance stats, albedo with texture lookups, lighting terms (point and directional lights) and Blinn-Phong, the background of missed rays, metering, tone
mapping and sRGB encoding, and the
scanline marks of the occlusion rasteriser.

Each kernel does in one pass per point what whole-array numpy code did in a dozen passes, in the same
float32/float64 arithmetic and order (numba contracts no multiply-add without fastmath), so frames are the
same bit for bit as with that numpy code except where the specular lobe's exp/log round differently in
the last bit of a float32 (libm against numpy's own), which moves an sRGB level by one in about one
value in a few million. `nogil` lets the renderer's tile workers run them in parallel; `cache` keeps the
compiled code in __pycache__, so only the first process after a change compiles (a few seconds).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from simulation.render.shading import ENCODE_LEVELS, LUMINANCE_WEIGHTS

_F0 = np.float32(0.0)
_F1 = np.float32(1.0)
_F2 = np.float32(2.0)
_HALF = np.float32(0.5)
_TINY = np.float32(1e-12)
_DIELECTRIC_F0 = np.float32(0.04)  # specular reflectance of non-metals at normal incidence
_ENCODE_SCALE = np.float32(ENCODE_LEVELS)
_TWO_PI = 2.0 * np.pi
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
def albedo(mesh, prim, u, v, base_color, texture_of_mesh, nearest_of_mesh, corner_uvs, texels, first, width,
           height):
    """(3, N) float32 albedo of hits (mesh, prim, u, v): the mesh's base colour (`texture_of_mesh` -1), or
    its texture in the pool (shading.TexturePool: texels, first, width, height) at the UVs interpolated
    from `corner_uvs` (3 corners, 2, F). Texel centres sit at (i + 0.5) / size, coordinates wrap; bilinear
    (t00 (1 - fx) + t01 fx) (1 - fy) + (t10 (1 - fx) + t11 fx) fy, or the nearest texel where
    `nearest_of_mesh`. Wrapped texel indices are exact in float64 below 2^40 texels (a float32
    coordinate beyond 2^24 has no fraction left to sample with anyway); indices are clipped to the pool,
    so that absurd coordinates read some texel rather than fail."""
    n = len(mesh)
    out = np.empty((3, n), np.float32)
    last_texel = texels.shape[1] - 1
    for i in range(n):
        m = mesh[i]
        k = texture_of_mesh[m]
        if k < 0:
            for c in range(3):
                out[c, i] = base_color[c, m]
            continue
        f = prim[i]
        uu, vv = u[i], v[i]
        w = (_F1 - uu) - vv
        s = (corner_uvs[0, 0, f] * w + corner_uvs[1, 0, f] * uu) + corner_uvs[2, 0, f] * vv
        t = (corner_uvs[0, 1, f] * w + corner_uvs[1, 1, f] * uu) + corner_uvs[2, 1, f] * vv
        tex_w, tex_h = width[k], height[k]
        x = s * np.float32(tex_w) - _HALF
        y = (_F1 - t) * np.float32(tex_h) - _HALF
        near = nearest_of_mesh[m]
        if near:
            x += _HALF
            y += _HALF
        x0, y0 = np.floor(x), np.floor(y)
        # Wrapped texel index in float64, as shading._wrap.
        wy = np.float64(y0)
        wy -= np.floor(wy / tex_h) * tex_h
        wx = np.float64(x0)
        wx -= np.floor(wx / tex_w) * tex_w
        index = np.intp(wy * (tex_w + 1.0) + wx) + first[k]
        if near:
            j = min(max(index, 0), last_texel)
            for c in range(3):
                out[c, i] = texels[c, j]
            continue
        pitch = np.intp(tex_w) + 1
        fx, fy = x - x0, y - y0
        gx = _F1 - fx
        gy = _F1 - fy
        i00 = min(max(index, 0), last_texel)
        i01 = min(max(index + 1, 0), last_texel)
        i10 = min(max(index + pitch, 0), last_texel)
        i11 = min(max(index + pitch + 1, 0), last_texel)
        for c in range(3):
            top = (texels[c, i00] * gx + texels[c, i01] * fx) * gy
            bottom = (texels[c, i10] * gx + texels[c, i11] * fx) * fy
            out[c, i] = top + bottom
    return out


@njit(cache=True, nogil=True)
def surface_points(components, offset, eye, rays, complete, t, normals, shadow_bias,
                   bias_per_metre):
    """Hit points (N, 3), the viewed side's sign (N,), |n.v| (N,) and shadow-ray origins (N, 3) lifted off the
    viewed side by the bias, from the camera rays (`components` (3, R), `offset` (R,), `eye`) of hits `rays`
    (all R in order if `complete`) at distances `t` with unit normals (3, N)."""
    n = len(t)
    points = np.empty((n, 3), np.float32)
    origins = np.empty((n, 3), np.float32)
    side = np.empty(n, np.float32)
    cos_nv = np.empty(n, np.float32)
    for i in range(n):
        r = i if complete else rays[i]
        from_eye = offset[r] + t[i]
        d0, d1, d2 = components[0, r], components[1, r], components[2, r]
        n0, n1, n2 = normals[0, i], normals[1, i], normals[2, i]
        p0, p1, p2 = d0 * from_eye + eye[0], d1 * from_eye + eye[1], d2 * from_eye + eye[2]
        points[i, 0], points[i, 1], points[i, 2] = p0, p1, p2
        normal_dot_ray = (n0 * d0 + n1 * d1) + n2 * d2
        s = -_F1 if normal_dot_ray > _F0 else _F1
        side[i] = s
        cos_nv[i] = abs(normal_dot_ray)
        lift = s * (shadow_bias + bias_per_metre * from_eye)
        origins[i, 0], origins[i, 1], origins[i, 2] = p0 + n0 * lift, p1 + n1 * lift, p2 + n2 * lift
    return points, side, cos_nv, origins


@njit(cache=True, nogil=True)
def light_terms(points, components, offset, rays, complete, t, normals, side, light, radius_squared, shadow_bias,
                bias_per_metre):
    """Per point, for a light at `light` (3,) of squared radius `radius_squared`: cos(n, l) on the viewed
    side, cos(l, v) towards the eye, irradiance n.l / (d^2 + r^2), and the shadow ray (to_light (N, 3), reach (N,) as a fraction of it; 0 when the
    point faces away), as rgb.Lighting computes them."""
    n = len(t)
    cos_nl = np.empty(n, np.float32)
    cos_lv = np.empty(n, np.float32)
    irradiance = np.empty(n, np.float32)
    to_light = np.empty((n, 3), np.float32)
    reach = np.empty(n, np.float32)
    for i in range(n):
        r = i if complete else rays[i]
        from_eye = offset[r] + t[i]
        l0, l1, l2 = light[0] - points[i, 0], light[1] - points[i, 1], light[2] - points[i, 2]
        to_light[i, 0], to_light[i, 1], to_light[i, 2] = l0, l1, l2
        squared = (l0 * l0 + l1 * l1) + l2 * l2
        inverse = _F1 / max(np.sqrt(squared), _TINY)
        nl = ((normals[0, i] * l0 + normals[1, i] * l1) + normals[2, i] * l2) * (side[i] * inverse)
        lv = ((components[0, r] * l0 + components[1, r] * l1) + components[2, r] * l2) * -inverse
        n_dot_l = max(nl, _F0)
        cos_nl[i], cos_lv[i] = nl, lv
        irradiance[i] = n_dot_l / max(squared + radius_squared, _TINY)
        bias = shadow_bias + bias_per_metre * from_eye
        # Times 1 or 0 as in numpy, so that a negative reach next to the light stays -0.
        reach[i] = (_F1 - _F2 * bias * inverse) * (_F1 if n_dot_l > _F0 else _F0)
    return cos_nl, cos_lv, irradiance, to_light, reach


@njit(cache=True, nogil=True)
def directional_terms(components, rays, complete, normals, side, direction, reach_far):
    """light_terms for a light at infinity along the unit `direction` (3,) towards it: irradiance n.l (no
    falloff), and shadow rays along `direction` reaching `reach_far` (0 when the point faces away)."""
    n = len(side)
    cos_nl = np.empty(n, np.float32)
    cos_lv = np.empty(n, np.float32)
    irradiance = np.empty(n, np.float32)
    to_light = np.empty((n, 3), np.float32)
    reach = np.empty(n, np.float32)
    l0, l1, l2 = direction[0], direction[1], direction[2]
    for i in range(n):
        r = i if complete else rays[i]
        nl = ((normals[0, i] * l0 + normals[1, i] * l1) + normals[2, i] * l2) * side[i]
        lv = -((components[0, r] * l0 + components[1, r] * l1) + components[2, r] * l2)
        n_dot_l = max(nl, _F0)
        cos_nl[i], cos_lv[i], irradiance[i] = nl, lv, n_dot_l
        to_light[i, 0], to_light[i, 1], to_light[i, 2] = l0, l1, l2
        reach[i] = reach_far if n_dot_l > _F0 else _F0
    return cos_nl, cos_lv, irradiance, to_light, reach


@njit(cache=True, nogil=True)
def add_light(diffuse, specular, cos_nl, cos_nv, cos_lv, irradiance, intensity, tint, lit, mesh, exponent, scale,
              metallic):
    """Adds one light's weights times its colour `tint` (3,) to `diffuse` and `specular` (3, N), so that
    colour = albedo (ambient + diffuse) + specular; points where `lit` (N,) is False (0 elements: all lit)
    get nothing.

    Inputs per point: the cosines between the unit normal n, the direction to the light l and the
    direction to the viewer v; the irradiance the light delivers (n.l / d^2 included), scaled by its
    `intensity`; per mesh the lobe `exponent` and `scale` (shading.specular_lobe) and `metallic` (0
    elements: all 0). Lambert diffuse plus a normalised Blinn-Phong lobe; metals tint the specular with
    the albedo and lose their diffuse part: f0 = F0 (1 - m) + albedo m, reflected = albedo (1 - m) +
    f0 lobe. The half vector h = (l + v) / |l + v| only enters through n.h = (n.l + n.v) / sqrt(2 + 2 l.v).
    """
    every_lit = len(lit) == 0
    dielectric_only = len(metallic) == 0
    for i in range(len(cos_nl)):
        light = irradiance[i] * intensity
        # Points in shadow or facing away would add weights of exactly 0.
        if light == _F0 or not every_lit and not lit[i]:
            continue
        length = np.sqrt(max(_F2 + _F2 * cos_lv[i], _F0))
        n_dot_h = (cos_nl[i] + cos_nv[i]) / max(length, _TINY)
        n_dot_h = min(max(n_dot_h, _TINY), _F1)
        m = mesh[i]
        lobe = np.exp(np.log(n_dot_h) * exponent[m]) * scale[m] * light
        if dielectric_only:
            d, s = light, lobe * _DIELECTRIC_F0
        else:
            metal = metallic[m]
            plastic = _F1 - metal
            d, s = plastic * light + metal * lobe, _DIELECTRIC_F0 * plastic * lobe
        for c in range(3):
            diffuse[c, i] += tint[c] * d
            specular[c, i] += tint[c] * s


@njit(cache=True, nogil=True)
def compose(out, albedo, ambient, diffuse, specular, rays, complete):
    """Writes linear colour albedo (ambient + diffuse) + specular of the hits into `out` (3, count) at their
    rays `rays` (all in order if `complete`)."""
    for c in range(3):
        for i in range(albedo.shape[1]):
            r = i if complete else rays[i]
            out[c, r] = albedo[c, i] * (ambient[c] + diffuse[c, i]) + specular[c, i]


@njit(cache=True, nogil=True)
def fill_misses(out, hits, color):
    """Writes `color` (3,) into `out` (3, count) at every ray that is not in the sorted hit rays `hits`."""
    j = 0
    for r in range(out.shape[1]):
        if j < len(hits) and hits[j] == r:
            j += 1
            continue
        for c in range(3):
            out[c, r] = color[c]


@njit(cache=True, nogil=True)
def fill_misses_environment(out, hits, components, texels):
    """Writes into `out` (3, count), at every ray not in the sorted hit rays `hits`, the equirectangular
    image `texels` (3, H, W + 1; column W repeats column 0) looked up bilinearly along the ray's unit world
    direction (`components` (3, count)): column u = 0.5 - atan2(y, x) / 2pi, row v = 0.5 - asin(z) / pi
    from the top, texel centres at (i + 0.5) / size, wrapping around in u and clamped in v."""
    height, width = texels.shape[1], texels.shape[2] - 1
    j = 0
    for r in range(out.shape[1]):
        if j < len(hits) and hits[j] == r:
            j += 1
            continue
        dx, dy = np.float64(components[0, r]), np.float64(components[1, r])
        dz = min(max(np.float64(components[2, r]), -1.0), 1.0)
        x = (0.5 - np.arctan2(dy, dx) / _TWO_PI) * width - 0.5
        y = (0.5 - np.arcsin(dz) / np.pi) * height - 0.5
        x0, y0 = np.floor(x), np.floor(y)
        fx, fy = np.float32(x - x0), np.float32(y - y0)
        column = np.intp(x0) % width
        row0 = min(max(np.intp(y0), 0), height - 1)
        row1 = min(max(np.intp(y0) + 1, 0), height - 1)
        gx, gy = _F1 - fx, _F1 - fy
        for c in range(3):
            top = texels[c, row0, column] * gx + texels[c, row0, column + 1] * fx
            bottom = texels[c, row1, column] * gx + texels[c, row1, column + 1] * fx
            out[c, r] = top * gy + bottom * fy


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

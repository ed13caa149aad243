"""The colour of a tile's hit points in one compiled loop (numba): albedo with texture lookups, ambient plus
Lambert/Blinn-Phong per light (point or directional) with its shadow rays traced as Embree packets from the
loop itself, and the background of the rays that hit nothing.

The points are shaded GROUP at a time: their terms towards one light, then that light's shadow rays (the points
that face it, packed 8 to a packet), then its weights, light after light in the scene's order, so each point
adds its lights up in the same order and float32 arithmetic as one pass per light over the whole tile would.
One call per tile replaces a dozen kernel calls and numpy passes; the colours are the same bit for bit. (Written
as one loop rather than calls to per-point helpers: numba compiled a helper call inside it several times slower.)
A group's per-point terms are copied once into arrays of one component each, and each light's loops run over them
without skipping points: that took the shading (without its shadow rays) about 30% less time than reading the
tile's (3, N) rows and skipping the points a light does not reach. The specular power exp(log(n.h) e) is glibc's
expf and logf written out (libm_f32.py), which compile inline: as libm calls they took about a third of the
loop's time without shadow rays.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from core.jit_cache import flush_stale_caches
from simulation.render import packets
from simulation.render.irradiance import irradiance_at
from simulation.render.libm_f32 import exp_f32, log_f32

GROUP = 64  # points shaded together; their shadow rays towards a light fill packets
POINT_LIGHT, DIRECTIONAL_LIGHT = 0, 1  # `kinds` of shade()'s lights
_F0 = np.float32(0.0)
_F1 = np.float32(1.0)
_F2 = np.float32(2.0)
_HALF = np.float32(0.5)
_TINY = np.float32(1e-12)
_DIELECTRIC_F0 = np.float32(0.04)  # specular reflectance of non-metals at normal incidence
_TWO_PI = 2.0 * np.pi
# The R2 sequence's steps: 1 / g and 1 / g^2 for the plastic number g (the root of x^3 = x + 1).
_R2_A, _R2_B = 0.7548776662466927, 0.5698402909980532
_LOW_32 = np.uint64(0xFFFFFFFF)
_MIN_COS = np.float32(0.05)  # grazing hits: the footprint's stretch is capped at 20x
DISC_POINTS = 64
# A light giving a point less than this share of its unshadowed direct light casts a hard shadow there.
_SOFT_MIN_SHARE = np.float32(0.1)  # the soft shadows' disc pattern, which each pixel enters at a phase of its own


@njit(cache=True, nogil=True)
def shade(out, components, offset, eye, rays, complete, t, normals, mesh, prim, u, v, base_color, texture_of_mesh,
          nearest_of_mesh, corner_uvs, texels, first, width, height, exponent, lobe_scale, metallic, ambient, kinds,
          vectors, radii_squared, intensities, colors, shadows, occluded, scene, lanes, valid, arguments, shadow_bias,
          bias_per_metre, sun_reach, shadow_samples, ggx, alpha, indirect, mipmapped, spread, mip_texels, mip_first,
          mip_width, mip_height, mip_base, mip_count, size_bias, face_bias):
    """Writes the linear colour albedo (ambient + diffuse) + specular of each hit into out[:, rays[i]] (3, R).

    Hits i (all R rays in order if `complete`) lie at distance `t` along the camera rays (`components` (3, R),
    `offset` (R,), `eye`) on faces `prim` of meshes `mesh` at barycentrics (u, v) with unit normals (3, N); the
    side of the face the camera sees is shaded (normals of back faces flipped).

    Lights l: `kinds[l]` POINT_LIGHT at vectors[l] with squared radius radii_squared[l] (irradiance
    n.l / (d^2 + r^2)), or DIRECTIONAL_LIGHT towards the unit vectors[l] (irradiance n.l); intensities[l] and
    colors[l] (3,) scale it. With `shadows`, a point gets a light only if its shadow ray is unblocked: from the
    point lifted off its viewed side by shadow_bias + bias_per_metre * distance, towards the light (stopping
    twice the bias short of a point light, reaching `sun_reach` towards a directional one), traced with
    `occluded` (rtcOccluded8) through packets.occluded_into (the same packet, arguments and handle). Points facing away
    get nothing and trace nothing; a point within the bias of a point light counts as in shadow.

    Lambert diffuse plus a normalised Blinn-Phong lobe (`exponent`, `lobe_scale` per mesh, shading.specular_lobe);
    metals tint the specular with the albedo and lose their diffuse part: f0 = F0 (1 - m) + albedo m, reflected =
    albedo (1 - m) + f0 lobe (`metallic` per mesh; 0 elements: all 0). The half vector h = (l + v) / |l + v| only
    enters through n.h = (n.l + n.v) / sqrt(2 + 2 l.v).

    Soft shadows: with `shadow_samples` S > 1, a point light of radius r is a sphere: S shadow rays per point aim
    at points of the disc of radius r facing it (soft_shadow_offset: a per-ray rotated low-discrepancy pattern),
    and the light's weight is scaled by the unblocked share. With `ggx` the specular lobe is GGX (ggx_lobe, with
    `alpha` per mesh) with Schlick's Fresnel for dielectrics instead of Blinn-Phong. `indirect` (3, N), when not
    empty, adds each hit's indirect irradiance (irradiance.py) to the ambient term. With `mipmapped`, bilinear
    textures are filtered by distance: the level of detail of a hit is log2 of its footprint in texels (a pixel's
    ray cone of `spread` radians widened by 1 / |cos| on the surface; shading.MipMaps), and the two levels around
    it are blended (trilinear filtering; mip_* are the MipMaps' pool and tables).
    """
    n = len(t)
    # A group's terms, one array per component (the light loops read them with unit stride); the shadow rays'
    # origins and directions are rows of three, as packets.occluded_into reads them.
    origins, to_light = np.empty((GROUP, 3), np.float32), np.empty((GROUP, 3), np.float32)
    px, py, pz = np.empty(GROUP, np.float32), np.empty(GROUP, np.float32), np.empty(GROUP, np.float32)
    nx, ny, nz = np.empty(GROUP, np.float32), np.empty(GROUP, np.float32), np.empty(GROUP, np.float32)
    dx, dy, dz = np.empty(GROUP, np.float32), np.empty(GROUP, np.float32), np.empty(GROUP, np.float32)
    side, cos_nv, from_eye = np.empty(GROUP, np.float32), np.empty(GROUP, np.float32), np.empty(GROUP, np.float32)
    point_exponent, point_scale = np.empty(GROUP, np.float32), np.empty(GROUP, np.float32)
    point_metallic = np.zeros(GROUP, np.float32)
    cos_nl, cos_lv = np.empty(GROUP, np.float32), np.empty(GROUP, np.float32)
    irradiance, reach = np.empty(GROUP, np.float32), np.empty(GROUP, np.float32)
    blocked = np.zeros(GROUP, np.bool_)  # stays unblocked without shadows
    unblocked = np.empty(GROUP, np.float32)  # share of a soft shadow's rays that reach the light
    sample_to_light = np.empty((GROUP, 3), np.float32)
    sample_reach = np.empty(GROUP, np.float32)
    point_alpha = np.empty(GROUP, np.float32)
    phase = np.empty(GROUP, np.int64)  # each point's start in the soft shadows' disc pattern
    basis = np.empty((GROUP, 6), np.float32)  # two unit vectors across each point's direction to a light
    total_direct = np.zeros(GROUP, np.float32)  # each point's unshadowed direct light from every light
    ray_count = np.empty(GROUP, np.int64)  # each point's shadow rays towards the light at hand
    has_indirect = indirect.shape[1] > 0
    # The lights' sums per channel, in arrays of their own: as (3, GROUP) rows they measured ~8% slower.
    diffuse_r, diffuse_g, diffuse_b = (np.empty(GROUP, np.float32), np.empty(GROUP, np.float32),
                                       np.empty(GROUP, np.float32))
    specular_r, specular_g, specular_b = (np.empty(GROUP, np.float32), np.empty(GROUP, np.float32),
                                          np.empty(GROUP, np.float32))
    albedo = np.empty((3, GROUP), np.float32)
    lane_ray = np.empty(packets.LANES, np.int64)
    last_texel = texels.shape[1] - 1
    dielectric_only = len(metallic) == 0
    for start in range(0, n, GROUP):
        count = min(GROUP, n - start)
        for k in range(count):
            i = start + k
            r = i if complete else rays[i]
            distance = offset[r] + t[i]
            from_eye[k] = distance
            d0, d1, d2 = components[0, r], components[1, r], components[2, r]
            dx[k], dy[k], dz[k] = d0, d1, d2
            n0, n1, n2 = normals[0, i], normals[1, i], normals[2, i]
            nx[k], ny[k], nz[k] = n0, n1, n2
            p0, p1, p2 = d0 * distance + eye[0], d1 * distance + eye[1], d2 * distance + eye[2]
            px[k], py[k], pz[k] = p0, p1, p2
            normal_dot_ray = (n0 * d0 + n1 * d1) + n2 * d2
            s = -_F1 if normal_dot_ray > _F0 else _F1
            side[k] = s
            cos_nv[k] = abs(normal_dot_ray)
            lift = s * (shadow_bias + bias_per_metre * distance)
            origins[k, 0], origins[k, 1], origins[k, 2] = p0 + n0 * lift, p1 + n1 * lift, p2 + n2 * lift
            m = mesh[i]
            point_exponent[k], point_scale[k] = exponent[m], lobe_scale[m]
            if ggx:
                point_alpha[k] = alpha[m]
            if shadow_samples > 1:
                phase[k] = _pattern_phase(r)
            if not dielectric_only:
                point_metallic[k] = metallic[m]
            diffuse_r[k], diffuse_g[k], diffuse_b[k] = _F0, _F0, _F0
            specular_r[k], specular_g[k], specular_b[k] = _F0, _F0, _F0
        if shadows and shadow_samples > 1:
            _direct_totals(total_direct, count, px, py, pz, nx, ny, nz, side, kinds, vectors, radii_squared,
                           intensities)
        for light in range(len(kinds)):
            l0, l1, l2 = vectors[light, 0], vectors[light, 1], vectors[light, 2]
            radius_squared = radii_squared[light]
            if kinds[light] == DIRECTIONAL_LIGHT:
                for k in range(count):
                    nl = ((nx[k] * l0 + ny[k] * l1) + nz[k] * l2) * side[k]
                    lv = -((dx[k] * l0 + dy[k] * l1) + dz[k] * l2)
                    n_dot_l = max(nl, _F0)
                    cos_nl[k], cos_lv[k], irradiance[k] = nl, lv, n_dot_l
                    to_light[k, 0], to_light[k, 1], to_light[k, 2] = l0, l1, l2
                    reach[k] = sun_reach if n_dot_l > _F0 else _F0
            else:
                for k in range(count):
                    a0, a1, a2 = l0 - px[k], l1 - py[k], l2 - pz[k]
                    to_light[k, 0], to_light[k, 1], to_light[k, 2] = a0, a1, a2
                    squared = (a0 * a0 + a1 * a1) + a2 * a2
                    inverse = _F1 / max(np.sqrt(squared), _TINY)
                    nl = ((nx[k] * a0 + ny[k] * a1) + nz[k] * a2) * (side[k] * inverse)
                    lv = ((dx[k] * a0 + dy[k] * a1) + dz[k] * a2) * -inverse
                    n_dot_l = max(nl, _F0)
                    cos_nl[k], cos_lv[k] = nl, lv
                    irradiance[k] = n_dot_l / max(squared + radius_squared, _TINY)
                    bias = shadow_bias + bias_per_metre * from_eye[k]
                    # Times 1 or 0, so that a negative reach next to the light stays -0 as in numpy.
                    reach[k] = (_F1 - _F2 * bias * inverse) * (_F1 if n_dot_l > _F0 else _F0)
            soft = shadows and shadow_samples > 1 and kinds[light] == POINT_LIGHT and radius_squared > _F0
            if soft:
                for k in range(count):
                    # A light that gives a point little of its direct light gets one ray (a hard shadow): its
                    # penumbra would hardly show, and most such lights stand behind walls in other rooms.
                    major = irradiance[k] * intensities[light] >= _SOFT_MIN_SHARE * total_direct[k]
                    ray_count[k] = shadow_samples if major else 1
                _soft_visibility(unblocked, blocked, count, to_light, reach, from_eye, phase, np.sqrt(radius_squared),
                                 ray_count, shadow_bias, bias_per_metre, basis, sample_to_light, sample_reach,
                                 occluded, scene, origins, lanes, valid, arguments, lane_ray)
            elif shadows:
                packets.occluded_into(blocked, count, occluded, scene, origins, to_light, reach, lanes, valid,
                                      arguments, lane_ray)
            intensity = intensities[light]
            c0, c1, c2 = colors[light, 0], colors[light, 1], colors[light, 2]
            for k in range(count):
                # Points in shadow or facing away get a weight of 0 and add exactly 0 (0 + x is x): one loop
                # without skips runs faster than skipping them.
                weight = _F0 if blocked[k] else irradiance[k] * intensity
                if soft:
                    weight *= unblocked[k]
                length = np.sqrt(max(_F2 + _F2 * cos_lv[k], _F0))
                n_dot_h = (cos_nl[k] + cos_nv[k]) / max(length, _TINY)
                n_dot_h = min(max(n_dot_h, _TINY), _F1)
                metal = point_metallic[k]
                plastic = _F1 - metal
                if ggx:
                    lobe = ggx_lobe(max(cos_nl[k], _F0), cos_nv[k], n_dot_h, point_alpha[k]) * weight
                    fresnel = schlick(_DIELECTRIC_F0, _HALF * length)
                    d, s = plastic * weight + metal * lobe, fresnel * plastic * lobe
                else:
                    lobe = exp_f32(log_f32(n_dot_h) * point_exponent[k]) * point_scale[k] * weight
                    # A dielectric's metallic 0 gives d = weight + 0 and s = F0 lobe exactly.
                    d, s = plastic * weight + metal * lobe, _DIELECTRIC_F0 * plastic * lobe
                diffuse_r[k] += c0 * d
                diffuse_g[k] += c1 * d
                diffuse_b[k] += c2 * d
                specular_r[k] += c0 * s
                specular_g[k] += c1 * s
                specular_b[k] += c2 * s
        for k in range(count):
            # Albedo: the mesh's base colour (texture_of_mesh -1), or its texture in the pool (shading.TexturePool:
            # texels, first, width, height) at the UVs interpolated from corner_uvs (3 corners, 2, F). Texel
            # centres sit at (i + 0.5) / size, coordinates wrap; bilinear (t00 (1 - fx) + t01 fx) (1 - fy) +
            # (t10 (1 - fx) + t11 fx) fy, or the nearest texel where nearest_of_mesh. Wrapped texel indices are
            # exact in float64 below 2^40 texels (a float32 coordinate beyond 2^24 has no fraction left to sample
            # with anyway); indices are clipped to the pool, so that absurd coordinates read some texel rather
            # than fail. (Written out here: as a function call numba compiles it several times slower.)
            i = start + k
            m = mesh[i]
            tex = texture_of_mesh[m]
            if tex < 0:
                for c in range(3):
                    albedo[c, k] = base_color[c, m]
                continue
            f = prim[i]
            uu, vv = u[i], v[i]
            w = (_F1 - uu) - vv
            s = (corner_uvs[0, 0, f] * w + corner_uvs[1, 0, f] * uu) + corner_uvs[2, 0, f] * vv
            tv = (corner_uvs[0, 1, f] * w + corner_uvs[1, 1, f] * uu) + corner_uvs[2, 1, f] * vv
            if mipmapped and mip_count[tex] > 0:
                lod = np.float32(np.log2(max(from_eye[k] * spread / max(cos_nv[k], _MIN_COS), _TINY)))
                lod += face_bias[f] + size_bias[tex]
                if lod > _F0:
                    _trilinear(albedo, k, lod, s, tv, texels, first, width, height, tex, mip_texels, mip_first,
                               mip_width, mip_height, mip_base[tex], mip_count[tex])
                    continue
            tex_w, tex_h = width[tex], height[tex]
            x = s * np.float32(tex_w) - _HALF
            y = (_F1 - tv) * np.float32(tex_h) - _HALF
            near = nearest_of_mesh[m]
            if near:
                x += _HALF
                y += _HALF
            x0, y0 = np.floor(x), np.floor(y)
            wy = np.float64(y0)
            if not 0.0 <= wy < tex_h:  # most coordinates lie inside: the division would leave them as they are
                wy -= np.floor(wy / tex_h) * tex_h
            wx = np.float64(x0)
            if not 0.0 <= wx < tex_w:
                wx -= np.floor(wx / tex_w) * tex_w
            index = np.intp(wy * (tex_w + 1.0) + wx) + first[tex]
            if near:
                j = min(max(index, 0), last_texel)
                for c in range(3):
                    albedo[c, k] = texels[c, j]
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
                albedo[c, k] = top + bottom
        for k in range(count):
            i = start + k
            r = i if complete else rays[i]
            if has_indirect:
                out[0, r] = albedo[0, k] * ((ambient[0] + indirect[0, i]) + diffuse_r[k]) + specular_r[k]
                out[1, r] = albedo[1, k] * ((ambient[1] + indirect[1, i]) + diffuse_g[k]) + specular_g[k]
                out[2, r] = albedo[2, k] * ((ambient[2] + indirect[2, i]) + diffuse_b[k]) + specular_b[k]
                continue
            out[0, r] = albedo[0, k] * (ambient[0] + diffuse_r[k]) + specular_r[k]
            out[1, r] = albedo[1, k] * (ambient[1] + diffuse_g[k]) + specular_g[k]
            out[2, r] = albedo[2, k] * (ambient[2] + diffuse_b[k]) + specular_b[k]


@njit(cache=True, nogil=True, inline="always")
def _bilinear(texels, first, width, height, entry, s, tv):
    """Texture `entry` of a pool (shading.TexturePool) at UV (s, tv), bilinear with wrapping, as (r, g, b)."""
    tex_w, tex_h = width[entry], height[entry]
    x = s * np.float32(tex_w) - _HALF
    y = (_F1 - tv) * np.float32(tex_h) - _HALF
    x0, y0 = np.floor(x), np.floor(y)
    wy, wx = np.float64(y0), np.float64(x0)
    if not 0.0 <= wy < tex_h:  # as shade's own lookup: most coordinates need no wrapping
        wy -= np.floor(wy / tex_h) * tex_h
    if not 0.0 <= wx < tex_w:
        wx -= np.floor(wx / tex_w) * tex_w
    last = texels.shape[1] - 1
    index = np.intp(wy * (tex_w + 1.0) + wx) + first[entry]
    pitch = np.intp(tex_w) + 1
    fx, fy = x - x0, y - y0
    gx, gy = _F1 - fx, _F1 - fy
    i00, i01 = min(max(index, 0), last), min(max(index + 1, 0), last)
    i10, i11 = min(max(index + pitch, 0), last), min(max(index + pitch + 1, 0), last)
    r = (texels[0, i00] * gx + texels[0, i01] * fx) * gy + (texels[0, i10] * gx + texels[0, i11] * fx) * fy
    g = (texels[1, i00] * gx + texels[1, i01] * fx) * gy + (texels[1, i10] * gx + texels[1, i11] * fx) * fy
    b = (texels[2, i00] * gx + texels[2, i01] * fx) * gy + (texels[2, i10] * gx + texels[2, i11] * fx) * fy
    return r, g, b


@njit(cache=True, nogil=True, inline="always")
def _trilinear(albedo, k, lod, s, tv, texels, first, width, height, tex, mip_texels, mip_first, mip_width,
               mip_height, base, count):
    """albedo[:, k]: texture `tex` at level of detail `lod` > 0, the levels floor(lod) and the next blended
    (level 0 is the texture pool's, levels >= 1 the mip pool's; beyond the last level, the last)."""
    level = min(np.int64(np.floor(lod)), count)
    blend = min(lod - np.float32(level), _F1) if level < count else _F0
    if level == 0:
        r0, g0, b0 = _bilinear(texels, first, width, height, tex, s, tv)
    else:
        r0, g0, b0 = _bilinear(mip_texels, mip_first, mip_width, mip_height, base + level - 1, s, tv)
    if blend > _F0:
        r1, g1, b1 = _bilinear(mip_texels, mip_first, mip_width, mip_height, base + level, s, tv)
        keep = _F1 - blend
        r0, g0, b0 = r0 * keep + r1 * blend, g0 * keep + g1 * blend, b0 * keep + b1 * blend
    albedo[0, k], albedo[1, k], albedo[2, k] = r0, g0, b0


@njit(cache=True, nogil=True, inline="always")
def ggx_lobe(n_dot_l, n_dot_v, n_dot_h, alpha):
    """pi times the GGX microfacet BRDF without Fresnel, D(h) V(l, v), with the height-correlated Smith visibility
    V = 0.5 / (n.l sqrt(n.v^2 (1 - a^2) + a^2) + n.v sqrt(n.l^2 (1 - a^2) + a^2)) (Heitz 2014): times a light's
    weight (irradiance / pi in the loop's units) it is the reflected radiance."""
    a2 = alpha * alpha
    denominator = n_dot_h * n_dot_h * (a2 - _F1) + _F1
    distribution = a2 / max(denominator * denominator, _TINY)  # times 1 / pi, which the pi in front cancels
    view = n_dot_l * np.sqrt(n_dot_v * n_dot_v * (_F1 - a2) + a2)
    light = n_dot_v * np.sqrt(n_dot_l * n_dot_l * (_F1 - a2) + a2)
    return distribution * _HALF / max(view + light, _TINY)


@njit(cache=True, nogil=True, inline="always")
def schlick(f0, l_dot_h):
    """Schlick's Fresnel reflectance f0 + (1 - f0) (1 - l.h)^5."""
    x = _F1 - min(max(l_dot_h, _F0), _F1)
    x2 = x * x
    return f0 + (_F1 - f0) * (x2 * x2 * x)


def disc_pattern(count: int) -> np.ndarray:
    """`count` points (count, 2) float32 of the unit disc: the R2 low-discrepancy sequence (Roberts 2018) mapped
    with equal areas (radius sqrt(u), angle 2 pi v)."""
    k = np.arange(1, count + 1)
    u, v = (k * _R2_A) % 1.0, (k * _R2_B) % 1.0
    return np.stack([np.sqrt(u) * np.cos(_TWO_PI * v), np.sqrt(u) * np.sin(_TWO_PI * v)], axis=1).astype(np.float32)


_DISC = disc_pattern(DISC_POINTS)


@njit(cache=True, nogil=True, inline="always")
def _pattern_phase(ray):
    """Where ray `ray`'s soft shadow samples start in _DISC: a hash of its index (murmur3's finaliser), so that
    neighbouring pixels take different points and the same frame gives the same bytes."""
    h = (np.uint64(ray) * np.uint64(0x9E3779B1)) & _LOW_32
    h ^= h >> np.uint64(15)
    h = (h * np.uint64(0x85EBCA77)) & _LOW_32
    h ^= h >> np.uint64(13)
    return np.int64(h % np.uint64(DISC_POINTS))


@njit(cache=True, nogil=True, inline="always")
def _direct_totals(total, count, px, py, pz, nx, ny, nz, side, kinds, vectors, radii_squared, intensities):
    """total[:count]: each point's unshadowed direct irradiance summed over the lights (as shade weighs them)."""
    for k in range(count):
        total[k] = _F0
    for light in range(len(kinds)):
        l0, l1, l2 = vectors[light, 0], vectors[light, 1], vectors[light, 2]
        intensity = intensities[light]
        for k in range(count):
            if kinds[light] == DIRECTIONAL_LIGHT:
                nl = ((nx[k] * l0 + ny[k] * l1) + nz[k] * l2) * side[k]
                total[k] += max(nl, _F0) * intensity
                continue
            a0, a1, a2 = l0 - px[k], l1 - py[k], l2 - pz[k]
            squared = (a0 * a0 + a1 * a1) + a2 * a2
            nl = ((nx[k] * a0 + ny[k] * a1) + nz[k] * a2) * side[k] / max(np.sqrt(squared), _TINY)
            total[k] += max(nl, _F0) / max(squared + radii_squared[light], _TINY) * intensity


@njit(cache=True, nogil=True, inline="always")
def _soft_visibility(unblocked, blocked, count, to_light, reach, from_eye, phase, radius, samples, shadow_bias,
                     bias_per_metre, basis, sample_to_light, sample_reach, occluded, scene, origins, lanes, valid,
                     arguments, lane_ray):
    """The unblocked share (unblocked[:count]) of each point's samples[k] shadow rays towards a spherical light of
    `radius` at to_light (from the point, (count, 3)); points of reach[k] <= 0 get 0. The rays aim at points of the
    light's disc facing the point, taken from _DISC from the point's `phase` on in antithetic pairs (x, -x): each
    ray alone is an unbiased sample of the disc, and a pair straddles any shadow edge through the disc's centre, so
    two rays already give the middle of a penumbra its half. A point of one ray aims at the centre (a hard
    shadow). blocked[:count] is left False."""
    for k in range(count):
        a0, a1, a2 = to_light[k, 0], to_light[k, 1], to_light[k, 2]
        length = max(np.sqrt((a0 * a0 + a1 * a1) + a2 * a2), _TINY)
        n0, n1, n2 = a0 / length, a1 / length, a2 / length
        # An orthonormal pair across the direction (Duff et al. 2017), times the radius.
        sign = _F1 if n2 >= _F0 else -_F1
        q = -_F1 / (sign + n2)
        w = n0 * n1 * q
        basis[k, 0], basis[k, 1], basis[k, 2] = (_F1 + sign * n0 * n0 * q) * radius, sign * w * radius, \
            -sign * n0 * radius
        basis[k, 3], basis[k, 4], basis[k, 5] = w * radius, (sign + n1 * n1 * q) * radius, -n1 * radius
        unblocked[k] = _F0
    most = 0
    for k in range(count):
        most = max(most, samples[k])
    for sample in range(most):
        pair, flip = sample // 2, _F1 if sample % 2 == 0 else -_F1
        for k in range(count):
            if reach[k] <= _F0 or sample >= samples[k]:
                sample_reach[k] = _F0  # facing away, or done: no ray
                continue
            point = (phase[k] + pair) % DISC_POINTS
            x, y = _DISC[point, 0] * flip, _DISC[point, 1] * flip
            if samples[k] == 1:
                x, y = _F0, _F0
            a0 = to_light[k, 0] + x * basis[k, 0] + y * basis[k, 3]
            a1 = to_light[k, 1] + x * basis[k, 1] + y * basis[k, 4]
            a2 = to_light[k, 2] + x * basis[k, 2] + y * basis[k, 5]
            sample_to_light[k, 0], sample_to_light[k, 1], sample_to_light[k, 2] = a0, a1, a2
            bias = shadow_bias + bias_per_metre * from_eye[k]
            sample_reach[k] = _F1 - _F2 * bias / max(np.sqrt((a0 * a0 + a1 * a1) + a2 * a2), _TINY)
        packets.occluded_into(blocked, count, occluded, scene, origins, sample_to_light, sample_reach, lanes, valid,
                              arguments, lane_ray)
        for k in range(count):
            if sample_reach[k] > _F0 and not blocked[k]:
                unblocked[k] += _F1
    for k in range(count):
        unblocked[k] /= np.float32(samples[k])
        blocked[k] = False


@njit(cache=True, nogil=True)
def indirect_of_hits(cubes, valid, origin, spacing, components, offset, eye, rays, complete, t, normals):
    """Indirect irradiance (3, N) of each hit i (see shade for the arguments) from the frame's probe cubes
    (irradiance.irradiance_at), on the side of its face the camera sees."""
    n = len(t)
    out = np.empty((3, n), np.float32)
    for i in range(n):
        r = i if complete else rays[i]
        distance = offset[r] + t[i]
        d0, d1, d2 = components[0, r], components[1, r], components[2, r]
        n0, n1, n2 = normals[0, i], normals[1, i], normals[2, i]
        if (n0 * d0 + n1 * d1) + n2 * d2 > _F0:
            n0, n1, n2 = -n0, -n1, -n2
        out[0, i], out[1, i], out[2, i] = irradiance_at(cubes, valid, origin, spacing, d0 * distance + eye[0],
                                                        d1 * distance + eye[1], d2 * distance + eye[2], n0, n1, n2)
    return out


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


flush_stale_caches(__name__)  # see core.jit_cache

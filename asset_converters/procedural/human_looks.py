"""Skin, face, hair, clothing and shoe textures of the procedural humans, with seeded colour variation.

A person's look (`Look`) is drawn first: a skin tone, hair and eye colours, a top and a bottom (a fabric
style with colours from palettes of plausible, muted clothing colours), shoes. The textures are then painted
from it. Colours are given sRGB-encoded in [0, 1], as texture images store them; the painting works in linear
RGB, where a tint multiplies light the way a pigment does, and encodes once.

- Skin tones are drawn in CIELAB on a ramp from deep brown to fair (SKIN_LAB), with a little jitter, and get
  low-frequency mottling (melanin and blood) and fine pores.
- The head has a texture of its own with a face painted on the head's UV grid, converted to head-relative
  lengths (`HeadGrid`) so the features keep their shape: eyes in shadowed sockets, brows in the hair colour,
  the shade of the nose and the nostrils, redder cheeks and lips, the rims of the ears, sometimes stubble,
  and the hair on the scalp below the hair mesh's edge (or alone: a buzz cut).
- Hair: strands (noise stretched along v, which runs from the hairline to the crown or down a fall of hair).
- Clothes: knit or woven cotton, stripes, a check, denim with a faded indigo and golden stitching, chinos;
  creases across the limbs and the side seams (u = 1/4 and 3/4; u = 1/2 is the front of every body tube).
- Shoes: an upper over a sole band (shoe UVs run v = 0 at the sole to v = 1 on top).

Texture sizes are modest: people fill a fraction of a 640x480 view.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from asset_converters.procedural.textures import Color, periodic_noise, stretched_noise
from core.color import linear_to_srgb, srgb_to_linear

CLOTH_SIZE = 256  # texels around a body tube and per CLOTH_TILE along it
SKIN_SIZE = 128
HAIR_SIZE = 256
FACE_SHAPE = (128, 256)  # rows (chin to crown), columns (once round the head)
SHOE_SIZE = 64

SKIN_ROUGHNESS = 0.55
HAIR_ROUGHNESS = 0.5
COTTON_ROUGHNESS = 0.85
DENIM_ROUGHNESS = 0.9
SHOE_ROUGHNESS = 0.5

# Skin tones: CIELAB (L*, a*, b*, D65) stations from deep brown to fair; a tone is drawn uniformly along the
# ramp. L* spans the range colorimetric surveys of skin report, hue angles (b*/a*) stay in skin's 45-60 deg.
SKIN_LAB = ((32.0, 11.0, 14.0), (40.0, 14.0, 16.0), (48.0, 15.0, 20.0), (56.0, 14.0, 21.0), (63.0, 15.0, 19.0),
            (71.0, 11.0, 15.0))
SKIN_LAB_JITTER = (1.0, 1.5, 1.5)  # uniform +- per L*, a*, b*
D65_WHITE = (0.95047, 1.0, 1.08883)  # CIE XYZ of the sRGB white point
XYZ_TO_LINEAR_SRGB = np.array([[3.2406, -1.5372, -0.4986], [-0.9689, 1.8758, 0.0415], [0.0557, -0.2040, 1.0570]])
LAB_EPSILON = 6.0 / 29.0  # CIELAB's switch between the cube and the linear segment

HAIR_COLORS = ((0.09, 0.07, 0.06), (0.20, 0.13, 0.09), (0.36, 0.24, 0.15), (0.52, 0.38, 0.24), (0.64, 0.50, 0.32),
               (0.80, 0.68, 0.46), (0.45, 0.20, 0.10), (0.68, 0.36, 0.18), (0.58, 0.57, 0.55), (0.82, 0.81, 0.78))
HAIR_NAMES = ("black", "dark brown", "brown", "light brown", "dark blond", "blond", "auburn", "ginger", "grey", "white")
HAIR_WEIGHTS = (0.30, 0.25, 0.14, 0.08, 0.05, 0.04, 0.03, 0.02, 0.06, 0.03)
FAIR_HAIR = (3, 4, 5, 6, 7)  # colours that go with lighter skin: their weight fades with the skin's L*
FAIR_HAIR_L = (45.0, 65.0)  # L* from which on fair hair appears, and by which it has its full weight
EYE_COLORS = ((0.22, 0.13, 0.07), (0.36, 0.22, 0.10), (0.45, 0.36, 0.18), (0.35, 0.45, 0.30), (0.36, 0.50, 0.65),
              (0.45, 0.50, 0.55))  # dark brown, brown, hazel, green, blue, grey
EYE_WEIGHTS = (0.45, 0.2, 0.12, 0.07, 0.1, 0.06)
STUBBLE_CHANCE = 0.3

TOP_COLORS = ((0.90, 0.90, 0.88), (0.88, 0.84, 0.74), (0.58, 0.58, 0.57), (0.24, 0.25, 0.27), (0.07, 0.07, 0.08),
              (0.12, 0.16, 0.28), (0.62, 0.71, 0.82), (0.36, 0.47, 0.62), (0.37, 0.39, 0.24), (0.15, 0.29, 0.21),
              (0.40, 0.11, 0.15), (0.60, 0.30, 0.19), (0.78, 0.60, 0.24), (0.80, 0.59, 0.58), (0.77, 0.69, 0.57),
              (0.14, 0.38, 0.40))  # white, cream, heather grey, charcoal, black, navy, powder blue, mid blue, olive,
# forest, burgundy, rust, mustard, dusty pink, beige, teal
BOTTOM_COLORS = ((0.69, 0.60, 0.44), (0.74, 0.71, 0.63), (0.13, 0.16, 0.26), (0.08, 0.08, 0.09), (0.25, 0.25, 0.27),
                 (0.33, 0.34, 0.22), (0.35, 0.25, 0.18), (0.46, 0.46, 0.47))  # khaki, stone, navy, black, charcoal,
# olive, brown, grey
DENIM_COLORS = ((0.12, 0.16, 0.27), (0.23, 0.32, 0.47), (0.44, 0.53, 0.66), (0.13, 0.13, 0.15))  # raw, mid, light
# wash, black
SHOES = (((0.06, 0.06, 0.06), (0.06, 0.06, 0.06)), ((0.88, 0.88, 0.86), (0.9, 0.9, 0.88)),
         ((0.30, 0.18, 0.10), (0.15, 0.10, 0.07)), ((0.45, 0.45, 0.46), (0.88, 0.88, 0.86)),
         ((0.13, 0.16, 0.27), (0.88, 0.88, 0.86)), ((0.07, 0.07, 0.08), (0.88, 0.88, 0.86)))  # (upper, sole)
COLOR_JITTER = 0.05  # per-channel relative deviation from a palette colour
BRIGHTNESS_JITTER = 0.1  # overall relative deviation

TOP_STYLES = ("jersey", "heather", "stripes", "check", "oxford")
BOTTOM_STYLES = ("denim", "denim", "chino", "heather")  # jeans twice as likely


@dataclass(frozen=True)
class Garment:
    style: str  # one of TOP_STYLES or BOTTOM_STYLES
    color: Color  # sRGB
    accent: Color  # sRGB: the second colour of stripes and checks


@dataclass(frozen=True)
class Look:
    skin: Color  # sRGB
    hair: Color
    eyes: Color
    stubble: bool
    top: Garment
    bottom: Garment
    shoe_upper: Color
    shoe_sole: Color


def lab_to_srgb(lab: np.ndarray) -> np.ndarray:
    """CIELAB (D65) -> sRGB in [0, 1] (clipped to the gamut)."""
    lightness, a, b = np.moveaxis(np.asarray(lab, dtype=np.float64), -1, 0)
    fy = (lightness + 16.0) / 116.0
    f = np.stack([fy + a / 500.0, fy, fy - b / 200.0], axis=-1)
    xyz = np.where(f > LAB_EPSILON, f**3, 3 * LAB_EPSILON**2 * (f - 4.0 / 29.0)) * np.asarray(D65_WHITE)
    return linear_to_srgb(xyz @ XYZ_TO_LINEAR_SRGB.T)


def _tuple(color: np.ndarray) -> Color:
    return tuple(float(c) for c in color)


def skin_tone(rng: np.random.Generator) -> Color:
    """An sRGB skin colour drawn along the SKIN_LAB ramp."""
    position = rng.uniform() * (len(SKIN_LAB) - 1)
    low = min(int(position), len(SKIN_LAB) - 2)
    lab = np.asarray(SKIN_LAB[low]) + (np.asarray(SKIN_LAB[low + 1]) - SKIN_LAB[low]) * (position - low)
    lab = lab + rng.uniform(-1, 1, 3) * SKIN_LAB_JITTER
    return _tuple(lab_to_srgb(lab))


def _pick(rng: np.random.Generator, palette: tuple, weights: tuple[float, ...] | None = None):
    p = None if weights is None else np.asarray(weights) / np.sum(weights)
    return palette[int(rng.choice(len(palette), p=p))]


def _vary(rng: np.random.Generator, color: Color) -> Color:
    """A palette colour with its channels and brightness nudged, so two navy shirts differ a little."""
    factor = (1 + rng.uniform(-COLOR_JITTER, COLOR_JITTER, 3)) * (1 + rng.uniform(-BRIGHTNESS_JITTER,
                                                                                BRIGHTNESS_JITTER))
    return _tuple(np.clip(np.asarray(color) * factor, 0.0, 1.0))


def _lightness(srgb: Color) -> float:
    """CIE L* of an sRGB colour."""
    y = float(srgb_to_linear(np.asarray(srgb)) @ (0.2126, 0.7152, 0.0722))
    return 116.0 * (y ** (1 / 3) if y > LAB_EPSILON**3 else y / (3 * LAB_EPSILON**2) + 4.0 / 29.0) - 16.0


def hair_color(rng: np.random.Generator, skin: Color) -> Color:
    fair = np.clip((_lightness(skin) - FAIR_HAIR_L[0]) / (FAIR_HAIR_L[1] - FAIR_HAIR_L[0]), 0.0, 1.0)
    weights = [w * (fair if i in FAIR_HAIR else 1.0) for i, w in enumerate(HAIR_WEIGHTS)]
    return _vary(rng, _pick(rng, HAIR_COLORS, tuple(weights)))


def _garment(rng: np.random.Generator, styles: tuple[str, ...], palette: tuple[Color, ...]) -> Garment:
    style = _pick(rng, styles)
    colors = DENIM_COLORS if style == "denim" else palette
    first = int(rng.integers(len(colors)))
    second = (first + 1 + int(rng.integers(len(colors) - 1))) % len(colors)  # never the same colour twice
    return Garment(style, _vary(rng, colors[first]), _vary(rng, colors[second]))


def draw_look(rng: np.random.Generator) -> Look:
    skin = skin_tone(rng)
    hair = hair_color(rng, skin)
    eyes = _vary(rng, _pick(rng, EYE_COLORS, EYE_WEIGHTS))
    stubble = bool(rng.uniform() < STUBBLE_CHANCE)
    top = _garment(rng, TOP_STYLES, TOP_COLORS)
    bottom = _garment(rng, BOTTOM_STYLES, BOTTOM_COLORS)
    upper, sole = _pick(rng, SHOES)
    return Look(skin, hair, eyes, stubble, top, bottom, _vary(rng, upper), sole)


def encode(linear: np.ndarray) -> np.ndarray:
    """(H, W, 3) linear colour -> uint8 sRGB."""
    return np.round(linear_to_srgb(linear) * 255).astype(np.uint8)


# ---------------------------------------------------------------- skin and face

MOTTLE = 0.10  # relative brightness swing of the low-frequency mottling
BLOOD = 0.06  # relative swing of the red against green and blue
PORES = 0.04  # relative swing of the fine noise
PORE_FALLOFF = 0.3  # nearly white: texel-sized grain


def _skin_field(rng: np.random.Generator, skin: Color, shape: tuple[int, int]) -> np.ndarray:
    """(H, W, 3) linear skin with mottling, redness variation and pores; tiles both ways."""
    mottle = stretched_noise(rng, shape, 1.0) - 0.5
    blood = stretched_noise(rng, shape, 1.0, 1.5) - 0.5
    pores = stretched_noise(rng, shape, 1.0, PORE_FALLOFF) - 0.5
    brightness = 1 + MOTTLE * mottle + PORES * pores
    red = BLOOD * blood[..., None] * np.array([1.0, -0.5, -0.5])
    return srgb_to_linear(np.asarray(skin)) * brightness[..., None] * (1 + red)


def skin_texture(rng: np.random.Generator, skin: Color) -> np.ndarray:
    return encode(_skin_field(rng, skin, (SKIN_SIZE, SKIN_SIZE)))


@dataclass(frozen=True)
class HeadGrid:
    """Where the face texture's texels lie on the head ellipsoid, in units of its vertical half-axis.

    The head tube (humanoid.py) runs v = 0 at the chin ring to v = 1 at the crown ring, at heights `chin` and
    `crown` (cosines of their polar angles), and u = 1/2 + a / 2 pi round it (a = 0 in front, towards the body's
    left as a grows; the UV seam is at the back). `side` is the sideways half-axis over the vertical one. X is the sideways arc length from the
    front line, Y the height above the head's centre; `a` the angle itself.
    """

    chin: float
    crown: float
    side: float

    def coordinates(self, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rows, columns = shape
        v = 1.0 - (np.arange(rows) + 0.5) / rows
        a = (np.arange(columns) + 0.5) / columns * 2 * np.pi - np.pi
        y = (self.chin + v * (self.crown - self.chin))[:, None]
        x = a[None, :] * self.side * np.sqrt(np.clip(1 - y**2, 0.0, 1.0))
        return np.broadcast_to(x, shape), np.broadcast_to(y, shape), np.broadcast_to(a[None, :], shape)


def _blob(x: np.ndarray, y: np.ndarray, center: tuple[float, float], radii: tuple[float, float]) -> np.ndarray:
    """A soft Gaussian spot, 1 at its centre."""
    return np.exp(-0.5 * (((x - center[0]) / radii[0]) ** 2 + ((y - center[1]) / radii[1]) ** 2))


EDGE = 0.012  # half-axis units over which a painted feature's edge fades (about a texel)


def _disc(x: np.ndarray, y: np.ndarray, center: tuple[float, float], radii: tuple[float, float]) -> np.ndarray:
    """An ellipse's coverage in [0, 1] with an anti-aliased edge."""
    r = np.hypot((x - center[0]) / radii[0], (y - center[1]) / radii[1])
    return np.clip((1 - r) * min(radii) / EDGE + 0.5, 0.0, 1.0)


# Face features, in head half-axis units (about 11.5 cm on an average adult), mirrored for |X|.
EYE = (0.28, 0.0)  # centre: eyes sit halfway between chin and crown, 6.5 cm apart
EYE_RADII = (0.1, 0.036)
IRIS_RADIUS, PUPIL_RADIUS = 0.036, 0.015
IRIS_DROP = 0.006  # the upper lid covers the iris' top
SCLERA = (0.62, 0.58, 0.55)  # sRGB: the white of the eye, dimmed by the lids' shadow
LID_WIDTH = 0.5  # relative to the eye's half-height: the lash line above the eye
LID_DARK = 0.65
CREASE_Y, CREASE_DARK = 0.075, 0.12  # the fold of the upper eyelid
SOCKET, SOCKET_RADII, SOCKET_DARK = (0.28, 0.03), (0.17, 0.11), 0.22
BROW_Y, BROW_ARCH, BROW_SPAN, BROW_HALF_WIDTH = 0.19, 0.035, (0.12, 0.46), 0.025
BROW_DENSITY = (0.55, 0.9)
NOSE_SIDE_X, NOSE_SIDE_Y, NOSE_SIDE_RADII, NOSE_SIDE_DARK = 0.085, -0.2, (0.03, 0.13), 0.06
NOSE_TIP, NOSE_TIP_RADII = (0.0, -0.34), (0.06, 0.05)
NOSTRIL, NOSTRIL_RADII, NOSTRIL_DARK = (0.05, -0.4), (0.03, 0.016), 0.4
CHEEK, CHEEK_RADII = (0.40, -0.27), (0.14, 0.12)
BLUSH = np.array([1.0, 0.8, 0.8])  # linear tint of cheeks and nose tip, at the blobs' centres
MOUTH_Y, MOUTH_HALF_WIDTH, UPPER_LIP, LOWER_LIP = -0.585, 0.2, 0.04, 0.06
LIPS = np.array([0.8, 0.5, 0.53])  # linear tint of the lips over the skin
MOUTH_LINE, MOUTH_LINE_DARK = 0.01, 0.5
EAR_Y, EAR_RADII, EAR_RIM, EAR_DARK = -0.05, (0.2, 0.26), 0.3, 0.2  # ear radii in angle (rad) and height
STUBBLE_TOP, STUBBLE_REACH, STUBBLE_DENSITY = -0.33, 0.95, 0.35
# The painted hairline (angle from the front, rad; height): just below humanoid.HAIR_EDGE, with sideburns in
# front of the ears.
HAIRLINE = ((0.0, 0.44), (0.9, 0.32), (1.22, 0.24), (1.27, 0.08), (1.33, 0.08), (1.4, 0.14), (2.3, -0.3),
            (np.pi, -0.55))
SCALP_HAIR = 0.85  # how much of the hair colour covers the scalp (skin shows between short hairs)
HAIRLINE_SOFTNESS = 3.0  # the hairline fades over this many EDGE widths


def _brows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Coverage of the two eyebrows: arches that thin towards the temples."""
    side = np.abs(x)
    along = np.clip((side - BROW_SPAN[0]) / (BROW_SPAN[1] - BROW_SPAN[0]), 0.0, 1.0)
    centre = BROW_Y + BROW_ARCH * np.sin(np.pi * along)
    half_width = BROW_HALF_WIDTH * (1.2 - 0.6 * along)
    inside = (side > BROW_SPAN[0]) & (side < BROW_SPAN[1])
    return np.where(inside, np.clip((half_width - np.abs(y - centre)) / EDGE + 0.5, 0.0, 1.0), 0.0)


def _eyes(x: np.ndarray, y: np.ndarray, eyes: Color) -> tuple[np.ndarray, np.ndarray]:
    """(coverage, linear colour) of the eyes: sclera, iris and pupil inside the lids."""
    side = np.abs(x)
    opening = _disc(side, y, EYE, EYE_RADII)
    iris = _disc(side, y, (EYE[0], EYE[1] - IRIS_DROP), (IRIS_RADIUS, IRIS_RADIUS))
    pupil = _disc(side, y, (EYE[0], EYE[1] - IRIS_DROP), (PUPIL_RADIUS, PUPIL_RADIUS))
    color = srgb_to_linear(np.asarray(SCLERA)) * (1 - iris[..., None]) + srgb_to_linear(np.asarray(eyes)) * iris[..., None]
    color = color * (1 - pupil[..., None] * 0.9)
    return opening, color


def _scalp_hair(rng: np.random.Generator, a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Coverage of the hair painted on the scalp, above HAIRLINE, in fine grain."""
    line = np.interp(np.abs(a), *zip(*HAIRLINE))
    above = np.clip((y - line) / (EDGE * HAIRLINE_SOFTNESS) + 0.5, 0.0, 1.0)
    grain = stretched_noise(rng, FACE_SHAPE, 2.0, 0.5)
    return above * SCALP_HAIR * (0.8 + 0.4 * grain)


def face_texture(rng: np.random.Generator, look: Look, grid: HeadGrid, scalp_hair: bool) -> np.ndarray:
    """The head's texture: skin with a face centred on u = 1/2, ears at u = 1/4 and 3/4, and hair painted on the
    scalp where `scalp_hair`."""
    x, y, a = grid.coordinates(FACE_SHAPE)
    skin = _skin_field(rng, look.skin, FACE_SHAPE)
    side = np.abs(x)
    shade = 1 - SOCKET_DARK * _blob(side, y, SOCKET, SOCKET_RADII)
    shade -= NOSE_SIDE_DARK * _blob(side, y, (NOSE_SIDE_X, NOSE_SIDE_Y), NOSE_SIDE_RADII)
    blush = np.maximum(_blob(side, y, CHEEK, CHEEK_RADII), _blob(x, y, NOSE_TIP, NOSE_TIP_RADII))
    skin = skin * (1 + (BLUSH - 1) * blush[..., None])
    lips = np.maximum(_disc(x, y, (0.0, MOUTH_Y), (MOUTH_HALF_WIDTH, UPPER_LIP)) * (y >= MOUTH_Y),
                      _disc(x, y, (0.0, MOUTH_Y), (MOUTH_HALF_WIDTH, LOWER_LIP)) * (y < MOUTH_Y))
    skin = skin * (1 + (LIPS - 1) * lips[..., None])
    shade -= MOUTH_LINE_DARK * lips * np.clip((MOUTH_LINE - np.abs(y - MOUTH_Y)) / EDGE + 0.5, 0.0, 1.0)
    shade -= NOSTRIL_DARK * _disc(side, y, NOSTRIL, NOSTRIL_RADII)
    ear = np.hypot((np.abs(a) - np.pi / 2) / EAR_RADII[0], (y - EAR_Y) / EAR_RADII[1])
    behind = np.clip((np.abs(a) - np.pi / 2) / EAR_RADII[0] + 0.5, 0.0, 1.0)  # the rim's C opens to the front
    shade -= EAR_DARK * np.clip(1 - np.abs(ear - 1) / EAR_RIM, 0.0, 1.0) * behind
    hair = srgb_to_linear(np.asarray(look.hair))
    if look.stubble:
        beard = np.clip((STUBBLE_TOP - y) / EDGE / 4, 0.0, 1.0) * (side < STUBBLE_REACH) * (1 - lips)
        grain = periodic_noise(rng, FACE_SHAPE[1], 0.3)[: FACE_SHAPE[0]]
        skin = skin + (hair - skin) * (STUBBLE_DENSITY * beard * grain)[..., None]
    if scalp_hair:
        skin = skin + (hair - skin) * _scalp_hair(rng, a, y)[..., None]
    brows = _brows(x, y) * rng.uniform(*BROW_DENSITY)
    brows = brows * (0.6 + 0.4 * stretched_noise(rng, FACE_SHAPE, 0.25, 0.5))
    skin = skin + (hair - skin) * brows[..., None]
    lash = np.clip(1 - np.abs(np.hypot((side - EYE[0]) / EYE_RADII[0], (y - EYE[1]) / EYE_RADII[1]) - 1 - LID_WIDTH / 2)
                   / (LID_WIDTH / 2), 0.0, 1.0) * (y > EYE[1] - EYE_RADII[1] / 2)
    shade -= LID_DARK * lash
    shade -= CREASE_DARK * _blob(side, y, (EYE[0], CREASE_Y), (EYE_RADII[0], EYE_RADII[1] / 3))
    opening, eye_color = _eyes(x, y, look.eyes)
    skin = skin * (1 - opening[..., None]) + eye_color * opening[..., None]
    return encode(skin * np.clip(shade, 0.0, 1.0)[..., None])


# ---------------------------------------------------------------- hair

STRAND_STRETCH = 30.0  # a strand's noise is this much longer than wide
HAIR_DARK, HAIR_LIGHT = 0.35, 1.7  # the darkest and lightest strands relative to the hair colour (linear)
HAIR_CLUMPS = 0.25  # share of the low-frequency clumping in a strand's brightness


def hair_texture(rng: np.random.Generator, hair: Color) -> np.ndarray:
    """Strands along v: fine streaks, long along the image's columns, in clumps."""
    shape = (HAIR_SIZE, HAIR_SIZE)
    strands = stretched_noise(rng, shape, STRAND_STRETCH, 0.6)
    clumps = stretched_noise(rng, shape, STRAND_STRETCH, 1.5)
    field = (1 - HAIR_CLUMPS) * strands + HAIR_CLUMPS * clumps
    light = HAIR_DARK + (HAIR_LIGHT - HAIR_DARK) * field
    return encode(srgb_to_linear(np.asarray(hair)) * light[..., None])


# ---------------------------------------------------------------- clothes

CREASES = 0.16  # relative darkening in the folds
CREASE_STRETCH = 5.0  # folds run round the limbs, this much longer than wide
FIBRE = 0.07  # relative swing of the fine fibre noise
SEAM_DARK, SEAM_COLUMNS = 0.45, (0.25, 0.75)  # side seams at u = 1/4 and 3/4
STRIPES_PER_TILE = (4, 11)
STRIPE_SHARE = (0.25, 0.55)
CHECKS_AROUND, CHECKS_PER_TILE = (4, 8), (1, 3)  # check bands round a tube and per CLOTH_TILE along it
HEATHER = 0.18  # swing of the light and dark fibres of a melange
OXFORD_WEAVE = 0.05  # swing of the two-texel basket weave
DENIM_WEFT = 0.12  # share of the undyed weft showing in the twill
WEFT = np.array([0.6, 0.58, 0.55])  # linear: undyed cotton
DENIM_SLUB = 0.18  # swing of the warp yarn's uneven dye along the threads
DENIM_FADE = 0.25  # brightening of the faded patches
STITCH = np.array([0.75, 0.52, 0.22])  # linear: the golden thread of jeans
STITCH_OFFSET, STITCH_DASH = 3, 4  # texels from the seam; texels per dash


def _creases(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    """Relative brightness of folds that run across the tube (long along the rows)."""
    folds = stretched_noise(rng, shape[::-1], CREASE_STRETCH, 1.6).T
    return 1 - CREASES * np.clip(2 * folds - 0.6, 0.0, 1.0)


def _fibre(rng: np.random.Generator, shape: tuple[int, int]) -> np.ndarray:
    return 1 + FIBRE * (stretched_noise(rng, shape, 1.0, 0.4) - 0.5)


def _seams(image: np.ndarray) -> np.ndarray:
    columns = image.shape[1]
    out = image.copy()
    for u in SEAM_COLUMNS:
        column = int(u * columns)
        out[:, column] *= 1 - SEAM_DARK
        out[:, column + 1] *= 1 - SEAM_DARK / 3
    return out


def _bands(position: np.ndarray, count: int, share: float) -> np.ndarray:
    """Anti-aliased bands: 1 over `share` of each of `count` periods along position in [0, 1)."""
    phase = (position * count) % 1.0
    width = 1.0 / (CLOTH_SIZE / count)  # one texel, in periods
    return np.clip((share - phase) / width + 0.5, 0.0, 1.0) * np.clip(phase / width + 0.5, 0.0, 1.0)


def _grid() -> tuple[np.ndarray, np.ndarray]:
    """Texel centres: u along the columns, v along the rows (v grows upwards, rows downwards)."""
    t = (np.arange(CLOTH_SIZE) + 0.5) / CLOTH_SIZE
    return np.meshgrid(t, 1 - t, indexing="xy")


def _weave_color(rng: np.random.Generator, garment: Garment) -> np.ndarray:
    """The garment's colour field before folds and seams: plain, melange, stripes, check, oxford or denim."""
    u, v = _grid()
    shape = u.shape
    base = srgb_to_linear(np.asarray(garment.color))
    accent = srgb_to_linear(np.asarray(garment.accent))
    if garment.style == "stripes":
        band = _bands(v, int(rng.integers(*STRIPES_PER_TILE)), rng.uniform(*STRIPE_SHARE))
        return base + (accent - base) * band[..., None]
    if garment.style == "check":
        around, along = int(rng.integers(*CHECKS_AROUND)), int(rng.integers(*CHECKS_PER_TILE))
        share = rng.uniform(*STRIPE_SHARE)
        both = 0.5 * (_bands(u, around, share) + _bands(v, along, share))
        return base + (accent - base) * both[..., None]
    if garment.style == "heather":
        fibres = stretched_noise(rng, shape[::-1], 8.0, 0.5).T - 0.5
        return base * (1 + 2 * HEATHER * fibres)[..., None]
    if garment.style == "oxford":
        rows, columns = np.indices(shape)
        basket = ((rows // 2 + columns // 2) % 2) * 2 - 1.0
        return base * (1 + OXFORD_WEAVE * basket)[..., None]
    if garment.style == "denim":
        slub = stretched_noise(rng, shape, 12.0, 0.8) - 0.5
        fade = np.clip(2 * stretched_noise(rng, shape, 2.0) - 1.0, 0.0, 1.0)
        weft = DENIM_WEFT * stretched_noise(rng, shape, 1.0, 0.2)
        dyed = base * (1 + 2 * DENIM_SLUB * slub)[..., None] * (1 + DENIM_FADE * fade)[..., None]
        return dyed + (WEFT - dyed) * weft[..., None]
    return np.broadcast_to(base, (*shape, 3))  # jersey, chino: plain


def cloth_texture(rng: np.random.Generator, garment: Garment) -> np.ndarray:
    color = _weave_color(rng, garment)
    shape = color.shape[:2]
    image = _seams(color * (_creases(rng, shape) * _fibre(rng, shape))[..., None])
    if garment.style == "denim":
        rows = np.arange(shape[0])
        dashes = (rows // STITCH_DASH) % 2 == 0
        for u in SEAM_COLUMNS:
            for column in (int(u * shape[1]) - STITCH_OFFSET, int(u * shape[1]) + STITCH_OFFSET):
                image[dashes, column] = STITCH
    return encode(image)


def roughness_of(garment: Garment) -> float:
    return DENIM_ROUGHNESS if garment.style == "denim" else COTTON_ROUGHNESS


# ---------------------------------------------------------------- shoes

SOLE_V = 0.2  # the sole band, as a share of the shoe's height
LEATHER = 0.12  # relative swing of the upper's grain


def shoe_texture(rng: np.random.Generator, upper: Color, sole: Color) -> np.ndarray:
    rows = SHOE_SIZE
    v = 1 - (np.arange(rows) + 0.5) / rows
    grain = 1 + LEATHER * (periodic_noise(rng, SHOE_SIZE, 1.0) - 0.5)
    image = srgb_to_linear(np.asarray(upper)) * grain[..., None]
    image[v < SOLE_V] = srgb_to_linear(np.asarray(sole))
    return encode(image)

"""Which pixels a mesh covers when drawn alone: exact scanline rasterisation.

A pixel is covered when its centre (integer coordinates, camera.py) lies in the projection of the part
of a triangle between the near and far planes: the pixels whose camera ray would hit the mesh with
nothing else in the scene. Two exact ways, both feeding one running sum per pixel row:
- triangles: clipped against both planes in the optical frame, projected, and cut into one span of pixel
  centres per triangle and pixel row (edges included);
- outlines, for closed meshes that need no clipping: every ray through a closed surface crosses it
  both ways, so the mesh covers exactly where the faces turned towards the camera overlap at least once;
  that count is a winding number, which changes only across the outline (edges between a face turned
  towards the camera and one turned away): +1 where a row enters it, -1 where it leaves. Outlines are
  far shorter than the sum of all triangle spans. Rows are taken half-open along each edge, so a pixel
  centre exactly on a bottom corner or bottom horizontal edge of the outline is left out.
Each edge is evaluated from its lower end with the same arithmetic wherever it is used, so shared edges
leave no cracks. Ray casts and this agree except for pixel centres within float rounding (~1e-6 px) of a
silhouette edge or corner, where the float32 ray test itself is arbitrary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simulation.render.camera import Camera


def _crossing(inside: np.ndarray, outside: np.ndarray, z: float) -> np.ndarray:
    """Points (T, 3) where segments from `inside` to `outside` points cross the plane at depth z.

    Always interpolated from the inside end, so two triangles sharing the edge get the same point.
    """
    s = (z - inside[:, 2]) / (outside[:, 2] - inside[:, 2])
    point = inside + (outside - inside) * s[:, None]
    point[:, 2] = z
    return point


def _clip(triangles: np.ndarray, owner: np.ndarray, z: float, keep_far_side: bool) -> tuple[np.ndarray, np.ndarray]:
    """Triangles (T, 3 corners, xyz) clipped to depth >= z (or <= z), winding kept, with their owners."""
    inside = triangles[:, :, 2] >= z if keep_far_side else triangles[:, :, 2] <= z
    count = inside[:, 0].astype(np.int64) + inside[:, 1] + inside[:, 2]
    if np.all(count == 3):
        return triangles, owner
    pieces, owners = [triangles[count == 3]], [owner[count == 3]]
    one, two = count == 1, count == 2
    if one.any():  # keep the inside corner and the two crossings of its edges
        first = np.argmax(inside[one], axis=1)
        a, b, c = (triangles[one, (first + k) % 3] for k in range(3))
        pieces.append(np.stack([a, _crossing(a, b, z), _crossing(a, c, z)], axis=1))
        owners.append(owner[one])
    if two.any():  # the quad left when one corner is cut off, as two triangles
        first = np.argmin(inside[two], axis=1)
        a, b, c = (triangles[two, (first + k) % 3] for k in range(3))
        ba, ca = _crossing(b, a, z), _crossing(c, a, z)
        pieces += [np.stack([ba, b, c], axis=1), np.stack([ba, c, ca], axis=1)]
        owners += [owner[two], owner[two]]
    return np.concatenate(pieces), np.concatenate(owners)


def _slope(x_lo: np.ndarray, y_lo: np.ndarray, x_hi: np.ndarray, y_hi: np.ndarray) -> np.ndarray:
    """dx/dy of edges given lower end first; 0 for horizontal edges (only ever evaluated at their ends)."""
    return np.divide(x_hi - x_lo, y_hi - y_lo, out=np.zeros_like(x_lo), where=y_hi > y_lo)


def _swap(xa: np.ndarray, ya: np.ndarray, xb: np.ndarray, yb: np.ndarray) -> tuple[np.ndarray, ...]:
    """Corners a, b of each triangle reordered so that a is not below b."""
    swap = ya > yb
    return np.where(swap, xb, xa), np.where(swap, yb, ya), np.where(swap, xa, xb), np.where(swap, ya, yb)


def _spans(x: list[np.ndarray], y: list[np.ndarray], owner: np.ndarray, windows: np.ndarray) -> tuple[np.ndarray, ...]:
    """Owner, row and inclusive column range of the pixel centres inside each triangle (corners x[k], y[k]),
    cut to the owner's window; an empty range is [left, left - 1] with left inside the window's cells."""
    xa, ya, xb, yb = _swap(x[0], y[0], x[1], y[1])
    xb, yb, xc, yc = _swap(xb, yb, x[2], y[2])
    xa, ya, xb, yb = _swap(xa, ya, xb, yb)
    first = np.maximum(np.ceil(ya), np.take(windows[:, 1], owner)).astype(np.int64)
    last = np.minimum(np.floor(yc), np.take(windows[:, 3], owner)).astype(np.int64)
    middle = np.clip(np.ceil(yb), first, last + 1).astype(np.int64)  # the first row not above the middle corner
    # Each triangle in two halves: rows above the middle corner lie between the long edge a-c and edge a-b,
    # the others between it and edge b-c.
    long_x, long_y, long_slope, owner = (np.concatenate([values, values]) for values in
                                         (xa, ya, _slope(xa, ya, xc, yc), owner))
    short_x, short_y = np.concatenate([xa, xb]), np.concatenate([ya, yb])
    short_slope = np.concatenate([_slope(xa, ya, xb, yb), _slope(xb, yb, xc, yc)])
    first = np.concatenate([first, np.maximum(first, middle)])
    last = np.concatenate([np.minimum(last, middle - 1), last])
    rows_per_half = np.maximum(last - first + 1, 0)
    half = np.repeat(np.arange(len(owner)), rows_per_half)
    starts = np.cumsum(rows_per_half) - rows_per_half
    row = np.arange(len(half)) - np.take(starts - first, half)
    # x = x_lo + (row - y_lo) * slope along each edge, lower end first: the same arithmetic in every
    # triangle sharing the edge, and exact at the lower end.
    y = row.astype(np.float64)
    long_edge = y - np.take(long_y, half)
    long_edge *= np.take(long_slope, half)
    long_edge += np.take(long_x, half)
    short_edge = y - np.take(short_y, half)
    short_edge *= np.take(short_slope, half)
    short_edge += np.take(short_x, half)
    owner = np.take(owner, half)
    x_min, x_max = np.take(windows[:, 0], owner), np.take(windows[:, 2], owner)
    left = np.clip(np.ceil(np.minimum(long_edge, short_edge)), x_min, x_max + 1).astype(np.int64)
    right = np.minimum(np.floor(np.maximum(long_edge, short_edge)), x_max).astype(np.int64)
    # An empty range becomes [left, left - 1]: its start and end marks fall in one cell and cancel.
    np.maximum(right, left - 1, out=right)
    return owner, row, left, right


@dataclass(frozen=True)
class Coverage:
    """Coverage masks of several meshes, each over its own window, stored one after the other."""

    flat: np.ndarray  # bool; window k's rows at offsets[k], width + 1 cells per row
    offsets: np.ndarray  # (K + 1,)
    windows: np.ndarray  # (K, 4)

    def mask(self, k: int) -> np.ndarray:
        """Boolean (rows, cols) mask of mesh k over its window."""
        x_min, _, x_max, _ = self.windows[k]
        width = int(x_max - x_min + 1)
        return self.flat[self.offsets[k]:self.offsets[k + 1]].reshape(-1, width + 1)[:, :width]


def _outline_marks(px: np.ndarray, py: np.ndarray, start: np.ndarray, end: np.ndarray, owner: np.ndarray,
                   windows: np.ndarray) -> tuple[np.ndarray, ...]:
    """Owner, row, column and sign of the winding-number steps of outline edges start -> end (vertex indices
    into px, py), oriented as in their face turned towards the camera (positive projected area)."""
    xs, ys, xe, ye = px[start], py[start], px[end], py[end]
    slanted = ys != ye
    xs, ys, xe, ye, owner = xs[slanted], ys[slanted], xe[slanted], ye[slanted], owner[slanted]
    entering = ye < ys  # for faces of positive area, rows enter through edges running up the image
    x_lo, y_lo = np.where(entering, xe, xs), np.where(entering, ye, ys)
    x_hi, y_hi = np.where(entering, xs, xe), np.where(entering, ys, ye)
    first = np.maximum(np.ceil(y_lo), np.take(windows[:, 1], owner)).astype(np.int64)
    last = np.minimum(np.ceil(y_hi) - 1, np.take(windows[:, 3], owner)).astype(np.int64)  # rows in [y_lo, y_hi)
    rows_per_edge = np.maximum(last - first + 1, 0)
    edge = np.repeat(np.arange(len(owner)), rows_per_edge)
    starts = np.cumsum(rows_per_edge) - rows_per_edge
    row = np.arange(len(edge)) - np.take(starts - first, edge)
    slope = np.take((x_hi - x_lo) / (y_hi - y_lo), edge)
    x = np.take(x_lo, edge) + (row - np.take(y_lo, edge)) * slope
    sign = np.take(entering, edge)
    # Entering: covered from the first centre at or right of x; leaving: up to the last one at or left of x.
    column = np.where(sign, np.ceil(x), np.floor(x) + 1)
    owner = np.take(owner, edge)
    column = np.clip(column, np.take(windows[:, 0], owner), np.take(windows[:, 2], owner) + 1).astype(np.int64)
    return owner, row, column, sign


def coverage(camera: Camera, points: np.ndarray, faces: np.ndarray, face_owner: np.ndarray, windows: np.ndarray,
             edges: np.ndarray, edge_owner: np.ndarray) -> Coverage:
    """The pixels each of K meshes covers when drawn alone, within its window (K, 4): inclusive pixel boxes.

    `points` (3, V) are vertices in the optical frame, `faces` (T, 3) the triangles of all K meshes and
    `face_owner` (T,) the mesh of each; `edges` (E, 4) rows (u, v, f, g) in that numbering are the edges
    of the closed meshes among them (scene.closed_edges), `edge_owner` (E,) their mesh.
    """
    windows = np.asarray(windows, dtype=np.int64).reshape(-1, 4)
    count = len(windows)
    z = points[2]
    outside = (z < camera.near) | (z > camera.far)
    crossing = outside[faces[:, 0]] | outside[faces[:, 1]] | outside[faces[:, 2]]
    outlined = (np.bincount(edge_owner, minlength=count) > 0) & (np.bincount(face_owner[crossing],
                                                                             minlength=count) == 0)
    # Project every vertex once (vertices outside the planes only matter to clipped triangles).
    depth = np.where(outside, 1.0, z)
    px, py = camera.fx * points[0] / depth + camera.cx, camera.fy * points[1] / depth + camera.cy
    kept = np.flatnonzero(~crossing)
    corners = [np.take(faces[:, k], kept) for k in range(3)]
    x, y = [np.take(px, c) for c in corners], [np.take(py, c) for c in corners]
    # Twice the signed projected area; zero-area triangles are edge-on to every ray (never hit).
    area = (x[1] - x[0]) * (y[2] - y[0]) - (x[2] - x[0]) * (y[1] - y[0])
    drawn_owner = np.take(face_owner, kept)
    drawn = np.flatnonzero((area != 0) & ~np.take(outlined, drawn_owner))
    x, y, drawn_owner = [c[drawn] for c in x], [c[drawn] for c in y], drawn_owner[drawn]
    if crossing.any():
        triangles, clipped_owner = _clip(*_clip(points.T[faces[crossing]], face_owner[crossing], camera.near, True),
                                         camera.far, False)
        depth = triangles[:, :, 2]
        x = [np.concatenate([x[k], camera.fx * triangles[:, k, 0] / depth[:, k] + camera.cx]) for k in range(3)]
        y = [np.concatenate([y[k], camera.fy * triangles[:, k, 1] / depth[:, k] + camera.cy]) for k in range(3)]
        drawn_owner = np.concatenate([drawn_owner, clipped_owner])
    span_owner, span_row, left, right = _spans(x, y, drawn_owner, windows)
    front = np.zeros(len(faces), dtype=bool)
    front[kept] = area > 0
    toward_u_v = front[edges[:, 2]]
    outline = np.flatnonzero((toward_u_v != front[edges[:, 3]]) & np.take(outlined, edge_owner))
    toward_u_v, edges = toward_u_v[outline], edges[outline]
    start, end = np.where(toward_u_v, edges[:, 0], edges[:, 1]), np.where(toward_u_v, edges[:, 1], edges[:, 0])
    step_owner, step_row, column, entering = _outline_marks(px, py, start, end, edge_owner[outline], windows)
    # One extra cell per row takes the end marks of runs reaching the window's right edge, so a running
    # sum over all windows at once restarts at zero on every row.
    strides = windows[:, 2] - windows[:, 0] + 2
    offsets = np.concatenate([[0], np.cumsum(strides * (windows[:, 3] - windows[:, 1] + 1))])
    row_start = offsets[:-1] - windows[:, 1] * strides - windows[:, 0]

    def cells(owner: np.ndarray, row: np.ndarray, column: np.ndarray) -> np.ndarray:
        return np.take(row_start, owner) + row * np.take(strides, owner) + column

    marks = np.concatenate([cells(span_owner, span_row, left), cells(step_owner, step_row, column),
                            cells(span_owner, span_row, right + 1)])
    steps = np.concatenate([np.ones(len(left)), np.where(entering, 1.0, -1.0), np.full(len(right), -1.0)])
    # One float array, summed in place: a frame's largest (exact for counts this small).
    runs = np.bincount(marks, steps, minlength=offsets[-1])
    return Coverage(np.cumsum(runs, out=runs) > 0.5, offsets, windows)

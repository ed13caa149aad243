"""Which pixels a mesh covers when drawn alone, for a pinhole camera: exact scanline rasterisation (through
another lens straight edges project to curves: lens_coverage.py traces the pixels' rays instead).

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

from simulation.render import kernels
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
    front = np.zeros(len(faces), dtype=bool)
    front[kept] = area > 0
    toward_u_v = front[edges[:, 2]]
    outline = np.flatnonzero((toward_u_v != front[edges[:, 3]]) & np.take(outlined, edge_owner))
    toward_u_v, edges = toward_u_v[outline], edges[outline]
    # Outline edges oriented as in their face turned towards the camera (positive projected area).
    start, end = np.where(toward_u_v, edges[:, 0], edges[:, 1]), np.where(toward_u_v, edges[:, 1], edges[:, 0])
    # One extra cell per row takes the end marks of runs reaching the window's right edge, so a running
    # sum over all windows at once restarts at zero on every row.
    strides = windows[:, 2] - windows[:, 0] + 2
    offsets = np.concatenate([[0], np.cumsum(strides * (windows[:, 3] - windows[:, 1] + 1))])
    row_start = offsets[:-1] - windows[:, 1] * strides - windows[:, 0]
    covered = kernels.coverage_runs(np.array(x, np.float64).reshape(3, -1), np.array(y, np.float64).reshape(3, -1),
                                    drawn_owner, windows, px, py, start, end, edge_owner[outline], row_start, strides,
                                    int(offsets[-1]))
    return Coverage(covered, offsets, windows)

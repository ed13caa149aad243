"""FCL building blocks: BVH models, poses, probe points, and obstacles behind an AABB broad phase.

A query runs in three steps, cheapest first: an axis-aligned box overlap test against every
obstacle's world box (numpy), a yes/no FCL query on the overlapping ones, and a contact query only
on the hits. FCL counts a contact per intersecting triangle pair, and it reports none when one mesh
lies wholly inside another, which is why `probe_points` exist: containment is tested separately.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import fcl
import numpy as np
import trimesh

_YES_NO = fcl.CollisionRequest(num_max_contacts=1, enable_contact=False)
# Traces and robot volumes are tested this far above their placed height: their lowest point touches
# the floor exactly, and FCL counts coplanar touching triangles as (many) contacts.
TEST_LIFT = 0.002  # m: above float rounding of the floor contact, below any overlap that matters (a hand 5 mm into a table top)
# Probe vertices per connected component for the containment tests: all of them must be inside for
# the component to count as swallowed, so a few well spread vertices are enough.
PROBES_PER_COMPONENT = 16


def bvh_model(vertices: np.ndarray, faces: np.ndarray) -> fcl.BVHModel:
    model = fcl.BVHModel()
    model.beginModel(len(vertices), len(faces))
    model.addSubModel(np.ascontiguousarray(vertices, dtype=np.float64), np.ascontiguousarray(faces, dtype=np.int32))
    model.endModel()
    return model


def fcl_transform(matrix: np.ndarray) -> fcl.Transform:
    return fcl.Transform(matrix[:3, :3].copy(), matrix[:3, 3].copy())


def is_closed(mesh: trimesh.Trimesh) -> bool:
    """Whether the surface has no boundary: every edge is shared by an even number of faces. Looser than
    watertight (two closed parts touching along an edge pass), and enough for ray-parity inside tests."""
    _, counts = np.unique(mesh.edges_sorted, axis=0, return_counts=True)
    return len(counts) > 0 and bool(np.all(counts % 2 == 0))


def box_contains(outer_lo: np.ndarray, outer_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Whether each box (rows of outer_lo/outer_hi) contains the box [lo, hi]."""
    return np.all(outer_lo <= lo, axis=-1) & np.all(outer_hi >= hi, axis=-1)


@dataclass
class Probes:
    """A few vertices of each connected component of a mesh, with the component's bounds."""

    points: np.ndarray  # (P, 3)
    component: np.ndarray  # (P,) component index of each point

    @property
    def count(self) -> int:
        return int(self.component.max()) + 1 if len(self.component) else 0


def probe_points(mesh: trimesh.Trimesh, per_component: int = PROBES_PER_COMPONENT) -> Probes:
    components = trimesh.graph.connected_components(mesh.edges, nodes=np.arange(len(mesh.vertices)), min_len=1)
    points, labels = [], []
    for index, ids in enumerate(sorted(components, key=lambda c: int(np.min(c)))):
        ids = np.sort(np.asarray(ids))
        chosen = ids[np.linspace(0, len(ids) - 1, min(per_component, len(ids))).astype(int)]
        points.append(mesh.vertices[chosen])
        labels.append(np.full(len(chosen), index))
    return Probes(np.concatenate(points), np.concatenate(labels))


def swallowed_components(probes: Probes, world_points: np.ndarray, outer: trimesh.Trimesh,
                         outer_lo: np.ndarray, outer_hi: np.ndarray) -> bool:
    """Whether some component (its probes given as `world_points`) lies wholly inside the closed mesh
    `outer`; components whose bounds stick out of `outer`'s bounds are skipped without a ray test."""
    for index in range(probes.count):
        pts = world_points[probes.component == index]
        if box_contains(outer_lo, outer_hi, pts.min(axis=0), pts.max(axis=0)) and outer.contains(pts).all():
            return True
    return False


@dataclass
class Obstacles:
    """Collision objects with their world AABBs."""

    objects: list[fcl.CollisionObject] = field(default_factory=list)
    lo: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    hi: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))

    def add(self, obj: fcl.CollisionObject, lo: np.ndarray, hi: np.ndarray) -> int:
        self.objects.append(obj)
        self.lo = np.vstack([self.lo, lo])
        self.hi = np.vstack([self.hi, hi])
        return len(self.objects) - 1

    def overlapping(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        return np.flatnonzero(np.all(self.lo <= hi, axis=1) & np.all(self.hi >= lo, axis=1))

    def collides(self, obj: fcl.CollisionObject, lo: np.ndarray, hi: np.ndarray) -> bool:
        return any(fcl.collide(obj, self.objects[i], _YES_NO, fcl.CollisionResult())
                   for i in self.overlapping(lo, hi))

    def contacts(self, obj: fcl.CollisionObject, lo: np.ndarray, hi: np.ndarray, budget: int) -> int:
        """Contacts between `obj` (world box [lo, hi]) and the obstacles, counted up to `budget`."""
        total = 0
        for i in self.overlapping(lo, hi):
            if total >= budget:
                break
            if not fcl.collide(obj, self.objects[i], _YES_NO, fcl.CollisionResult()):
                continue
            request = fcl.CollisionRequest(num_max_contacts=budget - total, enable_contact=True)
            # A yes/no hit is at least one contact even if the contact pass reports none.
            total += max(1, fcl.collide(obj, self.objects[i], request, fcl.CollisionResult()))
        return total

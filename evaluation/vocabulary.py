"""A DBoW2 ORB vocabulary built from given frames, for ORB-SLAM3 on machines that cannot download `ORBvoc.txt`.

ORB-SLAM3 needs a bag-of-words vocabulary to start (it places keyframes in its database and relocalises with
it). The official one is 139 MB and downloaded by pyorbslam3; a small tree built from the sequence's own frames
is enough to track a short sequence and takes seconds. It is made as DBoW2 makes one:

- ORB descriptors (256 bits) from OpenCV's ORB detector on each image;
- hierarchical k-majority clustering: each node's descriptors are split into `k` clusters by k-medians on bits
  (Hamming distance, centres = bitwise majority), seeded k-means++-style from a named generator, down to
  `levels` levels; a node with at most `k` descriptors gets one child per descriptor (DBoW2's rule);
- leaves (words) weighted by idf, log(N images / images containing the word), as DBoW2's TF_IDF.

Text format (`TemplatedVocabulary::loadFromTextFile` of ORB-SLAM3's DBoW2): first line `k L 0 0` (scoring 0 =
L1_NORM, weighting 0 = TF_IDF), then one line per node but the root in breadth-first order, `parent_id is_leaf
d0 ... d31 weight` (descriptor bytes as integers, weight 0 for inner nodes), and no trailing newline: the
loader reads lines until end of file, so a final newline would add an empty node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from core.errors import GradeError, InputError
from core.rundir import atomic_write_text
from core.seeding import generator

DESCRIPTOR_BYTES = 32
MAX_K, MAX_LEVELS = 20, 10  # what the loader accepts
MAX_ITERATIONS = 50  # k-medians rounds per node; it stops earlier once the assignment no longer changes
ORB_FEATURES = 1000  # per image, as ORB-SLAM3's default ORBextractor.nFeatures


@dataclass
class _Node:
    parent: int
    descriptor: np.ndarray  # (32,) uint8
    children: list[int] = field(default_factory=list)
    weight: float = 0.0


def orb_descriptors(image: np.ndarray, features: int = ORB_FEATURES) -> np.ndarray:
    """(M, 32) uint8 ORB descriptors of an RGB (H, W, 3) or grey (H, W) uint8 image."""
    grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
    _, descriptors = cv2.ORB_create(nfeatures=features).detectAndCompute(grey, None)
    return descriptors if descriptors is not None else np.zeros((0, DESCRIPTOR_BYTES), np.uint8)


def _distances(bits: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """(M, C) Hamming distances between unpacked bit rows (M, 256) and centres (C, 256), both float32 0/1:
    |a| + |c| - 2 a.c, one matrix product instead of M x C popcounts."""
    return bits.sum(1, keepdims=True) + centres.sum(1) - 2.0 * bits @ centres.T


def _seed_centres(bits: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """k-means++ seeding as DBoW2's: the first centre uniformly, each next one with probability proportional
    to its distance from the nearest centre chosen so far; fewer than k when the rest coincide with them."""
    centres = [bits[rng.integers(len(bits))]]
    nearest = _distances(bits, centres[0][None])[:, 0]
    while len(centres) < k and nearest.sum() > 0:
        centre = bits[rng.choice(len(bits), p=nearest / nearest.sum())]
        centres.append(centre)
        nearest = np.minimum(nearest, _distances(bits, centre[None])[:, 0])
    return np.stack(centres)


def _k_majority(bits: np.ndarray, k: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The row indices of each cluster (non-empty) after k-medians on bits."""
    centres = _seed_centres(bits, k, rng)
    assignment = None
    for _ in range(MAX_ITERATIONS):
        new = np.argmin(_distances(bits, centres), axis=1)
        if assignment is not None and np.array_equal(new, assignment):
            break
        assignment = new
        used = np.unique(assignment)
        # Bitwise majority (ties set the bit, as DBoW2's FORB::meanValue); empty clusters are dropped.
        centres = np.stack([(2 * bits[assignment == c].sum(0) >= (assignment == c).sum()) for c in used])
        centres = centres.astype(np.float32)
        assignment = np.searchsorted(used, assignment)
    return [np.flatnonzero(assignment == c) for c in range(assignment.max() + 1)]


def _pack(bits: np.ndarray) -> np.ndarray:
    return np.packbits(bits.astype(np.uint8))


def _build_tree(bits: np.ndarray, k: int, levels: int, rng: np.random.Generator) -> list[_Node]:
    """Nodes in breadth-first order (node 0 = the root), so that each parent precedes its children."""
    nodes = [_Node(-1, np.zeros(DESCRIPTOR_BYTES, np.uint8))]
    queue = deque([(0, np.arange(len(bits)), 0)])  # node, its descriptors, its depth
    while queue:
        node, rows, depth = queue.popleft()
        subset = bits[rows]
        clusters = [np.array([i]) for i in range(len(rows))] if len(rows) <= k else _k_majority(subset, k, rng)
        for members in clusters:
            child = len(nodes)
            centre = 2 * subset[members].sum(0) >= len(members)
            nodes.append(_Node(node, _pack(centre)))
            nodes[node].children.append(child)
            if depth + 1 < levels and len(members) > 1:
                queue.append((child, rows[members], depth + 1))
    return nodes


def _words_of(nodes: list[_Node], bits: np.ndarray) -> np.ndarray:
    """The leaf each descriptor reaches descending greedily (nearest child at each level), as DBoW2's transform."""
    unpacked = np.unpackbits(np.stack([n.descriptor for n in nodes]), axis=1).astype(np.float32)
    inner_node = np.array([bool(n.children) for n in nodes])
    current = np.zeros(len(bits), dtype=np.int64)
    while True:
        inner = np.unique(current[inner_node[current]])
        if len(inner) == 0:
            return current
        for node in inner:
            rows = np.flatnonzero(current == node)
            children = nodes[node].children
            current[rows] = np.asarray(children)[np.argmin(_distances(bits[rows], unpacked[children]), axis=1)]


def _text(nodes: list[_Node], k: int, levels: int) -> str:
    lines = [f"{k} {levels} 0 0"]
    for node in nodes[1:]:
        descriptor = " ".join(str(int(b)) for b in node.descriptor)
        lines.append(f"{node.parent} {0 if node.children else 1} {descriptor} {node.weight:.9g}")
    return "\n".join(lines)


def build_vocabulary(images: Iterable[np.ndarray], out: Path, k: int = 10, levels: int = 3, seed: int = 0,
                     max_descriptors: int = 100_000) -> Path:
    """Write a DBoW2 text vocabulary with branching `k` and depth `levels` built from the ORB descriptors of
    `images` (RGB or grey uint8) to `out`, atomically. At most `max_descriptors` descriptors (drawn at random,
    seeded) are clustered, which bounds time and memory (256 float32 per descriptor); all of them count for
    the idf weights. Equal inputs and seed give an identical file."""
    if not 2 <= k <= MAX_K or not 1 <= levels <= MAX_LEVELS:
        raise GradeError(f"a vocabulary needs 2 <= k <= {MAX_K} and 1 <= levels <= {MAX_LEVELS} (ORB-SLAM3's "
                         f"loader refuses others); got k={k}, levels={levels}")
    per_image = [d for d in (orb_descriptors(np.asarray(image)) for image in images) if len(d)]
    if not per_image:
        raise InputError("no ORB features found in the given images: nothing to build a vocabulary from", out)
    rng = generator(seed, "vocabulary")
    descriptors = np.concatenate(per_image)
    if len(descriptors) > max_descriptors:
        descriptors = descriptors[np.sort(rng.choice(len(descriptors), max_descriptors, replace=False))]
    nodes = _build_tree(np.unpackbits(descriptors, axis=1).astype(np.float32), k, levels, rng)
    images_with = np.zeros(len(nodes), dtype=np.int64)
    for image_descriptors in per_image:
        images_with[np.unique(_words_of(nodes, np.unpackbits(image_descriptors, axis=1).astype(np.float32)))] += 1
    for i, node in enumerate(nodes):
        if not node.children and i > 0 and images_with[i] > 0:
            node.weight = float(np.log(len(per_image) / images_with[i]))
    return atomic_write_text(out, _text(nodes, k, levels))

"""Named random generators derived from one master seed.

Every consumer asks for its own generator by a stable name ("placement/humans",
"simulation/lights", ...). The generator depends only on the master seed and the name, never on
the order in which consumers ask, so adding a new consumer does not change the others' streams.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _name_key(name: str) -> tuple[int, ...]:
    if not name:
        raise ValueError("a generator name must be a non-empty string")
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=16).digest()
    return tuple(int.from_bytes(digest[i : i + 4], "little") for i in range(0, 16, 4))


def seed_sequence(master_seed: int, name: str) -> np.random.SeedSequence:
    """The SeedSequence for consumer `name` under `master_seed`."""
    if master_seed < 0:
        raise ValueError(f"master seed must be >= 0, got {master_seed}")
    return np.random.SeedSequence(entropy=master_seed, spawn_key=_name_key(name))


def generator(master_seed: int, name: str) -> np.random.Generator:
    """A fresh `numpy.random.Generator` for consumer `name`."""
    return np.random.Generator(np.random.PCG64(seed_sequence(master_seed, name)))


def derived_seed(master_seed: int, name: str) -> int:
    """A 63-bit integer seed for consumer `name` (recorded in run.json, passed to other libraries)."""
    return int(seed_sequence(master_seed, name).generate_state(2, np.uint32).view(np.uint64)[0] >> 1)


def derived_seeds(master_seed: int, names: list[str]) -> dict[str, int]:
    return {name: derived_seed(master_seed, name) for name in names}

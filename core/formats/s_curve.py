"""The TIAGo++ Omni's S-curve network and its file (.npz, schema "grade.s_curve/1"): model, writer and reader.

An MLP with layer sizes [1, 35, 15, 5] and softplus activations maps a velocity change L (rad/s at the wheel,
simulation.robots.s_curve) divided by INPUT_SCALE to five pre-activations o, one bounded head per parameter
of the S-curve:

    a = 0.02 + 0.5 sigmoid(o0),  b = a + 5 sigmoid(o1),  m = 0.1 + 30 sigmoid(o2),
    k1 = 0.01 + 2 sigmoid(o3),   k2 = 0.01 + 2 sigmoid(o4).

`grade robot calibrate` writes a fitted network (`save_network`: the weights W1, b1, W2, b2, W3, b3, the input
scale and scalar metadata such as validation_error); `robot.tiago.s_curve` names one to read (`load_network`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np
from scipy.special import expit

from core.errors import InputError
from core.rundir import atomic_write_bytes, load_npz_checked

LAYER_SIZES = (1, 35, 15, 5)
INPUT_SCALE = 10.0  # rad/s: L is divided by this before the first layer, so inputs are O(1)
PARAM_NAMES = ("a", "b", "m", "k1", "k2")
# (offset, span) of each head: value = offset + span * sigmoid(o); b's offset is a.
HEADS = {"a": (0.02, 0.5), "b": (0.0, 5.0), "m": (0.1, 30.0), "k1": (0.01, 2.0), "k2": (0.01, 2.0)}
NETWORK_SCHEMA = "grade.s_curve/1"
WEIGHT_NAMES = ("W1", "b1", "W2", "b2", "W3", "b3")


def softplus(x: np.ndarray, k: np.ndarray | float = 1.0) -> np.ndarray:
    """log(1 + exp(k x)) / k, without overflow."""
    kx = np.multiply(k, x)
    # Several times faster than np.logaddexp(0, kx), which matters inside the calibration loop.
    return (np.maximum(kx, 0.0) + np.log1p(np.exp(-np.abs(kx)))) / k


def head_params(outputs: np.ndarray) -> np.ndarray:
    """Bounded parameters (..., 5) from the network's last-layer outputs (..., 5)."""
    unit = expit(np.asarray(outputs, dtype=np.float64))
    (a0, aspan), (_, bspan), (m0, mspan), (k0, kspan), (j0, jspan) = HEADS.values()
    a = a0 + aspan * unit[..., 0]
    return np.stack([a, a + bspan * unit[..., 1], m0 + mspan * unit[..., 2], k0 + kspan * unit[..., 3],
                     j0 + jspan * unit[..., 4]], axis=-1)


def head_inverse(params: np.ndarray) -> np.ndarray:
    """The last-layer outputs that give `params` (each strictly inside its head's bounds)."""
    params = np.asarray(params, dtype=np.float64)
    (a0, aspan), (_, bspan), (m0, mspan), (k0, kspan), (j0, jspan) = HEADS.values()
    unit = np.stack([(params[..., 0] - a0) / aspan, (params[..., 1] - params[..., 0]) / bspan,
                     (params[..., 2] - m0) / mspan, (params[..., 3] - k0) / kspan, (params[..., 4] - j0) / jspan],
                    axis=-1)
    if np.any((unit <= 0) | (unit >= 1)):
        raise ValueError(f"S-curve parameters {params} lie outside the heads' bounds {HEADS}")
    return np.log(unit) - np.log1p(-unit)


@dataclass(frozen=True)
class SCurveNetwork:
    """The [1, 35, 15, 5] softplus MLP: weights W1 (35, 1), b1, W2 (15, 35), b2, W3 (5, 15), b3."""

    weights: tuple[np.ndarray, ...]
    input_scale: float = INPUT_SCALE

    def __post_init__(self) -> None:
        expected = weight_shapes()
        got = tuple(np.shape(w) for w in self.weights)
        if got != expected:
            raise ValueError(f"S-curve network weights must have shapes {expected}, got {got}")

    def activations(self, change: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(input, hidden 1, hidden 2, outputs) for change(s) L of shape (N,), each (N, width)."""
        w1, b1, w2, b2, w3, b3 = self.weights
        x = np.asarray(change, dtype=np.float64).reshape(-1, 1) / self.input_scale
        h1 = softplus(x @ w1.T + b1)
        h2 = softplus(h1 @ w2.T + b2)
        return x, h1, h2, h2 @ w3.T + b3

    def params(self, change: np.ndarray | float) -> np.ndarray:
        """Curve parameters (a, b, m, k1, k2) for L: shape (5,) for a scalar, (..., 5) otherwise."""
        change = np.asarray(change, dtype=np.float64)
        return head_params(self.activations(change.ravel())[3]).reshape(*change.shape, 5)


def weight_shapes() -> tuple[tuple[int, ...], ...]:
    shapes = []
    for fan_in, fan_out in pairwise(LAYER_SIZES):
        shapes += [(fan_out, fan_in), (fan_out,)]
    return tuple(shapes)


def save_network(network: SCurveNetwork, path: str | Path, **metadata: float) -> Path:
    """Write the network as .npz (atomic); `metadata` adds scalar fields such as validation_error."""
    buffer = io.BytesIO()
    arrays = dict(zip(WEIGHT_NAMES, network.weights))
    np.savez(buffer, schema=np.array(NETWORK_SCHEMA), input_scale=np.array(network.input_scale),
             **arrays, **{key: np.array(value) for key, value in metadata.items()})
    return atomic_write_bytes(path, buffer.getvalue())


def load_network(path: str | Path) -> SCurveNetwork:
    """Read a network written by `save_network`; a wrong schema or shape is an InputError."""
    arrays = load_npz_checked(path, ["schema", "input_scale", *WEIGHT_NAMES])
    if str(arrays["schema"]) != NETWORK_SCHEMA:
        raise InputError(f"expected schema {NETWORK_SCHEMA!r}, got {str(arrays['schema'])!r}", path, "schema")
    for name, shape in zip(WEIGHT_NAMES, weight_shapes()):
        value = arrays[name]
        if value.shape != shape or not np.all(np.isfinite(value)):
            raise InputError(f"expected {shape} finite numbers, got shape {value.shape}", path, name)
    scale = float(arrays["input_scale"])
    if not scale > 0:
        raise InputError(f"must be > 0, got {scale}", path, "input_scale")
    return SCurveNetwork(tuple(arrays[name].astype(np.float64) for name in WEIGHT_NAMES), scale)

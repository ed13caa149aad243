"""Reading the SMPL family's pickled model files without chumpy, and without running arbitrary code.

The official SMPL / SMPL-H `.pkl` files were written by Python 2 with `chumpy` installed: some arrays are
`chumpy.ch.Ch` objects (whose pickled state keeps the plain array under `x`) and `J_regressor` is a
`scipy.sparse.csc_matrix`. A pickle can name any importable callable, so instead of `pickle.load` this
module uses an Unpickler that resolves only an allow-list of globals: numpy's array reconstruction,
stand-ins for chumpy arrays and scipy sparse matrices (rebuilt from their pickled fields), and the
copy-reg helpers those need. Anything else is refused with an InputError.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from core.errors import InputError


class ChumpyArray:
    """Stands in for `chumpy.ch.Ch` (and its subclasses) while unpickling: keeps the pickled state."""

    def __setstate__(self, state: dict) -> None:
        self.state = state

    def to_numpy(self, file: Path, field: str) -> np.ndarray:
        if "x" not in self.state:
            raise InputError("a chumpy expression (not a plain chumpy array) cannot be read without chumpy; "
                             "convert the model with smplx's tools/clean_ch.py", file, field)
        return np.asarray(self.state["x"])


class SparseMatrix:
    """Stands in for the scipy.sparse matrix classes: old pickles name modules (scipy.sparse.csc) that
    newer scipy versions moved, so the matrix is rebuilt from its pickled fields instead."""

    layout = ""  # "csc" or "csr", set by the subclasses below

    def __setstate__(self, state: dict) -> None:
        self.state = state

    def to_numpy(self, file: Path, field: str) -> np.ndarray:
        state = self.state
        shape = state.get("_shape", state.get("shape"))
        if shape is None or not all(k in state for k in ("data", "indices", "indptr")):
            raise InputError("incomplete sparse matrix in pickle", file, field)
        build = scipy.sparse.csc_matrix if self.layout == "csc" else scipy.sparse.csr_matrix
        return build((state["data"], state["indices"], state["indptr"]), shape=tuple(shape)).toarray()


class _CscMatrix(SparseMatrix):
    layout = "csc"


class _CsrMatrix(SparseMatrix):
    layout = "csr"


_SPARSE_CLASSES = {f"{layout}_{kind}": cls for layout, cls in (("csc", _CscMatrix), ("csr", _CsrMatrix))
                   for kind in ("matrix", "array")}
_NUMPY_GLOBALS = {"_reconstruct", "scalar", "ndarray", "dtype", "_frombuffer"}
_SAFE_BUILTINS = {"object", "set", "frozenset", "list", "dict", "tuple", "complex", "slice"}  # plain containers
_SPARSE_MODULES = {"scipy.sparse", "scipy.sparse.csc", "scipy.sparse._csc", "scipy.sparse.csr", "scipy.sparse._csr"}


class _ModelUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, path: Path):
        super().__init__(io.BytesIO(data), encoding="latin1")  # Python 2 pickles store str as bytes
        self.path = path

    def find_class(self, module: str, name: str) -> Any:
        if module.split(".")[0] == "chumpy":
            return ChumpyArray
        if module in _SPARSE_MODULES and name in _SPARSE_CLASSES:
            return _SPARSE_CLASSES[name]
        if module in ("numpy", "numpy.core.multiarray", "numpy._core.multiarray", "numpy.core.numeric",
                      "numpy._core.numeric") and name in _NUMPY_GLOBALS:
            # numpy 2 moved numpy.core to numpy._core; old pickles still name the former.
            return super().find_class(module.replace("numpy.core", "numpy._core"), name)
        # _codecs.encode: how Python 3 writes bytes (array buffers) at pickle protocol 2.
        if (module, name) in (("copy_reg", "_reconstructor"), ("copyreg", "_reconstructor"), ("_codecs", "encode")) or (
                module in ("__builtin__", "builtins") and name in _SAFE_BUILTINS):
            return super().find_class(module, name)
        raise InputError(f"the pickle refers to {module}.{name}, which a body model file never contains; "
                         "refusing to load it", self.path)


def load_model_pickle(path: Path, keys: list[str]) -> dict[str, Any]:
    """The entries `keys` (those present) of the dict stored in an SMPL-family `.pkl`, with chumpy and
    sparse arrays turned into numpy arrays; other entries (priors, training info) are dropped."""
    try:
        data = _ModelUnpickler(path.read_bytes(), path).load()
    except InputError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise InputError(f"not a readable model pickle ({exc})", path) from exc
    if not isinstance(data, dict):
        raise InputError(f"expected a dict of model arrays, found {type(data).__name__}", path)
    out = {}
    for key, value in data.items():
        key = key.decode() if isinstance(key, bytes) else str(key)
        if key not in keys:
            continue
        if isinstance(value, ChumpyArray | SparseMatrix):
            value = value.to_numpy(path, key)
        out[key] = value
    return out


def load_pickled_npy(raw: bytes, path: Path, field: str) -> np.ndarray:
    """An object-dtype member of an `.npz` (a pickle after the .npy header), read with the same
    restricted Unpickler: some converted SMPL `.npz` files store the sparse J_regressor that way."""
    stream = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(stream)
        # Versions 2.0 and 3.0 share the header layout (4-byte length); 3.0 only allows utf8 field names.
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        read_header(stream)
        value = _ModelUnpickler(stream.read(), path).load()
    except InputError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as exc:
        raise InputError(f"unreadable array ({exc})", path, field) from exc
    if isinstance(value, np.ndarray) and value.dtype == object and value.shape == ():
        value = value.item()
    if isinstance(value, ChumpyArray | SparseMatrix):
        value = value.to_numpy(path, field)
    return np.asarray(value)

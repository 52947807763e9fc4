"""Read MATLAB v7.3 MAT-files (HDF5) with h5py, into the layout of ``scipy.io.loadmat``.

A v7.3 file, as written by MATLAB's ``save(..., '-v7.3')``, is an HDF5 file
with a 512-byte user block holding the MAT-file text header.  What is read:

- every variable is a dataset or group at the root, named after the variable,
  with a ``MATLAB_class`` attribute naming its class;
- numeric and logical arrays (``double``, ``single``, ``int8`` ... ``uint64``,
  ``logical``) are datasets whose HDF5 shape is the MATLAB size reversed
  (MATLAB stores column-major): they are returned transposed, so shape and
  element order are MATLAB's (and scipy's), ``logical`` as bool;
- an empty array has the attribute ``MATLAB_empty`` = 1 and stores its MATLAB
  size as a uint64 vector: returned as zeros of that size;
- ``char`` arrays are uint16 code units: a row is returned as a str;
- a cell array is a dataset of object references (``MATLAB_class`` ``cell``),
  in reversed shape, each pointing to its element (MATLAB keeps them in the
  ``#refs#`` group): returned as an object ndarray of the MATLAB shape;
- a scalar struct is a group (``MATLAB_class`` ``struct``) with one member
  per field: returned as scipy returns it, a (1, 1) structured array with one
  object field per member;
- a sparse matrix is a group with the attribute ``MATLAB_sparse`` (the row
  count) and the datasets ``data``, ``ir`` (row indices) and ``jc`` (column
  pointers): returned as a ``scipy.sparse.csc_array``.

Struct arrays with more than one element (their fields are reference datasets
without a ``MATLAB_class``), function handles and objects are rejected with a
``ValueError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

_NUMERIC = {"double", "single", "int8", "int16", "int32", "int64", "uint8", "uint16",
            "uint32", "uint64", "logical"}


def read_mat73(path: Path, names: Sequence[str]) -> dict:
    """Read variables ``names`` of a MATLAB v7.3 file; missing variables are absent.

    Raises
    ------
    ImportError
        If h5py is not installed.
    ValueError
        If the file is not readable HDF5 or holds something outside the layout
        of the module docstring; the message names the file and the variable.
    """
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return {name: _convert(f[name], f, name) for name in names if name in f}
    except (OSError, KeyError, RuntimeError) as err:  # h5py: unreadable or truncated HDF5
        raise ValueError(f"{path} is a MATLAB v7.3 (HDF5) file that h5py cannot read: "
                         f"{err}") from err
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err


def _class_of(obj) -> str:
    value = obj.attrs.get("MATLAB_class", b"")
    return value.decode("ascii") if isinstance(value, bytes) else str(value)


def _convert(obj, f, where: str):
    import h5py

    matlab_class = _class_of(obj)
    if isinstance(obj, h5py.Group):
        if "MATLAB_sparse" in obj.attrs:
            n_rows = int(obj.attrs["MATLAB_sparse"])
            jc = np.asarray(obj["jc"][()], dtype=np.int64).ravel()
            data = (np.asarray(obj["data"][()]).ravel() if "data" in obj
                    else np.zeros(0))
            ir = (np.asarray(obj["ir"][()], dtype=np.int64).ravel() if "ir" in obj
                  else np.zeros(0, np.int64))
            return sp.csc_array((data, ir, jc), shape=(n_rows, len(jc) - 1))
        if matlab_class != "struct":
            raise ValueError(f"{where} is a MATLAB {matlab_class or 'group'} object, "
                             "which is not supported")
        fields = list(obj.keys())
        out = np.empty((1, 1), dtype=[(name, object) for name in fields])
        for name in fields:
            member = obj[name]
            if (isinstance(member, h5py.Dataset) and member.dtype == h5py.ref_dtype
                    and _class_of(member) != "cell"):
                raise ValueError(f"{where} is a struct array; only scalar structs are "
                                 "supported")
            out[name][0, 0] = _convert(member, f, f"{where}.{name}")
        return out
    if obj.attrs.get("MATLAB_empty", 0):
        dims = tuple(int(v) for v in np.asarray(obj[()]).ravel())
        if matlab_class == "cell":
            return np.empty(dims, dtype=object)
        return np.zeros(dims, dtype=bool if matlab_class == "logical" else np.float64)
    data = np.asarray(obj[()])
    if matlab_class == "cell":
        refs = data.T
        out = np.empty(refs.shape, dtype=object)
        for index in np.ndindex(refs.shape):
            out[index] = _convert(f[refs[index]], f, f"{where}{{{index}}}")
        return out
    if matlab_class == "char":
        text = data.T
        return ("".join(map(chr, text.ravel())) if text.ndim == 2 and text.shape[0] == 1
                else text)
    if matlab_class not in _NUMERIC:
        raise ValueError(f"{where} has the MATLAB class {matlab_class!r}, which is not "
                         "supported")
    data = data.T
    return data.astype(bool) if matlab_class == "logical" else data

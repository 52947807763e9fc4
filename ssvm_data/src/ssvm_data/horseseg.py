"""HorseSeg superpixel segmentation (Kolesnikov et al., ECCV 2014; Osokin et al. (2016), App. I.3).

:func:`load_horseseg` reads the preprocessed ``horseSeg_*.mat`` files of the
gapBCFW release (Osokin et al. 2016); :func:`ssvm_data.synthetic.horseseg_like`
generates seeded data of the same shape (also importable from here).  Both return, per image, a
:class:`SuperpixelImage`
``(unary, edges, pairwise)`` and a 0/1 labelling of the superpixels, the input
format of ``ssvm_oracles.GraphCutModel``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import scipy.sparse
import scipy.spatial

from ssvm_data import _io

__all__ = ["HORSESEG_SIZES", "SuperpixelImage", "horseseg_like", "load_horseseg"]  # noqa: F822

#: Training images of each size of HorseSeg (Osokin et al. (2016), Table 1); the test set has 241
# images.
HORSESEG_SIZES = {"small": 147, "medium": 6121, "large": 25438}
#: File name of each size in the gapBCFW release.
HORSESEG_FILES = {size: f"horseSeg_{size}.mat" for size in HORSESEG_SIZES}
#: Shape of the real data: superpixels per image (mean), unary and pairwise features.
N_SUPERPIXELS, N_UNARY, N_PAIRWISE = 147, 1969, 100

_SPLITS = ("train", "test")
_PATTERN_FIELDS = ("features", "edge_structure", "features_pairwise")


class SuperpixelImage(NamedTuple):
    """One image as a graph of superpixels."""

    unary: np.ndarray
    """(n_nodes, n_unary) float64 node features."""
    edges: np.ndarray
    """(n_edges, 2) int64 0-based endpoints of the undirected adjacency edges."""
    pairwise: np.ndarray
    """(n_edges, n_pairwise) float64 nonnegative edge features."""


# --- loader --------------------------------------------------------------------------


def load_horseseg(
    size: str = "small",
    *,
    path: str | os.PathLike | None = None,
    data_home: str | os.PathLike | None = None,
) -> tuple[list[SuperpixelImage], list[np.ndarray], list[SuperpixelImage], list[np.ndarray]]:
    """Load HorseSeg from the preprocessed ``horseSeg_<size>.mat`` of the gapBCFW release.

    The file is a MATLAB file holding four cell arrays of structs, as written by
    the authors' ``load_dataset_horseSeg.m``; v5/v7 files are read by
    ``scipy.io.loadmat``, v7.3 (HDF5) files by h5py when it is installed
    (``pip install "ssvm-data[hdf5]"``; the layout read is described in
    ``ssvm_data._mat73``):

    - ``patterns_train``, ``patterns_test``: one struct per image with fields

      * ``features``: (n_unary, n_nodes) unary features, one column per superpixel
        (1,969 in the release);
      * ``edge_structure``: (2, n_edges) 0-based superpixel indices of the
        adjacency edges, one column per edge;
      * ``features_pairwise``: (n_pairwise, n_edges) nonnegative edge features,
        one column per edge (100 in the release);
      * ``num_nodes``, ``num_edges`` (optional): checked against the arrays.

    - ``labels_train``, ``labels_test``: one struct per image with the field
      ``labels``, the n_nodes ground-truth labels (1 = horse, 0 = background).

    Other fields (image and superpixel file names, ``superpixel_size``,
    annotation quality) are not read.  Features stored as single precision or
    as MATLAB sparse matrices are returned as dense float64.

    Parameters
    ----------
    size : {"small", "medium", "large"}, default="small"
        Which file: 147, 6,121 or 25,438 training images, each with the 241 test
        images.
    path : str or os.PathLike, optional
        The ``.mat`` file, or a folder holding ``horseSeg_<size>.mat``.
    data_home : str or os.PathLike, optional
        Folder whose ``horseseg/`` sub-folder is searched; defaults to
        ``$SSVM_DATA_HOME``.

    Returns
    -------
    X, Y, X_test, Y_test
        ``X[i]`` is a :class:`SuperpixelImage` ``(unary (n_nodes, n_unary),
        edges (n_edges, 2) int64, pairwise (n_edges, n_pairwise))``, float64
        and C-contiguous; ``Y[i]`` is an int32 array of n_nodes labels in {0, 1}.

    Raises
    ------
    FileNotFoundError
        If no file is found (the data cannot be downloaded automatically).
    ValueError
        If the file is not a readable MATLAB file (a v7.3 file needs h5py), or
        it holds struct arrays instead of scalar structs, or a variable or field is
        missing, shapes disagree, labels are not 0/1, edge endpoints are out of
        range, or features are not finite (pairwise ones must also be >= 0).
    """
    if size not in HORSESEG_SIZES:
        raise ValueError(f"unknown HorseSeg size {size!r}; choose one of {list(HORSESEG_SIZES)}")
    file = find_horseseg_file(size, path=path, data_home=data_home)
    if file is None:
        home = _io.data_home(data_home)
        where = f"{home / 'horseseg'}" if home is not None else "$SSVM_DATA_HOME/horseseg"
        raise FileNotFoundError(
            f"{HORSESEG_FILES[size]} not found: put it in {where}/ (or pass path=). It is "
            "distributed on the gapBCFW release page of Osokin et al. (2016) and cannot be "
            "downloaded automatically")
    return _read_mat(file)


def find_horseseg_file(size: str = "small", *, path: str | os.PathLike | None = None,
                       data_home: str | os.PathLike | None = None) -> Path | None:
    """The local ``horseSeg_<size>.mat`` that :func:`load_horseseg` would read, or None."""
    name = HORSESEG_FILES[size]
    if path is not None:
        path = Path(os.fspath(path)).expanduser()
        if path.is_file():
            return path
        if path.is_dir():
            return _io.find_file(path, [name])
        return None
    home = _io.data_home(data_home)
    return None if home is None else _io.find_file(home / "horseseg", [name])


def _read_mat(file: Path):
    names = [f"{kind}_{split}" for split in _SPLITS for kind in ("patterns", "labels")]
    contents = _io.read_mat(file, names)
    out = []
    for split in _SPLITS:
        patterns = _cells(contents, f"patterns_{split}", file)
        labels = _cells(contents, f"labels_{split}", file)
        if len(patterns) != len(labels):
            raise ValueError(f"{file}: patterns_{split} has {len(patterns)} images but "
                             f"labels_{split} has {len(labels)}")
        X, Y = [], []
        for i, (pattern, label) in enumerate(zip(patterns, labels)):
            image, y = _read_image(pattern, label, f"{file}: {split} image {i}")
            if X and image.unary.shape[1] != X[0].unary.shape[1]:
                raise ValueError(f"{file}: {split} image {i} has {image.unary.shape[1]} unary "
                                 f"features, image 0 has {X[0].unary.shape[1]}")
            if X and image.pairwise.shape[1] != X[0].pairwise.shape[1]:
                raise ValueError(f"{file}: {split} image {i} has {image.pairwise.shape[1]} "
                                 f"pairwise features, image 0 has {X[0].pairwise.shape[1]}")
            X.append(image)
            Y.append(y)
        out += [X, Y]
    if out[0] and out[2] and (out[0][0].unary.shape[1] != out[2][0].unary.shape[1]
                              or out[0][0].pairwise.shape[1] != out[2][0].pairwise.shape[1]):
        raise ValueError(f"{file}: training and test images have different feature counts")
    return tuple(out)


def _cells(contents: dict, name: str, file: Path) -> list:
    if name not in contents:
        raise ValueError(f"{file} has no variable {name!r}")
    cells = contents[name]
    if not isinstance(cells, np.ndarray) or cells.dtype != object:
        raise ValueError(f"{file}: {name} must be a cell array of structs")
    if cells.size == 0:
        raise ValueError(f"{file}: {name} is empty")
    return list(cells.ravel(order="F"))


def _field(struct, name: str, where: str, required: bool = True) -> np.ndarray | None:
    names = getattr(getattr(struct, "dtype", None), "names", None)
    if names is None:
        raise ValueError(f"{where} is not a struct")
    if struct.size != 1:
        raise ValueError(f"{where} is a {struct.shape} struct array, expected one struct")
    if name not in names:
        if required:
            raise ValueError(f"{where} has no field {name!r}")
        return None
    value = struct[name].flat[0]
    return value.toarray() if scipy.sparse.issparse(value) else np.asarray(value)


def _integers(values: np.ndarray, what: str) -> np.ndarray:
    if not np.issubdtype(values.dtype, np.number) or np.iscomplexobj(values):
        raise ValueError(f"{what} must be numeric, got dtype {values.dtype}")
    if not np.issubdtype(values.dtype, np.integer) and (
            not np.all(np.isfinite(values)) or np.any(values != np.round(values))):
        raise ValueError(f"{what} must hold integers")
    return values.astype(np.int64)


def _matrix(values: np.ndarray, rows: int | None, what: str) -> np.ndarray:
    """A 2-D real matrix, with ``rows`` rows if given; (k, 0) and (0, 0) stay empty."""
    if not np.issubdtype(values.dtype, np.number) or np.iscomplexobj(values):
        raise ValueError(f"{what} must be numeric, got dtype {values.dtype}")
    if values.ndim != 2 or (rows is not None and values.shape[0] != rows and values.size):
        expected = "2-D" if rows is None else f"{rows} rows"
        raise ValueError(f"{what} has shape {values.shape}, expected {expected}")
    return values


def _read_image(pattern, label, where: str) -> tuple[SuperpixelImage, np.ndarray]:
    features = _matrix(_field(pattern, "features", where), None, f"{where}: features")
    n_unary, n_nodes = features.shape
    if n_nodes < 1 or n_unary < 1:
        raise ValueError(f"{where}: features has shape {features.shape}; expected "
                         "(n_unary, n_nodes) with at least one node and one feature")
    edge_structure = _matrix(_field(pattern, "edge_structure", where), 2,
                             f"{where}: edge_structure (2, n_edges)")
    edges = _integers(edge_structure, f"{where}: edge_structure").reshape(2, -1).T
    pairwise = _matrix(_field(pattern, "features_pairwise", where), None,
                       f"{where}: features_pairwise")
    n_edges = edges.shape[0]
    if pairwise.shape[1] != n_edges and not (n_edges == 0 and pairwise.size == 0):
        raise ValueError(f"{where}: features_pairwise has {pairwise.shape[1]} columns but "
                         f"edge_structure has {n_edges} edges")
    for name, expected in (("num_nodes", n_nodes), ("num_edges", n_edges)):
        value = _field(pattern, name, where, required=False)
        if value is not None and (value.size != 1 or value.ravel()[0] != expected):
            raise ValueError(f"{where}: {name} = {value.ravel()} does not match the "
                             f"arrays ({expected})")
    if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
        raise ValueError(f"{where}: edge_structure has endpoints outside [0, {n_nodes}) "
                         f"(min {edges.min()}, max {edges.max()}); indices must be 0-based")
    if np.any(edges[:, 0] == edges[:, 1]):
        raise ValueError(f"{where}: edge_structure has self-loops")
    if not (np.all(np.isfinite(features)) and np.all(np.isfinite(pairwise))):
        raise ValueError(f"{where}: features are not all finite")
    if pairwise.size and pairwise.min() < 0:
        raise ValueError(f"{where}: features_pairwise has negative values")
    y = _integers(_field(label, "labels", where), f"{where}: labels")
    if y.size != n_nodes or (y.ndim == 2 and min(y.shape) != 1) or y.ndim > 2:
        raise ValueError(f"{where}: labels has shape {y.shape}, expected {n_nodes} values "
                         "(one per superpixel)")
    y = y.ravel()
    if np.any((y != 0) & (y != 1)):
        raise ValueError(f"{where}: labels must be 0 or 1, found {sorted(set(y.tolist()))}")
    image = SuperpixelImage(
        np.ascontiguousarray(features.T, dtype=np.float64), np.ascontiguousarray(edges),
        np.ascontiguousarray(pairwise.T, dtype=np.float64).reshape(n_edges, pairwise.shape[0]))
    return image, y.astype(np.int32)


def __getattr__(name: str):
    # horseseg_like lives in ssvm_data.synthetic.superpixels, which imports this module:
    # resolved on first use, so that neither module imports the other at import time
    if name == "horseseg_like":
        from ssvm_data.synthetic import horseseg_like

        return horseseg_like
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

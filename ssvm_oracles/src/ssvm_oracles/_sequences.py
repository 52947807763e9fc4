"""Validation and CSR packing of sequence data (lists of (T_i, F) arrays)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


@dataclass
class PackedSequences:
    """Token feature rows of n sequences in CSR form.

    Token t of the whole set has features ``feat_idx[tok_ptr[t]:tok_ptr[t+1]]``
    with values ``feat_val[...]``; sequence i spans tokens
    ``seq_ptr[i]:seq_ptr[i+1]``.
    """

    n_features: int
    tok_ptr: np.ndarray
    feat_idx: np.ndarray
    feat_val: np.ndarray
    seq_ptr: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.seq_ptr)


def pack_sequences(X: Sequence, n_features: int | None = None) -> PackedSequences:
    """Check a list of per-sequence feature matrices and pack their nonzeros.

    Each ``X[i]`` is a dense (T_i, F) array (or a scipy sparse matrix) with
    T_i >= 1 and the same F; values must be finite.
    """
    if isinstance(X, np.ndarray) and X.ndim == 3:
        X = list(X)
    if not isinstance(X, Sequence) or isinstance(X, (str, bytes)):
        raise TypeError(f"X must be a list of (T_i, n_features) arrays, got {type(X).__name__}")
    if len(X) == 0:
        raise ValueError("X is empty: a training or test set needs at least one sequence")
    rows = []
    for i, x in enumerate(X):
        m = sp.csr_array(x) if sp.issparse(x) else None
        if m is None:
            arr = np.asarray(x, dtype=np.float64)
            if arr.ndim != 2:
                raise ValueError(f"X[{i}] must be 2-D (tokens x features), got shape {arr.shape}")
            m = sp.csr_array(arr)
            if not np.all(np.isfinite(arr)):
                raise ValueError(f"X[{i}] has NaN or infinite features")
        elif not np.all(np.isfinite(m.data)):
            raise ValueError(f"X[{i}] has NaN or infinite features")
        if m.shape[0] == 0:
            raise ValueError(f"X[{i}] has no tokens; sequences need length >= 1")
        if n_features is None:
            n_features = m.shape[1]
        if m.shape[1] != n_features:
            raise ValueError(f"X[{i}] has {m.shape[1]} features per token, expected {n_features}")
        rows.append(m)
    stacked = sp.vstack(rows, format="csr")
    stacked.sum_duplicates()
    stacked.eliminate_zeros()
    stacked.sort_indices()          # the chain oracle merges token rows by feature index
    seq_ptr = np.concatenate([[0], np.cumsum([m.shape[0] for m in rows])]).astype(np.intp)
    return PackedSequences(int(n_features), stacked.indptr.astype(np.intp),
                           stacked.indices.astype(np.int32),
                           stacked.data.astype(np.float64), seq_ptr)


def pack_labels(Y: Sequence, lengths: np.ndarray, n_states: int) -> np.ndarray:
    """Check labellings against sequence lengths and states; concatenate them."""
    if len(Y) != len(lengths):
        raise ValueError(f"X has {len(lengths)} sequences but Y has {len(Y)} labellings")
    out = []
    for i, (y, T) in enumerate(zip(Y, lengths)):
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != T:
            raise ValueError(f"Y[{i}] has shape {y.shape}, expected ({T},) to match X[{i}]")
        if y.size and not np.issubdtype(y.dtype, np.integer):
            raise ValueError(f"Y[{i}] must hold integer labels, got dtype {y.dtype}")
        if y.size and (y.min() < 0 or y.max() >= n_states):
            raise ValueError(f"Y[{i}] has labels outside [0, {n_states}): "
                             f"min {y.min()}, max {y.max()}")
        out.append(y.astype(np.int32))
    return np.concatenate(out)

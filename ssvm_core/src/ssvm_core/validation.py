"""Input checks shared by solvers, objectives and models."""

from __future__ import annotations

import numpy as np


def check_weights(w, n_features: int) -> np.ndarray:
    """``w`` as a C-contiguous float64 vector of length ``n_features``, all finite.

    Raises ``ValueError`` naming the problem otherwise.
    """
    w = np.ascontiguousarray(w, dtype=np.float64)
    if w.shape != (n_features,):
        raise ValueError(f"w has shape {w.shape}, expected ({n_features},)")
    if not np.all(np.isfinite(w)):
        raise ValueError("w has non-finite entries (NaN or infinity)")
    return w

"""Seeded word-alignment-like bipartite matchings (the setting of Taskar et al. 2006).

Re-exported as :func:`ssvm_data.synthetic.matching`.
"""

from __future__ import annotations

import numpy as np

from ssvm_data.synthetic._checks import check_int, check_length

_BIAS_WEIGHT = -1.5         # planted weight of the constant feature
_DISTORTION_WEIGHT = -4.0   # planted weight of |relative position difference|
_SIGNAL = 2.0               # std of the planted score from the Gaussian features
_NOISE = 0.5                # std of the per-edge noise added before planting the matching
_TARGET_RATIO = (0.8, 1.25)  # n_target / n_source


def matching(
    n: int = 100,
    *,
    length: int | tuple[int, int] = (10, 30),
    n_features: int = 82,
    band: float = 0.2,
    random_state: int | np.random.Generator | None = None,
) -> tuple[list[tuple], list[np.ndarray]]:
    """Generate sentence pairs with candidate word links and a planted alignment.

    A pair has ``n_s`` source words (drawn from `length`) and ``n_t`` target
    words (``n_s`` times a factor in [0.8, 1.25], clipped to `length`).  Its
    candidate edges are the (j, k) with relative positions
    ``|(j + 1/2) / n_s - (k + 1/2) / n_t| <= band``, plus the nearest target of
    every source word.  Each edge has ``n_features`` features: a constant 1,
    the relative position difference, and ``n_features - 2`` normal features
    of variance 1 / (n_features - 2) (so edge feature vectors have norms
    near 1).  A weight vector w* is planted from the seed (bias -1.5,
    distortion -4, the rest N(0, 2^2), a score std of 2), and the true
    alignment is the maximum-weight matching of ``<w*, f_e>`` plus N(0, 0.5^2)
    noise, keeping only edges with a positive score; so words can stay
    unaligned and w* is learnable.  Taskar et al. (2006) (Lacoste-Julien et al. (2013), Sec. 6) have
    5,000 training pairs, d = 82 and sentences of 10 to 30 words: the
    defaults, except `n`.

    Parameters
    ----------
    n : int, default=100
        Number of pairs.
    length : int or (int, int), default=(10, 30)
        Source sentence length, or an inclusive ``(min, max)`` range.
    n_features : int, default=82
        Edge feature dimension d (at least 3).
    band : float, default=0.2
        Width of the diagonal band of candidate edges, in relative positions
        (1 makes every pair a candidate).
    random_state : None, int or numpy.random.Generator, optional
        Seed for w* and the pairs.

    Returns
    -------
    X : list of tuple
        ``(n_source, n_target, edges, features)`` per pair: ``edges`` int32
        (m, 2) (source, target) sorted by source then target, ``features``
        float64 (m, n_features), as accepted by ``ssvm_oracles.MatchingModel``.
    Y : list of numpy.ndarray
        int32 arrays of length ``n_source``: the target aligned to each source
        word, or -1.

    Examples
    --------
    >>> X, Y = matching(2, length=(3, 5), n_features=6, random_state=0)
    >>> n_s, n_t, edges, features = X[0]
    >>> features.shape[1], Y[0].shape == (n_s,), bool(Y[0].max() < n_t)
    (6, True, True)
    """
    n = check_int(n, "n", minimum=1)
    low, high = check_length(length)
    n_features = check_int(n_features, "n_features", minimum=3)
    band = float(band)
    if not band >= 0:
        raise ValueError(f"band must be >= 0, got {band}")
    rng = np.random.default_rng(random_state)
    w_star = np.concatenate([[_BIAS_WEIGHT, _DISTORTION_WEIGHT],
                             rng.normal(scale=_SIGNAL, size=n_features - 2)])
    X, Y = [], []
    for n_s in rng.integers(low, high + 1, size=n):
        ratio = rng.uniform(*_TARGET_RATIO)
        n_t = int(np.clip(round(n_s * ratio), low, high))
        edges, distortion = _band_edges(int(n_s), n_t, band)
        features = np.empty((len(edges), n_features))
        features[:, 0] = 1.0
        features[:, 1] = distortion
        features[:, 2:] = rng.normal(scale=1.0 / np.sqrt(n_features - 2),
                                     size=(len(edges), n_features - 2))
        scores = features @ w_star + rng.normal(scale=_NOISE, size=len(edges))
        X.append((int(n_s), n_t, edges, features))
        Y.append(_planted_matching(int(n_s), n_t, edges, scores))
    return X, Y


def _band_edges(n_s: int, n_t: int, band: float) -> tuple[np.ndarray, np.ndarray]:
    """Candidate edges inside the diagonal band (and each source's nearest target)."""
    src = (np.arange(n_s) + 0.5) / n_s
    tgt = (np.arange(n_t) + 0.5) / n_t
    distortion = np.abs(src[:, None] - tgt[None, :])
    keep = distortion <= band
    keep[np.arange(n_s), np.argmin(distortion, axis=1)] = True
    j, k = np.nonzero(keep)                       # row-major: sorted by (source, target)
    return np.stack([j, k], axis=1).astype(np.int32), distortion[j, k]


def _planted_matching(n_s: int, n_t: int, edges: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Maximum-weight matching on the positive scores, as y[source] = target or -1."""
    from scipy.optimize import linear_sum_assignment  # slow to import; needed here only
    gain = np.zeros((n_s, n_t))
    gain[edges[:, 0], edges[:, 1]] = np.maximum(scores, 0.0)
    rows, cols = linear_sum_assignment(gain, maximize=True)
    y = np.full(n_s, -1, dtype=np.int32)
    positive = gain[rows, cols] > 0
    y[rows[positive]] = cols[positive]
    return y

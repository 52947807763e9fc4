"""synthetic.matching: seeded, well-formed matchings on candidate edges, argument checks."""

import numpy as np
import pytest

from ssvm_data import load_dataset
from ssvm_data.synthetic import matching


def test_seeded_and_well_formed():
    X, Y = matching(40, random_state=7)
    X2, Y2 = matching(40, random_state=7)
    assert all(np.array_equal(a[3], b[3]) for a, b in zip(X, X2))
    assert all(np.array_equal(a, b) for a, b in zip(Y, Y2))
    assert not np.array_equal(matching(1, random_state=8)[0][0][3], X[0][3])
    for (n_s, n_t, edges, features), y in zip(X, Y):
        assert 10 <= n_s <= 30 and 10 <= n_t <= 30
        assert edges.dtype == np.int32 and features.dtype == np.float64
        assert features.shape == (len(edges), 82) and np.all(features[:, 0] == 1.0)
        keys = edges[:, 0] * n_t + edges[:, 1]
        assert np.all(np.diff(keys) > 0)                         # sorted, no duplicates
        assert set(edges[:, 0]) == set(range(n_s))               # every word has a candidate
        assert y.dtype == np.int32 and y.shape == (n_s,)
        matched = y[y >= 0]
        assert len(set(matched)) == len(matched) and np.all(matched < n_t)
        pairs = set(keys.tolist())
        assert all(j * n_t + k in pairs for j, k in enumerate(y) if k >= 0)
    aligned = np.mean([np.mean(y >= 0) for y in Y])
    assert 0.2 < aligned < 0.95                                  # some words stay unaligned


def test_band_one_makes_every_pair_a_candidate():
    X, _ = matching(3, length=(2, 4), n_features=3, band=1.0, random_state=0)
    for n_s, n_t, edges, _f in X:
        assert len(edges) == n_s * n_t


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_features must be at least 3"):
        matching(2, n_features=2)
    with pytest.raises(ValueError, match="band must be >= 0"):
        matching(2, band=-0.1)
    with pytest.raises(TypeError, match="n must be an integer"):
        matching(2.5)


def test_registered_dataset():
    X, Y, X_test, Y_test = load_dataset("synthetic-matching", random_state=0)
    assert (len(X), len(Y), len(X_test), len(Y_test)) == (200, 200, 100, 100)

"""Compact blocks of every model that offers a block basis, against dense storage.

One row of ``MODELS`` per model: its compact oracle must pass ``check_oracle``
(brute force and the basis identities), train to the iterates of dense storage
up to rounding for the solver variants, certify gaps equal to primal minus dual
computed independently, and save, load and resume exactly.  The chain's own
details (binary tokens, long directions, the block mask) are in
``test_compact_blocks.py``.
"""

import numpy as np
import pytest

from ssvm_core import SolverState, solve
from ssvm_core.testing import check_gaps, check_oracle
from ssvm_core.testing.toy import random_chain_data
from ssvm_oracles import ChainModel, MulticlassModel


def _multiclass(seed=0, n=24, n_features=5, n_classes=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)) * (rng.random((n, n_features)) < 0.6)
    return (lambda blocks: MulticlassModel(n_classes, blocks=blocks)), X, rng.integers(
        0, n_classes, size=n)


def _chain(seed=0):
    X, Y = random_chain_data(np.random.default_rng(seed), 10, 4, 3, 4)
    return (lambda blocks: ChainModel(3, blocks=blocks)), X, Y


MODELS = {"multiclass": _multiclass, "chain": _chain}

# Pairwise steps equalise two atoms' scores: the next away atom is a tie that rounding
# breaks (see test_compact_blocks.py); in mini-batch rounds a stale corner can coincide
# with the block's own point, whose step then hangs on the sign of a rounding error.  Those
# runs take other valid paths and are compared by weak duality instead.
TIES = ("step", "pairwise"), ("batch_blocks", 4)
VARIANTS = [
    dict(),
    dict(line_search=False),
    dict(batch=True),
    dict(cache=True),
    dict(step="pairwise"),
    dict(step="away", n_samples=2),
    dict(step="corrective"),
    dict(sampling="gap"),
    dict(box=(-0.1, 0.1)),          # clips 6 of 20 multiclass weights; a tighter box
    dict(averaging="average"),      # clips whole classes and makes exact argmax ties
    dict(batch_blocks=4),
]


@pytest.mark.parametrize("name", MODELS)
def test_the_default_storage_is_compact_and_passes_check_oracle(name):
    make, X, Y = MODELS[name]()
    model = make("auto")
    oracle = model.bind(X, Y)
    assert oracle.compact_blocks
    assert SolverState.for_oracle(oracle, 0.1).block_storage == "compact"
    check_oracle(oracle, model=model, X=X, Y=Y)


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in
                                                                  kw.items()) or "bcfw")
@pytest.mark.parametrize("name", MODELS)
def test_compact_iterates_equal_dense_ones_and_are_certified(name, kw):
    make, X, Y = MODELS[name]()
    dense, compact = (solve(make(blocks).bind(X, Y), 0.1, max_passes=6, gap_check_every=3,
                            random_state=0, **kw) for blocks in ("dense", "compact"))
    assert compact.state.block_storage == "compact"
    compact.state.check()
    if any(kw.get(key) == value for key, value in TIES):
        assert compact.history[-1]["dual"] <= dense.history[-1]["primal"] + 1e-12
        assert dense.history[-1]["dual"] <= compact.history[-1]["primal"] + 1e-12
    else:
        np.testing.assert_allclose(compact.w, dense.w, rtol=1e-7, atol=1e-9)
    gaps = check_gaps(make("dense").bind(X, Y), compact.state)
    if compact.state.exact_gaps:
        np.testing.assert_allclose(compact.state.certified_gaps, gaps, rtol=1e-8, atol=1e-12)
    assert gaps.sum() >= -1e-12


@pytest.mark.parametrize("name", MODELS)
def test_compact_save_load_resume_is_exact(name, tmp_path):
    make, X, Y = MODELS[name]()
    oracle = make("auto").bind(X, Y)
    kw = dict(step="pairwise", cache=True, averaging="plain")
    whole = solve(oracle, 0.1, max_passes=6, random_state=0, **kw)
    first = solve(oracle, 0.1, max_passes=3, random_state=0, **kw)
    first.state.save(tmp_path / "state.npz")
    loaded = SolverState.load(tmp_path / "state.npz")
    rest = solve(make("auto").bind(X, Y), 0.1, max_passes=3, state=loaded, **kw)
    np.testing.assert_array_equal(rest.w, whole.w)


def test_multiclass_compact_blocks_are_k_numbers():
    make, X, Y = _multiclass(n=40, n_features=30)
    sizes = {blocks: SolverState.for_oracle(make(blocks).bind(X, Y), 0.1).block_values.size
             for blocks in ("dense", "sparse", "compact")}
    assert sizes["compact"] == 40 * 4
    assert sizes["dense"] == 40 * 4 * 30
    assert sizes["compact"] < sizes["sparse"] < sizes["dense"]


def test_multiclass_sparse_inputs_keep_compact_and_sparse_storage_right():
    import scipy.sparse as sp

    make, X, Y = _multiclass(seed=3, n=30, n_features=50)
    Xs = sp.csr_array(X * (np.random.default_rng(4).random(X.shape) < 0.2))
    runs = [solve(make(blocks).bind(Xs, Y), 0.1, max_passes=5, random_state=0).w
            for blocks in ("dense", "sparse", "compact")]
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(runs[2], runs[0], rtol=1e-9, atol=1e-12)


def test_a_long_chain_needs_no_quadratic_memory():
    """Beyond 256 tokens the chain keeps no Gram: norms come from the token rows."""
    rng = np.random.default_rng(7)
    X = [rng.normal(size=(T, 4)) * (rng.random((T, 4)) < 0.5) for T in (600, 3, 300)]
    Y = [rng.integers(0, 3, size=len(x)) for x in X]
    model = ChainModel(3)
    oracle = model.bind(X, Y)
    for i in range(oracle.n_blocks):
        for density in (1.0, 0.05):
            m = oracle.coord_sizes()[i]
            e = rng.normal(size=m) * (rng.random(m) < density)
            Ae = oracle.coord_expand_py(i, e)
            assert oracle.coord_sqnorm_py(i, e) == pytest.approx(Ae @ Ae, rel=1e-10, abs=1e-12)
    dense, compact = (solve(ChainModel(3, blocks=b).bind(X, Y), 0.1, max_passes=4,
                            random_state=0) for b in ("dense", "compact"))
    np.testing.assert_allclose(compact.w, dense.w, rtol=1e-7, atol=1e-9)


def test_features_whose_gram_overflows_train_as_on_dense_blocks():
    """Features of magnitude 1e155 overflow a token Gram (1e310): such sequences keep no
    Gram and sum their norms from the token rows, as dense storage does."""
    rng = np.random.default_rng(8)
    X = [rng.normal(size=(4, 3)) * 1e155 for _ in range(6)] + [rng.normal(size=(3, 3))]
    Y = [rng.integers(0, 3, size=len(x)) for x in X]
    runs = [solve(ChainModel(3, blocks=b).bind(X, Y), 0.1, max_passes=3, random_state=0)
            for b in ("dense", "compact")]
    for run in runs:
        assert np.all(np.isfinite(run.w)) and np.isfinite(run.gap)
        run.state.check()
    np.testing.assert_allclose(runs[1].w, runs[0].w, rtol=1e-9, atol=0)

"""Wrappers forward the compact-block protocol (one delegating base) and other attributes."""

from __future__ import annotations

import numpy as np
import pytest

from ssvm_core import solve
from ssvm_core.testing import check_gaps
from ssvm_core.testing.toy import random_chain_data
from ssvm_oracles import (
    ApproximateOracle,
    ChainModel,
    CountingOracle,
    DispatchOracle,
    ProductOracle,
)


def _data(seed=0, n=10):
    return random_chain_data(np.random.default_rng(seed), n, 5, 3, 4)


def _compact(X, Y):
    return ChainModel(3, blocks="compact").bind(X, Y)


def _dense(X, Y):
    return ChainModel(3, blocks="dense").bind(X, Y)


WRAPPERS = {
    "counting": lambda X, Y: CountingOracle(_compact(X, Y)),
    "counting-timed": lambda X, Y: CountingOracle(_compact(X, Y), timing=True),
    "approximate-exact": lambda X, Y: ApproximateOracle(_compact(X, Y), 1.0, memory=2),
    "dispatch-one": lambda X, Y: DispatchOracle([_compact(X, Y)]),
    "dispatch-halves": lambda X, Y: DispatchOracle([_compact(X[:4], Y[:4]),
                                                    _compact(X[4:], Y[4:])]),
    "counting-of-dispatch": lambda X, Y: CountingOracle(DispatchOracle([_compact(X, Y)])),
}

VARIANTS = [dict(), dict(step="away", n_samples=3), dict(cache=True),
            dict(box=(-0.05, 0.05)), dict(sampling="gap"), dict(batch_blocks=3)]


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: ",".join(map(str, kw.items())) or "bcfw")
@pytest.mark.parametrize("name", list(WRAPPERS))
def test_each_wrapper_trains_on_compact_blocks_as_the_bare_oracle(name, kw):
    X, Y = _data()
    wrapped = WRAPPERS[name](X, Y)
    assert wrapped.max_coords > 0
    bare = solve(_compact(X, Y), 0.1, max_passes=6, gap_check_every=3, random_state=0, **kw)
    run = solve(wrapped, 0.1, max_passes=6, gap_check_every=3, random_state=0, **kw)
    assert run.state.block_storage == "compact"
    np.testing.assert_allclose(run.w, bare.w, rtol=1e-12, atol=1e-14)
    assert run.gap == pytest.approx(bare.gap, rel=1e-10, abs=1e-14)
    # the certificate, from an independent max over the dense oracle
    gaps = check_gaps(_dense(X, Y), run.state)
    if run.state.exact_gaps:
        np.testing.assert_allclose(run.state.certified_gaps, gaps, rtol=1e-8, atol=1e-12)
    # a compact state continues on the wrapper
    more = solve(wrapped, 0.1, state=run.state, max_passes=2, random_state=0, **kw)
    assert more.state.block_storage == "compact"


def test_counting_counts_through_the_compact_path():
    X, Y = _data()
    counting = CountingOracle(_compact(X, Y))
    result = solve(counting, 0.1, max_passes=3, gap_check_every=3, random_state=0)
    assert counting.n_solve == result.state.oracle_calls


@pytest.mark.parametrize("kw", [dict(), dict(box=(-0.05, 0.05)), dict(cache=True)],
                         ids=["bcfw", "box", "cache"])
def test_a_product_of_compact_parts_matches_the_dense_product(kw):
    X, Y = _data(1)
    X2, Y2 = _data(2)
    compact = ProductOracle([_compact(X, Y), _compact(X2, Y2)])
    dense = ProductOracle([_dense(X, Y), _dense(X2, Y2)])
    assert compact.max_coords > 0 and dense.max_coords == 0
    runs = [solve(o, 0.1, max_passes=6, gap_check_every=3, random_state=0, **kw)
            for o in (compact, dense)]
    assert runs[0].state.block_storage == "compact"
    np.testing.assert_allclose(runs[0].w, runs[1].w, rtol=1e-7, atol=1e-9)
    assert runs[0].gap == pytest.approx(runs[1].gap, rel=1e-7, abs=1e-12)
    runs[0].state.check()


def test_product_basis_identities():
    X, Y = _data(3, n=4)
    product = ProductOracle([_compact(X, Y), _compact(X, Y)])
    rng = np.random.default_rng(0)
    for i in range(product.n_blocks):
        w = rng.normal(size=product.n_features)
        labels, psi, q, theta, loss, score = product.solve_coords_py(i, w)
        np.testing.assert_allclose(product.coord_expand_py(i, q), psi, atol=1e-12)
        np.testing.assert_allclose(theta, product.coord_scores_py(i, w), atol=1e-12)
        e = np.where(rng.random(q.shape[0]) < 0.5, rng.normal(size=q.shape[0]), 0.0)
        Ae = product.coord_expand_py(i, e)
        assert product.coord_sqnorm_py(i, e) == pytest.approx(Ae @ Ae, rel=1e-10, abs=1e-12)
        out, out2 = np.ones(product.n_features), np.zeros(product.n_features)
        product.coord_add_py(i, e, out, out2, 0.5)
        np.testing.assert_allclose(out, 1.0 + Ae, atol=1e-12)
        np.testing.assert_allclose(out2, 0.5 * Ae, atol=1e-12)
        psi_e, q_e, loss_e, _ = product.evaluate_coords_py(i, labels, w)
        np.testing.assert_allclose(q_e, q, atol=1e-12)
        assert loss_e == pytest.approx(loss)


def test_a_dispatch_mixing_compact_and_dense_parts_is_dense():
    X, Y = _data()
    mixed = DispatchOracle([_compact(X[:4], Y[:4]), _dense(X[4:], Y[4:])])
    assert mixed.max_coords == 0
    assert solve(mixed, 0.1, max_passes=2, random_state=0).state.block_storage != "compact"


def test_wrappers_forward_other_attributes_and_exactness():
    X, Y = _data()
    oracle = _compact(X, Y)
    counting = CountingOracle(oracle)
    assert counting.exact and counting.n_blocks == oracle.n_blocks
    np.testing.assert_array_equal(counting.coord_sizes(), oracle.coord_sizes())
    assert not ApproximateOracle(oracle, 0.5).exact
    assert ApproximateOracle(oracle, 1.0).exact
    with pytest.raises(AttributeError):
        counting.no_such_attribute  # noqa: B018


@pytest.mark.parametrize("kw", [dict(), dict(step="away", n_samples=3)], ids=["bcfw", "away"])
def test_an_approximate_compact_oracle_matches_the_approximate_dense_one(kw):
    """nu < 1 returns remembered labellings: their coordinates come from ``evaluate``."""
    X, Y = _data(4)
    compact = ApproximateOracle(_compact(X, Y), 0.5, memory=3)
    dense = ApproximateOracle(_dense(X, Y), 0.5, memory=3)
    runs = [solve(o, 0.1, max_passes=8, gap_check_every=4, random_state=0, **kw)
            for o in (compact, dense)]
    assert runs[0].state.block_storage == "compact"
    assert compact.approximate_answers.sum() > 0
    np.testing.assert_allclose(runs[0].w, runs[1].w, rtol=1e-7, atol=1e-9)
    runs[0].state.check()

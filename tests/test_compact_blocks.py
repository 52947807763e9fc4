"""Compact dual blocks (``MaxOracle.coord_*``, ``ChainModel(blocks="compact")``).

A compact state keeps each block's dual vector as coordinates b_i with
w_i = A_i b_i.  That is a change of representation only: every solver
variant must reach the same iterates as with dense blocks (up to rounding),
the dual bookkeeping must stay consistent (``SolverState.check``), and the
certified gap must equal primal minus dual computed independently.
"""

import numpy as np
import pytest
from strategies import sparse_token_chains

from ssvm_core import SolverState, solve
from ssvm_core.testing import check_gaps
from ssvm_core.testing.toy import random_chain_data
from ssvm_oracles import ChainModel


def _data(seed=0, n=12, max_length=5, n_states=3, n_features=4):
    return random_chain_data(np.random.default_rng(seed), n, max_length, n_states, n_features)


def _oracles(X, Y, n_states=3):
    return (ChainModel(n_states, blocks="dense").bind(X, Y),
            ChainModel(n_states, blocks="compact").bind(X, Y))


def _binary_tokens(seed=2):
    """OCR-like 0/1 pixels: the chain then never reads its feature values."""
    X, Y = _data(seed, n_features=6)
    return [(x > 0.0).astype(float) for x in X], Y


@pytest.mark.parametrize("data", [_data(), sparse_token_chains(), _binary_tokens()],
                         ids=["gaussian", "sparse", "binary"])
def test_chain_basis_identities(data):
    """A_i q = psi, <e, A_i^T w> = <A_i e, w> = coord_dot, ||A_i e||^2 by the Gram
    matrix."""
    X, Y = data
    K = int(max(y.max() for y in Y)) + 1
    dense, compact = _oracles(X, Y, K)
    rng = np.random.default_rng(3)
    for i in range(compact.n_blocks):
        w = rng.normal(size=compact.n_features)
        labels, psi, loss, score = dense.solve_py(i, w)
        lab2, psi2, q, theta, loss2, score2 = compact.solve_coords_py(i, w)
        np.testing.assert_array_equal(labels, lab2)
        assert (loss, score) == (loss2, score2)
        np.testing.assert_allclose(compact.coord_expand_py(i, q), psi, atol=1e-12)
        np.testing.assert_allclose(theta, compact.coord_scores_py(i, w))
        e = rng.normal(size=q.size)
        Ae = compact.coord_expand_py(i, e)
        assert e @ theta == pytest.approx(Ae @ w, rel=1e-10, abs=1e-10)
        assert compact.coord_sqnorm_py(i, e) == pytest.approx(Ae @ Ae, rel=1e-10)
        assert compact.coord_dot_py(i, e, w) == pytest.approx(Ae @ w, rel=1e-10, abs=1e-10)
        out, out2 = np.ones(compact.n_features), np.zeros(compact.n_features)
        compact.coord_add_py(i, e, out, out2, 0.5)
        np.testing.assert_allclose(out, 1.0 + Ae, atol=1e-12)
        np.testing.assert_allclose(out2, 0.5 * Ae, atol=1e-12)
        other = rng.integers(0, K, size=len(Y[i]))
        psi3, q3, loss3, score3 = compact.evaluate_coords_py(i, other, w)
        np.testing.assert_allclose(compact.coord_expand_py(i, q3), psi3, atol=1e-12)
        assert score3 == pytest.approx(dense.evaluate_py(i, other, w)[2])


# Pairwise and hybrid steps equalise the scores of the two atoms they move
# between, so the next away atom of that block is a tie that rounding breaks:
# compact and dense runs then take different (equally valid) paths.  For
# them the certificates are checked exactly, and each run's dual must stay
# below the other's primal (weak duality across the two runs).
VARIANTS = [
    dict(),
    dict(line_search=False),
    dict(batch=True),
    dict(step="fw", cache=True),
    dict(step="pairwise"),
    dict(step="away", n_samples=3),
    dict(step="hybrid"),
    dict(step="corrective"),
    dict(step="sequential", n_samples=3),
    dict(sampling="gap"),
    dict(sampling="gap", step="pairwise", cache=True),
    dict(box=(-0.05, 0.05)),
    dict(box=(-0.05, 0.05), step="pairwise"),
    dict(averaging="average"),
    dict(batch_blocks=4),
    dict(batch_blocks=4, step="pairwise", cache=True),
]


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in
                                                                  kw.items()) or "bcfw")
def test_every_variant_matches_dense_blocks_and_is_certified(kw):
    X, Y = _data()
    results = [solve(oracle, 0.1, max_passes=8, gap_check_every=4, random_state=0, **kw)
               for oracle in _oracles(X, Y)]
    dense, compact = results
    state = compact.state
    assert state.block_storage == "compact"
    state.check()
    dual, dense_dual = compact.history[-1]["dual"], dense.history[-1]["dual"]
    if kw.get("step") in ("pairwise", "hybrid"):
        assert dual <= dense.history[-1]["primal"] + 1e-12
        assert dense_dual <= compact.history[-1]["primal"] + 1e-12
    else:
        np.testing.assert_allclose(compact.w, dense.w, rtol=1e-7, atol=1e-9)
        assert dual == pytest.approx(dense_dual, rel=1e-7, abs=1e-12)
    # The certified gap of the plain iterate is primal minus dual, computed here
    # from w_i = A_i b_i (block_vector) and an independent max over the oracle.
    gaps = check_gaps(_oracles(X, Y)[0], state)
    if state.exact_gaps:
        np.testing.assert_allclose(state.certified_gaps, gaps, rtol=1e-8, atol=1e-12)
    assert gaps.sum() >= -1e-12


def test_compact_blocks_store_less():
    X, Y = _data(n=20, max_length=4, n_states=3, n_features=40)
    dense, compact = (SolverState.for_oracle(o, 0.1) for o in _oracles(X, Y))
    assert compact.block_values.size < dense.block_values.size / 4


def test_save_load_resume_is_exact(tmp_path):
    X, Y = _data()
    _, oracle = _oracles(X, Y)
    whole = solve(oracle, 0.1, step="pairwise", cache=True, max_passes=6, random_state=0,
                  averaging="plain")
    first = solve(oracle, 0.1, step="pairwise", cache=True, max_passes=3, random_state=0,
                  averaging="plain")
    first.state.save(tmp_path / "state.npz")
    loaded = SolverState.load(tmp_path / "state.npz")
    assert loaded.block_storage == "compact" and loaded.atoms.compact
    _, fresh = _oracles(X, Y)                       # a new, equal oracle object
    rest = solve(fresh, 0.1, step="pairwise", cache=True, max_passes=3, state=loaded,
                 averaging="plain")
    np.testing.assert_array_equal(rest.w, whole.w)


def test_rescale_and_shrink_duals_match_dense():
    X, Y = _data()
    results = []
    for oracle in _oracles(X, Y):
        state = solve(oracle, 0.1, max_passes=4, random_state=0).state
        state.rescale(0.2)
        delta = state.shrink_duals(0.05)
        results.append((state.v.copy(), state.ell, delta, state.block_deltas()))
    (v1, ell1, d1, b1), (v2, ell2, d2, b2) = results
    np.testing.assert_allclose(v2, v1, rtol=1e-10, atol=1e-13)
    assert (ell2, d2) == pytest.approx((ell1, d1), rel=1e-10)
    np.testing.assert_allclose(b2, b1, rtol=1e-9, atol=1e-13)


def test_regularization_path_on_compact_blocks():
    from ssvm_paths import regularization_path
    X, Y = _data()
    paths = [regularization_path(o, eps=0.1, lam_min=0.05, max_passes=50, random_state=0,
                                 step="fw")
             for o in _oracles(X, Y)]
    assert len(paths[0].lams) == len(paths[1].lams)
    np.testing.assert_allclose(paths[1].lams, paths[0].lams, rtol=1e-6)


def test_a_compact_state_needs_its_kind_of_oracle():
    X, Y = _data()
    dense, compact = _oracles(X, Y)
    state = solve(compact, 0.1, max_passes=2, random_state=0).state
    with pytest.raises(ValueError, match="compact"):
        solve(dense, 0.1, max_passes=1, state=state)
    state = solve(dense, 0.1, max_passes=2, random_state=0).state
    with pytest.raises(ValueError, match="compact"):
        solve(compact, 0.1, max_passes=1, state=state)


def test_a_loaded_compact_state_is_checked_against_its_oracle(tmp_path):
    X, Y = _data()
    _, compact = _oracles(X, Y)
    state = solve(compact, 0.1, max_passes=2, random_state=0).state
    state.v[0] += 1.0                              # v no longer sums the blocks
    state.w = state.v
    state.save(tmp_path / "bad.npz")
    loaded = SolverState.load(tmp_path / "bad.npz")  # the sum needs the oracle: not yet
    with pytest.raises(ValueError, match="sum of the block vectors"):
        loaded.check_compatible(_oracles(X, Y)[1])
    with pytest.raises(ValueError, match="bind it to its oracle"):
        loaded.block_vector(0)


def test_the_old_storage_flags_are_deprecated_spellings_of_blocks():
    with pytest.raises(ValueError, match="not both"):
        ChainModel(3, sparse_blocks=True, compact_blocks=True)
    for flags, blocks in ((dict(compact_blocks=True), "compact"),
                          (dict(sparse_blocks=True), "sparse"),
                          (dict(sparse_blocks=False), "dense"),
                          (dict(compact_blocks=False), "dense")):
        with pytest.warns(DeprecationWarning, match="blocks="):
            assert ChainModel(3, **flags).blocks == blocks
    with pytest.raises(TypeError, match="not both"):
        ChainModel(3, blocks="dense", compact_blocks=True)
    assert ChainModel(3).blocks == "auto"


def test_a_state_without_a_box_stores_w_once(tmp_path):
    X, Y = _data()
    for box in (None, (-0.05, 0.05)):
        state = solve(_oracles(X, Y)[1], 0.1, max_passes=2, random_state=0, box=box).state
        state.save(tmp_path / "s.npz")
        with np.load(tmp_path / "s.npz") as data:
            assert data["w"].shape == ((0,) if box is None else state.w.shape)
        loaded = SolverState.load(tmp_path / "s.npz")
        np.testing.assert_array_equal(loaded.w, state.w)
        assert (loaded.w is loaded.v) == (box is None)


def _mask_bits(state):
    """Block i's marked coordinates as a boolean array per block."""
    out = []
    for i in range(state.n_blocks):
        m = state.block_ptr[i + 1] - state.block_ptr[i]
        words = state.block_mask[state.block_mask_ptr[i]:state.block_mask_ptr[i + 1]]
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:m]
        out.append(bits.astype(bool))
    return out


@pytest.mark.parametrize("kw", VARIANTS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in
                                                                  kw.items()) or "bcfw")
def test_the_mask_covers_every_nonzero_and_the_atoms(kw):
    """Steps read only the marked coordinates of a block, so the marks must cover
    its nonzeros and every atom's coordinates, for every solver variant."""
    X, Y = _data(n=10, max_length=6, n_states=5)
    _, oracle = _oracles(X, Y, 5)
    state = solve(oracle, 0.1, max_passes=6, gap_check_every=3, random_state=0, **kw).state
    marks = _mask_bits(state)
    for i, marked in enumerate(marks):
        b = state.block_values[state.block_ptr[i]:state.block_ptr[i + 1]]
        assert np.all(marked[b != 0.0]), f"block {i}: a nonzero coordinate is not marked"
        if state.atoms is not None:
            used = (state.atoms.psi_matrix(i, b.size) != 0.0).any(axis=0)
            assert np.all(marked[used]), f"block {i}: an atom's coordinate is not marked"
    # The marks are what the corners touched, not every coordinate.
    assert sum(m.sum() for m in marks) < state.block_values.size
    _assert_lists_are_the_marks(state)


def _assert_lists_are_the_marks(state):
    """The coordinate list a step walks is exactly the block's mask bits, increasing."""
    assert state.blocks.walks_lists
    for i, marked in enumerate(_mask_bits(state)):
        lst = state.blocks.marked(i)
        assert lst.dtype == np.int32
        np.testing.assert_array_equal(lst, np.flatnonzero(marked), err_msg=f"block {i}")


def test_the_coordinate_lists_follow_copies_pickles_and_loads(tmp_path):
    import pickle

    X, Y = _data(n=10, max_length=6, n_states=5)
    _, oracle = _oracles(X, Y, 5)
    state = solve(oracle, 0.1, step="pairwise", max_passes=4, random_state=0).state
    state.save(tmp_path / "state.npz")
    for s in (state, state.copy(), pickle.loads(pickle.dumps(state)),
              SolverState.load(tmp_path / "state.npz")):
        _assert_lists_are_the_marks(s)
    mask = state.block_mask.copy()
    mask[state.block_mask_ptr[:-1]] |= np.uint64(1 << 3)   # coordinate 3 of every block
    state.blocks.set_mask(mask)
    _assert_lists_are_the_marks(state)
    with pytest.raises(IndexError, match="block 10"):
        state.blocks.marked(10)
    # the lists take at most two int32 per marked coordinate and a header per block
    extra = state.blocks.nbytes - sum(a.nbytes for a in (
        state.block_values, state.block_ptr, state.block_mask, state.block_mask_ptr))
    n_marked = sum(m.sum() for m in _mask_bits(state))
    assert 4 * n_marked <= extra - 24 * state.n_blocks <= 8 * n_marked


@pytest.mark.parametrize("kw", [{}, {"step": "pairwise", "sampling": "gap"},
                                {"step": "away", "averaging": True}],
                         ids=["bcfw", "pairwise-gap", "away-avg"])
def test_walking_the_lists_or_the_mask_gives_the_same_iterates(kw):
    """The lists hold the mask's coordinates in the mask's order, so a run that
    falls back to the mask's bits (a list that could not grow) is bit for bit the
    same."""
    X, Y = _data(n=10, max_length=6, n_states=5)
    _, oracle = _oracles(X, Y, 5)
    runs = []
    for walk_masks in (False, True):
        state = solve(oracle, 0.1, max_passes=2, random_state=0, **kw).state
        if walk_masks:
            state.blocks._walk_masks()
            assert not state.blocks.walks_lists
            np.testing.assert_array_equal(state.blocks.marked(0),
                                          np.flatnonzero(_mask_bits(state)[0]))
        runs.append(solve(oracle, 0.1, max_passes=6, random_state=1, state=state, **kw))
    np.testing.assert_array_equal(runs[0].w, runs[1].w)
    np.testing.assert_array_equal(runs[0].state.block_values, runs[1].state.block_values)
    np.testing.assert_array_equal(runs[0].state.block_mask, runs[1].state.block_mask)


def test_extra_marks_do_not_change_the_iterates():
    """A mark on a zero coordinate only costs time: marking everything gives the
    same iterates bit for bit (what a mask rebuilt on load relies on)."""
    X, Y = _data(n=10, max_length=6, n_states=5)
    _, oracle = _oracles(X, Y, 5)
    runs = []
    for fill in (False, True):
        state = SolverState.for_oracle(oracle, 0.1, active_sets=True)
        if fill:
            mask = state.block_mask.copy()
            for i, marked in enumerate(_mask_bits(state)):
                words = mask[state.block_mask_ptr[i]:state.block_mask_ptr[i + 1]]
                bits = np.zeros(64 * words.size, dtype=np.uint8)
                bits[:marked.size] = 1
                words[:] = np.packbits(bits, bitorder="little").view(np.uint64)
            state.blocks.set_mask(mask)
        runs.append(solve(oracle, 0.1, step="pairwise", max_passes=5, random_state=0,
                          state=state))
    np.testing.assert_array_equal(runs[0].w, runs[1].w)
    np.testing.assert_array_equal(runs[0].state.block_values, runs[1].state.block_values)


def test_compact_block_values_are_read_only_to_python(tmp_path):
    import pickle

    X, Y = _data()
    _, oracle = _oracles(X, Y)
    state = solve(oracle, 0.1, max_passes=3, random_state=0).state
    for s in (state, state.copy(), pickle.loads(pickle.dumps(state))):
        with pytest.raises(ValueError, match="read-only"):
            s.block_values[0] = 1.0
    state.save(tmp_path / "state.npz")
    loaded = SolverState.load(tmp_path / "state.npz")
    with pytest.raises(ValueError, match="read-only"):
        loaded.block_values[0] = 1.0
    np.testing.assert_array_equal(_mask_bits(loaded)[0],
                                  state.block_values[:state.block_ptr[1]] != 0.0)
    state.rescale(0.3)                          # scaling keeps the zeros, hence the marks
    state.check_compatible(oracle)
    state.check()


def test_a_mask_missing_a_nonzero_is_caught():
    X, Y = _data()
    _, oracle = _oracles(X, Y)
    state = solve(oracle, 0.1, max_passes=3, random_state=0).state
    with pytest.raises(ValueError, match="read-only"):
        state.block_mask[0] = 0
    state.blocks.set_mask(np.zeros_like(state.block_mask))
    with pytest.raises(ValueError, match="block_mask misses"):
        state.check()


def test_sparse_coordinates_with_zeros():
    """The oracle's sparse coordinate routines on directions with many zeros (a
    step's case), against the dense expansion."""
    X, Y = sparse_token_chains()
    K = int(max(y.max() for y in Y)) + 1
    _, compact = _oracles(X, Y, K)
    rng = np.random.default_rng(5)
    w = rng.normal(size=compact.n_features)
    for i in range(compact.n_blocks):
        m = compact.coord_sizes()[i]
        e = rng.normal(size=m) * (rng.random(m) < 0.2)
        Ae = compact.coord_expand_py(i, e)
        assert compact.coord_sqnorm_py(i, e) == pytest.approx(Ae @ Ae, rel=1e-10, abs=1e-14)
        assert e @ compact.coord_scores_py(i, w) == pytest.approx(Ae @ w, rel=1e-10,
                                                                  abs=1e-12)
        assert compact.coord_dot_py(i, e, w) == pytest.approx(Ae @ w, rel=1e-10, abs=1e-12)
        out, out2 = np.zeros(compact.n_features), np.ones(compact.n_features)
        compact.coord_add_py(i, e, out, out2, -2.0)
        np.testing.assert_allclose(out, Ae, atol=1e-13)
        np.testing.assert_allclose(out2, 1.0 - 2.0 * Ae, atol=1e-13)


@pytest.mark.parametrize("binary", [False, True], ids=["gaussian", "binary"])
def test_coord_add_sums_in_the_order_of_the_entries(binary):
    """coord_add sweeps a token's features once for all its entries (four at a time):
    every entry of w must receive its terms in the order of entry-by-entry adds, so
    the result is bitwise that of adding the nonzeros one at a time (tokens with 1
    to 9 labels in the direction; states spread so that rows are shared)."""
    X, Y = _data(seed=7, n=6, max_length=6, n_states=9, n_features=5)
    if binary:
        X = [(x > 0.0).astype(float) for x in X]
    _, compact = _oracles(X, Y, 9)
    rng = np.random.default_rng(8)
    for i in range(compact.n_blocks):
        m = compact.coord_sizes()[i]
        for density in (0.1, 0.4, 1.0):
            e = rng.normal(size=m) * (rng.random(m) < density)
            start = rng.normal(size=compact.n_features)
            out, out2 = start.copy(), -start
            compact.coord_add_py(i, e, out, out2, 0.3)
            one, one2 = start.copy(), -start
            for k in np.flatnonzero(e):
                single = np.zeros(m)
                single[k] = e[k]
                compact.coord_add_py(i, single, one, one2, 0.3)
            np.testing.assert_array_equal(out, one)
            np.testing.assert_array_equal(out2, one2)
            Ae = compact.coord_expand_py(i, e)
            np.testing.assert_allclose(out, start + Ae, atol=1e-12)
            np.testing.assert_allclose(out2, 0.3 * Ae - start, atol=1e-12)


def test_gram_norm_of_a_long_direction():
    """coord_sqnorm with a longer workspace than it keeps on the stack (256 intp_t:
    two per token-label entry and one per state)."""
    X, Y = _data(seed=4, n=3, max_length=40, n_states=4)
    _, compact = _oracles(X, Y, 4)
    rng = np.random.default_rng(6)
    for i in range(compact.n_blocks):
        e = rng.normal(size=compact.coord_sizes()[i])      # every entry: up to 40 * 4
        Ae = compact.coord_expand_py(i, e)
        assert compact.coord_sqnorm_py(i, e) == pytest.approx(Ae @ Ae, rel=1e-10)
    assert 2 * max(len(y) for y in Y) * 4 + 4 > 256


def test_a_pickle_without_a_mask_gets_one():
    """States pickled before block stores and masks existed (their block arrays in
    the state's own dict) rebuild their store and mask when unpickled."""
    import pickle

    X, Y = _data()
    _, oracle = _oracles(X, Y)
    state = solve(oracle, 0.1, max_passes=3, random_state=0).state
    old = state.__getstate__()
    blocks = old.pop("blocks")
    old.update(block_values=np.array(blocks.values), block_ptr=blocks.ptr,
               block_support=blocks.support, compact_blocks=True)
    restored = SolverState.__new__(SolverState)
    restored.__setstate__(pickle.loads(pickle.dumps(old)))
    # rebuilt from the values: every nonzero marked, nothing the run had not marked
    assert restored.block_storage == "compact" and not restored.blocks.problems()
    assert not np.any(restored.block_mask & ~state.block_mask)
    restored.check_compatible(oracle)
    more = [solve(oracle, 0.1, max_passes=2, random_state=1, state=s).w
            for s in (state, restored)]
    np.testing.assert_array_equal(more[0], more[1])

"""SolverState: layout, save/load, copy, rescale, averaging, resuming."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ssvm_core import SolverState, as_oracle, dual_objective, duality_gap, solve
from ssvm_core.testing import (
    ToyChainModel,
    ToyMulticlassModel,
    enumerate_problem,
    primal_by_enumeration,
    random_chain_data,
    random_multiclass_data,
    recover_alpha,
)

ARRAYS = ("w", "block_values", "block_ptr", "block_support", "block_ell",
          "block_gap_estimates", "avg_u")
SCALARS = ("lam", "n_blocks", "n_features", "ell", "ell_avg", "n_steps", "averaging",
           "passes", "effective_passes", "oracle_calls", "elapsed", "replaced_answers",
           "rng_state", "gap_pass_at", "early_checks_missed")


def multiclass(seed=0, n=5, F=3, K=3):
    rng = np.random.default_rng(seed)
    X, Y = random_multiclass_data(rng, n, F, K)
    return ToyMulticlassModel(K, F).bind(X, Y)


def chain(seed=0, n=3, T=3, K=2, F=2):
    rng = np.random.default_rng(seed)
    X, Y = random_chain_data(rng, n, T, K, F)
    return ToyChainModel(K, F).bind(X, Y)


def assert_states_equal(a: SolverState, b: SolverState, *, counters=True) -> None:
    """Bit-identical iterates (and, optionally, the pass/oracle counters)."""
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    names = SCALARS if counters else ("lam", "ell", "ell_avg", "n_steps", "averaging",
                                      "rng_state", "passes")
    for name in names:
        if name == "elapsed":
            continue
        assert getattr(a, name) == getattr(b, name), name


def stop_at_pass(k):
    """Callback stopping when the cumulative pass counter reaches k."""
    return lambda rec: rec["pass"] >= k


# ---------------------------------------------------------------------------
# Layout
# ---------------------------------------------------------------------------


def test_initial_state_is_the_ground_truth_corner():
    oracle = as_oracle(multiclass())
    st = SolverState.for_oracle(oracle, 0.5)
    assert st.lam == 0.5 and st.n_blocks == 5 and st.n_features == 9
    assert st.dense_blocks
    np.testing.assert_array_equal(st.block_ptr, np.arange(6) * 9)
    assert st.block_ptr.dtype == np.intp and st.block_support.dtype == np.int32
    assert st.block_values.shape == (45,) and not st.block_values.any()
    assert not st.w.any() and st.ell == 0.0 and st.n_steps == 0
    assert np.isnan(st.block_gap_estimates).all()
    assert st.averaging and st.avg_u.shape == (9,)
    np.testing.assert_array_equal(st.averaged_w(), st.w)
    assert st.averaged_ell() == 0.0
    assert dual_objective(st) == 0.0
    assert (st.passes, st.effective_passes, st.oracle_calls, st.elapsed) == (0, 0.0, 0, 0.0)
    assert st.rng_state is None
    off = SolverState.for_oracle(oracle, 0.5, averaging=False)
    assert not off.averaging and off.avg_u.shape == (0,)


@pytest.mark.parametrize("lam", [0.0, -1.0, np.nan, np.inf, -np.inf])
def test_state_rejects_bad_lam(lam):
    with pytest.raises(ValueError, match="lam must be a finite positive number"):
        SolverState(lam, 2, 3)
    st = SolverState(1.0, 2, 3)
    with pytest.raises(ValueError, match="lam must be a finite positive number"):
        st.rescale(lam)


def test_block_vector_returns_dense_copies():
    result = solve(multiclass(), 0.1, max_passes=2, tol=0, random_state=0)
    st = result.state
    total = np.zeros(st.n_features)
    for i in range(st.n_blocks):
        v = st.block_vector(i)
        assert v.shape == (st.n_features,)
        v[:] = 123.0          # a copy: the state is untouched
        total += st.block_vector(i)
    np.testing.assert_allclose(st.w, total, rtol=1e-13, atol=1e-15)
    assert st.ell == pytest.approx(st.block_ell.sum(), rel=1e-13, abs=1e-16)


def test_check_compatible_rejects_other_data():
    st = SolverState.for_oracle(as_oracle(multiclass(n=5)), 0.1)
    with pytest.raises(ValueError, match="warm start needs the same data"):
        st.check_compatible(as_oracle(multiclass(n=4)))
    with pytest.raises(ValueError, match="warm start needs the same data"):
        solve(multiclass(n=5, F=2), 0.1, state=st)


def test_check_compatible_remembers_the_last_oracle_but_does_not_save_it(tmp_path):
    import pickle

    oracle = as_oracle(chain())
    st = SolverState.for_oracle(oracle, 0.1)
    assert st._compatible_oracle is oracle
    same = as_oracle(chain())                        # another object, the same data
    st.check_compatible(same)
    assert st._compatible_oracle is same
    with pytest.raises(ValueError, match="labels or model parameters differ"):
        st.check_compatible(as_oracle(chain(seed=1)))   # same layout, other data
    with pytest.raises(ValueError, match="warm start needs the same data"):
        st.check_compatible(as_oracle(chain(n=4)))
    assert st._compatible_oracle is same
    assert pickle.loads(pickle.dumps(st))._compatible_oracle is None
    st.save(tmp_path / "s.npz")
    assert SolverState.load(tmp_path / "s.npz")._compatible_oracle is None


def test_exact_gaps_flag_follows_the_iterate(tmp_path):
    oracle = chain()
    st = SolverState.for_oracle(oracle, 0.1)
    assert not st.exact_gaps
    solve(oracle, 0.1, state=st, max_passes=2, tol=0, random_state=0)
    assert st.exact_gaps and st.certified_gap == pytest.approx(duality_gap(oracle, st))
    st.save(tmp_path / "s.npz")
    assert not SolverState.load(tmp_path / "s.npz").exact_gaps   # never trusted from a file
    st.rescale(0.2)
    assert not st.exact_gaps and np.isnan(st.certified_gap) and np.isnan(st.last_exact_gap)


# ---------------------------------------------------------------------------
# save / load
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("averaging", [True, False])
def test_save_load_round_trip_is_exact(tmp_path, averaging):
    result = solve(chain(), 0.07, max_passes=3, tol=0, random_state=5, averaging=averaging)
    path = tmp_path / "state.npz"
    result.state.save(path)
    loaded = SolverState.load(path)
    assert_states_equal(loaded, result.state)
    assert loaded.elapsed == result.state.elapsed
    assert isinstance(loaded.n_steps, int) and isinstance(loaded.averaging, bool)
    np.testing.assert_array_equal(loaded.averaged_w(), result.state.averaged_w())
    assert loaded.averaged_ell() == result.state.averaged_ell()
    assert dual_objective(loaded) == dual_objective(result.state)
    loaded.check_compatible(as_oracle(chain()))
    # The file holds no pickles.
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
    assert meta["format_version"] == 4


def test_a_state_file_of_format_3_loads_with_the_early_check_counters_at_zero(tmp_path):
    result = solve(chain(), 0.07, max_passes=12, tol=0, random_state=5)
    assert result.state.gap_pass_at == 10
    result.state.save(tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz", allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    meta = json.loads(str(arrays.pop("meta")))
    meta["format_version"] = 3
    del meta["gap_pass_at"], meta["early_checks_missed"]
    np.savez(tmp_path / "old.npz", meta=np.array(json.dumps(meta)), **arrays)
    loaded = SolverState.load(tmp_path / "old.npz")
    assert loaded.gap_pass_at == 0 and loaded.early_checks_missed == 0
    assert_states_equal(loaded, result.state, counters=False)


def test_save_load_keeps_sparse_block_layout(tmp_path):
    from ssvm_core import BruteForceOracle

    class Supported(BruteForceOracle):
        def block_support(self, i):
            return np.flatnonzero(np.any(self._psi[i] != 0, axis=0)).astype(np.int32)

    rng = np.random.default_rng(2)
    X, Y = random_multiclass_data(rng, 4, 4, 3)
    X[:, 1:3] = 0.0
    oracle = Supported(ToyMulticlassModel(3, 4), list(X), [np.atleast_1d(y) for y in Y])
    result = solve(oracle, 0.1, max_passes=2, tol=0, random_state=0)
    assert not result.state.dense_blocks
    result.state.save(tmp_path / "s.npz")
    loaded = SolverState.load(tmp_path / "s.npz")
    assert_states_equal(loaded, result.state)
    loaded.check_compatible(as_oracle(oracle))


@pytest.mark.parametrize("options", [
    {"sampling": "uniform"}, {"sampling": "perm"}, {"batch": True},
    {"sampling": "uniform", "averaging": False}, {"line_search": False},
])
def test_solve_save_load_continue_equals_one_run(tmp_path, options):
    """3 passes, save, load, 3 more passes == 6 passes at once (same seed).

    The block order continues the saved random stream, so the iterates and
    the averages are bit-identical.  The runs are stopped by a callback at
    cumulative pass 6 so the test does not depend on whether ``max_passes``
    counts per call or in total.
    """
    lam = 0.05
    kwargs = dict(tol=0, max_passes=1000, gap_check_every=4, **options)
    once = solve(chain(seed=1), lam, random_state=42, callback=stop_at_pass(6), **kwargs)
    first = solve(chain(seed=1), lam, random_state=42, callback=stop_at_pass(3), **kwargs)
    assert first.state.passes == 3
    first.state.save(tmp_path / "checkpoint.npz")
    loaded = SolverState.load(tmp_path / "checkpoint.npz")
    # random_state is ignored for a resumed state: its own stream continues.
    second = solve(chain(seed=1), lam, state=loaded, random_state=999,
                   callback=stop_at_pass(6), **kwargs)
    assert second.state is loaded
    assert once.state.passes == second.state.passes == 6
    assert_states_equal(second.state, once.state, counters=False)
    np.testing.assert_array_equal(second.w, once.w)
    # Same for an in-memory copy and for the original object.
    again = solve(chain(seed=1), lam, state=first.state.copy(), callback=stop_at_pass(6),
                  **kwargs)
    assert_states_equal(again.state, once.state, counters=False)


def test_saving_to_a_path_without_suffix_round_trips(tmp_path):
    """``save(path)`` then ``load(path)`` with the very same path.

    Regression: ``save`` used to let ``np.savez`` append ``.npz`` to a
    suffix-less path, so ``load`` of the same path did not find the file.
    """
    result = solve(chain(), 0.1, max_passes=2, tol=0, random_state=0)
    path = tmp_path / "checkpoint"
    result.state.save(path)
    loaded = SolverState.load(path)
    assert_states_equal(loaded, result.state)


def test_save_to_an_open_file(tmp_path):
    result = solve(chain(), 0.1, max_passes=2, tol=0, random_state=0)
    with open(tmp_path / "f.npz", "wb") as fh:
        result.state.save(fh)
    assert_states_equal(SolverState.load(tmp_path / "f.npz"), result.state)


def test_load_rejects_other_files(tmp_path):
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="not a valid ssvm solver state"):
        SolverState.load(tmp_path / "other.npz")
    st = SolverState.for_oracle(as_oracle(chain()), 0.1)
    st.save(tmp_path / "s.npz")
    with np.load(tmp_path / "s.npz") as data:
        contents = {k: data[k] for k in data.files}
    meta = json.loads(str(contents["meta"]))
    meta["format_version"] = 999
    contents["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "future.npz", **contents)
    with pytest.raises(ValueError, match="unsupported state format 999"):
        SolverState.load(tmp_path / "future.npz")


# ---------------------------------------------------------------------------
# copy, rescale, averaging
# ---------------------------------------------------------------------------


def test_copy_is_deep():
    result = solve(chain(), 0.1, max_passes=2, tol=0, random_state=0)
    st = result.state
    cp = st.copy()
    assert_states_equal(cp, st)
    cp.w[:] = 7.0
    cp.block_values[:] = 7.0
    cp.avg_u[:] = 7.0
    cp.rng_state["state"]["state"] = 1
    assert not np.any(st.w == 7.0)
    assert not np.any(st.block_values == 7.0)
    assert st.rng_state != cp.rng_state


def test_rescale_keeps_alpha():
    """w_i scales by lam_old/lam_new, ell_i stays: the same alpha at another lambda."""
    oracle = chain(seed=3)
    problem = enumerate_problem(oracle)
    result = solve(oracle, 0.2, max_passes=4, tol=0, random_state=0)
    st = result.state
    before = st.copy()
    _alphas_before, residual = recover_alpha(problem, st)
    assert residual < 1e-10

    st.rescale(0.05)
    factor = 0.2 / 0.05
    assert st.lam == 0.05
    np.testing.assert_allclose(st.w, factor * before.w, rtol=1e-15)
    np.testing.assert_allclose(st.block_values, factor * before.block_values, rtol=1e-15)
    assert st.ell == before.ell
    np.testing.assert_array_equal(st.block_ell, before.block_ell)
    assert np.isnan(st.block_gap_estimates).all()
    # The dual value changes as D(alpha) does at the new lambda.
    expected = before.ell - 0.5 * 0.05 * factor ** 2 * float(before.w @ before.w)
    assert dual_objective(st) == pytest.approx(expected, rel=1e-13, abs=1e-15)
    # The very same alpha reproduces the rescaled blocks.
    _alphas_after, residual = recover_alpha(problem, st)
    assert residual < 1e-9
    # The averaging restarts at the rescaled iterate.
    assert st.n_steps == 0
    np.testing.assert_array_equal(st.averaged_w(), st.w)
    assert st.averaged_ell() == st.ell
    # And the rescaled state is a valid dual point: its gap is the independent P - D.
    P = primal_by_enumeration(problem.psi, problem.loss, 0.05, st.w)
    assert duality_gap(oracle, st) == pytest.approx(P - dual_objective(st), rel=1e-12,
                                                    abs=1e-14)


def test_solve_with_another_lam_rescales_the_state():
    oracle = chain(seed=3)
    first = solve(oracle, 0.2, max_passes=3, tol=0, random_state=0)
    manual = first.state.copy()
    manual.rescale(0.05)
    rescaled_dual = manual.ell - 0.5 * 0.05 * float(manual.w @ manual.w)
    a = solve(oracle, 0.05, state=first.state, max_passes=1000, callback=stop_at_pass(6),
              tol=0)
    b = solve(oracle, 0.05, state=manual, max_passes=1000, callback=stop_at_pass(6), tol=0)
    assert_states_equal(a.state, b.state, counters=False)
    # The first record of the warm start shows the rescaled dual.
    assert a.history[0]["dual"] == pytest.approx(rescaled_dual, rel=1e-13, abs=1e-15)


def test_reset_averaging_starts_a_new_average():
    result = solve(chain(), 0.1, max_passes=3, tol=0, random_state=0)
    st = result.state
    assert st.n_steps == 3 * st.n_blocks
    assert not np.array_equal(st.averaged_w(), st.w)
    st.reset_averaging()
    assert st.n_steps == 0 and not st.avg_u.any()
    np.testing.assert_array_equal(st.averaged_w(), st.w)
    assert st.averaged_ell() == st.ell


def test_changing_averaging_on_a_warm_start_resets_it():
    oracle = chain()
    first = solve(oracle, 0.1, max_passes=2, tol=0, random_state=0, averaging=False)
    assert first.state.avg_u.shape == (0,)
    second = solve(oracle, 0.1, state=first.state, max_passes=1000, tol=0,
                   callback=stop_at_pass(4), averaging=True)
    st = second.state
    assert st.averaging and st.avg_u.shape == (st.n_features,)
    assert st.n_steps == 2 * st.n_blocks           # restarted at the warm start
    np.testing.assert_array_equal(second.w, st.averaged_w())
    third = solve(oracle, 0.1, state=st, max_passes=1000, tol=0, callback=stop_at_pass(5),
                  averaging=False)
    assert third.state.avg_u.shape == (0,)
    np.testing.assert_array_equal(third.w, third.state.w)


def test_averaged_w_is_the_k_weighted_average_of_the_iterates():
    """Record every iterate w^(k) the oracle sees and average them with weights k."""
    inner = chain(seed=4)
    seen = []

    class Recorder:
        n_blocks, n_features, max_labels = inner.n_blocks, inner.n_features, inner.max_labels

        def solve(self, i, w):
            seen.append(np.array(w))
            return inner.solve(i, w)

        def evaluate(self, i, labels, w):
            return inner.evaluate(i, labels, w)

    n, passes = inner.n_blocks, 4
    result = solve(Recorder(), 0.05, max_passes=passes, tol=0, gap_check_every=1000,
                   random_state=1, averaging="average")
    st = result.state
    K = st.n_steps
    assert K == passes * n
    # Calls: initial gap pass (n), K steps, final gap passes (2n with averaging).
    assert len(seen) == n + K + 2 * n
    iterates = seen[n:n + K] + [st.w.copy()]       # w^(0), ..., w^(K)
    np.testing.assert_array_equal(iterates[0], 0.0)
    weights = np.arange(1, K + 1, dtype=float)
    expected = sum(k * w for k, w in zip(weights, iterates[1:])) / weights.sum()
    np.testing.assert_allclose(st.averaged_w(), expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(result.w, expected, rtol=1e-12, atol=1e-14)
    # The final averaged gap pass is evaluated at that average.
    np.testing.assert_allclose(seen[-1], expected, rtol=1e-12, atol=1e-14)

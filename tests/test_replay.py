"""Exact parallel replay of mini-batch rounds (``_batch.replay_rounds``): the iterates of the
serial replay (``_batch.fw_rounds``) up to rounding, whatever the number of threads."""

import json

import numpy as np
import pytest
from sklearn.base import clone
from strategies import DelegatingOracle

from ssvm_core import (
    BruteForceOracle,
    FrankWolfeSSVM,
    SolverState,
    _batch,
    _fw,
    as_oracle,
    solve,
)
from ssvm_core._batch import AnswerOracle, fw_rounds, replay_fallback, replay_rounds, solve_blocks
from ssvm_core.executors import SerialExecutor, ThreadExecutor
from ssvm_core.minibatch import minibatch_pass
from ssvm_core.objectives import dual_objective
from ssvm_oracles import ChainModel, MulticlassModel


def _chain_data(blocks, seed=3, n=40, max_len=5):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(rng.integers(1, max_len + 1), 4)) for _ in range(n)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    return ChainModel(n_states=3, n_features=4, blocks=blocks), X, Y


def _chain(blocks, seed=3, n=40, max_len=5):
    model, X, Y = _chain_data(blocks, seed, n, max_len)
    return model.bind(X, Y)


def _multiclass(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return MulticlassModel(4, 3).bind(list(rng.normal(size=(n, 3))),
                                      [[v] for v in rng.integers(0, 4, n)])


def _rounds(rng, n, tau):
    order = rng.permutation(n).astype(np.intp)
    bounds = np.append(np.arange(0, n, tau), n).astype(np.intp)
    return order, bounds


def _assert_close(state, ref, rtol=1e-12):
    scale = max(1.0, np.abs(ref.w).max())
    np.testing.assert_allclose(state.w, ref.w, rtol=0, atol=rtol * scale)
    np.testing.assert_allclose(state.block_values, ref.block_values, rtol=0,
                               atol=rtol * max(1.0, np.abs(ref.block_values).max()))
    np.testing.assert_allclose(state.avg_u, ref.avg_u, rtol=0,
                               atol=rtol * max(1.0, np.abs(ref.avg_u).max(initial=0.0)))
    np.testing.assert_allclose(state.block_ell, ref.block_ell, rtol=0, atol=1e-14)
    np.testing.assert_allclose(state.block_gap_estimates, ref.block_gap_estimates,
                               rtol=0, atol=1e-12)
    assert abs(state.ell - ref.ell) < 1e-13 and abs(state.ell_avg - ref.ell_avg) < 1e-13
    assert (state.n_steps, state.fw_steps, state.replaced_answers) == \
        (ref.n_steps, ref.fw_steps, ref.replaced_answers)


def _check_w_is_the_sum_of_blocks(oracle, state):
    total = state.blocks.total(basis=oracle)
    np.testing.assert_allclose(state.w, total, rtol=0,
                               atol=1e-12 * max(1.0, np.abs(total).max()))
    state.check()


@pytest.mark.parametrize("kind", ["dense", "sparse", "compact", "multiclass"])
def test_replay_equals_the_serial_minibatch_for_1_2_3_threads(kind):
    o = _multiclass() if kind == "multiclass" else _chain(kind)
    assert SolverState.for_oracle(o, 0.01).block_storage == (
        "compact" if kind == "multiclass" else kind)
    for tau, line_search in ((1, True), (5, True), (16, True), (40, True), (7, False)):
        ref = SolverState.for_oracle(o, 0.01, averaging=True)
        states = [ref.copy() for _ in range(3)]
        rng = np.random.default_rng(tau)
        for _ in range(4):
            order, bounds = _rounds(rng, o.n_blocks, tau)
            assert fw_rounds(o, ref, order, bounds, line_search, 1) == o.n_blocks
            for threads, state in zip((1, 2, 3), states):
                assert replay_rounds(o, state, order, bounds, line_search,
                                     threads) == o.n_blocks
        for state in states:
            _assert_close(state, ref)
            # the same result bit for bit, whatever the number of threads
            np.testing.assert_array_equal(state.w, states[0].w)
            np.testing.assert_array_equal(state.block_values, states[0].block_values)
            np.testing.assert_array_equal(state.avg_u, states[0].avg_u)
            _check_w_is_the_sum_of_blocks(o, state)


@pytest.mark.parametrize("blocks", ["dense", "sparse", "compact"])
def test_replay_never_decreases_the_dual(blocks):
    o = _chain(blocks)
    state = SolverState.for_oracle(o, 0.001, averaging=False)      # no average to move
    ref = state.copy()
    rng = np.random.default_rng(0)
    duals = [dual_objective(state)]
    for _ in range(5):
        order, bounds = _rounds(rng, o.n_blocks, 16)
        for r in range(bounds.shape[0] - 1):         # one round at a time
            one = (order[bounds[r]:bounds[r + 1]].copy(),
                   np.array([0, bounds[r + 1] - bounds[r]], dtype=np.intp))
            replay_rounds(o, state, *one, True, 2)
            fw_rounds(o, ref, *one, True, 1)
            duals.append(dual_objective(state))
    assert np.all(np.diff(duals) >= -1e-13 * np.abs(duals[1:]))
    assert duals[-1] > duals[1] > 0.0
    _assert_close(state, ref)
    _check_w_is_the_sum_of_blocks(o, state)


def _serial_round_counting_stale(o, state, blocks):
    """One round of the serial replay in Python, step by step (``AnswerOracle`` and one
    BCFW step per block); returns how many answers fell below the ground truth at their
    step with a nonzero block (a nonzero G_j)."""
    answers = solve_blocks(o, state.w, blocks)
    replay = AnswerOracle(o, answers)
    stale = 0
    for b, i in enumerate(blocks):
        _, (idx, val), loss = answers.answers_of(b)[0]
        pw = float(np.dot(val, state.w[idx]))
        if (not answers.ground[b] and loss - pw < -1e-12 * (1 + abs(pw))
                and np.any(state.blocks.block_vector(i, o) != 0)):
            stale += 1
        _fw.bcfw_pass(replay, state, np.array([i], dtype=np.intp), True)
    return stale


@pytest.mark.parametrize("blocks", ["dense", "sparse", "compact"])
def test_stale_answers_below_the_truth_are_replaced_as_in_the_serial_replay(blocks):
    # Three copies of every example in one round of all blocks: earlier steps on a
    # copy push the later copies' answers below the ground truth.
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(rng.integers(2, 5), 4)) for _ in range(6)]
    Y = [rng.integers(0, 3, len(x)).astype(np.int32) for x in X]
    o = ChainModel(n_states=3, n_features=4, blocks=blocks).bind(X * 3, Y * 3)
    ref = SolverState.for_oracle(o, 0.01, averaging=True)
    states = [ref.copy() for _ in range(3)]
    stale = 0
    for _ in range(4):
        order = rng.permutation(o.n_blocks).astype(np.intp)
        stale += _serial_round_counting_stale(o, ref, order)
        for threads, state in zip((1, 2, 3), states):
            replay_rounds(o, state, order, np.array([0, o.n_blocks], dtype=np.intp), True,
                          threads)
    assert stale > 0
    # the scratch kept for the next pass is all zeros again (the Gram rows and the
    # ground truth's columns clear what they scatter)
    assert _batch._FREE_SCRATCH and all(not a.any() for a in _batch._FREE_SCRATCH)
    for state in states:
        _assert_close(state, ref)
        assert state.replaced_answers == 0           # staleness, not an inexact oracle
        _check_w_is_the_sum_of_blocks(o, state)


class _WorstOnEvenBlocks(DelegatingOracle):
    """An inexact oracle: the worst labelling (argmin H) on even blocks."""

    def solve(self, i, w):
        if i % 2:
            return self.inner.solve(i, w)
        k = int(np.argmin(self.inner.scores(i, w)))
        return self.inner.candidates(i)[k], self.inner.psi_matrix(i)[k], self.inner.losses(i)[k]


def test_answers_below_the_truth_at_the_call_are_replaced_and_counted():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(10, 3)), rng.integers(0, 3, 10)
    o = as_oracle(_WorstOnEvenBlocks(BruteForceOracle(MulticlassModel(3, 3), list(X),
                                                      [[v] for v in y])))
    assert o.needs_gil                               # one thread, as fw_rounds
    ref = SolverState.for_oracle(o, 0.1, averaging=True)
    state = ref.copy()
    duals = [dual_objective(state)]
    for _ in range(3):
        order, bounds = _rounds(rng, o.n_blocks, 4)
        fw_rounds(o, ref, order, bounds, True, 2)
        replay_rounds(o, state, order, bounds, True, 2)
        duals.append(dual_objective(state))
    assert ref.replaced_answers > 0
    _assert_close(state, ref)
    assert np.all(np.diff(duals) >= -1e-13)
    _check_w_is_the_sum_of_blocks(o, state)


def test_boxes_fall_back_to_the_serial_replay():
    for blocks in ("dense", "sparse", "compact"):
        o = _chain(blocks)
        assert replay_fallback(o, SolverState.for_oracle(o, 0.01)) is None
    o = _chain("dense")
    cases = [(o, SolverState.for_oracle(o, 0.01, box=(-0.3, 0.4)), "box")]
    for oracle, ref, reason in cases:
        assert reason in replay_fallback(oracle, ref)
        state = ref.copy()
        order, bounds = _rounds(np.random.default_rng(0), oracle.n_blocks, 8)
        fw_rounds(oracle, ref, order, bounds, True, 1)
        replay_rounds(oracle, state, order, bounds, True, 2)
        np.testing.assert_array_equal(state.w, ref.w)          # the serial replay itself
        np.testing.assert_array_equal(state.block_values, ref.block_values)


@pytest.mark.parametrize("blocks", ["dense", "sparse", "compact"])
def test_minibatch_pass_with_parallel_steps_follows_the_serial_pass(blocks):
    o = _chain(blocks)
    ref = SolverState.for_oracle(o, 0.01)
    state = ref.copy()
    for _ in range(3):
        minibatch_pass(o, ref, SerialExecutor(), np.random.default_rng(5), 8)
        with ThreadExecutor(2) as pool:
            minibatch_pass(o, state, pool, np.random.default_rng(5), 8, parallel_steps=True)
    _assert_close(state, ref)


def test_replay_checks_its_input_and_books_the_steps_before_an_oracle_error():
    model, X, Y = _chain_data("dense", n=12)
    o = model.bind(X, Y)
    state = SolverState.for_oracle(o, 0.02)
    order = np.arange(12, dtype=np.intp)
    with pytest.raises(ValueError, match="round_ptr"):
        replay_rounds(o, state, order, np.array([0, 5], dtype=np.intp), True, 2)
    with pytest.raises(ValueError, match="distinct"):
        replay_rounds(o, state, np.zeros(12, dtype=np.intp),
                      np.array([0, 12], dtype=np.intp), True, 2)
    with pytest.raises(ValueError, match="n_threads"):
        replay_rounds(o, state, order, np.array([0, 12], dtype=np.intp), True, 0)
    assert state.n_steps == 0

    class Failing(BruteForceOracle):
        calls = 0

        def solve(self, i, w):
            Failing.calls += 1
            if Failing.calls == 9:
                raise RuntimeError("oracle failed")
            return super().solve(i, w)
    brute = SolverState.for_oracle(o, 0.02)
    with pytest.raises(RuntimeError, match="oracle failed"):
        replay_rounds(as_oracle(Failing(model, X, Y)), brute, order,
                      np.array([0, 4, 8, 12], dtype=np.intp), True, 2)
    assert brute.n_steps == 8 and brute.fw_steps == 8          # two whole rounds
    ref = SolverState.for_oracle(o, 0.02)            # the two rounds alone
    fw_rounds(o, ref, order[:8].copy(), np.array([0, 4, 8], dtype=np.intp), True, 1)
    _assert_close(brute, ref)


@pytest.mark.parametrize("blocks", ["dense", "compact"])
def test_solve_and_the_estimator_with_parallel_steps_follow_the_serial_run(blocks):
    o = _chain(blocks)
    kw = dict(max_passes=4, tol=0, random_state=6, batch_blocks=8, gap_check_every=2)
    a = solve(o, 0.05, **kw)
    b = solve(o, 0.05, executor="threads", n_jobs=2, parallel_steps=True, **kw)
    np.testing.assert_allclose(b.w, a.w, rtol=0, atol=1e-12 * np.abs(a.w).max())
    gaps = [(r["gap"], q["gap"]) for r, q in zip(a.history, b.history) if r["gap"] is not None]
    np.testing.assert_allclose(*zip(*gaps), rtol=1e-9)
    assert a.state.oracle_calls == b.state.oracle_calls and b.certified
    model, X, Y = _chain_data(blocks)
    est = FrankWolfeSSVM(model, lam=0.05, parallel_steps=True, executor="threads", n_jobs=2,
                         **kw).fit(X, Y)
    np.testing.assert_allclose(est.w_, a.w, rtol=0, atol=1e-12 * np.abs(a.w).max())
    assert clone(est).get_params()["parallel_steps"] is True


def test_parallel_steps_without_rounds_is_refused():
    o = _chain("dense", n=10)
    with pytest.raises(ValueError, match="parallel_steps applies to mini-batch rounds"):
        solve(o, 0.05, max_passes=1, parallel_steps=True)          # plain BCFW
    with pytest.raises(ValueError, match="batch Frank-Wolfe"):
        solve(o, 0.05, max_passes=1, parallel_steps=True, batch=True, batch_blocks=4)


def test_cli_parallel_steps_follow_the_serial_rounds(tmp_path):
    # Two passes: on this data set an argmax tied with the ground truth (score ~ -9e-16)
    # flips at pass 3 under any rounding-level change, in the serial rounds too.
    from ssvm.cli import main
    base = ["train", "--dataset", "synthetic-chain", "--max-passes", "2", "--tol", "0",
            "--gap-check-every", "2", "--batch-blocks", "8", "--quiet"]
    assert main(base + ["--out", str(tmp_path / "serial")]) == 0
    for threads in ("2", "3"):
        assert main(base + ["--n-jobs", threads, "--parallel-steps",
                            "--out", str(tmp_path / threads)]) == 0
    a, b, c = (np.load(tmp_path / name / "model.npz")["w"] for name in ("serial", "2", "3"))
    np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(b, c)
    config = json.loads((tmp_path / "2" / "history.json").read_text())["config"]
    assert config["parallel_steps"] is True


@pytest.mark.parametrize("kw", [dict(sampling="gap"), dict(active_sets=True, step="pairwise")])
def test_rounds_made_in_python_keep_their_steps_in_the_master(kw):
    o = _chain("compact")
    ref = SolverState.for_oracle(o, 0.01, active_sets=kw.get("active_sets", False))
    state = ref.copy()
    with ThreadExecutor(2) as pool:
        for _ in range(2):
            minibatch_pass(o, ref, pool, np.random.default_rng(3), 8, **kw)
            minibatch_pass(o, state, pool, np.random.default_rng(3), 8, parallel_steps=True,
                           **kw)
    np.testing.assert_array_equal(state.w, ref.w)
    np.testing.assert_array_equal(state.block_values, ref.block_values)

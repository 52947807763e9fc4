"""The step kernels report ``StepCounts`` and the state books them (``record_steps``)."""

from __future__ import annotations

import numpy as np
import pytest

from ssvm_core import SolverState, as_oracle
from ssvm_core._active import active_pass
from ssvm_core._fw import bcfw_pass, fw_step
from ssvm_core.step_counts import StepCounts
from ssvm_core.testing import ToyChainModel, random_chain_data

COUNTERS = ("n_steps", "replaced_answers", "fw_steps", "away_steps", "pairwise_steps",
            "corrective_steps", "drop_steps", "cache_hits_local", "cache_hits_global")


def chain_oracle(seed=0, n=5):
    rng = np.random.default_rng(seed)
    X, Y = random_chain_data(rng, n, 3, 3, 2)
    return ToyChainModel(3, 2).bind(X, Y)


class FailsOnCall:
    """Delegates to ``inner`` but raises on its ``k``-th ``solve``."""

    def __init__(self, inner, k):
        self.inner, self.k, self.calls = inner, k, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def solve(self, i, w):
        self.calls += 1
        if self.calls == self.k:
            raise RuntimeError("oracle failed")
        return self.inner.solve(i, w)


def run_kernel(oracle, state, order, step):
    if step is None:
        return bcfw_pass(oracle, state, order, True)
    return active_pass(oracle, state, order, step=step)


def assert_same_state(got, ref):
    for name in COUNTERS:
        assert getattr(got, name) == getattr(ref, name), name
    assert got.ell == ref.ell and got.ell_avg == ref.ell_avg
    for name in ("w", "v", "block_values", "block_ell", "avg_u", "block_gap_estimates"):
        np.testing.assert_array_equal(getattr(got, name), getattr(ref, name), err_msg=name)


@pytest.mark.parametrize("step", [None, "fw", "away", "pairwise", "corrective"])
@pytest.mark.parametrize("k", [1, 2, 7])
def test_steps_before_a_failing_oracle_call_are_recorded(step, k):
    inner = chain_oracle()
    n = inner.n_blocks
    order = np.random.default_rng(k).integers(0, n, size=2 * n).astype(np.intp)
    warm = np.random.default_rng(9).permutation(n).astype(np.intp)
    states = []
    for _ in range(2):
        state = SolverState.for_oracle(as_oracle(inner), 0.1, active_sets=step is not None)
        run_kernel(as_oracle(inner), state, warm, step)       # away from the start
        states.append(state)
    got, ref = states
    with pytest.raises(RuntimeError, match="oracle failed"):
        run_kernel(as_oracle(FailsOnCall(inner, k)), got, order, step)
    # one oracle call per step without a cache: the k - 1 steps before the failure
    counts = run_kernel(as_oracle(inner), ref, order[:k - 1], step)
    assert counts.steps == k - 1 and counts.oracle_calls == k - 1
    assert_same_state(got, ref)
    assert got.n_steps == n + k - 1
    got.check()
    if step is not None:
        got.check_atoms()


@pytest.mark.parametrize("step", [None, "pairwise"])
def test_returned_counts_are_what_the_state_booked(step):
    oracle = as_oracle(chain_oracle(seed=1))
    state = SolverState.for_oracle(oracle, 0.1, active_sets=step is not None)
    order = np.random.default_rng(0).integers(0, oracle.n_blocks, size=12).astype(np.intp)
    before = {name: getattr(state, name) for name in COUNTERS}
    counts = run_kernel(oracle, state, order, step)
    assert counts.ell == state.ell and counts.ell_avg == state.ell_avg
    assert counts.steps == 12 == state.n_steps - before["n_steps"]
    assert counts.oracle_calls == 12
    assert counts.fw + counts.away + counts.pairwise == 12
    for field, name in (("fw", "fw_steps"), ("away", "away_steps"),
                        ("pairwise", "pairwise_steps"), ("drop", "drop_steps"),
                        ("replaced", "replaced_answers")):
        assert getattr(counts, field) == getattr(state, name) - before[name]
    assert state.ell == pytest.approx(state.block_ell.sum(), abs=1e-15)
    # an empty order takes no step and books nothing
    assert run_kernel(oracle, state, np.zeros(0, dtype=np.intp), step) == StepCounts()


def test_record_steps_books_every_field_and_leaves_ell_when_none():
    state = SolverState.for_oracle(as_oracle(chain_oracle()), 0.1)
    state.record_steps(StepCounts(ell=0.25, ell_avg=0.125, steps=3, replaced=1, fw=1, away=1,
                                  pairwise=1, corrective=2, drop=4, hits_local=5,
                                  hits_global=6))
    state.record_steps(StepCounts(steps=1, fw=1))
    assert (state.ell, state.ell_avg) == (0.25, 0.125)
    assert [getattr(state, name) for name in COUNTERS] == [4, 1, 2, 1, 1, 2, 4, 5, 6]


def test_batch_fw_step_books_one_step_of_every_block():
    oracle = as_oracle(chain_oracle(seed=2))
    state = SolverState.for_oracle(oracle, 0.1)
    for j in range(1, 4):
        fw_step(oracle, state, True)
        assert state.n_steps == j and state.fw_steps == j * oracle.n_blocks
        assert state.ell == pytest.approx(state.block_ell.sum(), rel=1e-12)
    state.check()

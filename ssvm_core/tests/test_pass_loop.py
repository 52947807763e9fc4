"""The pass loop shared by ``solve`` and ``subgradient_solve``: the same stops, the same way."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from ssvm_core import as_oracle, solve, subgradient_solve
from ssvm_core.pass_loop import Budgets
from ssvm_core.state import SolverState
from ssvm_core.testing import ToyChainModel, random_chain_data

N = 5


def chain_oracle(seed=0):
    rng = np.random.default_rng(seed)
    X, Y = random_chain_data(rng, N, 3, 3, 2)
    return ToyChainModel(3, 2).bind(X, Y)


def both(oracle, **budgets):
    """FW and SSG runs that pay the same oracle calls: n per pass plus n per check,
    with a check at the start and at the end only."""
    fw = solve(oracle, 0.05, tol=0, averaging="plain", gap_check_every=10 ** 6,
               random_state=0, **budgets)
    ssg = subgradient_solve(oracle, 0.05, averaging=False, eval_every=10 ** 6,
                            random_state=0, **budgets)
    return fw, ssg


@pytest.mark.parametrize("budgets, status, passes", [
    (dict(max_passes=3), "max_passes", 3),
    (dict(max_passes=50, max_oracle_calls=1), "max_oracle_calls", 1),
    (dict(max_passes=50, max_oracle_calls=2 * N), "max_oracle_calls", 1),
    (dict(max_passes=50, max_oracle_calls=2 * N + 1), "max_oracle_calls", 2),
    (dict(max_passes=50, max_oracle_calls=4 * N), "max_oracle_calls", 3),
    (dict(max_passes=50, time_budget=1e-9), "time_budget", 1),
    # several budgets spent at once: passes, then oracle calls, then time
    (dict(max_passes=1, max_oracle_calls=1, time_budget=1e-9), "max_passes", 1),
    (dict(max_passes=2, max_oracle_calls=1, time_budget=1e-9), "max_oracle_calls", 1),
])
def test_fw_and_ssg_report_the_same_budget_statuses(budgets, status, passes):
    fw, ssg = both(chain_oracle(), **budgets)
    assert fw.status == ssg.status == status
    assert fw.state.passes == ssg.state.passes == passes
    # the same accounting: n calls per pass, n per check (at the start and the end)
    assert fw.state.oracle_calls == ssg.state.oracle_calls == (passes + 2) * N
    keys = ("pass", "effective_passes", "oracle_calls", "n_steps")
    assert ([[r[k] for k in keys] for r in fw.history]
            == [[r[k] for k in keys] for r in ssg.history])


def test_budgets_count_from_the_start_of_the_call():
    oracle = chain_oracle(1)
    fw, ssg = both(oracle, max_passes=2)
    fw2 = solve(oracle, 0.05, tol=0, averaging="plain", gap_check_every=10 ** 6,
                state=fw.state, max_passes=50, max_oracle_calls=2 * N + 1)
    ssg2 = subgradient_solve(oracle, 0.05, averaging=False, eval_every=10 ** 6,
                             state=ssg.state, max_passes=50, max_oracle_calls=2 * N + 1)
    assert fw2.status == ssg2.status == "max_oracle_calls"
    assert fw2.state.passes == ssg2.state.passes == 4


def test_callback_and_ctrl_c_stop_both_solvers_alike():
    oracle = chain_oracle(2)
    fw, ssg = both(oracle, max_passes=50, callback=lambda rec: rec["pass"] == 2)
    assert fw.status == ssg.status == "callback"
    assert fw.state.passes == ssg.state.passes == 2

    def sigint_at_pass_1(rec):
        if rec["pass"] == 1:
            os.kill(os.getpid(), signal.SIGINT)

    handler = signal.getsignal(signal.SIGINT)
    with pytest.warns(RuntimeWarning, match="interrupted"):
        fw, ssg = both(oracle, max_passes=50, callback=sigint_at_pass_1)
    assert fw.status == ssg.status == "interrupted"
    assert fw.state.passes == ssg.state.passes == 2      # the pass under way stops the run
    assert signal.getsignal(signal.SIGINT) is handler


def test_budgets_status_checks_passes_then_calls_then_time():
    state = SolverState.for_oracle(as_oracle(chain_oracle()), 0.1)
    start = (state.passes, state.oracle_calls, state.elapsed)
    budgets = Budgets(max_passes=2, max_oracle_calls=10, time_budget=1.0)
    assert budgets.status(state, start) is None
    state.add_time(1.0)
    assert budgets.status(state, start) == "time_budget"
    state.count_oracle_calls(10)
    assert state.effective_passes == 10 / N
    assert budgets.status(state, start) == "max_oracle_calls"
    rng = np.random.default_rng(0)
    state.end_pass(0, rng)
    state.end_pass(0, rng)
    assert state.rng_state == rng.bit_generator.state
    assert budgets.status(state, start) == "max_passes"
    assert Budgets(max_passes=3).status(state, start) is None


@pytest.mark.parametrize("budgets, message", [
    (dict(max_passes=0), "max_passes must be an integer >= 1"),
    (dict(max_oracle_calls=0), "max_oracle_calls must be"),
    (dict(time_budget=0.0), "time_budget must be a number > 0"),
])
def test_both_solvers_reject_the_same_bad_budgets(budgets, message):
    oracle = chain_oracle()
    with pytest.raises(ValueError, match=message):
        solve(oracle, 0.05, **budgets)
    with pytest.raises(ValueError, match=message):
        subgradient_solve(oracle, 0.05, **budgets)

"""``solve`` and ``FrankWolfeSSVM``: statuses, budgets, Ctrl-C, errors, history."""

from __future__ import annotations

import math
import os
import signal

import numpy as np
import pytest

from ssvm_core import (
    FrankWolfeSSVM,
    SolverState,
    as_oracle,
    dual_objective,
    duality_gap,
    primal_objective,
    solve,
)
from ssvm_core.solvers import on_check_schedule
from ssvm_core.testing import (
    ToyChainModel,
    ToyMulticlassModel,
    enumerate_problem,
    primal_by_enumeration,
    random_chain_data,
    random_multiclass_data,
    recover_alpha,
    solve_dual_qp,
)


def multiclass_data(seed=0, n=6, F=3, K=3):
    rng = np.random.default_rng(seed)
    X, Y = random_multiclass_data(rng, n, F, K)
    return ToyMulticlassModel(K, F), list(X), [np.atleast_1d(y) for y in Y]


def multiclass(seed=0, **kw):
    model, X, Y = multiclass_data(seed, **kw)
    return model.bind(X, Y)


def chain_data(seed=0, n=3, T=3, K=2, F=2):
    rng = np.random.default_rng(seed)
    X, Y = random_chain_data(rng, n, T, K, F)
    return ToyChainModel(K, F), X, Y


def chain(seed=0, **kw):
    model, X, Y = chain_data(seed, **kw)
    return model.bind(X, Y)


def assert_history_consistent(history, n_blocks, averaging, rtol=1e-12):
    """Identities every history must satisfy (see ``solve``'s notes)."""
    keys = {"pass", "effective_passes", "oracle_calls", "n_steps", "time", "dual",
            "gap_estimate", "primal", "gap", "replaced_answers", "fw_steps", "away_steps",
            "pairwise_steps", "corrective_steps", "drop_steps", "cache_hits_local",
            "cache_hits_global", "iterate"}
    if averaging:
        keys |= {"primal_avg", "dual_avg", "gap_avg"}
    prev = None
    for rec in history:
        assert set(rec) == keys
        assert rec["effective_passes"] == rec["oracle_calls"] / n_blocks
        if rec["gap"] is not None:
            scale = max(1.0, abs(rec["primal"]), abs(rec["dual"]))
            assert abs(rec["primal"] - rec["dual"] - rec["gap"]) <= rtol * scale
            # Right after a gap check the block gaps are exact and sum to the gap.
            assert rec["gap_estimate"] is not None
            assert rec["gap_estimate"] == pytest.approx(rec["gap"], rel=1e-10,
                                                        abs=1e-12 * scale)
            assert rec["gap"] >= -1e-12 * scale
            if averaging:
                assert abs(rec["primal_avg"] - rec["dual_avg"] - rec["gap_avg"]) <= rtol * max(
                    1.0, abs(rec["primal_avg"]))
                assert rec["gap_avg"] >= -1e-12 * scale
        else:
            assert rec["primal"] is None
            if averaging:
                assert rec["primal_avg"] is None and rec["gap_avg"] is None
        if prev is not None:
            assert rec["pass"] >= prev["pass"]
            assert rec["oracle_calls"] > prev["oracle_calls"]
            assert rec["time"] >= prev["time"]
            assert rec["n_steps"] >= prev["n_steps"]
        prev = rec


# ---------------------------------------------------------------------------
# Statuses and budgets
# ---------------------------------------------------------------------------


def test_converged_status_and_certificate():
    oracle = multiclass()
    result = solve(oracle, 0.1, tol=1e-3, max_passes=500, random_state=0)
    assert result.status == "converged"
    assert 0 <= result.gap <= 1e-3
    key = "gap_avg" if result.iterate == "average" else "gap"      # the iterate returned
    assert result.history[-1][key] == result.gap
    # The returned gap is the gap of the returned iterate (the better certified one).
    averaged = result.iterate == "average"
    P = primal_objective(oracle, 0.1, result.w)
    D = dual_objective(result.state, averaged=averaged)
    assert result.gap == pytest.approx(P - D, rel=1e-10, abs=1e-14)
    expected = result.state.averaged_w() if averaged else result.state.w
    np.testing.assert_array_equal(result.w, expected)


def test_already_converged_start_makes_no_pass():
    result = solve(multiclass(), 0.1, tol=10.0)
    assert result.status == "converged"
    assert result.state.passes == 0 and len(result.history) == 1
    assert result.state.oracle_calls == result.state.n_blocks


@pytest.mark.parametrize("batch", [False, True])
def test_max_passes(batch):
    oracle = multiclass()
    result = solve(oracle, 0.01, tol=0, max_passes=7, batch=batch, gap_check_every=3,
                   random_state=0)
    assert result.status == "max_passes"
    assert result.state.passes == 7
    assert result.state.n_steps == (7 if batch else 7 * oracle.n_blocks)
    assert [h["pass"] for h in result.history] == list(range(8))
    assert [h["pass"] for h in result.history if h["gap"] is not None] == [0, 3, 6, 7]
    assert not math.isnan(result.gap)       # a final gap check is always made


def test_check_schedule_grows_geometrically():
    assert [p for p in range(60) if on_check_schedule(p, 7, 0.0)] == list(range(0, 60, 7))
    checks = [p for p in range(5000) if on_check_schedule(p, 10, 0.1)]
    assert checks[:12] == list(range(0, 120, 10))
    for a, b in zip(checks, checks[1:]):
        assert b - a == max(10, int(0.1 * a))
    assert len(checks) < 60                        # O(log P) instead of 500


def test_gap_check_growth_thins_the_checks_and_still_certifies():
    oracle = chain(n=6, T=4, K=3, F=3)
    fixed = solve(oracle, 1e-3, tol=0, max_passes=600, averaging=False, random_state=0)
    grown = solve(oracle, 1e-3, tol=0, max_passes=600, averaging=False, random_state=0,
                  gap_check_growth=0.2)
    checks = [h["pass"] for h in grown.history if h["gap"] is not None]
    assert checks == [p for p in range(600) if on_check_schedule(p, 10, 0.2)] + [600]
    assert grown.state.oracle_calls < fixed.state.oracle_calls
    # the passes themselves are the same: only the exact checks were skipped
    np.testing.assert_allclose(grown.w, fixed.w, rtol=1e-10, atol=1e-12)
    # a converged run ends on an exact check at or below tol
    tol = 0.5 * fixed.history[-1]["gap"]
    result = solve(oracle, 1e-3, tol=tol, max_passes=5000, averaging=False, random_state=0,
                   gap_check_growth=0.2)
    assert result.status == "converged" and result.certified
    assert result.history[-1]["gap"] == result.gap <= tol
    assert result.gap == pytest.approx(primal_objective(oracle, 1e-3, result.w)
                                       - dual_objective(result.state), rel=1e-9, abs=1e-14)
    # a resumed run keeps the schedule of the state's life
    first = solve(oracle, 1e-3, tol=0, max_passes=250, averaging=False, random_state=0,
                  gap_check_growth=0.2)
    second = solve(oracle, 1e-3, tol=0, max_passes=350, averaging=False,
                   state=first.state, gap_check_growth=0.2)
    resumed = [h["pass"] for h in first.history[:-1] + second.history[1:-1]
               if h["gap"] is not None]
    assert resumed == checks[:-1]
    np.testing.assert_allclose(second.w, grown.w, rtol=1e-10, atol=1e-12)


def _early_checks(history, every=10):
    """(pass, gap) of the checks off the ``every`` schedule, and the passes of all checks
    (the start's included)."""
    checks = [(h["pass"], h["gap"]) for h in history if h["gap"] is not None]
    return [(p, g) for p, g in checks if p % every], [p for p, _ in checks]


def test_early_checks_that_miss_wait_twice_as_long_each_time():
    """gapBCFW's heuristic exit checks the exact gap once the block gap estimates sum to
    <= 0.8 tol; with cache steps the estimates underestimate, and each early check that finds
    the gap above tol doubles the passes the next one waits after the last check."""
    rng = np.random.default_rng(2)
    X, Y = random_chain_data(rng, 30, 5, 3, 4)
    oracle = ToyChainModel(3, 4).bind(X, Y)
    tol = 0.2
    result = solve(oracle, 0.01, tol=tol, max_passes=300, averaging=False, random_state=0,
                   step="pairwise", cache=True)
    assert result.status == "converged" and result.certified and result.gap <= tol
    early, checks = _early_checks(result.history)
    missed = [p for p, gap in early if gap > tol]
    assert len(missed) >= 3                     # the case this test is about
    for k, p in enumerate(missed):              # the k-th miss in a row waited 2^k passes
        last = max(q for q in checks if q < p)
        assert p - last >= 2 ** k, (p, last, k)
    assert result.state.early_checks_missed == len(missed)
    # a run whose estimates are right still stops at its first early check
    rng = np.random.default_rng(0)
    X, Y = random_chain_data(rng, 30, 5, 3, 4)
    exact = solve(ToyChainModel(3, 4).bind(X, Y), 1.0, tol=1e-3, max_passes=300,
                  averaging=False, random_state=0, step="pairwise", cache=True)
    early, _ = _early_checks(exact.history)
    assert exact.status == "converged" and early == [(exact.state.passes, exact.gap)]
    assert exact.state.early_checks_missed == 0


def test_max_oracle_calls_counts_gap_passes():
    oracle = multiclass(n=4)
    n = oracle.n_blocks
    result = solve(oracle, 0.01, tol=0, max_passes=1000, max_oracle_calls=30,
                   gap_check_every=2, averaging=False, random_state=0)
    assert result.status == "max_oracle_calls"
    # n for the initial gap pass, n per pass, n per gap check every 2 passes.
    calls = [h["oracle_calls"] for h in result.history]
    assert calls[:4] == [n, 2 * n, 4 * n, 5 * n]
    # It stops after the first pass that reaches the budget (then checks the gap).
    assert calls[-2] < 30 <= result.state.oracle_calls - n
    assert result.state.oracle_calls == calls[-1]
    assert result.state.effective_passes == calls[-1] / n


def test_averaging_doubles_the_cost_of_a_gap_check():
    oracle = multiclass(n=4)
    n = oracle.n_blocks
    result = solve(oracle, 0.01, tol=0, max_passes=2, gap_check_every=1, averaging=True,
                   random_state=0)
    # initial check at n_steps == 0 costs n; later checks cost 2n.
    assert [h["oracle_calls"] for h in result.history] == [n, 4 * n, 7 * n]


def test_budgets_count_per_call_on_a_resumed_state():
    oracle = multiclass(n=4)
    n = oracle.n_blocks
    first = solve(oracle, 0.05, tol=0, max_passes=4, averaging=False, random_state=0)
    second = solve(oracle, 0.05, tol=0, max_passes=3, averaging=False, state=first.state)
    assert second.status == "max_passes"
    assert second.state.passes == 7
    assert [h["pass"] for h in second.history] == [4, 5, 6, 7]
    # initial gap pass (n) + one pass (n) reach a budget of 2n calls in this call
    third = solve(oracle, 0.05, tol=0, max_passes=100, max_oracle_calls=2 * n,
                  averaging=False, state=second.state, gap_check_every=1000)
    assert third.status == "max_oracle_calls"
    assert third.state.passes == 8
    fourth = solve(oracle, 0.05, tol=0, max_passes=100, time_budget=1e-12,
                   averaging=False, state=third.state)
    assert fourth.status == "time_budget"
    assert fourth.state.passes == 9


def test_tiny_time_budget_stops_after_one_pass():
    result = solve(multiclass(), 0.01, tol=0, max_passes=1000, time_budget=1e-12,
                   random_state=0)
    assert result.status == "time_budget"
    assert result.state.passes == 1
    assert result.state.elapsed > 0


def test_callback_can_stop_and_sees_every_record():
    records = []

    def callback(rec):
        records.append(dict(rec))
        return rec["pass"] == 2

    result = solve(multiclass(), 0.01, tol=0, max_passes=100, callback=callback,
                   random_state=0)
    assert result.status == "callback"
    assert records == result.history
    assert [r["pass"] for r in records] == [0, 1, 2]
    assert math.isnan(result.gap)          # no gap check after pass 2


def test_callback_at_the_initial_record_stops_before_any_pass():
    """A true return value stops the solver, also for the record made before pass 1.

    Regression: ``solve`` used to discard the callback's answer for the initial
    record and make one pass anyway.
    """
    result = solve(multiclass(), 0.01, tol=0, callback=lambda rec: True)
    assert result.status == "callback"
    assert result.state.passes == 0
    assert result.gap == result.history[0]["gap_avg"]    # the initial check is current


# ---------------------------------------------------------------------------
# Ctrl-C
# ---------------------------------------------------------------------------


def _sigint_at(pass_number, times=1):
    def callback(rec):
        if rec["pass"] == pass_number:
            for _ in range(times):
                os.kill(os.getpid(), signal.SIGINT)
    return callback


@pytest.mark.parametrize("batch", [False, True])
def test_sigint_interrupts_cleanly_and_the_state_resumes(batch):
    oracle = multiclass()
    handler_before = signal.getsignal(signal.SIGINT)
    with pytest.warns(RuntimeWarning, match="interrupted"):
        result = solve(oracle, 0.05, tol=0, max_passes=50, batch=batch, random_state=3,
                       callback=_sigint_at(2))
    assert result.status == "interrupted"
    assert result.state.passes == 3          # the pass under way when Ctrl-C arrived
    assert math.isnan(result.gap)
    assert signal.getsignal(signal.SIGINT) is handler_before
    assert_history_consistent(result.history, oracle.n_blocks, averaging=True)

    # Resuming reaches the same iterate as an uninterrupted run.
    resumed = solve(oracle, 0.05, tol=0, max_passes=1000, batch=batch, state=result.state,
                    callback=lambda rec: rec["pass"] >= 8)
    straight = solve(oracle, 0.05, tol=0, max_passes=1000, batch=batch, random_state=3,
                     callback=lambda rec: rec["pass"] >= 8)
    np.testing.assert_array_equal(resumed.state.w, straight.state.w)
    np.testing.assert_array_equal(resumed.w, straight.w)
    assert resumed.state.n_steps == straight.state.n_steps


def test_second_sigint_raises_keyboard_interrupt():
    handler_before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        solve(multiclass(), 0.05, tol=0, max_passes=50, callback=_sigint_at(1, times=2))
    assert signal.getsignal(signal.SIGINT) is handler_before


# ---------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("lam", [0.0, -0.1, np.nan, np.inf])
def test_solve_rejects_bad_lam(lam):
    with pytest.raises(ValueError, match="lam must be a finite positive number"):
        solve(multiclass(), lam)


@pytest.mark.parametrize("kwargs, message", [
    ({"sampling": "importance"}, "sampling must be one of"),
    ({"sampling": "Uniform"}, "sampling must be one of"),
    ({"gap_check_every": 0}, "gap_check_every must be an integer >= 1"),
    ({"gap_check_every": 1.5}, "gap_check_every must be an integer >= 1"),
    ({"gap_check_every": -2}, "gap_check_every must be an integer >= 1"),
    ({"gap_check_growth": -0.1}, "gap_check_growth must be a number"),
    ({"gap_check_growth": 1.5}, "gap_check_growth must be a number"),
    ({"max_passes": 0}, "max_passes must be an integer >= 1"),
    ({"max_passes": 2.5}, "max_passes must be an integer >= 1"),
    ({"tol": -1e-3}, "tol must be a number >= 0"),
    ({"tol": np.nan}, "tol must be a number >= 0"),
    ({"max_oracle_calls": 0}, "max_oracle_calls must be an integer >= 1"),
    ({"time_budget": 0.0}, "time_budget must be a number > 0"),
    ({"time_budget": -1.0}, "time_budget must be a number > 0"),
    ({"time_budget": np.nan}, "time_budget must be a number > 0"),
])
def test_solve_rejects_bad_options(kwargs, message):
    with pytest.raises(ValueError, match=message):
        solve(multiclass(), 0.1, **kwargs)


def test_bad_options_are_rejected_before_touching_a_state():
    oracle = multiclass()
    state = solve(oracle, 0.1, max_passes=2, tol=0, random_state=0).state
    before = state.copy()
    with pytest.raises(ValueError):
        solve(oracle, 0.5, state=state, sampling="bogus")
    assert state.lam == before.lam
    np.testing.assert_array_equal(state.w, before.w)


def test_estimator_rejects_lam_and_C_together_and_bad_values():
    model, X, Y = multiclass_data()
    with pytest.raises(ValueError, match="give either lam or C, not both"):
        FrankWolfeSSVM(model, lam=0.1, C=1.0).fit(X, Y)
    for C in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="C must be a finite positive number"):
            FrankWolfeSSVM(model, C=C).fit(X, Y)
    for lam in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="lam must be a finite positive number"):
            FrankWolfeSSVM(model, lam=lam).fit(X, Y)
    with pytest.raises(ValueError, match="sampling must be one of"):
        FrankWolfeSSVM(model, sampling="nope").fit(X, Y)


def test_predict_and_score_before_fit_raise_not_fitted_error():
    from ssvm_core import NotFittedError, SubgradientSSVM
    from ssvm_core.exceptions import NotFittedError as public

    assert NotFittedError is public
    assert issubclass(NotFittedError, ValueError) and issubclass(NotFittedError, AttributeError)
    model, X, Y = multiclass_data()
    for est in (FrankWolfeSSVM(model), SubgradientSSVM(model)):
        for call in (lambda est=est: est.predict(X), lambda est=est: est.score(X, Y)):
            with pytest.raises(NotFittedError, match="not fitted yet; call fit first"):
                call()
        assert not est.__sklearn_is_fitted__()
        est.set_params(max_passes=1).fit(X, Y)
        assert est.__sklearn_is_fitted__()
        assert len(est.predict(X)) == len(X)


# ---------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------


def test_C_is_an_alias_for_lam_over_n():
    model, X, Y = multiclass_data(n=8)
    by_c = FrankWolfeSSVM(model, C=2.0, max_passes=5, tol=0, random_state=0).fit(X, Y)
    assert by_c.lam_ == 1.0 / (2.0 * 8)
    by_lam = FrankWolfeSSVM(model, lam=1.0 / 16, max_passes=5, tol=0,
                            random_state=0).fit(X, Y)
    np.testing.assert_array_equal(by_c.w_, by_lam.w_)
    default = FrankWolfeSSVM(model, max_passes=1, tol=0).fit(X, Y)
    assert default.lam_ == 0.01


def test_get_params_set_params_round_trip():
    model, _X, _Y = multiclass_data()

    def cb(rec):
        return None

    est = FrankWolfeSSVM(model, lam=0.3, batch=True, line_search=False, sampling="perm",
                         averaging=False, tol=1e-5, max_passes=11, max_oracle_calls=99,
                         time_budget=3.0, gap_check_every=4, warm_start=True,
                         random_state=7, callback=cb, n_jobs=2, verbose=0)
    params = est.get_params(deep=False)
    assert params == {"model": model, "lam": 0.3, "C": None, "batch": True,
                      "line_search": False, "sampling": "perm", "step": "fw", "cache": False,
                      "cache_size": 50, "cache_factor": 0.25, "cache_nu": 0.01,
                      "n_samples": 1, "psi_float32": False, "box": "auto",
                      "averaging": False,
                      "tol": 1e-5, "max_passes": 11, "max_oracle_calls": 99,
                      "time_budget": 3.0, "gap_check_every": 4, "gap_check_growth": 0.0,
                      "initial_gap_pass": True,
                      "warm_start": True,
                      "random_state": 7, "callback": cb, "n_jobs": 2, "verbose": 0,
                      "batch_blocks": 1, "parallel_steps": False, "executor": None,
                      "pipeline_lag": None, "pipeline_cache_steps": 0}
    clone = FrankWolfeSSVM(**params)
    assert clone.get_params(deep=False) == params
    deep = est.get_params()                     # the model's own parameters nest
    assert deep["model__n_classes"] == model.n_classes and deep.keys() == params.keys() | {
        f"model__{k}" for k in model.get_params()}
    other = FrankWolfeSSVM(model)
    assert other.set_params(**params) is other
    assert other.get_params(deep=False) == params
    with pytest.raises(ValueError, match="invalid parameter 'alpha'"):
        other.set_params(alpha=1.0)
    assert repr(est).startswith("FrankWolfeSSVM(model=")
    assert "lam=0.3" in repr(est)


def test_fit_predict_score_and_fitted_attributes():
    model, X, Y = multiclass_data(seed=1, n=10, F=4)
    est = FrankWolfeSSVM(model, lam=0.01, tol=3e-3, max_passes=300, random_state=0)
    assert est.fit(X, Y) is est
    assert est.status_ == "converged" and est.gap_ <= 3e-3
    assert est.lam_ == 0.01
    assert est.n_passes_ == est.state_.passes == est.history_[-1]["pass"]
    assert est.w_.shape == (model.size_joint_feature,)
    pred = est.predict(X)
    assert pred == model.predict(X, est.w_)
    expected = 1.0 - np.mean([model.loss(y, p) for y, p in zip(Y, pred)])
    assert est.score(X, Y) == expected
    assert_history_consistent(est.history_, len(X), averaging=True)


def test_warm_start_continues_the_previous_fit():
    model, X, Y = multiclass_data(seed=2)

    def stop(k):
        return lambda rec: rec["pass"] >= k

    est = FrankWolfeSSVM(model, lam=0.05, tol=0, max_passes=1000, warm_start=True,
                         random_state=3, callback=stop(3)).fit(X, Y)
    first_state = est.state_
    est.set_params(callback=stop(6)).fit(X, Y)
    assert est.state_ is first_state
    assert est.n_passes_ == 6
    once = FrankWolfeSSVM(model, lam=0.05, tol=0, max_passes=1000, random_state=3,
                          callback=stop(6)).fit(X, Y)
    np.testing.assert_array_equal(est.w_, once.w_)
    # Without warm_start every fit starts from scratch.
    cold = FrankWolfeSSVM(model, lam=0.05, tol=0, max_passes=1000, random_state=3,
                          callback=stop(3))
    cold.fit(X, Y)
    cold.fit(X, Y)
    assert cold.n_passes_ == 3


def test_warm_start_at_a_new_lambda_is_a_valid_rescaled_start():
    model, X, Y = multiclass_data(seed=2)
    est = FrankWolfeSSVM(model, lam=0.2, tol=1e-6, max_passes=2000, warm_start=True,
                         averaging=False, random_state=0).fit(X, Y)
    w_old, ell_old = est.state_.w.copy(), est.state_.ell
    est.set_params(lam=0.1).fit(X, Y)
    first = est.history_[0]
    assert first["dual"] == pytest.approx(ell_old - 0.5 * 0.1 * 4 * float(w_old @ w_old),
                                          rel=1e-12)
    assert est.lam_ == 0.1
    problem = enumerate_problem(model, X, Y)
    P = primal_by_enumeration(problem.psi, problem.loss, 0.1, est.w_)
    assert est.gap_ == pytest.approx(P - dual_objective(est.state_), rel=1e-9, abs=1e-12)
    assert est.status_ == "converged"


def test_warm_start_refit_gets_its_own_pass_budget():
    """A warm-started ``fit`` runs up to ``max_passes`` passes, as any ``fit`` does.

    scikit-learn's convention for ``warm_start``: budgets apply per call.
    Regression: ``solve`` used to compare ``max_passes`` with the cumulative
    ``state.passes``, so the refit at a new lambda made exactly one pass.
    """
    model, X, Y = multiclass_data(seed=2)
    est = FrankWolfeSSVM(model, lam=0.1, tol=0, max_passes=5, warm_start=True,
                         random_state=0).fit(X, Y)
    assert est.n_passes_ == 5
    est.set_params(lam=0.05).fit(X, Y)
    passes_in_refit = est.n_passes_ - 5
    assert passes_in_refit == 5


def test_verbose_output(capsys):
    solve(multiclass(), 0.1, tol=0, max_passes=4, gap_check_every=2, verbose=1)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and all("gap" in line for line in lines)   # passes 0, 2, 4
    solve(multiclass(), 0.1, tol=0, max_passes=4, gap_check_every=2, verbose=2)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 5
    solve(multiclass(), 0.1, tol=0, max_passes=4, verbose=0)
    assert capsys.readouterr().out == ""


# ---------------------------------------------------------------------------
# History, gaps, predefined steps
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("options", [
    {}, {"sampling": "perm"}, {"batch": True}, {"averaging": False},
    {"line_search": False}, {"batch": True, "line_search": False, "averaging": False},
])
@pytest.mark.parametrize("problem", ["multiclass", "chain"])
def test_history_consistency(problem, options):
    oracle = multiclass(seed=5) if problem == "multiclass" else chain(seed=5)
    result = solve(oracle, 0.02, tol=0, max_passes=12, gap_check_every=1, random_state=1,
                   **options)
    averaging = options.get("averaging", True)
    assert_history_consistent(result.history, oracle.n_blocks, averaging)
    # Independent check of the last record.
    enum = enumerate_problem(oracle)
    last = result.history[-1]
    st = result.state
    P = primal_by_enumeration(enum.psi, enum.loss, 0.02, st.w)
    assert last["primal"] == pytest.approx(P, rel=1e-12)
    assert last["dual"] == pytest.approx(st.ell - 0.01 * float(st.w @ st.w), rel=1e-12,
                                         abs=1e-15)
    if averaging:
        w_avg = st.averaged_w()
        P_avg = primal_by_enumeration(enum.psi, enum.loss, 0.02, w_avg)
        assert last["primal_avg"] == pytest.approx(P_avg, rel=1e-12)
        assert last["gap_avg"] == pytest.approx(duality_gap(oracle, st, averaged=True),
                                                rel=1e-10, abs=1e-14)
    assert last["gap"] == pytest.approx(duality_gap(oracle, st), rel=1e-10, abs=1e-14)


def test_gap_estimate_is_none_until_every_block_was_visited():
    oracle = multiclass(n=6)
    result = solve(oracle, 0.1, tol=0, max_passes=3, gap_check_every=100, random_state=0)
    assert result.history[0]["gap_estimate"] is not None      # after the initial check
    st = SolverState.for_oracle(as_oracle(oracle), 0.1)
    assert np.isnan(st.block_gap_estimates).all()


@pytest.mark.parametrize("batch", [False, True])
def test_predefined_step_converges(batch):
    oracle = multiclass(seed=6, n=5)
    enum = enumerate_problem(oracle)
    opt = solve_dual_qp(enum.psi, enum.loss, 0.1)
    result = solve(oracle, 0.1, batch=batch, line_search=False, tol=0, max_passes=400,
                   gap_check_every=50, random_state=0)
    gaps = [h["gap_avg"] for h in result.history if h["gap_avg"] is not None]
    assert gaps[-1] < 0.05 * gaps[0]
    P = primal_by_enumeration(enum.psi, enum.loss, 0.1, result.w)
    assert 0 <= P - opt.primal + 1e-12 <= result.gap + 1e-12
    # The iterates stay feasible dual points.
    _, residual = recover_alpha(enum, result.state)
    assert residual < 1e-9


def test_line_search_beats_predefined_steps_here():
    oracle = multiclass(seed=6, n=5)
    ls = solve(oracle, 0.1, tol=0, max_passes=100, averaging=False, random_state=0)
    fixed = solve(oracle, 0.1, line_search=False, tol=0, max_passes=100, averaging=False,
                  random_state=0)
    assert ls.history[-1]["dual"] >= fixed.history[-1]["dual"]


def test_solve_accepts_python_objects_and_max_oracles_alike():
    bf = multiclass(seed=9)
    a = solve(bf, 0.1, max_passes=4, tol=0, random_state=2)
    b = solve(as_oracle(bf), 0.1, max_passes=4, tol=0, random_state=2)
    np.testing.assert_array_equal(a.w, b.w)


def test_random_state_accepts_a_generator_and_is_reproducible():
    bf = multiclass(seed=9)
    a = solve(bf, 0.1, max_passes=4, tol=0, random_state=np.random.default_rng(5))
    b = solve(bf, 0.1, max_passes=4, tol=0, random_state=5)
    c = solve(bf, 0.1, max_passes=4, tol=0, random_state=6)
    np.testing.assert_array_equal(a.w, b.w)
    assert not np.array_equal(a.w, c.w)


def test_perm_sampling_visits_every_block_once_per_pass():
    inner = multiclass(seed=9, n=5)
    visits = []

    class Recorder:
        n_blocks, n_features, max_labels = inner.n_blocks, inner.n_features, inner.max_labels

        def solve(self, i, w):
            visits.append(i)
            return inner.solve(i, w)

        def evaluate(self, i, labels, w):
            return inner.evaluate(i, labels, w)

    n = inner.n_blocks
    solve(Recorder(), 0.1, sampling="perm", max_passes=4, tol=0, gap_check_every=1000,
          averaging=False, random_state=0)
    steps = visits[n:n + 4 * n]             # between the initial and the final gap pass
    for p in range(4):
        assert sorted(steps[p * n:(p + 1) * n]) == list(range(n))
    assert visits[:n] == list(range(n)) and visits[-n:] == list(range(n))


def test_sigterm_stops_like_ctrl_c():
    """``timeout``, SLURM and ``docker stop`` send SIGTERM: the model is kept."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def callback(rec):
        if rec["pass"] == 2:
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.warns(RuntimeWarning, match="interrupted by SIGTERM"):
        result = solve(multiclass(), 0.05, tol=0, max_passes=50, random_state=3,
                       callback=callback)
    assert result.status == "interrupted" and result.state.passes == 3
    assert {s: signal.getsignal(s) for s in handlers} == handlers

"""SSG baseline: the kernel against a pure-Python reference, convergence, resume, errors;
the online steps of a caller's schedule (``subgradient_steps``) likewise."""

from __future__ import annotations

import numpy as np
import pytest

from ssvm_core import BruteForceOracle, SubgradientSSVM, as_oracle, subgradient_solve
from ssvm_core.subgradient import subgradient_steps
from ssvm_core.testing import (
    ToyChainModel,
    enumerate_problem,
    primal_by_enumeration,
    random_chain_data,
    solve_dual_qp,
)


def toy(seed=0, n=4):
    rng = np.random.default_rng(seed)
    X, Y = random_chain_data(rng, n, 3, 3, 2)
    model = ToyChainModel(3, 2)
    return model, X, Y, model.bind(X, Y)


def reference_ssg(problem, lam, order):
    """Lacoste-Julien et al. (2013), Sec. 6 written out: gamma = 1/(k+1),
    w <- (1-gamma) w + gamma psi / lam."""
    d = problem.n_features
    w, w_avg = np.zeros(d), np.zeros(d)
    for k, i in enumerate(order):
        j = int(np.argmax(problem.scores(i, w)))
        gamma = 1.0 / (k + 1)
        w = (1 - gamma) * w + gamma * problem.psi[i][j] / lam
        w_avg = k / (k + 2) * w_avg + 2 / (k + 2) * w
    return w, w_avg


@pytest.mark.parametrize("sampling", ["uniform", "perm"])
def test_kernel_matches_the_reference(sampling):
    *_, oracle = toy()
    problem = enumerate_problem(oracle)
    result = subgradient_solve(oracle, 0.1, sampling=sampling, max_passes=7, random_state=3)
    rng = np.random.default_rng(3)
    n = oracle.n_blocks
    order = np.concatenate([rng.permutation(n) if sampling == "perm"
                            else rng.integers(0, n, size=n) for _ in range(7)])
    w, w_avg = reference_ssg(problem, 0.1, order)
    np.testing.assert_allclose(result.state.w, w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result.w, w_avg, rtol=1e-12, atol=1e-12)
    assert result.state.n_steps == 7 * n
    assert result.primal == pytest.approx(
        primal_by_enumeration(problem.psi, problem.loss, 0.1, w_avg), rel=1e-12)


def test_averaged_iterate_approaches_the_optimum():
    *_, oracle = toy(seed=1)
    problem = enumerate_problem(oracle)
    lam = 0.5
    p_star = solve_dual_qp(problem.psi, problem.loss, lam).primal
    result = subgradient_solve(oracle, lam, max_passes=3000, eval_every=1000, random_state=0)
    primals = [rec["primal_avg"] for rec in result.history if rec["primal_avg"] is not None]
    assert all(p >= p_star - 1e-9 for p in primals)
    assert primals[-1] - p_star <= 1e-2 * p_star
    assert primals[-1] < primals[0]


def test_history_has_the_solver_keys_and_resume_is_exact():
    *_, oracle = toy(seed=2)
    whole = subgradient_solve(oracle, 0.2, max_passes=6, eval_every=3, random_state=5)
    part = subgradient_solve(oracle, 0.2, max_passes=3, eval_every=3, random_state=5)
    rest = subgradient_solve(oracle, 0.2, max_passes=3, eval_every=3, state=part.state)
    np.testing.assert_array_equal(rest.w, whole.w)
    keys = {"pass", "effective_passes", "oracle_calls", "n_steps", "time", "dual",
            "gap_estimate", "primal", "gap", "primal_avg", "dual_avg", "gap_avg"}
    assert all(set(rec) == keys for rec in whole.history)
    assert whole.history[-1]["oracle_calls"] == 6 * 4 + 3 * 2 * 4   # steps + evaluations
    assert whole.status == "max_passes"


def test_estimator_and_errors():
    model, X, Y, oracle = toy()
    est = SubgradientSSVM(model, lam=0.1, max_passes=5, random_state=0).fit(X, Y)
    assert est.n_passes_ == 5 and np.isfinite(est.primal_)
    assert 0.0 <= est.score(X, Y) <= 1.0
    with pytest.raises(ValueError, match="sampling"):
        subgradient_solve(oracle, 0.1, sampling="gap")
    with pytest.raises(ValueError, match="lam"):
        subgradient_solve(oracle, -1.0)
    with pytest.raises(ValueError, match="another lam"):
        subgradient_solve(oracle, 0.3, state=est.state_)
    with pytest.raises(ValueError, match="averaging"):
        subgradient_solve(as_oracle(oracle), 0.1, averaging=False, state=est.state_)


# -- online steps with a caller's schedule (pystruct's rule): ``subgradient_steps`` --

def reference_steps(problem, lam, order, w, w_avg, velocity, t, *, learning_rate,
                    decay_exponent, decay_t0, momentum, averaging):
    """pystruct's SubgradientSSVM step written out on the enumerated problem."""
    w, w_avg, velocity, positive = w.copy(), w_avg.copy(), velocity.copy(), 0
    for i in order:
        scores = problem.scores(i, w)
        j = int(np.argmax(scores))
        positive += scores[j] > 0
        g = problem.psi[i][j] - lam * w
        if momentum:
            g = (1 - momentum) * g + momentum * velocity
        velocity = g
        rate = learning_rate / (t + decay_t0) ** decay_exponent if decay_exponent \
            else learning_rate
        w = w + rate * g
        rho = {"none": 1.0, "linear": 2 / (t + 2),
               "squared": 6 * (t + 1) / ((t + 2) * (2 * t + 3))}[averaging]
        w_avg = w.copy() if rho == 1.0 else (1 - rho) * w_avg + rho * w
        t += 1
    return w, w_avg, velocity, t, positive


@pytest.mark.parametrize("averaging, momentum, decay_exponent",
                         [("none", 0.0, 0.0), ("linear", 0.5, 1.0), ("squared", 0.3, 0.5)])
def test_online_steps_follow_the_rule_and_resume_exactly(averaging, momentum, decay_exponent):
    *_, bound = toy(seed=2, n=5)
    oracle = as_oracle(bound)
    problem = enumerate_problem(bound)
    rng = np.random.default_rng(4)
    d, lam = oracle.n_features, 0.2
    order = rng.integers(0, oracle.n_blocks, size=3 * oracle.n_blocks)
    start = rng.normal(size=d)
    kw = dict(learning_rate=0.7, decay_exponent=decay_exponent, decay_t0=3.0,
              momentum=momentum, averaging=averaging)
    w, w_avg, velocity, clock = start.copy(), np.zeros(d), np.zeros(d), np.array([2.0])
    # in two calls: the clock and the velocity carry the schedule over
    positive = subgradient_steps(oracle, order[:7], lam, w, w_avg, velocity, clock, **kw)
    positive += subgradient_steps(oracle, order[7:], lam, w, w_avg, velocity, clock, **kw)
    ref = reference_steps(problem, lam, order, start, np.zeros(d), np.zeros(d), 2.0, **kw)
    for got, want in zip((w, w_avg, velocity), ref[:3]):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert clock[0] == ref[3] == 2.0 + len(order)
    assert positive == ref[4] > 0


def test_online_steps_made_before_a_failing_call_are_kept():

    class Failing(BruteForceOracle):
        calls = 0

        def solve(self, i, w):
            Failing.calls += 1
            if Failing.calls == 4:
                raise RuntimeError("oracle failed")
            return super().solve(i, w)

    model, X, Y, bound = toy(seed=3)
    problem = enumerate_problem(bound)
    oracle = as_oracle(Failing(model, X, Y))
    d = oracle.n_features
    w, w_avg, velocity, clock = np.zeros(d), np.zeros(d), np.zeros(d), np.array([0.0])
    with pytest.raises(RuntimeError, match="oracle failed"):
        subgradient_steps(oracle, [0, 1, 2, 3, 0], 0.5, w, w_avg, velocity, clock,
                          learning_rate=1.0, averaging="linear")
    ref = reference_steps(problem, 0.5, [0, 1, 2], np.zeros(d), np.zeros(d), np.zeros(d), 0.0,
                          learning_rate=1.0, decay_exponent=0.0, decay_t0=0.0, momentum=0.0,
                          averaging="linear")
    assert clock[0] == 3.0
    np.testing.assert_allclose(w, ref[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(w_avg, ref[1], rtol=1e-12, atol=1e-12)


def test_online_steps_refuse_bad_input():
    *_, bound = toy()
    oracle = as_oracle(bound)
    d = oracle.n_features

    def run(order=(0,), w=None, clock=None, **kw):
        kw.setdefault("learning_rate", 1.0)
        return subgradient_steps(oracle, order, 0.1, np.zeros(d) if w is None else w,
                                 np.zeros(d), np.zeros(d),
                                 np.array([0.0]) if clock is None else clock, **kw)

    with pytest.raises(TypeError, match="MaxOracle"):
        subgradient_steps(bound, [0], 0.1, np.zeros(d), np.zeros(d), np.zeros(d),
                          np.array([0.0]), learning_rate=1.0)
    with pytest.raises(ValueError, match="block indices"):
        run(order=[oracle.n_blocks])
    with pytest.raises(ValueError, match="integer block indices"):
        run(order=[0.5])
    with pytest.raises(ValueError, match="finite"):
        run(w=np.full(d, np.nan))
    with pytest.raises(ValueError, match="finite"):
        run(clock=np.array([np.inf]))
    with pytest.raises(ValueError, match="w must be a writable"):
        run(w=np.zeros(d + 1))
    with pytest.raises(ValueError, match="w must be a writable"):
        run(w=np.zeros(d, dtype=np.float32))
    with pytest.raises(ValueError, match="clock must be"):
        run(clock=np.array([0]))
    with pytest.raises(ValueError, match="learning_rate"):
        run(learning_rate=0.0)
    with pytest.raises(ValueError, match="momentum"):
        run(momentum=-0.1)
    with pytest.raises(ValueError, match="averaging"):
        run(averaging="cubic")
    with pytest.raises(ValueError, match="decay_t0"):
        run(decay_exponent=1.0, decay_t0=0.0)
    assert run(order=[]) == 0

"""The cutting-plane learners on the LP relaxation ("lp" / "ad3", pystruct's relaxed training).

The relaxed problem's max oracle is checked against a local-polytope LP written here (SciPy's
linprog on its own constraint matrix) and against brute force over labellings, and the learners'
certificates against that LP's primal.
"""

import pickle
import warnings

import numpy as np
import pytest
from local_polytope import (
    brute_max,
    chains,
    frustrated_grids,
    integral_primal,
    labelling_score,
    lp_optimum,
    potentials,
    relaxed_primal,
)

from ssvm.compat.pystruct.learners import NSlackSSVM, OneSlackSSVM
from ssvm.compat.pystruct.learners.relaxed import (
    RelaxedOracle,
    bind_cutting_plane,
    relaxed_training,
    working_set_from_state,
)
from ssvm.compat.pystruct.models import ChainCRF, GraphCRF, GridCRF, LatentGraphCRF

LEARNERS = [NSlackSSVM, OneSlackSSVM]


def fit(learner, method, X, Y, C=1.0, tol=1e-8, **kwargs):
    crf = GridCRF(n_states=2, inference_method=method, neighborhood=8)
    return learner(crf, C=C, tol=tol, **kwargs).fit(X, Y)


# --- which models train relaxed --------------------------------------------------------------

@pytest.mark.parametrize("method, relaxed", [
    ("lp", True), (("lp", {}), True), ("ad3", True), (("ad3", {"branch_and_bound": False}), True),
    (("ad3", {"branch_and_bound": True}), False), ("max-product", False), ("qpbo", False),
    ("auto", False)])
def test_relaxed_training_is_lp_and_ad3_without_branch_and_bound(method, relaxed):
    assert relaxed_training(GraphCRF(n_states=2, inference_method=method)) is relaxed


def test_models_with_integral_loss_augmented_inference_do_not_train_relaxed():
    # latent CRFs answer integrally whatever the method: their constraints stay labellings
    assert not relaxed_training(LatentGraphCRF(n_labels=2, n_states_per_label=2,
                                               inference_method="lp"))


# --- the relaxed oracle ------------------------------------------------------------------------

def test_relaxed_constraint_violation_is_the_lp_optimum_on_a_loopy_grid():
    X, Y = frustrated_grids()
    crf = GridCRF(n_states=2, inference_method="lp", neighborhood=8)
    crf.initialize(X, Y)
    oracle = RelaxedOracle(crf, X, Y)
    rng = np.random.default_rng(1)
    above = 0
    for trial in range(6):
        w = rng.normal(size=crf.size_joint_feature) * 2
        w[-3:] = [-2.0, 1.5, -2.0] if trial % 2 else w[-3:]      # repulsive: frustrated
        for i, (x, y) in enumerate(zip(X, Y)):
            labels, psi, loss = oracle.solve(i, w)
            unary, pairwise, edges = potentials(x, y, w, 2)
            truth = labelling_score(unary, pairwise, edges, np.ravel(y))
            violation = loss - w @ psi
            assert violation == pytest.approx(lp_optimum(unary, pairwise, edges) - truth,
                                              abs=1e-7)
            integral = brute_max(unary, pairwise, edges) - truth
            assert violation >= integral - 1e-7
            above += violation > integral + 1e-6
            assert labels.shape == (0,)
    assert above > 0                        # some answers were fractional and scored above


def test_cutting_planes_bind_the_relaxed_oracle_only_for_relaxed_methods():
    X, Y = frustrated_grids()
    for method, relaxed in (("ad3", True), ("brute", False)):
        crf = GridCRF(n_states=2, inference_method=method, neighborhood=8)
        crf.initialize(X, Y)
        oracle = bind_cutting_plane(crf, X, Y)
        assert oracle.exact and bool(getattr(oracle, "relaxed", False)) is relaxed
    with pytest.raises(NotImplementedError, match="not a labelling"):
        RelaxedOracle(crf, X, Y).evaluate(0, np.zeros(6, np.int32), np.zeros(9))


# --- relaxed training --------------------------------------------------------------------------

@pytest.mark.parametrize("learner", LEARNERS)
def test_relaxed_gap_is_the_lp_primal_minus_the_dual(learner):
    X, Y = frustrated_grids()
    C, tol = 1.0, 1e-6
    svm = fit(learner, "lp", X, Y, C=C, tol=tol)
    assert svm.relaxed_ and svm.exact_
    primal = relaxed_primal(X, Y, svm.w, C)
    assert svm.primal_objective_curve_[-1] == pytest.approx(primal, abs=1e-6)
    assert svm.duality_gap_ == pytest.approx(max(primal - svm.objective_curve_[-1], 0.0),
                                              abs=1e-6)
    assert svm.duality_gap_ <= tol * C * len(X) + 1e-6
    # the certificate is the relaxed problem's, whose primal dominates the integral one
    assert primal >= integral_primal(X, Y, svm.w, C) - 1e-7


@pytest.mark.parametrize("C", [1.0, 10.0])
def test_relaxed_dual_is_above_the_integral_one_at_the_same_C(C):
    X, Y = frustrated_grids()
    runs = {(learner, method): fit(learner, method, X, Y, C=C)
            for learner in LEARNERS for method in ("brute", "lp")}
    for learner in LEARNERS:
        relaxed, integral = runs[learner, "lp"], runs[learner, "brute"]
        assert not integral.relaxed_ and relaxed.relaxed_
        # relaxed dual + its gap >= relaxed optimum >= integral optimum >= integral dual;
        # strictly on these frustrated grids
        assert relaxed.objective_curve_[-1] > integral.objective_curve_[-1] + 0.1 * C
        # certified separation: min P_relaxed >= relaxed dual > an integral primal value
        assert relaxed.objective_curve_[-1] > integral.primal_objective_curve_[-1]
    # n-slack and one-slack reach the same relaxed optimum, within their certified gaps
    a, b = runs[NSlackSSVM, "lp"], runs[OneSlackSSVM, "lp"]
    assert abs(a.objective_curve_[-1] - b.objective_curve_[-1]) <= (
        a.duality_gap_ + b.duality_gap_ + 1e-6)


@pytest.mark.parametrize("learner", LEARNERS)
def test_integral_relaxed_answers_give_the_integral_model(learner):
    # on chains the local polytope's vertices are labellings: every relaxed answer is integral
    X, Y = chains()
    C, tol = 10.0, 1e-8
    relaxed = learner(ChainCRF(n_states=3, inference_method="ad3"), C=C, tol=tol).fit(X, Y)
    integral = learner(ChainCRF(n_states=3, inference_method="max-product"), C=C,
                       tol=tol).fit(X, Y)
    assert relaxed.relaxed_ and not integral.relaxed_
    for x, y in zip(X, Y):
        answer = relaxed.model.loss_augmented_inference(x, y, relaxed.w, relaxed=True)
        assert not isinstance(answer, tuple)
    # 1-strong convexity: ||w - w*||^2 / 2 <= P(w) - P* <= gap
    bound = np.sqrt(2 * relaxed.duality_gap_) + np.sqrt(2 * integral.duality_gap_) + 1e-6
    assert np.linalg.norm(relaxed.w - integral.w) <= bound
    assert relaxed.objective_curve_[-1] == pytest.approx(integral.objective_curve_[-1],
                                                         abs=1e-6)
    np.testing.assert_array_equal(relaxed.predict(X), integral.predict(X))


# --- switch_to ---------------------------------------------------------------------------------

@pytest.mark.parametrize("learner", LEARNERS)
def test_switch_from_relaxed_to_integral_restarts_the_working_set(learner):
    X, Y = frustrated_grids()
    C = 1.0
    svm = fit(learner, "lp", X, Y, C=C, tol=1e-6, switch_to="brute")
    integral = fit(learner, "brute", X, Y, C=C, tol=1e-6)
    assert svm.model.inference_method == "brute" and svm.model.inference_method_ == "lp"
    assert not svm.relaxed_ and svm.exact_
    # the final certificate is the integral problem's, at its optimum
    assert svm.primal_objective_curve_[-1] == pytest.approx(integral_primal(X, Y, svm.w, C),
                                                            abs=1e-6)
    assert abs(svm.objective_curve_[-1] - integral.objective_curve_[-1]) <= (
        svm.duality_gap_ + integral.duality_gap_ + 1e-6)
    # the relaxed phase reached a dual above the integral optimum, which no integral
    # working set can hold
    assert max(svm.objective_curve_) > integral.primal_objective_curve_[-1] + 0.1


@pytest.mark.parametrize("learner", LEARNERS)
def test_switch_to_relaxed_after_frank_wolfe_continues_from_its_dual(learner):
    # 'qpbo' with 3 states is alpha-expansion (approximate): the Frank-Wolfe path first
    rng = np.random.default_rng(0)
    Y = [rng.integers(0, 3, size=(3, 3)) for _ in range(3)]
    X = [np.eye(3)[y] + 1.0 * rng.normal(size=(3, 3, 3)) for y in Y]
    kwargs = dict(C=1.0, tol=1e-4, max_iter=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)           # approximate oracle
        first = learner(GridCRF(n_states=3, inference_method="qpbo"), **kwargs).fit(X, Y)
        svm = learner(GridCRF(n_states=3, inference_method="qpbo"), switch_to="lp",
                      **kwargs).fit(X, Y)
    assert not first.relaxed_ and svm.relaxed_ and svm.model.inference_method == "lp"
    # the cutting plane starts at the Frank-Wolfe run's final dual point: one-slack records it
    # before its first QP, n-slack after (the restricted dual only rises)
    if learner is OneSlackSSVM:
        assert svm.history_[0]["dual"] == pytest.approx(first.objective_curve_[-1], rel=1e-9)
    assert svm.history_[0]["dual"] >= first.objective_curve_[-1] - 1e-9
    assert svm.objective_curve_[-1] >= first.objective_curve_[-1] - 1e-9
    assert svm.duality_gap_ <= 1e-4 * len(X) + 1e-9


@pytest.mark.parametrize("n_slack", [True, False])
def test_working_set_from_a_frank_wolfe_state_has_its_w_and_dual(n_slack):
    rng = np.random.default_rng(0)
    Y = [rng.integers(0, 3, size=(3, 3)) for _ in range(3)]
    X = [np.eye(3)[y] + 1.0 * rng.normal(size=(3, 3, 3)) for y in Y]
    C, n = 2.0, len(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        svm = NSlackSSVM(GridCRF(n_states=3, inference_method="qpbo"), C=C, max_iter=1,
                         tol=1e-2).fit(X, Y)
    state = svm.state_
    ws = working_set_from_state(state, n if n_slack else 1, C)
    np.testing.assert_allclose(ws.weights(None), state.w, atol=1e-12)
    assert ws.dual(None) == pytest.approx(svm.objective_curve_[-1], rel=1e-9)
    assert np.allclose(np.bincount(ws.group, weights=ws.beta), C if n_slack else C * n)
    with pytest.raises(ValueError, match="n_groups must be 1"):
        working_set_from_state(state, 2, C)


@pytest.mark.parametrize("learner", LEARNERS)
def test_relaxed_warm_start_continues_on_the_same_data(learner):
    X, Y = frustrated_grids()
    svm = fit(learner, "lp", X, Y, C=1.0, tol=1e-6)
    ws, dual = svm.working_set_, svm.objective_curve_[-1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)          # no "restarts" warning
        svm.fit(X, Y, warm_start=True)
    assert svm.working_set_ is ws and svm.relaxed_
    assert svm.objective_curve_[-1] == pytest.approx(dual, abs=1e-6)
    with pytest.warns(UserWarning, match="another training set"):
        svm.fit(X[:3], Y[:3], warm_start=True)


def test_relaxed_oracle_pickles_to_the_same_answers():
    X, Y = frustrated_grids()
    crf = GridCRF(n_states=2, inference_method="lp", neighborhood=8)
    crf.initialize(X, Y)
    oracle = RelaxedOracle(crf, X, Y)
    copy = pickle.loads(pickle.dumps(oracle))
    w = np.random.default_rng(3).normal(size=crf.size_joint_feature)
    for i in range(len(X)):
        _, psi, loss = oracle.solve(i, w)
        _, psi_copy, loss_copy = copy.solve(i, w)
        np.testing.assert_allclose(psi_copy, psi, atol=1e-9)
        assert loss_copy == pytest.approx(loss, abs=1e-9)

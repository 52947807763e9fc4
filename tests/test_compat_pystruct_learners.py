"""ssvm.compat.pystruct learners as pystruct users expect them: max_iter, tol, warnings, warm
starts, switch_to, the structured perceptron, plot_learning and the data sets."""

import os
import pickle
import warnings
from pathlib import Path

import numpy as np
import pytest

from ssvm.compat.pystruct.datasets import (
    generate_blocks_multinomial,
    load_letters,
    load_snakes,
    make_snakes,
)
from ssvm.compat.pystruct.learners import (
    ConvergenceWarning,
    FrankWolfeSSVM,
    NSlackSSVM,
    OneSlackSSVM,
    StructuredPerceptron,
)
from ssvm.compat.pystruct.learners.cutting_plane import PASSES_PER_ITERATION
from ssvm.compat.pystruct.models import BinaryClf, GridCRF, MultiClassClf
from ssvm.compat.pystruct.models.base import ModelOracle
from ssvm.compat.pystruct.utils import SaveLogger
from ssvm_core import SolverState


def multiclass_data(n=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, -1] = 1.0
    Y = np.arange(n) % 3
    X[:, :3] += 1.5 * np.eye(3)[Y]
    return X, Y


def binary_data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = np.hstack([rng.normal(size=(n, 3)), np.ones((n, 1))])
    Y = np.where(X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=n) > 0, 1, -1)
    return X, Y


def hinge_primal(X, Y, w, C):
    """pystruct's primal of a binary SVM, by hand: ||w||^2 / 2 + C sum max(0, 1 - y <w, x>)."""
    return 0.5 * w @ w + C * np.sum(np.maximum(0.0, 1.0 - Y * (X @ w)))


# --- max_iter, tol and the convergence warning ------------------------------------------------

@pytest.mark.parametrize("learner", [NSlackSSVM, OneSlackSSVM])
def test_cutting_plane_tol_bounds_the_gap_over_C_n(learner):
    X, Y = binary_data()
    C, tol = 10.0, 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        svm = learner(BinaryClf(), C=C, tol=tol).fit(X, Y)
    primal = hinge_primal(X, Y, svm.w, C)
    assert svm.primal_objective_curve_[-1] == pytest.approx(primal, rel=1e-9)
    assert svm.exact_ and 0 <= svm.duality_gap_ <= tol * C * len(X)
    assert primal - svm.objective_curve_[-1] == pytest.approx(svm.duality_gap_)
    assert len(svm.history_) - 1 <= svm.max_iter * PASSES_PER_ITERATION


@pytest.mark.parametrize("learner", [NSlackSSVM, OneSlackSSVM, FrankWolfeSSVM])
def test_stopping_above_tol_warns_and_the_budget_is_max_iter_iterations(learner):
    X, Y = multiclass_data()
    svm = learner(MultiClassClf(), C=1000.0, max_iter=1, tol=1e-9)
    with pytest.warns(ConvergenceWarning, match="certified duality gap .* > tol"):
        svm.fit(X, Y)
    # FrankWolfeSSVM: a pass; NSlackSSVM and OneSlackSSVM: pystruct's iteration
    assert svm.history_[-1]["pass"] - svm.history_[0]["pass"] == 1
    assert svm.duality_gap_ > 1e-9


def test_one_slack_large_C_is_solved_in_few_cutting_plane_iterations():
    """pystruct's regime that Frank-Wolfe cannot reach in time (C n = 40000): the one-slack
    cutting-plane method certifies gap / (C n) <= tol within a few dozen oracle passes."""
    X, Y = binary_data(n=40, seed=3)
    C, tol = 1000.0, 1e-3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        svm = OneSlackSSVM(BinaryClf(), C=C, tol=tol).fit(X, Y)
    primal = hinge_primal(X, Y, svm.w, C)
    assert svm.primal_objective_curve_[-1] == pytest.approx(primal, rel=1e-9)
    assert 0 <= svm.duality_gap_ <= tol * C * len(X) and svm.exact_
    assert primal - svm.objective_curve_[-1] == pytest.approx(svm.duality_gap_)
    assert len(svm.history_) <= 200
    # the dual is a lower bound of the optimum at every iteration: never above any primal
    assert max(svm.objective_curve_) <= min(svm.primal_objective_curve_) + 1e-9


def test_one_slack_restricted_qp_matches_a_general_solver():
    """The active-set solve of the restricted dual reaches the optimum SciPy's SLSQP finds."""
    from scipy.optimize import minimize

    from ssvm.compat.pystruct.learners.one_slack import WorkingSet

    rng = np.random.default_rng(0)
    ws = WorkingSet(n_samples=10, n_features=3, scale=50.0)
    for _ in range(12):
        ws.add(rng.normal(size=3), float(rng.uniform(0.5, 1.5)))
    ws.solve(1e-10)
    assert ws.beta.min() >= 0 and ws.beta.sum() == pytest.approx(50.0)
    assert ws.restricted_gap(None) <= 1e-8

    def negative_dual(u):
        z = u @ ws.g
        return -(u @ ws.L - 0.5 * z @ z)

    best = minimize(negative_dual, np.full(13, 50.0 / 13), method="SLSQP",
                    bounds=[(0, None)] * 13,
                    constraints=[{"type": "eq", "fun": lambda u: u.sum() - 50.0}],
                    options={"ftol": 1e-12, "maxiter": 1000})
    assert ws.dual(None) == pytest.approx(-best.fun, rel=1e-6)
    assert ws.dual(None) >= -best.fun - 1e-9


def test_n_slack_active_set_alone_reaches_the_kkt_point():
    """More constraints than features, several per example: the active-set method by itself
    (a tolerance so loose that no pairwise polish step runs) ends at the restricted optimum:
    in every example the supported constraints share the largest gradient L - gram beta (its
    multiplier), and the gap of the restricted problem is 0 up to rounding."""
    from ssvm.compat.pystruct.learners.one_slack import WorkingSet

    rng = np.random.default_rng(3)
    n, d, C = 25, 4, 5.0
    ws = WorkingSet(n_samples=n, n_features=d, scale=C, n_groups=n)
    ws.add(rng.normal(size=(80, d)), rng.uniform(0.2, 2.0, size=80), np.arange(80) % n)
    ws.solve(1e9)
    beta, grad = ws.beta, ws.L - ws.gram @ ws.beta
    assert beta.min() >= 0 and np.allclose(np.bincount(ws.group, weights=beta), C)
    for i in range(n):
        members = np.flatnonzero(ws.group == i)
        supported = members[beta[members] > 0]
        assert grad[members].max() - grad[supported].min() <= 1e-9
    assert ws.restricted_gap(None) <= 1e-9 * C * n


def test_working_set_storage_adds_in_blocks_and_prunes_in_place():
    """Constraints added together or one at a time give the same working set (Gram matrix
    = g g', past the buffers' growth); pruning closes the gaps in place, moves the weight of
    the dropped constraints to their ground truths."""
    from ssvm.compat.pystruct.learners.one_slack import WorkingSet

    rng = np.random.default_rng(4)
    n, d = 3, 5
    g, L, group = rng.normal(size=(20, d)), rng.uniform(size=20), np.arange(20) % n
    together = WorkingSet(n_samples=n, n_features=d, scale=1.0, n_groups=n)
    together.add(g[:12], L[:12], group[:12])
    together.add(g[12:], L[12:], group[12:])
    apart = WorkingSet(n_samples=n, n_features=d, scale=1.0, n_groups=n)
    for k in range(20):
        apart.add(g[k], float(L[k]), int(group[k]))
    for ws in (together, apart):
        np.testing.assert_array_equal(ws.g[n:], g)
        np.testing.assert_array_equal(ws.group, np.concatenate([np.arange(n), group]))
        np.testing.assert_allclose(ws.gram, ws.g @ ws.g.T, atol=1e-12)
    ws = together
    ws.beta[:] = 0.0
    ws.beta[n:n + 2 * n] = 0.5                  # two constraints of each example carry it all
    kept_g = ws.g.copy()
    assert ws.prune(window=3, threshold=0.1) == 20 - 2 * n
    assert ws.L.shape[0] == 3 * n and np.all(ws.beta[:n] == 0.0)
    np.testing.assert_array_equal(ws.g, kept_g[:3 * n])
    np.testing.assert_allclose(ws.gram, ws.g @ ws.g.T, atol=1e-12)
    ws.beta[n] = 0.0                            # example 0: its weight back on the ground truth
    ws.beta[0] = 0.5
    assert ws.prune(window=1, threshold=0.1) == 1
    assert np.allclose(np.bincount(ws.group, weights=ws.beta), 1.0)
    np.testing.assert_allclose(ws.gram, ws.g @ ws.g.T, atol=1e-12)


def test_n_slack_restricted_qp_matches_the_primal_qp_by_a_general_solver():
    """The active-set solve over one simplex per example reaches the optimum of the restricted
    primal QP (w, xi) that SciPy's SLSQP finds: strong duality, w(beta) = the primal w."""
    from scipy.optimize import minimize

    from ssvm.compat.pystruct.learners.one_slack import WorkingSet

    rng = np.random.default_rng(1)
    n, d, C = 4, 3, 2.0
    ws = WorkingSet(n_samples=n, n_features=d, scale=C, n_groups=n)
    for k in range(10):
        ws.add(rng.normal(size=d), float(rng.uniform(0.5, 1.5)), k % n)
    ws.solve(1e-12)
    sums = np.bincount(ws.group, weights=ws.beta)
    assert ws.beta.min() >= 0 and np.allclose(sums, C)
    assert ws.restricted_gap(None) <= 1e-9
    # the primal: min ||w||^2 / 2 + C sum_i xi_i, xi_i >= L_k - <w, g_k> (k of example i), >= 0
    cons = [{"type": "ineq", "fun": lambda v, k=k: v[d + ws.group[k]] - ws.L[k] + ws.g[k] @ v[:d]}
            for k in range(len(ws.L))]
    start = np.concatenate([np.zeros(d), np.bincount(ws.group, weights=ws.L) + 1.0])
    best = minimize(lambda v: 0.5 * v[:d] @ v[:d] + C * v[d:].sum(), start,
                    method="SLSQP", constraints=cons, options={"ftol": 1e-12, "maxiter": 1000})
    # SLSQP's point is feasible up to rounding (its status may report the line search stalling)
    assert min(c["fun"](best.x) for c in cons) >= -1e-8
    assert ws.dual(None) == pytest.approx(best.fun, rel=1e-7)
    np.testing.assert_allclose(ws.weights(None), best.x[:d], atol=1e-5)


def test_n_slack_cutting_plane_and_frank_wolfe_reach_the_same_certified_optimum():
    X, Y = binary_data(n=50, seed=2)
    C, tol = 10.0, 1e-4
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        cp = NSlackSSVM(BinaryClf(), C=C, tol=tol, batch_size=-1).fit(X, Y)
        fw = FrankWolfeSSVM(BinaryClf(), C=C, tol=tol, max_iter=100000).fit(X, Y)
    scale = C * len(X)
    assert cp.exact_ and cp.duality_gap_ <= tol * scale
    p_cp, p_fw = hinge_primal(X, Y, cp.w, C), hinge_primal(X, Y, fw.w, C)
    assert cp.primal_objective_curve_[-1] == pytest.approx(p_cp, rel=1e-9)
    assert p_cp - cp.objective_curve_[-1] == pytest.approx(cp.duality_gap_)
    # each primal is within its own certificate of the optimum, so they are within both
    assert abs(p_cp - p_fw) <= cp.duality_gap_ + fw.duality_gap_ + 1e-9
    # one batch: every iteration's oracle pass is at one w, a certificate each time
    assert all(rec["gap"] is not None and rec["gap"] >= 0 for rec in cp.history_)
    assert max(cp.objective_curve_) <= min(cp.primal_objective_curve_) + 1e-9
    # pystruct's stop: the last iteration added no constraint (pystruct's count of them)
    assert len(cp.history_) - 1 <= cp.max_iter
    assert sum(len(c) for c in cp.constraints_) + len(X) == cp.history_[-1]["constraints"]


def test_n_slack_batches_and_pruning():
    X, Y = multiclass_data(n=40)
    svm = NSlackSSVM(MultiClassClf(), C=10.0, tol=1e-4, batch_size=7, inactive_window=2)
    svm.fit(X, Y)
    assert svm.exact_ and svm.duality_gap_ <= 1e-4 * 10.0 * 40
    # several batches: the per-iteration points saw several w (no certificate), the final one is
    assert all(rec["gap"] is None for rec in svm.history_[:-1])
    assert svm.history_[-1]["gap"] == pytest.approx(svm.duality_gap_)
    ws = svm.working_set_
    assert np.allclose(np.bincount(ws.group, weights=ws.beta), 10.0) and ws.beta.min() >= 0
    with pytest.raises(ValueError, match="batch_size"):
        NSlackSSVM(MultiClassClf(), batch_size=0).fit(X, Y)


def test_one_slack_pruning_and_constraints_():
    """inactive_window=0 keeps one constraint per iteration (and the ground truth); pruning
    drops unused ones, and both runs are certified at the same optimum."""
    X, Y = binary_data(n=60, seed=1)
    keep = OneSlackSSVM(BinaryClf(), C=10.0, tol=1e-4, inactive_window=0).fit(X, Y)
    prune = OneSlackSSVM(BinaryClf(), C=10.0, tol=1e-4, inactive_threshold=1e-3,
                         inactive_window=2).fit(X, Y)
    assert len(keep.constraints_) == len(keep.objective_curve_)
    assert len(prune.constraints_) < len(prune.objective_curve_)
    g0, L0 = keep.constraints_[0]
    assert L0 == 0 and not np.any(g0)                       # the ground truth first
    gap = max(keep.duality_gap_, prune.duality_gap_)
    assert abs(keep.primal_objective_curve_[-1] - prune.primal_objective_curve_[-1]) <= gap


def test_one_slack_negativity_constraint_is_a_certified_box():
    X, Y = binary_data(n=40, seed=2)
    C, tol = 10.0, 1e-4
    svm = OneSlackSSVM(BinaryClf(), C=C, tol=tol, negativity_constraint=[0]).fit(X, Y)
    assert svm.w[0] <= 0
    primal = hinge_primal(X, Y, svm.w, C)
    assert svm.primal_objective_curve_[-1] == pytest.approx(primal, rel=1e-9)
    assert 0 <= svm.duality_gap_ <= tol * C * len(X)
    free = OneSlackSSVM(BinaryClf(), C=C, tol=tol).fit(X, Y)
    assert free.w[0] > 0                       # the box is active: a higher optimum
    assert svm.objective_curve_[-1] >= free.primal_objective_curve_[-1] - free.duality_gap_


def test_one_slack_on_an_approximate_oracle_runs_frank_wolfe():
    X, Y = generate_blocks_multinomial(n_samples=4, noise=0.5, seed=0, size_x=6)
    svm = OneSlackSSVM(GridCRF(n_states=3, inference_method="max-product"), C=0.1,
                       max_iter=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svm.fit(X, Y)
    assert not svm.exact_ and isinstance(svm.state_, SolverState)
    assert not hasattr(svm, "working_set_")


def test_binary_clf_binds_the_compiled_oracle_with_the_same_answers():
    X, Y = binary_data(n=20)
    model = BinaryClf()
    model.initialize(X, Y)
    compiled = model.bind(X, Y)
    assert type(compiled).__name__ == "GraphOracle" and compiled.exact
    python = ModelOracle(model, X, Y)
    rng = np.random.default_rng(1)
    for _ in range(5):
        w = rng.normal(size=4)
        for i in range(len(X)):
            _, psi_c, loss_c = compiled.solve_py(i, w)[:3]
            _, psi_p, loss_p = python.solve(i, w)
            assert loss_c == loss_p
            np.testing.assert_allclose(psi_c, psi_p, atol=1e-12)
    with pytest.raises(ValueError, match="either -1 or \\+1"):
        model.bind(X, np.where(Y > 0, 1, 0))


# --- warm starts and switch_to ----------------------------------------------------------------

def test_warm_start_continues_and_a_changed_C_rescales():
    X, Y = multiclass_data()
    svm = OneSlackSSVM(MultiClassClf(), C=1.0, tol=1e-6).fit(X, Y)
    state = svm.working_set_
    svm.set_params(C=2.0)
    svm.fit(X, Y, warm_start=True)
    assert svm.working_set_ is state and svm.lam_ == pytest.approx(1.0 / (2.0 * len(X)))
    cold = OneSlackSSVM(MultiClassClf(), C=2.0, tol=1e-6).fit(X, Y)
    # both certified within their gaps of the same optimum
    gap = max(svm.duality_gap_, cold.duality_gap_)
    assert abs(svm.primal_objective_curve_[-1] - cold.primal_objective_curve_[-1]) <= gap
    # a warm start with the same C starts converged: one check, no further passes
    svm.fit(X, Y, warm_start=True)
    assert svm.history_[-1]["pass"] == svm.history_[0]["pass"]


def test_warm_start_on_another_training_set_restarts_with_a_warning():
    X, Y = multiclass_data()
    svm = NSlackSSVM(MultiClassClf(), C=1.0, tol=1e-5).fit(X, Y)
    first = svm.working_set_
    with pytest.warns(UserWarning, match="another training set: training restarts"):
        svm.fit(X[:30], Y[:30], warm_start=True)
    assert svm.working_set_ is not first and svm.working_set_.n_samples == 30
    assert svm.duality_gap_ <= 1e-5 * 30


def test_switch_to_continues_from_the_same_dual_point():
    X, Y = generate_blocks_multinomial(n_samples=4, noise=0.5, seed=0, size_x=6)
    crf = GridCRF(n_states=3, inference_method="max-product")
    svm = OneSlackSSVM(crf, C=0.1, tol=1e-3, inference_cache=20, switch_to="qpbo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)       # approximate oracles
        svm.fit(X, Y)
    assert crf.inference_method == "qpbo" and crf.inference_method_ == "max-product"
    passes = [rec["pass"] for rec in svm.history_]
    restarts = [i for i in range(1, len(passes)) if passes[i] <= passes[i - 1]]
    assert len(restarts) == 1                                    # two runs, one history
    assert len(svm.objective_curve_) == len(svm.primal_objective_curve_)
    assert np.all(np.diff(svm.timestamps_[1:]) >= 0)
    # the second run starts where the first ended: the same dual value
    start = restarts[0]
    assert svm.history_[start]["dual"] == pytest.approx(svm.history_[start - 1]["dual"])


def test_solver_state_rebind_checks_the_shapes():
    X, Y = multiclass_data()
    model = MultiClassClf()
    model.initialize(X, Y)
    state = SolverState.for_oracle(model.bind(X, Y), 0.1)
    state.rebind(model.bind(X, Y))
    other = MultiClassClf()
    other.initialize(X[:10], Y[:10])
    with pytest.raises(ValueError, match="rebinding needs the same data"):
        state.rebind(other.bind(X[:10], Y[:10]))


def test_logger_saves_per_iteration_and_at_the_end(tmp_path):
    X, Y = multiclass_data()
    logger = SaveLogger(str(tmp_path / "svm_%d.pickle"), save_every=1)
    svm = NSlackSSVM(MultiClassClf(), C=1000.0, max_iter=2, tol=1e-12, logger=logger,
                     show_loss_every=1)
    with pytest.warns(ConvergenceWarning):
        svm.fit(X, Y)
    saved = sorted(p.name for p in tmp_path.iterdir())
    assert saved == ["svm_0.pickle", "svm_1.pickle", "svm_final.pickle"]
    assert len(svm.loss_curve_) == 2
    with open(tmp_path / "svm_final.pickle", "rb") as f:
        loaded = pickle.load(f)
    np.testing.assert_array_equal(loaded.predict(X), svm.predict(X))


# --- the structured perceptron ----------------------------------------------------------------

def toy_perceptron_data():
    # x1 is predicted +1 at w = 0 (ties), correctly; x2 wrongly until w[1] < 0
    return np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([1, -1])


def test_perceptron_online_updates_by_hand():
    X, Y = toy_perceptron_data()
    pcp = StructuredPerceptron(BinaryClf(n_features=2), max_iter=10).fit(X, Y)
    # pass 0: x2 wrong, w += phi(x2, -1) - phi(x2, +1) = -x2; pass 1: no mistake, stop
    np.testing.assert_array_equal(pcp.w, [0.0, -1.0])
    assert pcp.loss_curve_ == [0.5, 0.0]


def test_perceptron_averages_every_example_online_and_every_pass_in_batch():
    X, Y = toy_perceptron_data()
    online = StructuredPerceptron(BinaryClf(n_features=2), max_iter=10, average=True).fit(X, Y)
    # iterates after each example: (0, 0), (0, -1), then (0, -1) twice
    np.testing.assert_allclose(online.w, [0.0, -0.75])
    batch = StructuredPerceptron(BinaryClf(n_features=2), max_iter=10, average=True,
                                 batch=True).fit(X, Y)
    np.testing.assert_allclose(batch.w, [0.0, -1.0])
    last = StructuredPerceptron(BinaryClf(n_features=2), max_iter=10, average=-1).fit(X, Y)
    np.testing.assert_allclose(last.w, [0.0, -1.0])
    # averaging from a pass never reached gives zero, as in pystruct
    late = StructuredPerceptron(BinaryClf(n_features=2), max_iter=10, average=5).fit(X, Y)
    np.testing.assert_array_equal(late.w, [0.0, 0.0])


def test_perceptron_rate_is_pystruct_power_rule():
    X, Y = np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([-1, -1])
    pcp = StructuredPerceptron(BinaryClf(n_features=2), max_iter=1, decay_exponent=1.0,
                               decay_t0=3.0).fit(X, Y)
    # pass 0 has rate (0 + 3) ** 1; x1 wrong at w = 0, then x2 (w.x2 = 0, tie to +1) wrong too
    np.testing.assert_array_equal(pcp.w, [-3.0, -3.0])
    with pytest.raises(ValueError, match="average must be"):
        StructuredPerceptron(BinaryClf(), average=-2).fit(X, Y)


# --- plot_learning -----------------------------------------------------------------------------

def test_plot_learning_draws_the_recorded_curves(monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from ssvm.compat.pystruct.plot_learning import plot_learning

    monkeypatch.setattr("matplotlib.pyplot.show", lambda *a, **k: None)
    X, Y = multiclass_data()
    svm = FrankWolfeSSVM(MultiClassClf(), C=1.0, max_iter=40, tol=0, check_dual_every=5,
                         show_loss_every=10)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)   # tol = 0: all passes, no warning
        svm.fit(X, Y)
    fig = plot_learning(svm, time=False)
    objective_axes, loss_axes = fig.axes
    dual, primal = objective_axes.get_lines()
    np.testing.assert_allclose(dual.get_ydata(), svm.objective_curve_)
    np.testing.assert_allclose(primal.get_ydata(), svm.primal_objective_curve_)
    np.testing.assert_allclose(loss_axes.get_lines()[0].get_ydata(), svm.loss_curve_)
    timed = plot_learning(svm, time=True)
    assert timed.axes[0].get_xlabel() == "training time (min)"
    with pytest.raises(ValueError, match="fit it first"):
        plot_learning(FrankWolfeSSVM(MultiClassClf()))


# --- data sets ----------------------------------------------------------------------------------

HOME = os.environ.get("SSVM_DATA_HOME")


@pytest.mark.shared_data
@pytest.mark.skipif(not HOME or not (Path(HOME) / "ocr").is_dir(),
                    reason="set SSVM_DATA_HOME to a folder with ocr/ (e.g. ../shared/data)")
def test_load_letters_is_pystruct_layout():
    letters = load_letters(download=False)
    X, y, folds = letters["data"], letters["labels"], letters["folds"]
    assert X.dtype == object and y.dtype == object and len(X) == len(y) == 6877
    assert np.bincount(folds).tolist() == [626, 704, 684, 698, 693, 651, 739, 717, 690, 675]
    assert np.array(X) is not None and np.array(X).shape == (6877,)   # pystruct's examples
    assert X[0].dtype == np.uint8 and X[0].shape == (len(y[0]), 128)
    assert letters["word"][0] == "ommanding" and letters["images"][0].shape == (16, 8 * 9)
    assert sum(len(w) for w in X[folds == 1]) == 5375


def _move(a, b):
    return {(-1, 0): 0, (1, 0): 1, (0, -1): 2, (0, 1): 3}[tuple(np.subtract(b, a))]


def test_snakes_have_pystruct_format_and_their_colours_spell_the_moves():
    from ssvm.compat.pystruct.datasets.loaders import SNAKE_BACKGROUND, SNAKE_COLORS

    snakes = load_snakes(n_train=30, n_test=10, seed=3)
    assert [len(snakes[k]) for k in ("X_train", "Y_train", "X_test", "Y_test")] == [30, 30, 10, 10]
    X, Y = make_snakes(40, seed=3)
    for x, y, x2 in zip(X, Y, snakes["X_train"] + snakes["X_test"]):
        np.testing.assert_array_equal(x, x2)
        assert x.dtype == np.uint8 and y.dtype == np.uint8 and x.shape == y.shape + (3,)
        # a one-cell background border around the snake
        assert not y[0].any() and not y[-1].any() and not y[:, 0].any() and not y[:, -1].any()
        cells = [np.argwhere(y == t)[0] for t in range(1, 11)]
        assert sorted(y[y > 0].tolist()) == list(range(1, 11))
        for t in range(9):
            assert np.abs(cells[t + 1] - cells[t]).sum() == 1          # neighbours
            np.testing.assert_array_equal(x[tuple(cells[t])],
                                          SNAKE_COLORS[_move(cells[t], cells[t + 1])])
        np.testing.assert_array_equal(x[y == 0], np.broadcast_to(SNAKE_BACKGROUND,
                                                                 x[y == 0].shape))
        # pystruct's example reads the colours as r + 2 g + 4 b in {1, 2, 3, 4, 6}
        codes = x.reshape(-1, 3).astype(int) // 255 @ np.array([1, 2, 4])
        assert set(codes.tolist()) <= {1, 2, 3, 4, 6}
